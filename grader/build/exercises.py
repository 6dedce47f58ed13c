"""`make student`: build every generated file from `solutions/` (the one source of truth).

* `exercises/attention.py`: the solution with each solution region replaced by
  a stub that raises NotImplementedError naming its step;
* `exercises/attention.ipynb`: `solutions/chapter.md` with the stub code of
  each step placed at its `<!-- code: KEY -->` marker;
* `student_template/`: the student release, what `make publish` zips as the one
  student download: the exercises (the notebook with the checker's cells), the
  checker (`python check.py`, `check("step")`) with the public tests, README;
* `samples/class/`: the bundled sample class graded by a bare `make grade`.

`check_fresh()` reports generated files that differ from what this would write.
"""

import json
import re
from pathlib import Path

from grader.markers import BEGIN, END, STEP_MARKER, clean_solution, regions  # noqa: F401 - re-exported
from grader.chapter import BY_KEY
from grader.paths import CHAPTER_TEXT, RELEASE_SOURCES, ROOT
from grader.paths import SOLUTION as SOLUTION_PATH

SOLUTION, CHAPTER, RELEASE = SOLUTION_PATH, CHAPTER_TEXT, RELEASE_SOURCES
CODE_MARKER = re.compile(r"^<!-- code: (\w+) -->\s*$")

STUDENT_DOCSTRING = '''"""Attention mechanisms, step by step: your working copy.

Fill in every function or method that raises NotImplementedError. Keep the
names and signatures exactly: the autograder calls them by name.
Check one step with `python check.py projection` (see README.md).
This file was generated from the course's solutions; your edits are yours.
"""
'''


