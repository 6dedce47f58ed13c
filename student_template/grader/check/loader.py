"""Read a submission (.py or .ipynb) and load its definitions into a module.

Only definitions run at load time: imports, functions, classes and simple
assignments. Demo code (prints, example calls, loops, `if __name__ == ...`)
is skipped, so a hang or crash in a demo line never costs a step, and a
broken statement costs only itself: every problem is reported, the rest loads.

Notebook cells are read the way Jupyter reads them: IPython's own input
transformer turns magics, shell escapes and `?` help into `get_ipython()...`
calls (a tokenize-based stand-in does the same when IPython is not installed),
then every statement that calls `get_ipython()` becomes `pass`, and the student
is told which line was not loaded and why. Comments and strings are never touched.
"""

import __future__
import ast
import contextlib
import functools
import gc
import io
import json
import linecache
import os
import re
import stat
import sys
import tokenize
import types
from dataclasses import dataclass, field
from pathlib import Path

MAX_SOURCE_BYTES = 1_000_000  # of code: a .py, or a notebook's code cells together
# A notebook saved with its outputs: each plot is a base64 image of 50-500 kB. Its code is bounded above.
MAX_NOTEBOOK_BYTES = 20_000_000
MAX_CODE_CELLS = 10_000  # a long notebook has hundreds; each costs a transform and a parse
MAX_PROBLEMS = 20  # a file with thousands of broken lines gets a readable report, not thousands of lines
PYTHON_KERNELS = ("python", "python3", "python2", "ipython", "ipython3")
MAX_STACKED_CELL_MAGICS = 4  # `%%time` over `%%capture` over code is real; thousands are an attack on the judge
# Cell magics whose body Jupyter runs as Python in the notebook's namespace, so what it defines is kept.
PYTHON_CELL_MAGICS = ("time", "capture", "prun")
# IPython re-tokenizes the whole cell after each magic it rewrites: (magics + 1) x characters, for the
# whole notebook. Measured with IPython 9: about 10 us per unit, so this is 2-3 s at most, inside a step's
# time budget; a real notebook costs 10-30 thousand (tests/kit/notebooks). Past it (hostile or pasted-data
# cells) the linear stand-in reads the rest, with the same result.
TRANSFORM_BUDGET = 200_000


class SubmissionError(Exception):
    """The file cannot be graded at all; the message says why and what to do."""


@dataclass
class Chunk:
    source: str  # Python, line for line the student's text (a cell's IPython syntax already rewritten)
    filename: str  # what tracebacks show: "attention.py" or "attention.ipynb, cell 4"
    original: str = None  # the cell as the student wrote it (None: same as source)
    notes: list = field(default_factory=list)  # what reading the cell left out, and why


@dataclass
class Loaded:
    module: types.ModuleType
    problems: list = field(default_factory=list)  # teaching messages about skipped or failed code
    skipped: list = field(default_factory=list)  # those of `problems` that only say which IPython line was left out


_LEFT_OUT = re.compile(r".*?: (?:`.*` was not (?:loaded|run): |the cell under `.*` was not loaded: "
                       r"|its cells were last run out of order |this \.py holds a Jupyter notebook "
                       r"|this \.ipynb holds Python source, )"
                       r"|\.\.\. and \d+ more problems like these\.$", re.DOTALL)


def left_out_note(problem):
    """Whether a problem only says which IPython line was left out, or how the file was read (a notebook
    saved as .py), which costs nothing: not an error.

    Results files keep one list of problems, errors first: the report counts the files whose code did
    not load from it. `... and N more` follows the errors when there are many, so it is no error itself."""
    return _LEFT_OUT.match(str(problem)) is not None


