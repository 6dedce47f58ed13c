"""Write tests/kit/notebooks/: correct solutions as students really submit them.

Each file holds the clean solution (solutions/attention.py without its markers)
wrapped in the IPython syntax, notebook formats and encodings students use:
magics, shell escapes, help, cell magics, questions in comments, Colab setup,
old notebook formats, a coding line. Every one must score exactly what the
clean .py scores (tests/kit/test_notebooks.py). Run again after the solution
changes (the test says when):

    .venv/bin/python -m tests.kit.notebooks.make_notebooks
"""

import ast
import json
from pathlib import Path

from grader.markers import clean_solution
from grader.chapter import STEPS

FOLDER = Path(__file__).resolve().parent
IMPORTS = "import math\n\nimport torch\nfrom torch import nn\n"
# Demo cells as students leave them: the loader skips them (they call what the cells define).
DEMO = {
    "projection": "inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64]])\n"
                  "torch.manual_seed(123)\nW_query, W_key, W_value = init_qkv_weights(3, 2)\n"
                  "queries, keys, values = project(inputs, W_query, W_key, W_value)\nprint(queries[1])\n",
    "scaling": "before, after = dot_product_variance(64)\nprint(before, after)\n",
    "masking": "print(causal_mask(4))\n",
    "dropout": "attention_dropout(torch.ones(6, 6), 0.5)\n",
    "causal_attention": "batch = torch.stack((inputs, inputs))\nca = CausalAttention(3, 2, 3, 0.0)\nca(batch).shape\n",
    "mha_wrapper": "MultiHeadAttentionWrapper(3, 2, 3, 0.0, num_heads=2)(batch).shape\n",
    "multihead_attention": "MultiHeadAttention(3, 2, 3, 0.0, num_heads=2)(batch)\n",
}
# A first try that a later cell replaces, or that only a %%writefile cell holds: it must never win.
WRONG_MASK = "def causal_mask(context_length):\n    return torch.tril(torch.ones(context_length, context_length))\n"
QUESTIONS = {  # questions students leave in trailing comments; the old filter turned these lines into `pass`
    "return torch.triu(ones, diagonal=1)": "return torch.triu(ones, diagonal=1)  # is diagonal=1 right?",
    "return attn_weights @ values": "return attn_weights @ values  # or values.T?",
    "keep = torch.rand_like(attn_weights) >= p": "keep = torch.rand_like(attn_weights) >= p  # > or >=?",
    "self.dropout = nn.Dropout(dropout)": "self.dropout = nn.Dropout(dropout)  # before or after softmax?",
    "return x @ W_query, x @ W_key, x @ W_value": "return x @ W_query, x @ W_key, x @ W_value  # order?",
}
NOTES = ('"""Notes to self:\n%matplotlib inline is not needed here\n!pip install torch if the import fails\n'
         '?? ask about masking\n"""\n')
BRACKETS = {  # lines that start with % or ! inside brackets and strings: Python, not IPython
    "n = attn_weights.shape[-1]\n": "n = (attn_weights.shape[-1]\n         % (attn_weights.shape[-1] + 1))  # n % (n + 1) == n\n",
    "if d_out % num_heads != 0:": "if (d_out % num_heads\n                != 0):",
    '"""Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row."""':
        '"""Zero the future in already-normalised weights `(..., n, n)`, then renormalise each row.\n\n'
        '    !important: rows of the result sum to one.\n    %s of the weights above the diagonal become zero.\n    """',
}
OUT_OF_ORDER = [3, 1, 7, 2, 9, 4, 12, 5, 6, 14, 8, 10, 11, 13, 15]


def definitions(solution):
    """{name: source} of the solution's top-level functions and classes."""
    return {node.name: ast.get_source_segment(solution, node) + "\n"
            for node in ast.parse(solution).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def replaced(text, replacements):
    for plain, changed in replacements.items():
        if plain not in text:
            raise ValueError(f"the solution no longer holds {plain!r}: update make_notebooks.py")
        text = text.replace(plain, changed)
    return text


def lines(text):
    return text.splitlines(keepends=True)


def md(text):
    return ("markdown", text, None)


def code(text, count=None):
    return ("code", text, count)


def notebook(cells):
    """An nbformat 4.5 notebook as Jupyter saves it (execution counts 1, 2, ... unless given)."""
    out, count = [], 0
    for number, (kind, text, given) in enumerate(cells, start=1):
        cell = {"cell_type": kind, "id": f"cell-{number}", "metadata": {}, "source": lines(text)}
        if kind == "code":
            count += 1
            cell.update(execution_count=given if given is not None else count, outputs=[])
        out.append(cell)
    return {"cells": out, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                      "name": "python3"},
                                       "language_info": {"name": "python", "version": "3.11.7"}},
            "nbformat": 4, "nbformat_minor": 5}


