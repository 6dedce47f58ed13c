"""The notebook corpus: correct solutions in the forms students submit (see make_notebooks.py)."""