def read_chunks(path):
    """Split a submission into code chunks (the file, or one per notebook cell)."""
    path = Path(path)
    # Look before reading: a huge file, a device or a pipe must cost neither memory nor time.
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionError(f"{path.name} is not a regular file; submit your .py or .ipynb.")
        limit = MAX_NOTEBOOK_BYTES if path.suffix == ".ipynb" else MAX_SOURCE_BYTES
        raw = b"" if info.st_size > limit else stream.read(limit + 1)
    if info.st_size > limit or len(raw) > limit:
        raise SubmissionError(
            f"{path.name} is {max(info.st_size, len(raw)) / 1e6:.1f} MB; a solution is a few kB of code. "
            + ("Clear its outputs (Edit > Clear All Outputs), save, and submit again." if path.suffix == ".ipynb"
               else "Remove pasted data or outputs and submit the source only.")
        )
    if not raw.strip():
        raise SubmissionError(f"{path.name} is empty: save your work and submit the file again.")
    wide = _wide_encoding(raw)
    if wide:
        raise SubmissionError(f"{path.name} is {wide} text, which neither Python nor Jupyter reads; "
                              "save it with UTF-8 encoding and submit again.")
    if b"\x00" in raw:
        raise SubmissionError(f"{path.name} is not a text file (it contains binary data); submit your .py or .ipynb.")
    if path.suffix == ".ipynb" and _saved_python(raw):
        return _python_saved_as_notebook(path.name, _decode(path.name, raw, _python_encoding(path.name, raw)))
    if path.suffix == ".ipynb":
        return _guarded_notebook_chunks(path.name, _decode(path.name, raw, "utf-8-sig"))  # JSON is UTF-8
    text = _decode(path.name, raw, _python_encoding(path.name, raw))
    if _saved_notebook(text):
        return _notebook_saved_as_python(path.name, text)
    return [Chunk(text, path.name)]


def submitted_form(path):
    """What a submission is, whatever its name says, and its text as Python or Jupyter reads it: ("py" or "ipynb",
    str). A notebook saved as .py is a notebook, Python saved as .ipynb is Python, and a .py's coding line (PEP 263)
    has been applied. For engines that take a file (Otter): the kit's own reads chunks (read_chunks)."""
    path = Path(path)
    raw = path.read_bytes()
    if path.suffix == ".ipynb" and not _saved_python(raw):
        return "ipynb", _decode(path.name, raw, "utf-8-sig")
    text = _decode(path.name, raw, _python_encoding(path.name, raw))
    return ("ipynb" if _saved_notebook(text) else "py"), text


# Text a Windows editor saved as "Unicode" (Notepad before 2019, PowerShell 5's `>`): Python refuses it as
# source ("source code cannot contain null bytes") and Jupyter reads notebooks as UTF-8 only.
WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe", "UTF-16"),
             (b"\xfe\xff", "UTF-16"))
CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")  # never in text an editor saved (tab and line ends are fine)


def _wide_encoding(raw):
    """"UTF-16" or "UTF-32" for text saved so (a BOM says so; without one, UTF-16 is told by a NUL at every
    other byte, the high byte of each ASCII character, and none between), else None: a file whose NULs
    follow no such pattern is binary."""
    for bom, name in WIDE_BOMS:
        if raw.startswith(bom):
            return name
    if b"\x00" not in raw or len(raw) % 2:
        return None
    for order, low, high in (("utf-16-le", raw[0::2], raw[1::2]), ("utf-16-be", raw[1::2], raw[0::2])):
        if b"\x00" not in low and high.count(0) >= 0.75 * len(high):  # mostly ASCII, as code is
            try:
                if not CONTROL.search(raw.decode(order)):
                    return "UTF-16"
            except UnicodeDecodeError:
                pass
    return None


def _saved_notebook(text):
    """True for a .py that holds a notebook's JSON (saved or renamed under the wrong name): no Python file
    is a JSON object with cells."""
    if not text.lstrip().startswith("{"):
        return False
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # Python that starts with a dict display, or broken JSON: read as Python
        return False
    return isinstance(data, dict) and any(key in data for key in ("cells", "nbformat", "worksheets"))


def _notebook_saved_as_python(name, text):
    """A .py holding a notebook, graded as the notebook it is, with a note that says so (it costs nothing)."""
    chunks = _guarded_notebook_chunks(name, text) or [Chunk("", name)]
    chunks[0].notes.insert(0, f"{name}: this .py holds a Jupyter notebook (its JSON), so it was read as the "
                              "notebook it is, cell by cell; submit a notebook as .ipynb.")
    return chunks