def corpus(solution=None):
    """{file name: bytes} of every corpus file."""
    solution = clean_solution() if solution is None else solution
    defs = definitions(solution)
    steps = {step.key: [name for name in step.names] for step in STEPS}

    def step_code(key):
        return "\n\n".join(defs[name] for name in steps[key])

    def standard(first_cell=IMPORTS, extra=None):
        """The release notebook's layout: imports, then per step a heading, the solution and a demo."""
        extra = extra or {}
        cells = [md("# Coding attention, step by step\n"), code(first_cell)]
        for key in steps:
            cells += [md(f"## Step · `{key}`\n"), code(extra.get(key, step_code(key))), code(DEMO[key])]
        return cells

    files = {}
    files["01_clean.ipynb"] = notebook(standard())
    files["02_line_magics.ipynb"] = notebook(standard(
        "%matplotlib inline\n%load_ext autoreload\n%autoreload 2\n\n" + IMPORTS,
        {"dropout": step_code("dropout") + "\n\n%timeit attention_dropout(torch.ones(64, 64), 0.1)\n"}))
    files["03_shell.ipynb"] = notebook([code("!pip install torch==2.13.0 numpy\n")] + standard(
        "files = !ls\nprint(files)\n" + IMPORTS,
        {"masking": "!nvidia-smi \\\n    --query-gpu=name --format=csv\n" + step_code("masking"),
         "dropout": "!!echo dropout\n" + step_code("dropout")}))
    files["04_help.ipynb"] = notebook(standard(extra={
        "masking": "torch.tril?\n\n" + step_code("masking"),
        "causal_attention": step_code("causal_attention") + "\n??nn.Linear\n",
        "dropout": "torch.*dropout*?\n" + step_code("dropout") + "nn.Dropout??\n"}))
    # Jupyter runs a %%time or %%capture cell's body as the notebook's code: what it defines exists.
    files["05_cell_time.ipynb"] = notebook(standard(extra={
        "causal_attention": "%%time\n" + step_code("causal_attention"),
        "multihead_attention": "\n%%time\n" + step_code("multihead_attention")
                               + "\n%time mha = MultiHeadAttention(4, 4, 3, 0.0, 2)\n"}))
    files["06_cell_capture.ipynb"] = notebook(standard("%%capture\n!pip install torch numpy\n" + IMPORTS))
    # %%writefile, %%bash, %%html, %%timeit: their text is not the notebook's code.
    files["07_cell_not_python.ipynb"] = notebook(standard() + [
        code("%%writefile helpers.py\nimport torch\n\n" + WRONG_MASK + "\n\ndef helper_from_file():\n    return 1\n"),
        code("%%bash\npip list | grep torch\nfor f in *.py; do echo $f; done\n"),
        code("%%html\n<b>done</b>\n"),
        code("%%timeit\ndef timed_helper():\n    return 2\n")])
    files["08_question_comments.ipynb"] = notebook(standard(
        "import math  # needed?\n\nimport torch\nfrom torch import nn  # or torch.nn?\n",
        {key: replaced(step_code(key), {k: v for k, v in QUESTIONS.items() if k in step_code(key)})
         for key in steps}))
    files["09_strings_and_brackets.ipynb"] = notebook(standard(
        IMPORTS + "\nNOTES = " + NOTES,
        {key: replaced(step_code(key), {k: v for k, v in BRACKETS.items() if k in step_code(key)}) for key in steps}))
    # Colab: Drive mounted, installs, and plotting libraries that the grader does not have.
    files["10_colab.ipynb"] = notebook(standard(
        "from google.colab import drive\ndrive.mount('/content/drive')\n%cd /content/drive/MyDrive/attention\n"
        "!pip install -q torch\n" + IMPORTS + "import seaborn as sns\nimport matplotlib.pyplot as plt\n"))
    # First tries fixed in later cells: the lower cell wins, as in Restart & Run All.
    files["11_redefined.ipynb"] = notebook(standard(extra={
        "projection": step_code("projection") + "\n\n" + WRONG_MASK,
        "scaling": "def attention_scores(queries, keys):\n    return queries @ keys\n\n\n" + step_code("scaling"),
    }) + [md("Fixed the mask:\n"), code(defs["causal_mask"])])
    order = iter(OUT_OF_ORDER)
    files["12_out_of_order.ipynb"] = notebook(
        [code(text, next(order)) if kind == "code" else (kind, text, given) for kind, text, given in standard()])
    markdown = standard()
    markdown.insert(2, md("Remember:\n\n```python\n%matplotlib inline\n" + WRONG_MASK + "```\n"))
    files["13_markdown_code.ipynb"] = notebook(markdown)
    files["13_markdown_code.ipynb"]["cells"].insert(3, {"cell_type": "raw", "id": "raw-1", "metadata": {},
                                                        "source": lines("def attention_scores(q, k):\n    return 0\n")})
    files["14_nbformat3.ipynb"] = nbformat3(step_code, steps)
    files["15_everything.ipynb"] = notebook(standard(
        "\n\n%load_ext autoreload\n%autoreload 2\n" + IMPORTS + "%matplotlib inline\n",
        {"scaling": "%%time\n!echo scaling\n" + step_code("scaling") + "%timeit?\n",
         "dropout": replaced(step_code("dropout"),
                             {"    if not training or p == 0:": "    %time x = 1\n    if not training or p == 0:"}),
         "masking": step_code("masking") + "\nresult = %timeit -o causal_mask(512)\n"}))
    many = [code(IMPORTS)]  # cell numbers count markdown cells too
    for key, names in steps.items():
        many.append(md(f"### {key}\n"))
        many += [code(defs[name]) for name in names]
    files["16_one_definition_per_cell.ipynb"] = notebook(many)
    out = {name: (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode() for name, document in files.items()}
    body = IMPORTS + "\n\n" + "\n\n".join(step_code(key) for key in steps)
    # A .py saved in Windows' code page, as its PEP 263 coding line says.
    out["17_cp1252.py"] = ("# -*- coding: cp1252 -*-\n# Attention exercises \u2014 caf\u00e9 notes: na\u00efve "
                           "r\u00e9sum\u00e9 of \u201cscaled\u201d attention\n" + body).encode("cp1252")
    # `jupyter nbconvert --to script`: the IPython syntax is already get_ipython() calls.
    out["18_nbconvert_script.py"] = ("#!/usr/bin/env python\n# coding: utf-8\n\n# In[1]:\n\n\n"
                                     "get_ipython().run_line_magic('matplotlib', 'inline')\n"
                                     "get_ipython().system('pip install torch')\n" + IMPORTS + "\n\n# In[2]:\n\n\n"
                                     + body).encode()
    return out


def nbformat3(step_code, steps):
    """An IPython 2 notebook: worksheets, `input`, `prompt_number`, heading cells."""
    cells = [{"cell_type": "heading", "level": 1, "metadata": {}, "source": "Attention"},
             {"cell_type": "code", "language": "python", "collapsed": False, "metadata": {}, "outputs": [],
              "prompt_number": 1, "input": lines("%matplotlib inline\n" + IMPORTS)}]
    for number, key in enumerate(steps, start=2):
        cells += [{"cell_type": "markdown", "metadata": {}, "source": f"Step {key}"},
                  {"cell_type": "code", "language": "python", "collapsed": False, "metadata": {}, "outputs": [],
                   "prompt_number": number, "input": lines(step_code(key))}]
    return {"metadata": {"name": "attention", "signature": "sha256:0"}, "nbformat": 3, "nbformat_minor": 0,
            "worksheets": [{"cells": cells, "metadata": {}}]}


def stale(folder=FOLDER):
    """Corpus files that are missing or differ from what `corpus()` writes, and files it would not write."""
    expected = corpus()
    present = {path.name for path in folder.iterdir() if path.suffix in (".ipynb", ".py")
               and path.name != Path(__file__).name and path.name != "__init__.py"}
    return sorted(name for name in expected.keys() | present
                  if name not in present or name not in expected or (folder / name).read_bytes() != expected[name])


def main():
    for name, data in corpus().items():
        (FOLDER / name).write_bytes(data)
    print(f"wrote {len(corpus())} files to {FOLDER}")


if __name__ == "__main__":
    main()
