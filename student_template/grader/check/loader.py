"""Read a submission (.py or .ipynb) and load its definitions into a module.

Only definitions run at load time: imports, functions, classes and simple
assignments. Demo code (prints, example calls, loops, `if __name__ == ...`)
is skipped, so a hang or crash in a demo line never costs a step, and a
broken statement costs only itself: every problem is reported, the rest loads.
"""

import ast
import json
import linecache
import os
import stat
import types
from dataclasses import dataclass, field
from pathlib import Path

MAX_SOURCE_BYTES = 1_000_000
MAX_PROBLEMS = 20  # a file with thousands of broken lines gets a readable report, not thousands of lines
PYTHON_KERNELS = ("python", "python3", "python2", "ipython", "ipython3")


class SubmissionError(Exception):
    """The file cannot be graded at all; the message says why and what to do."""


@dataclass
class Chunk:
    source: str
    filename: str  # what tracebacks show: "attention.py" or "attention.ipynb, cell 4"


@dataclass
class Loaded:
    module: types.ModuleType
    problems: list = field(default_factory=list)  # teaching messages about skipped or failed code


def read_chunks(path):
    """Split a submission into code chunks (the file, or one per notebook cell)."""
    path = Path(path)
    # Look before reading: a huge file, a device or a pipe must cost neither memory nor time.
    with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SubmissionError(f"{path.name} is not a regular file; submit your .py or .ipynb.")
        raw = b"" if info.st_size > MAX_SOURCE_BYTES else stream.read(MAX_SOURCE_BYTES + 1)
    if info.st_size > MAX_SOURCE_BYTES or len(raw) > MAX_SOURCE_BYTES:
        raise SubmissionError(
            f"{path.name} is {max(info.st_size, len(raw)) / 1e6:.1f} MB; a solution is a few kB of code. "
            "Remove pasted data or outputs and submit the source only."
        )
    if not raw.strip():
        raise SubmissionError(f"{path.name} is empty: save your work and submit the file again.")
    if b"\x00" in raw:
        raise SubmissionError(f"{path.name} is not a text file (it contains binary data); submit your .py or .ipynb.")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SubmissionError(
            f"{path.name} is not UTF-8 text (byte {error.start} cannot be decoded); "
            "save it with UTF-8 encoding and submit again."
        ) from None
    if path.suffix == ".ipynb":
        return _notebook_chunks(path.name, text)
    return [Chunk(text, path.name)]


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
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise SubmissionError(f"{name} is not a Jupyter notebook (no list of cells); submit the .ipynb saved by Jupyter.")
    metadata = _mapping(notebook.get("metadata"))
    language = (_mapping(metadata.get("kernelspec")).get("language")
                or _mapping(metadata.get("language_info")).get("name") or "python")
    if str(language).lower() not in PYTHON_KERNELS:
        raise SubmissionError(
            f"{name} uses a {str(language)[:40]!r} kernel; this exercise is Python. "
            "Switch the kernel to Python 3, re-run, save and submit."
        )
    chunks = []
    for index, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(line for line in source if isinstance(line, str))
        if not isinstance(source, str):
            continue  # not code a notebook can hold
        chunks.append(Chunk(_strip_ipython(source), f"{name}, cell {index}"))
    return chunks


def _mapping(value):
    """Notebook metadata as saved by Jupyter is a dict; anything else counts as empty."""
    return value if isinstance(value, dict) else {}


def _strip_ipython(source):
    """Comment out IPython-only lines (magics, shell escapes, `?` help) so the cell parses."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("%", "!")) or (stripped.endswith("?") and not stripped.startswith("#")):
            line = line[: len(line) - len(stripped)] + "pass  # " + stripped
        lines.append(line)
    return "\n".join(lines) + "\n"


def _parse(chunk, problems):
    """Parse a chunk; if it has a syntax error, keep the top-level blocks that do parse."""
    try:
        return [(ast.parse(chunk.source, chunk.filename), 0)]
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
            trees.append((ast.parse(block, chunk.filename), start))
        except (SyntaxError, RecursionError, MemoryError):
            continue
    return trees


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
        for tree, _ in trees
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }


def _is_definition(node, local_names):
    """Whether a top-level statement only defines things (and so runs at load time)."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        calls = [sub for sub in ast.walk(node) if isinstance(sub, ast.Call)]
        return not any(isinstance(call.func, ast.Name) and call.func.id in local_names for call in calls)
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True  # a docstring
    if isinstance(node, ast.Try):
        bodies = node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
        return all(_is_definition(sub, local_names) for sub in bodies)
    if isinstance(node, ast.If):
        guard = ast.unparse(node.test)
        if "__name__" in guard:
            return False  # the script part of the file
        return all(_is_definition(sub, local_names) for sub in node.body + node.orelse)
    return False


def _describe(error):
    """`Type: message` of an exception raised by student code, whose __str__ may itself raise."""
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - anything, SystemExit included
        text = "(its message cannot be shown)"
    return f"{type(error).__name__}: {text[:300]}"


def load_definitions(path, module_name="attention", chunks=None):
    """Load a submission's definitions into a fresh module. Raises SubmissionError if nothing can load.

    `chunks` (from `read_chunks`) lets a worker read the file before it gives up its privileges."""
    chunks = read_chunks(path) if chunks is None else chunks
    problems = []
    parsed = [(chunk, tree, offset) for chunk in chunks for tree, offset in _parse(chunk, problems)]
    local_names = _defined_names([(tree, offset) for _, tree, offset in parsed])
    module = types.ModuleType(module_name)
    module.__file__ = str(path)
    for chunk in chunks:
        linecache.cache[chunk.filename] = (len(chunk.source), None, chunk.source.splitlines(True), chunk.filename)
    for chunk, tree, offset in parsed:
        for node in tree.body:
            if not _is_definition(node, local_names):
                continue
            if offset:  # a block salvaged from a file with a syntax error
                ast.increment_lineno(node, offset)
            try:
                exec(compile(ast.Module(body=[node], type_ignores=[]), chunk.filename, "exec"), module.__dict__)
            except BaseException as error:  # noqa: BLE001 - SystemExit at import must not stop loading
                if isinstance(error, KeyboardInterrupt):
                    raise
                problems.append(
                    f"{chunk.filename}, line {node.lineno}: loading this statement raised "
                    f"{_describe(error)}. It was skipped."
                )
    if len(problems) > MAX_PROBLEMS:
        problems[MAX_PROBLEMS:] = [f"... and {len(problems) - MAX_PROBLEMS} more problems like these."]
    return Loaded(module, problems)