# A line only Python starts so: a statement at the left margin (a notebook's JSON starts with "{").
_PYTHON_LINE = re.compile(rb"^(?:def|class|import|from|if __name__)\b", re.MULTILINE)


def _saved_python(raw):
    """True for an .ipynb that holds Python source (a .py renamed, or "Download as .py" saved under the
    notebook's name): no notebook starts with anything but "{", and Python has statements at the margin."""
    start = raw.removeprefix(b"\xef\xbb\xbf").lstrip()
    return not start.startswith(b"{") and _PYTHON_LINE.search(raw) is not None


def _python_saved_as_notebook(name, text):
    """An .ipynb holding Python source, graded as the .py it is, with a note that says so."""
    chunk = Chunk(text, name)
    chunk.notes.append(f"{name}: this .ipynb holds Python source, not a notebook, so it was read as the .py "
                       "file it is; submit a .py file under a .py name.")
    return [chunk]


def _guarded_notebook_chunks(name, text):
    try:  # the judge reads notebooks too (before any worker): a crafted one must cost it nothing worse
        return _notebook_chunks(name, text)
    except (RecursionError, MemoryError):
        raise SubmissionError(f"{name} cannot be read: its structure is nested far too deeply. Save it "
                              "again from Jupyter (or submit your code as a .py).") from None


def _python_encoding(name, raw):
    """The encoding Python itself would read this file with: a BOM, a PEP 263 coding line, else UTF-8."""
    try:
        return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
    except SyntaxError as error:
        if str(error.msg).startswith("invalid or missing encoding"):
            return "utf-8"  # no coding line and a first line that is not UTF-8: say so when decoding
        raise SubmissionError(
            f"{name} cannot be read as Python source: its coding line is wrong ({error.msg}). "
            "Remove the `# -*- coding: ... -*-` line, save the file as UTF-8 and submit again."
        ) from None


def _decode(name, raw, encoding):
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as error:
        if encoding.startswith("utf-8"):
            raise SubmissionError(
                f"{name} is not UTF-8 text (byte {error.start} cannot be decoded); "
                "save it with UTF-8 encoding and submit again."
            ) from None
        raise SubmissionError(
            f"{name} is not {encoding} text as its coding line says (byte {error.start} cannot be decoded); "
            "remove the coding line, save it with UTF-8 encoding and submit again."
        ) from None


def _notebook_chunks(name, text):
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as error:
        raise SubmissionError(
            f"{name} is not a valid notebook (JSON error at line {error.lineno}: {error.msg}); "
            "open it in Jupyter, save it, and submit the saved file."
        ) from None
    except (ValueError, RecursionError):  # nested too deeply, numbers too long: not a saved notebook
        raise SubmissionError(
            f"{name} is not a valid notebook (its JSON is nested too deeply or holds a number too long to read); "
            "open it in Jupyter, save it, and submit the saved file."
        ) from None
    if isinstance(notebook, dict) and (notebook.get("nbformat") in (1, 2, 3) or (
            "cells" not in notebook and "worksheets" in notebook)):
        notebook = _upgrade(notebook)  # Jupyter opens old notebooks by upgrading them: so do we
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SubmissionError(f"{name} is not a Jupyter notebook (no list of cells); "
                              "submit the .ipynb saved by Jupyter.")
    metadata = _mapping(notebook.get("metadata"))
    language = (_mapping(metadata.get("kernelspec")).get("language")
                or _mapping(metadata.get("language_info")).get("name") or "python")
    if str(language).lower() not in PYTHON_KERNELS:
        raise SubmissionError(
            f"{name} uses a {str(language)[:40]!r} kernel; this exercise is Python. "
            "Switch the kernel to Python 3, re-run, save and submit."
        )
    chunks, counts, budget, code = [], [], [TRANSFORM_BUDGET], 0
    for index, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue  # markdown shows code but never runs it
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(line for line in source if isinstance(line, str))
        if not isinstance(source, str):
            continue  # not code a notebook can hold
        code += len(source)
        if len(chunks) >= MAX_CODE_CELLS:
            raise SubmissionError(
                f"{name} holds more than {MAX_CODE_CELLS} code cells; a solution needs a few dozen. "
                "Remove generated cells, save, and submit again.")
        if code > MAX_SOURCE_BYTES:
            raise SubmissionError(
                f"{name} holds more than {MAX_SOURCE_BYTES / 1e6:.0f} MB of code; a solution is a few kB. "
                "Remove pasted data from its code cells, save, and submit again.")
        where, notes = f"{name}, cell {index}", []
        chunks.append(Chunk(_cell_python(source, where, notes, budget), where, source, notes))
        if isinstance(cell.get("execution_count"), int):
            counts.append(cell["execution_count"])
    if chunks and any(later <= earlier for earlier, later in zip(counts, counts[1:])):
        chunks[0].notes.insert(0, (
            f"{name}: its cells were last run out of order (execution counts {', '.join(map(str, counts[:12]))}"
            f"{', ...' if len(counts) > 12 else ''}). The grader runs the cells from top to bottom, as "
            "Kernel > Restart & Run All does: when a name is defined twice, the lower cell wins."))
    return chunks