def _enclosing_name(lines, index):
    """`name` or `Class.method` of the function whose body holds line `index`."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    name = None
    for line in reversed(lines[:index]):
        stripped = line.lstrip()
        level = len(line) - len(stripped)
        if stripped and level < indent:
            match = re.match(r"(def|class)\s+(\w+)", stripped)
            if match and name is None and match.group(1) == "def":
                name, indent = match.group(2), level
            elif match and match.group(1) == "class":
                return f"{match.group(2)}.{name}" if name else match.group(2)
            elif match is None and level == 0:
                break
    return name or "this part"


def stub_source(solution_text):
    """The solution with every BEGIN/END SOLUTION region replaced by a NotImplementedError stub."""
    regions(solution_text)  # malformed markers stop here, with file and line
    lines = solution_text.splitlines(keepends=True)
    out, inside, step = [], False, "setup"
    for index, line in enumerate(lines):
        stripped = line.strip()
        marker = STEP_MARKER.match(line)
        if marker:
            step = marker.group(1)
        if stripped.startswith(BEGIN):
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            name = _enclosing_name(lines, index)
            out.append(f'{indent}raise NotImplementedError("{step}: {name} is not implemented yet")\n')
        elif stripped.startswith(END):
            inside = False
        elif not inside:
            out.append(line)
    return "".join(out)


def _replace_docstring(source, docstring):
    match = re.match(r'\s*""".*?"""\n', source, flags=re.S)
    return docstring + source[match.end():] if match else docstring + source


def exercise_module(solution_text=None):
    solution_text = SOLUTION.read_text() if solution_text is None else solution_text
    return _replace_docstring(stub_source(solution_text), STUDENT_DOCSTRING)


def code_sections(source):
    """{"setup": imports, step key: code} from a module with `# %% step:` markers."""
    sections, key, current = {}, "setup", []
    body = _replace_docstring(source, "")
    for line in body.splitlines():
        marker = STEP_MARKER.match(line)
        if marker:
            sections[key] = "\n".join(current).strip("\n")
            key, current = marker.group(1), []
        else:
            current.append(line)
    sections[key] = "\n".join(current).strip("\n")
    return sections


def _cell(kind, source, cell_id, **metadata):
    lines = source.splitlines(keepends=True)
    cell = {"cell_type": kind, "id": cell_id, "metadata": metadata, "source": lines}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


# A demo cell that calls a step's code runs inside this guard in the stub notebook: a stub's NotImplementedError
# would end Jupyter's "Run All" there (the kernel aborts the queue after an error), before the student reaches the
# later steps' cells and checks. Caught, it prints the stub's one line ("demo skipped: masking: causal_mask is not
# implemented yet"); the student's own errors still stop it, with their traceback.
DEMO_GUARD = ("try:  # runs once the steps it calls are implemented\n{body}\n"
              "except NotImplementedError as stub:  # a stub above: this demo waits for its step\n"
              '    print(f"demo skipped: {{stub}}")')


def calls_a_step(code):
    """Whether a demo cell uses a name some step defines (and so meets its stub in the student's notebook)."""
    return any(re.search(rf"\b{name}\b", code) for step in BY_KEY.values() for name in step.names)


def guarded_demo(code):
    """The demo `code` inside DEMO_GUARD, when it calls a step; as it is otherwise."""
    if not calls_a_step(code):
        return code
    body = "\n".join(f"    {line}" if line.strip() else "" for line in code.splitlines())
    return DEMO_GUARD.format(body=body)


def notebook(sections, chapter_text=None, guard_demos=False):
    """The chapter notebook: narrative from chapter.md, code from `sections`. With `guard_demos` (the stub
    notebook the students get), each demo cell that calls a step is guarded: see DEMO_GUARD."""
    chapter_text = CHAPTER.read_text() if chapter_text is None else chapter_text
    cells, markdown, fence, counts = [], [], None, {}

    def new_id(prefix):
        counts[prefix] = counts.get(prefix, 0) + 1
        return f"{prefix}-{counts[prefix]}"

    def flush_markdown():
        text = "".join(markdown).strip("\n")
        if text:
            cells.append(_cell("markdown", text, new_id("text")))
        markdown.clear()

    for line in chapter_text.splitlines(keepends=True):
        if fence is not None:
            if line.strip() == "```":
                demo = "".join(fence).strip("\n")
                cells.append(_cell("code", guarded_demo(demo) if guard_demos else demo, new_id("demo")))
                fence = None
            else:
                fence.append(line)
        elif line.strip() == "```python":
            flush_markdown()
            fence = []
        elif CODE_MARKER.match(line):
            flush_markdown()
            key = CODE_MARKER.match(line).group(1)
            cells.append(_cell("code", sections[key], f"{key}-code", tags=[f"step:{key}"]))
        else:
            markdown.append(line)
    flush_markdown()
    document = {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def _sample_class(clean):
    """The bundled sample class: correct files, typical bugs, the stub, a notebook, a broken file."""
    from grader.faults.samples import sample_class

    return sample_class(clean, exercise_module(), code_sections, notebook)


RELEASE_PACKAGE_DOC = '''"""The checker of the attention exercises: your public checks, run in your own Python.

Generated by the course's kit (`make student`): only the public checks and what
they need; the course's grader also runs hidden checks. In a terminal, run
`python check.py` from the folder above this one; in the notebook, `check("step")`.
"""
'''

# The release notebook's own cells (solutions/release/: the instructor edits them there). The checker's
# setup cell comes first, a check cell follows each step's code, how to submit ends the notebook.
SETUP_CELL = RELEASE / "setup_cell.py"
HOW_TO_SUBMIT = RELEASE / "how_to_submit.md"
SUBMIT_MARKER = "<!-- how to submit -->"
CHECKER_INTRO = """**Checking your work.** Run the next cell first: it finds the checker that came with this
notebook (in Colab, upload `student.zip` to the Files pane before you run it). After each step, run its
`check("<step>")` cell: it runs that step's public checks on your definitions as they are now, prints a
line per step (✓ or ✗ and why) and, for the attention steps, draws your attention weights beside the
pattern they should have. `check()` checks every step. These are the public checks only: the course's
grader also runs hidden ones."""


def submit_line():
    """The course's one line on how to submit (solutions/release/how_to_submit.md)."""
    return HOW_TO_SUBMIT.read_text().strip()


def with_checks(notebook_text):
    """The release notebook: the checker's setup cell first, a `check("<step>")` cell after each
    step's code, how to submit at the end. The grader's loader skips all of them (a guarded block,
    bare calls), so grading a released notebook runs the student's definitions only."""
    document = json.loads(notebook_text)
    cells = []
    for cell in document["cells"]:
        if cell["id"] == "setup-code":
            cells.append(_cell("markdown", CHECKER_INTRO, "checker-intro"))
            cells.append(_cell("code", SETUP_CELL.read_text().strip("\n"), "checker-setup"))
        cells.append(cell)
        key = cell["id"].removesuffix("-code")
        if cell["id"].endswith("-code") and key in BY_KEY:
            cells.append(_cell("code", f'check("{key}")', f"{key}-check"))
    cells.append(_cell("markdown", f"## How to submit\n\n{submit_line()}", "how-to-submit"))
    document["cells"] = cells
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def release_info(files):
    """grader/release.json: the exercises' fingerprints as released (so `python check.py` can tell
    which one the student edited) and how to submit."""
    from grader.check.console import fingerprint

    untouched = {Path(name).name: fingerprint(files[name], Path(name).suffix)
                 for name in ("exercises/attention.py", "exercises/attention.ipynb")}
    return json.dumps({"untouched": untouched, "submit": submit_line()}, indent=1, ensure_ascii=False) + "\n"


def release_files(exercise, stub_notebook):
    """{path in the student release: text}: the exercises, the checker and its public checks.

    The checker ships alone: the public tests and the grader modules that `python check.py` and
    the notebook's `check()` import (grader.build.shipping), nothing of the grading engine."""
    from grader.build.shipping import shipped_files, test_files

    files = {"exercises/attention.py": exercise, "exercises/attention.ipynb": with_checks(stub_notebook)}
    for name in ("README.md", "requirements.txt", "check.py"):
        files[name] = (RELEASE / name).read_text()
    files["README.md"] = files["README.md"].replace(SUBMIT_MARKER, submit_line())
    public = test_files(kinds=("public",))
    files.update(public)
    files.update(shipped_files(["grader.check.console", "grader.check.notebook"], public))
    files["grader/__init__.py"] = RELEASE_PACKAGE_DOC
    files["grader/release.json"] = release_info(files)
    return files


def generated_files():
    """{relative path: text} of everything `make student` writes."""
    solution_text = SOLUTION.read_text()
    exercise = exercise_module(solution_text)
    stub_notebook = notebook(code_sections(exercise), guard_demos=True)
    files = {"exercises/attention.py": exercise, "exercises/attention.ipynb": stub_notebook}
    files.update((f"student_template/{name}", text) for name, text in release_files(exercise, stub_notebook).items())
    for name, text in _sample_class(clean_solution(solution_text)).items():
        files[f"samples/class/{name}"] = text
    return files


def generated_roots():
    return ("exercises", "student_template", "samples/class")


def generate_all():
    files = generated_files()
    for root in generated_roots():  # drop files that are no longer generated
        for path in (ROOT / root).rglob("*"):
            if path.is_file() and str(path.relative_to(ROOT)) not in files and "__pycache__" not in path.parts:
                path.unlink()
    for relative, text in files.items():
        target = ROOT / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return sorted(files)


def check_fresh():
    """Generated files that are missing, differ, or should not be there."""
    files = generated_files()
    stale = [relative for relative, text in files.items()
             if not (ROOT / relative).is_file() or (ROOT / relative).read_text() != text]
    for root in generated_roots():
        for path in (ROOT / root).rglob("*"):
            relative = str(path.relative_to(ROOT))
            if path.is_file() and relative not in files and "__pycache__" not in path.parts:
                stale.append(relative)
    return sorted(stale)