def _upgrade(notebook):
    """An nbformat 1-3 notebook as nbformat 4, as nbformat's converter upgrades it when Jupyter opens it,
    for what grading reads: each code cell's text and execution count (see docs/libraries.md: nbformat
    itself takes seconds to import inside a step's time budget; tests/kit compares the two)."""
    if isinstance(notebook.get("worksheets"), list):  # nbformat 2 and 3: worksheets of cells
        cells, text = [cell for sheet in notebook["worksheets"] for cell in _mapping(sheet).get("cells") or []], "input"
    elif notebook.get("nbformat") == 1 and isinstance(notebook.get("cells"), list):
        cells, text = notebook["cells"], "code"  # nbformat 1: one list of cells, a code cell's text in `code`
    else:
        return notebook  # not a notebook of any format: refused by the caller
    upgraded = []
    for cell in map(_mapping, cells):
        if cell.get("cell_type") == "code":
            upgraded.append({"cell_type": "code", "source": cell.get(text, ""),
                             "execution_count": cell.get("prompt_number")})
        else:
            upgraded.append({"cell_type": "markdown"})  # heading, html, markdown, raw, text: none of it runs
    return {**notebook, "cells": upgraded, "nbformat": 4}


def _mapping(value):
    """Notebook metadata as saved by Jupyter is a dict; anything else counts as empty."""
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- IPython syntax

def _cell_python(source, where, notes, budget, first_line=1):
    """The cell as the Python IPython would run, line for line the student's (so every line number holds).
    Cell magics stacked on one cell are peeled in a loop, a few at most: each costs a transform of the rest."""
    prefix = ""
    for _ in range(MAX_STACKED_CELL_MAGICS + 1):
        lines = source.splitlines(keepends=True)
        blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))  # IPython drops these
        python = _transform(source, budget)
        magic = _cell_magic(python)
        if magic is None:
            return prefix + "\n" * blank + _realign(lines[blank:], python.splitlines(keepends=True))
        name, argument, body = magic
        line, shown = first_line + blank, f"%%{name}{' ' + argument if argument else ''}"[:80]
        if name not in PYTHON_CELL_MAGICS:
            why = {"writefile": "Jupyter writes its text to a file and runs none of it",
                   "timeit": "Jupyter runs it in a timing loop and keeps nothing it defines"
                   }.get(name, "Jupyter does not run its text as the notebook's Python code")
            notes.append(f"{where}, line {line}: the cell under `{shown}` was not loaded: {why}, "
                         "so nothing in it is defined. Put definitions in a cell of their own.")
            return ""
        # Jupyter runs the body as the notebook's own code: load it
        notes.append(f"{where}, line {line}: `{shown}` was not run: it only changes how Jupyter runs the cell, "
                     "so the code below it was loaded as plain Python.")
        prefix += "\n" * (blank + 1)
        source, first_line = body, line + 1
    notes.append(f"{where}: more than {MAX_STACKED_CELL_MAGICS} cell magics are stacked on this cell, so it was "
                 "not loaded. Keep one (or none) on a cell of definitions.")
    return ""


def _transform(source, budget):
    """IPython's own rewrite of a cell (`!ls` -> `get_ipython().system('ls')`, ...), or the stand-in's."""
    manager = _ipython_transformer()
    cost = (1 + sum(1 for line in source.splitlines() if re.search(r"[%!?]", line))) * len(source)
    if manager is not None and cost <= budget[0]:
        budget[0] -= cost
        try:
            return manager.transform_cell(source)
        except Exception:  # noqa: BLE001 - IPython refuses the cell (`f(x)?`): the parser will name the line
            pass
    return _fallback_transform(source)


@functools.lru_cache(maxsize=None)
def _ipython_transformer():
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        return TransformerManager()
    except Exception:  # noqa: BLE001 - not installed (a student's terminal) or broken: use the stand-in
        return None


def _cell_magic(python):
    """(name, argument, body) when the cell is one `get_ipython().run_cell_magic(...)` call, as %%-cells become."""
    match = re.fullmatch(r"get_ipython\(\)\.run_cell_magic\((.*)\)\s*", python, re.DOTALL)
    if match is None:
        return None
    try:
        arguments = ast.literal_eval(f"({match.group(1)},)")
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return None
    return arguments if len(arguments) == 3 and all(isinstance(a, str) for a in arguments) else None


def _realign(original, new):
    """IPython joins `!cmd \\` with its continuation lines: put blank lines back so later lines keep their numbers."""
    if len(new) >= len(original):
        return "".join(new)
    out, used = [], 0
    for index, line in enumerate(new):
        out.append(line)
        used += 1
        following = new[index + 1].strip() if index + 1 < len(new) else None
        while len(original) - used > len(new) - index - 1 and original[used].strip() != following:
            out.append("\n")
            used += 1
    return "".join(out)


def _fallback_transform(source):
    """A stand-in for IPython's TransformerManager.transform_cell, for the syntax students use.

    Like IPython it tokenizes the cell once to find where statements start, so `%` or `!` inside a
    string or a bracketed expression stays as it is, and a trailing comment ending in `?` is no help
    request. It leaves out IPython's `>>>` prompt stripping and `,f a b` autocalls."""
    lines = source.splitlines(keepends=True)
    lines = lines[next((i for i, line in enumerate(lines) if line.strip()), len(lines)):]
    if not lines:
        return ""
    if not lines[-1].endswith("\n"):
        lines[-1] += "\n"  # as IPython ends a cell (a `\r\n` ending stays)
    indent = re.match(r"[ \t]*", lines[0]).group()
    if indent:  # IPython dedents a cell whose first line is indented
        lines = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    if lines[0].startswith("%%") and not re.match(r"%%\w+\?", lines[0]):
        name, _, argument = lines[0][2:].rstrip().partition(" ")
        return f"get_ipython().run_cell_magic({name!r}, {argument!r}, {''.join(lines[1:])!r})\n"
    starts = _statement_starts(lines)
    row = 0
    while row < len(lines):
        if row in starts:
            parts = [lines[row].rstrip("\r\n")]
            end = row
            if parts[0].endswith("\\") and _escape(parts[0]) is not None:
                # IPython joins a continued escape line with the lines that continue it (joined once: a cell of
                # many continued lines is read in linear time)
                while parts[-1].endswith("\\") and end + 1 < len(lines):
                    end += 1
                    parts[-1] = parts[-1][:-1]
                    parts.append(lines[end].rstrip("\r\n"))
            text = " ".join(parts)
            call = _escape(text)
            if call is not None:
                lines[row:end + 1] = [call + "\n"] + ["\n"] * (end - row)
            row = end
        row += 1
    return "".join(lines)


def _statement_starts(lines):
    """Indexes of the lines where a statement starts (not inside a string or brackets), by tokenizing."""
    starts, depth, at_start = set(), 0, True
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                at_start = at_start or depth == 0
            elif token.type not in (tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                if at_start:
                    starts.add(token.start[0] - 1)
                    at_start = False
                if token.type == tokenize.OP and token.string in ("(", "[", "{"):
                    depth += 1
                elif token.type == tokenize.OP and token.string in (")", "]", "}"):
                    depth = max(depth - 1, 0)
    except (tokenize.TokenError, SyntaxError):
        pass  # IPython's tokenizing stops at the same place: the lines below stay as written
    return starts


_HELP = re.compile(r"(\?{0,2})(%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+|\[-?[0-9]+\])*)(\?{0,2})")
_ASSIGN = re.compile(r"([^=!%#'\"()]+?)\s*=\s*(!|%)(.*)")


def _escape(text):
    """The `get_ipython()` call IPython makes of one line of IPython syntax, or None for plain Python."""
    indent, body = re.match(r"([ \t]*)(.*)", text, re.DOTALL).groups()
    body = body.rstrip()
    help_request = _HELP.fullmatch(body)
    if help_request and (help_request.group(1) or help_request.group(3)) and not (
            help_request.group(1) and help_request.group(3)):
        marks = help_request.group(1) or help_request.group(3)
        target = help_request.group(2)
        method = "pinfo2" if marks == "??" else "psearch" if "*" in target else "pinfo"
        return f"{indent}get_ipython().run_line_magic({method!r}, {target!r})"
    assign = _ASSIGN.fullmatch(body)
    if assign:
        target, escape, rest = assign.groups()
        if escape == "!":
            return f"{indent}{target} = get_ipython().getoutput({rest.strip()!r})"
        name, _, argument = rest.partition(" ")
        return f"{indent}{target} = get_ipython().run_line_magic({name!r}, {argument!r})"
    if body.startswith("!!"):
        return f"{indent}get_ipython().getoutput({body[2:].strip()!r})"
    if body.startswith("!"):
        return f"{indent}get_ipython().system({body[1:].strip()!r})"
    if body.startswith("%"):
        name, _, argument = body.lstrip("%").partition(" ")
        return f"{indent}get_ipython().run_line_magic({name!r}, {argument!r})"
    return None


class _IPythonCalls(ast.NodeTransformer):
    """Replace each statement that calls get_ipython() (there is none in the grader) with `pass`,
    and report it as the student wrote it, with the function or class it is in."""

    def __init__(self, chunk, notes):
        self.chunk, self.notes, self.scope = chunk, notes, []
        self.lines = (chunk.original if chunk.original is not None else chunk.source).splitlines()

    def visit(self, node):
        if isinstance(node, ast.stmt):
            call = _own_ipython_call(node)
            if call is not None:
                self.notes.append(self._message(node, call))
                return ast.copy_location(ast.Pass(), node)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.scope.append(node.name)
                self.generic_visit(node)
                self.scope.pop()
                return node
        return self.generic_visit(node)

    def _message(self, node, call):
        text = self.lines[node.lineno - 1].strip() if node.lineno <= len(self.lines) else "get_ipython()"
        text = text if len(text) <= 80 else text[:77] + "..."
        if self.scope:
            place = f" (in {'.'.join(self.scope)})"
        else:
            first = next((line.strip() for line in self.lines if line.strip()), "")
            shown = first if len(first) <= 60 else first[:57] + "..."
            in_cell = self.chunk.original is not None and first != text  # a .py file has no cells
            place = f" (the cell that starts with `{shown}`)" if in_cell else ""
        why = _why(call)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            why += f", so `{', '.join(ast.unparse(t) for t in targets)}` is not defined"
        return f"{self.chunk.filename}, line {node.lineno}{place}: `{text}` was not loaded: {why}."


def _own_ipython_call(statement):
    """The get_ipython() call in a statement's own expressions (not in the statements nested in it)."""
    found = None
    for name, value in ast.iter_fields(statement):
        if name in ("body", "orelse", "finalbody", "handlers", "cases"):
            continue
        for part in value if isinstance(value, list) else [value]:
            if not isinstance(part, ast.AST):
                continue
            for node in ast.walk(part):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_get_ipython(
                        node.func.value):
                    return node  # get_ipython().system(...): the call that says what it was
                if found is None and _is_get_ipython(node):
                    found = node
    return found


def _is_get_ipython(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "get_ipython"


def _why(call):
    method = call.func.attr if isinstance(call.func, ast.Attribute) else None
    first = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else ""
    if method in ("system", "getoutput"):
        return "a shell command (`!`) runs only in Jupyter"
    if method == "run_line_magic" and first in ("pinfo", "pinfo2", "psearch"):
        return "a help request (`?`) shows documentation only in Jupyter"
    if method == "run_line_magic":
        return f"the magic `%{first}` runs only in Jupyter"
    if method == "run_cell_magic":
        return f"the cell magic `%%{first}` runs only in Jupyter"
    return "get_ipython() exists only in Jupyter"


# --------------------------------------------------------------------------- loading

def _parse(chunk, problems):
    """Parse a chunk; if it has a syntax error, keep the top-level blocks that do parse."""
    try:
        with _gc_paused():  # the collector rescans a growing tree again and again: 3x slower on a 1 MB cell
            return [ast.parse(chunk.source, chunk.filename)]
    except SyntaxError as error:
        problems.append(
            f"{chunk.filename}, line {error.lineno}: SyntaxError: {error.msg}. "
            "Everything in the block around that line was skipped; fix it and run the file yourself."
        )
    except (RecursionError, MemoryError):  # an expression nested thousands of levels deep
        problems.append(
            f"{chunk.filename}: Python cannot parse this code (an expression is nested far too deeply). "
            "Only the top-level blocks that parse on their own were loaded."
        )
    trees = []
    for start, block in _top_level_blocks(chunk.source):
        try:
            tree = ast.parse(block, chunk.filename)
        except (SyntaxError, RecursionError, MemoryError):
            continue
        trees.append(ast.increment_lineno(tree, start))  # a salvaged block keeps the file's line numbers
    return trees


@contextlib.contextmanager
def _gc_paused():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _top_level_blocks(source):
    """Yield (first line offset, text) for each top-level statement group of a file."""
    lines = source.splitlines(keepends=True)
    starts = [
        index for index, line in enumerate(lines)
        if line[:1] not in ("", " ", "\t", "\n", "\r", "#", ")", "]", "}")
        and not line.startswith(("else", "elif", "except", "finally"))
        and not (index > 0 and lines[index - 1].startswith("@"))
    ]
    starts.append(len(lines))
    for begin, end in zip(starts, starts[1:]):
        yield begin, "".join(lines[begin:end])


def _defined_names(trees):
    return {
        node.name
        for tree in trees
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


# Calls that only report, harmless in a block that also defines something (`if cuda: device = ...; print(...)`).
REPORTING_CALLS = re.compile(r"(print|warnings\.warn|logging\.\w+|logger\.\w+|log\.\w+)$")


def _names_read(nodes):
    return {sub.id for node in nodes for sub in ast.walk(node)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def _assigned_names(node):
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {sub.id for target in targets for sub in ast.walk(target) if isinstance(sub, ast.Name)}


def _is_definition(node, local_names, needed=frozenset()):
    """Whether a top-level statement only defines things (and so runs at load time).

    Demo code (`ca = CausalAttention(...)`, `print(ca(batch))`, a training loop) is left out: it can be
    slow or crash and grades nothing. An assignment that calls the file's own functions runs only when
    the definitions read the name it sets (`NEG_INF = _neg_inf()`, `DEVICE = pick_device()`)."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        calls = [sub for sub in ast.walk(node) if isinstance(sub, ast.Call)]
        calls_own = any(isinstance(call.func, ast.Name) and call.func.id in local_names for call in calls)
        return not calls_own or bool(_assigned_names(node) & needed)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True  # a docstring
    if isinstance(node, ast.Try):  # handlers and `finally` run only around what the body defines
        return all(_is_definition(sub, local_names, needed) for sub in node.body + node.orelse)
    if isinstance(node, ast.If):
        guard = ast.unparse(node.test)
        if "__name__" in guard:
            return False  # the script part of the file
        branches = node.body + node.orelse
        return any(not _is_reporting(sub) for sub in branches) and all(
            _is_reporting(sub) or _is_definition(sub, local_names, needed) for sub in branches)
    return False


def _is_reporting(node):
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and REPORTING_CALLS.match(ast.unparse(node.value.func)) is not None)


def _needed_names(trees, local_names):
    """The names the file's definitions read (their bodies, defaults and decorators), and, in turn, what
    the statements that set those names read: the module-level values loading must not leave out."""
    nodes = [node for tree in trees for node in tree.body]
    needed = _names_read([node for node in nodes if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                        ast.ClassDef))])
    while True:
        kept = [node for node in nodes if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and _is_definition(node, local_names, needed)]
        more = needed | _names_read(kept)
        if more == needed:
            return frozenset(needed)
        needed = more


def _future_flags(trees):
    """Compiler flags of the file's `from __future__ import ...` lines: each statement is compiled on its own,
    and `annotations` must still apply to all of them."""
    flags = 0
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                for alias in node.names:
                    feature = getattr(__future__, alias.name, None)
                    flags |= getattr(feature, "compiler_flag", 0)
    return flags


def _describe(error):
    """`Type: message` of an exception raised by student code, whose __str__ may itself raise."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - anything, SystemExit included
        text = "(its message cannot be shown)"
    return f"{type(error).__name__}: {text[:300]}"


def load_definitions(path, module_name="attention", chunks=None):
    """Load a submission's definitions into a fresh module. Raises SubmissionError if nothing can load.

    `chunks` (from `read_chunks`) lets a worker read the file before it gives up its privileges.
    Problems come errors first (they cost marks), then the lines left out (they cost nothing)."""
    chunks = read_chunks(path) if chunks is None else chunks
    problems, skipped, parsed = [], [], []
    for chunk in chunks:
        skipped.extend(chunk.notes)
        trees = _parse(chunk, problems)
        if "get_ipython" in chunk.source:  # most cells have none: spare them the walk
            trees = [_IPythonCalls(chunk, skipped).visit(tree) for tree in trees]
        parsed += [(chunk, tree) for tree in trees]
    trees = [tree for _, tree in parsed]
    local_names = _defined_names(trees)
    needed, flags = _needed_names(trees, local_names), _future_flags(trees)
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    for chunk in chunks:  # tracebacks show the student's own lines
        text = chunk.original if chunk.original is not None else chunk.source
        linecache.cache[chunk.filename] = (len(text), None, text.splitlines(True), chunk.filename)
    # As `import` does, the module is in sys.modules while its statements run: a dataclass whose annotations are
    # strings (`from __future__ import annotations`) looks its module up there, and failed without it.
    before = sys.modules.get(module_name)
    sys.modules[module_name] = module
    try:
        _run_definitions(parsed, module, local_names, needed, flags, problems)
    finally:
        if before is None:
            sys.modules.pop(module_name, None)
        else:
            sys.modules[module_name] = before
    problems += skipped
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [f"... and {len(problems) - MAX_PROBLEMS} more problems like these."]
    return Loaded(module, problems, skipped)


def _run_definitions(parsed, module, local_names, needed, flags, problems):
    """Run each definition of `parsed` [(chunk, tree)] in `module`; a statement that raises is skipped, said in
    `problems`."""
    for chunk, tree in parsed:
        for node in tree.body:
            if isinstance(node, ast.Pass) or not _is_definition(node, local_names, needed):
                continue  # `pass` (a left-out IPython line among them) defines nothing: no need to compile it
            try:
                code = compile(ast.Module(body=[node], type_ignores=[]), chunk.filename, "exec", flags=flags,
                               dont_inherit=True)
                exec(code, module.__dict__)
            except BaseException as error:  # noqa: BLE001 - SystemExit at import must not stop loading
                if isinstance(error, KeyboardInterrupt):
                    raise
                problems.append(
                    f"{chunk.filename}, line {node.lineno}: loading this statement raised "
                    f"{_describe(error)}. It was skipped."
                )
