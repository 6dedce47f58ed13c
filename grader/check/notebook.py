"""The student's checker, run in the student's own Python: `check("masking")` in a notebook cell,
and the runner behind `python check.py` (grader.check.console).

Both run the public checks (tests/public) through the Student interface the grader uses, in this
interpreter, and print one line per step: a tick or a cross and the reason. In a notebook the
definitions checked are the kernel's globals as they are now (no need to save the file); for the
attention steps the student's attention weights are drawn beside the causal pattern they should
have, as inline SVG (no plotting library). A failure says where it happened: the function or
class and the line of the student's cell or file, never a cell number (cells are renumbered
whenever one is added).

Needs torch and numpy (IPython to draw); says so plainly when one is missing.
"""

import contextlib
import importlib
import io
import linecache
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path


class MissingPackage(ImportError):
    """A package the checker needs is not installed for this Python; IPython shows the message only."""

    def _render_traceback_(self):
        return [f"MissingPackage: {self}"]


def _require(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        raise MissingPackage(
            f"{'PyTorch' if name == 'torch' else name} is not installed for this Python ({sys.executable}). "
            "Install it into this environment (README.md, 'Install'), or pick the kernel or interpreter of the "
            "environment where you installed it, and run this again."
        ) from None


def numpy_bridge_problem(torch_module, numpy_module):
    """What is wrong when this PyTorch cannot exchange arrays with this numpy (None when it can). PyTorch 2.1 and
    2.2 were built for numpy 1.x: with numpy 2 they import, then every tensor <-> array step raises "Numpy is not
    available", and every check would fail for a correct solution and blame its shapes and types."""
    try:
        torch_module.from_numpy(numpy_module.zeros(2))
        torch_module.zeros(2).numpy()
        return None
    except (RuntimeError, TypeError, AttributeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    torch_version = str(getattr(torch_module, "__version__", "?")).split("+")[0]
    numpy_version = str(getattr(numpy_module, "__version__", "?"))
    install = f'"{sys.executable}" -m pip install "numpy<2"'
    major = numpy_version.split(".")[0]
    if major.isdigit() and int(major) >= 2:
        built = ("PyTorch before 2.3 was built for numpy 1.x" if release_tuple(torch_version) < (2, 3) else
                 "this PyTorch build was made for numpy 1.x")
        return (f"PyTorch {torch_version} cannot use numpy {numpy_version} ({reason}): {built}. Fix it with one "
                f"command, then run this again (in a notebook: restart the kernel first):\n    {install}")
    return (f"PyTorch {torch_version} cannot exchange arrays with numpy {numpy_version} ({reason}). Reinstall numpy "
            f"into this environment ({sys.executable} -m pip install --force-reinstall numpy), then run this again.")


def release_tuple(version):
    """(2, 2) for "2.2.2+cpu": the release's first two numbers ((0, 0) when unreadable)."""
    parts = [int(part) for part in re.findall(r"\d+", version)[:2]]
    return tuple(parts) if len(parts) == 2 else (0, 0)


class BrokenPackages(MissingPackage):
    """PyTorch and numpy are installed but do not work together; the message says the command that fixes it."""


def _require_quietly(name):
    """`_require(name)` with what the import prints held back: (module, what it wrote to stderr, its warnings).
    Under numpy 2, a PyTorch built for numpy 1.x prints a page of numpy's (a traceback-like notice and a
    UserWarning) while it imports, above the one line that says the command that fixes it."""
    held = io.StringIO()
    with contextlib.redirect_stderr(held), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        module = _require(name)
    return module, held.getvalue(), caught


def _said_again(text, caught):
    """Print what an import held back, as it would have been printed (the pair works: nothing is hidden)."""
    if text:
        sys.stderr.write(text)
    for found in caught:
        warnings.warn_explicit(found.message, found.category, found.filename, found.lineno)  # the filters apply


torch, _held, _caught = _require_quietly("torch")
_numpy = _require("numpy")  # grader.check.wire needs it: say so here rather than in a traceback deep inside
with warnings.catch_warnings():  # PyTorch's own warning about numpy says less than the message below
    warnings.simplefilter("ignore")
    _problem = numpy_bridge_problem(torch, _numpy)
if _problem:
    raise BrokenPackages(_problem)
_said_again(_held, _caught)

from grader.chapter import BY_KEY, STEP_KEYS, step_of_name  # noqa: E402 - after the clear message on a missing package
from grader.check.causes import CAUSES  # noqa: E402
from grader.check.loader import load_definitions, read_chunks  # noqa: E402
from grader.check.runner import run_test  # noqa: E402
from grader.check.session import Session  # noqa: E402
from grader.check.student import InProcessTransport, Student  # noqa: E402
from grader.check.suite import discover  # noqa: E402
from grader.check.testing import seeded, weights_picture  # noqa: E402
from grader.paths import TESTS  # noqa: E402
from grader.text import html as esc  # noqa: E402

PUBLIC_ONLY = ("public checks only: the course's grader also runs hidden ones, so passing them all is a good sign, "
               "not a guarantee")


# --- where a failure happened in the student's code -----------------------------------------------------------
def qualified_name(frame):
    """`CausalAttention.forward` for a method, `causal_mask` for a function (Python 3.10 has no co_qualname)."""
    code = frame.f_code
    name = getattr(code, "co_qualname", None)
    if name:
        return name
    owner = frame.f_locals.get("self")
    return f"{type(owner).__name__}.{code.co_name}" if owner is not None else code.co_name


def student_location(traceback, place_of):
    """'CausalAttention.forward, line 12 of its cell: <the line>' for the innermost frame of the
    student's code in `traceback`; `place_of(filename)` says "of its cell" or "of attention.py"
    for the student's code and None for anything else (torch, the checker)."""
    found = None
    while traceback is not None:
        place = place_of(traceback.tb_frame.f_code.co_filename)
        if place:
            found = (traceback, place)
        traceback = traceback.tb_next
    if found is None:
        return ""
    traceback, place = found
    source = linecache.getline(traceback.tb_frame.f_code.co_filename, traceback.tb_lineno).strip()
    where = f"{qualified_name(traceback.tb_frame)}, line {traceback.tb_lineno} {place}"
    return f"{where}: {source}" if source else where


def _noting_where(operation):
    def run(self, request):
        try:
            return operation(self, request)
        except BaseException as error:  # noqa: BLE001 - noted, then handled by Session.handle as ever
            self.where = student_location(error.__traceback__, self.place_of)
            raise

    return run


class LocatingSession(Session):
    """A Session whose error answers name the student's function or class and the line of its
    cell or file: the grader's Session knows files only, and a notebook kernel's cells are not files."""

    def __init__(self, module, device, place_of):
        super().__init__(module, device)
        self.place_of = place_of
        self.where = ""

    def handle(self, request):
        self.where = ""
        answer = super().handle(request)
        if answer.get("ok") is not True and self.where:
            answer["error"]["location"] = self.where
        return answer


for _name, _operation in list(vars(Session).items()):  # every operation, those added later included
    if _name.startswith("op_"):
        setattr(LocatingSession, _name, _noting_where(_operation))
del _name, _operation


def kernel_place(filename):
    """IPython compiles each cell as its own file (it keeps their names), like /tmp/ipykernel_<pid>/<hash>.py
    in Jupyter, VS Code and Colab, or <ipython-input-<n>-<hash>> with older IPython."""
    if (filename in ipython_cell_files() or filename.startswith("<ipython-input-")
            or re.search(r"ipykernel_\d+[\\/]\w+\.py$", filename)):
        return "of its cell"
    return None


def ipython_cell_files():
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    return getattr(getattr(get_ipython(), "compile", None), "_filename_map", None) or {}


class NamespaceModule:
    """A notebook's globals seen as a module, as Session expects; writes go to the globals, so a
    wrapper's check can build it with stand-in heads for the notebook's own CausalAttention."""

    def __init__(self, namespace):
        object.__setattr__(self, "_namespace", namespace)

    def __getattr__(self, name):
        try:
            return self._namespace[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self._namespace[name] = value


# --- loading a file (python check.py) ----------------------------------------------------------------------------
def cells_by_content(chunks):
    """The loader names a notebook's cells by number ("attention.ipynb, cell 7"); a student sees no
    numbers: name each by what it defines instead ("attention.ipynb, the cell defining causal_mask")."""
    used = set()
    for chunk in chunks:
        file = chunk.filename.split(", cell ")[0]
        text = getattr(chunk, "original", None) or chunk.source  # as the student wrote it
        names = re.findall(r"^(?:def|class)\s+(\w+)", text, flags=re.M)
        first = next((line.strip() for line in text.splitlines() if line.strip()
                      and not line.lstrip().startswith("#")), "")
        label = base = (f"{file}, the cell defining {names[0]}" if names
                        else f"{file}, the cell starting `{first[:40]}`")
        number = 2
        while label in used:  # two cells alike: linecache needs one name per cell
            label, number = f"{base} ({number})", number + 1
        used.add(label)
        numbered = re.compile(re.escape(chunk.filename) + r"(?!\d)")
        if hasattr(chunk, "notes"):  # what reading the cell left out, said with its number
            chunk.notes = [numbered.sub(label, note) for note in chunk.notes]
        chunk.filename = label
    return chunks


def file_student(path, device="cpu"):
    """(Student over the definitions of a .py or .ipynb loaded here, the loader's problems)."""
    path = Path(path)
    chunks = read_chunks(path)
    if path.suffix == ".ipynb":
        chunks = cells_by_content(chunks)
    names = {chunk.filename for chunk in chunks}
    place = "of its cell" if path.suffix == ".ipynb" else f"of {path.name}"
    loaded = load_definitions(path, chunks=chunks)
    session = LocatingSession(loaded.module, device, lambda filename: place if filename in names else None)
    return Student(InProcessTransport(session), device), loaded.problems


# --- running and reporting steps ---------------------------------------------------------------------------------
@dataclass
class StepResult:
    key: str
    verdicts: list  # (test name, passed, message)

    @property
    def passed(self):
        return all(passed for _, passed, _ in self.verdicts)

    @property
    def not_implemented(self):
        failed = [message for _, passed, message in self.verdicts if not passed]
        return bool(failed) and all("not implemented yet" in message for message in failed)


def marks(stream):
    """(pass, fail) marks this output can print: a Windows console may not encode ✓ and ✗."""
    try:
        "✓✗".encode(getattr(stream, "encoding", None) or "utf-8")
        return "✓", "✗"
    except (UnicodeEncodeError, LookupError):
        return "PASS", "FAIL"


def public_tests():
    return discover(TESTS, kinds=("public",))


def run_steps(student, keys, tests=None):
    """[StepResult] of the public checks of `keys` on `student`; what the student's code prints and
    warns goes nowhere (it would bury the verdicts), and each check runs seeded, as when graded."""
    tests = public_tests() if tests is None else tests
    results = []
    for key in keys:
        verdicts = []
        for test in (test for test in tests if test.step == key):
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()), seeded(0):
                warnings.simplefilter("ignore")
                details = {}
                passed, message = run_test(test, student, details)
            verdicts.append((test.name.partition(": ")[2], passed, with_location(message, details)))
        results.append(StepResult(key, verdicts))
    return results


def with_location(message, details):
    """The failure's message, saying where the student's code raised even when the check's diagnosis
    rewrote the message (the location travels in the failure's details too)."""
    location = (details.get("error") or {}).get("location") if isinstance(details.get("error"), dict) else None
    if message and location and location not in message:
        return f"{message}\n  at {location}"
    return message


def names_a_cause(message):
    """Whether a check's message names one of the fault model's causes (its title, as testing.explain writes it)."""
    return any(cause.title in message for cause in CAUSES.values())


def step_lines(result, mark_pass="✓", mark_fail="✗"):
    """A step's line: its mark, number, key and the reason; the reason's other lines (where it
    happened, a hint) indented below it."""
    step = BY_KEY[result.key]
    head = f"{mark_pass if result.passed else mark_fail} {step.number}. {step.key:<20}"
    total = len(result.verdicts)
    if result.passed:
        return [f"{head} {total}/{total} checks passed"]
    if result.not_implemented:
        return [f"{head} not implemented yet"]
    failed = [(name, message) for name, passed, message in result.verdicts if not passed]
    # The one line shown: a check that names the cause, else a real mistake (a step half done: before a "not
    # implemented yet"). Checks see different probes: the first to fail may only say which properties failed.
    mistakes = [item for item in failed if "not implemented yet" not in item[1]]
    name, message = next((item for item in mistakes if names_a_cause(item[1])), (mistakes or failed)[0])
    first, *rest = [line.strip() for line in (message.strip() or "failed").splitlines() if line.strip()]
    return ([f"{head} {first}", *(f"    {line}" for line in rest)]
            + [f"    ({len(failed)} of {total} checks failed; this one: {name})"])


def summary_line(results):
    passed = sum(result.passed for result in results)
    if passed == len(results) > 1:
        return "All steps pass the public checks."
    return f"{passed} of {len(results)} steps pass." if len(results) > 1 else ""


def check_file(path, keys, device="cpu", stream=None):
    """`python check.py`: run the public checks of `keys` on a file, print a line per step;
    [StepResult] (None when the file cannot be loaded at all)."""
    from grader.check.loader import SubmissionError

    stream = stream or sys.stdout
    mark_pass, mark_fail = marks(stream)
    try:
        student, problems = file_student(path, device)
    except SubmissionError as error:
        print(f"{mark_fail} {error}", file=stream)
        return None
    for problem in problems:
        print(f"  note: {problem}", file=stream)
    results = run_steps(student, keys)
    for result in results:
        print("\n".join(step_lines(result, mark_pass, mark_fail)), file=stream)
    return results


def device_problem(device):
    """Why checks cannot run on `device` here, or None."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError):  # "tpu", "gpu", "cuda:x": torch's own message is a traceback
        return f"{device!r} is not a device this checker knows: use cpu (the default), cuda, cuda:N or mps"
    if kind not in ("cpu", "cuda", "mps"):
        return f"the checks run on cpu, cuda or mps, not {kind}"
    if kind == "cuda" and not torch.cuda.is_available():
        return "CUDA is not available to this PyTorch; leave out device (checks run on the CPU)"
    if kind == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        return "Apple's MPS is not available to this PyTorch; leave out device (checks run on the CPU)"
    return None


# --- in a notebook -----------------------------------------------------------------------------------------------
# name -> what went wrong the last time the cell defining it ran (None: it ran), from IPython's post_run_cell.
FAILED_CELLS = {}
DEFINED = re.compile(r"^(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)


def note_cell(result):
    """IPython's post_run_cell callback: for each top-level def or class of the cell, whether the cell failed
    to run (a SyntaxError, or an exception while defining). The kernel keeps the definition from before such a
    run; the check then reports the failure instead of checking that stale definition."""
    info = getattr(result, "info", None)
    source = getattr(info, "raw_cell", None) or ""
    error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
    said = None
    if error is not None:
        said = f"{type(error).__name__}: {error}".strip().splitlines()[0][:200]
        if isinstance(error, NotImplementedError):
            return  # a demo cell calling a stub: no definition went stale
    for name in DEFINED.findall(source):
        FAILED_CELLS[name] = said


def watch_cells():
    """Follow the runs of the notebook's cells (in IPython; elsewhere nothing to follow)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and note_cell not in shell.events.callbacks.get("post_run_cell", []):
        shell.events.register("post_run_cell", note_cell)
        # A stub's NotImplementedError (a demo cell run before its step is done) is one line, not a traceback.
        shell.set_custom_exc((NotImplementedError,), not_implemented_yet)


def not_implemented_yet(shell, etype, value, tb, tb_offset=None):
    """IPython's handler for NotImplementedError: the stub's own message, without a traceback."""
    print(f"not implemented yet: {value}" if str(value) else "not implemented yet")


def stale_steps(keys):
    """{step: message} for the steps one of whose definitions comes from a cell whose last run failed."""
    stale = {}
    for key in keys:
        failed = [(name, FAILED_CELLS[name]) for name in BY_KEY[key].names if FAILED_CELLS.get(name)]
        if failed:
            name, error = failed[0]
            stale[key] = (f"the cell defining {name} failed to run ({error}); fix it and run it again (the "
                          f"kernel still holds {name} from before, so checking it would check other code)")
    return stale


def ready(release):
    """The setup cell's greeting: where the checker is and how to use it."""
    watch_cells()
    print(f"Checker ready (from {release}; PyTorch {torch.__version__}, checks run on the CPU).\n"
          f'After each step, run its check cell: check("{STEP_KEYS[0]}"), ... check() checks every step.')


def check(step=None, device="cpu", namespace=None):
    """Run the public checks of `step` (every step when None) on this notebook's definitions as they
    are now; print a line per step and, for the attention steps, draw the attention weights."""
    namespace = sys._getframe(1).f_globals if namespace is None else namespace
    steps = list(step) if isinstance(step, (list, tuple)) else [step] if step else []  # check(["masking", ...])
    unknown = [key for key in steps if not isinstance(key, str) or key not in BY_KEY]
    if unknown:
        print(f"unknown step {unknown[0]!r}; the steps are: {', '.join(STEP_KEYS)}")
        return
    problem = device_problem(device)
    if problem:
        print(problem)
        return
    keys = steps or list(STEP_KEYS)
    print("Checking this notebook's definitions as they are now (run a cell again after you change it); "
          "public checks only: the course's grader also runs hidden ones.")
    student = Student(InProcessTransport(LocatingSession(NamespaceModule(namespace), device, kernel_place)), device)
    stale = stale_steps(keys)
    results = run_steps(student, [key for key in keys if key not in stale])
    results += [StepResult(key, [("its cell ran", False, message)]) for key, message in stale.items()]
    results.sort(key=lambda result: keys.index(result.key))
    for result in results:
        print("\n".join(step_lines(result)))
    if summary_line(results):
        print(summary_line(results))
    figures = [figure for result in results if not result.not_implemented
               for figure in [weights_figure(result.key, namespace)] if figure]
    show_html("".join(figures))


def show_html(markup):
    if not markup:
        return
    try:
        from IPython.display import HTML, display
    except ImportError:  # a plain Python calling check(): the text above is the whole answer
        return
    display(HTML(markup))


# --- the picture: the student's attention weights beside the causal pattern --------------------------------------
TOKENS = 6  # a small picture: 6 query tokens by 6 keys
D_IN, D_OUT, CONTEXT = 4, 3, 8  # all different, and a context longer than the sequence (the mask is sliced)
MASKING_FUNCTION = "causal_attention_weights"  # drawn on random scores
MODULES = {  # class -> (constructor arguments, keyword arguments): drawn from the weights reaching its dropout
    "CausalAttention": ((D_IN, D_OUT, CONTEXT, 0.0), {}),
    "MultiHeadAttentionWrapper": ((D_IN, D_OUT, CONTEXT, 0.0), {"num_heads": 2}),
    "MultiHeadAttention": ((D_IN, 2 * D_OUT, CONTEXT, 0.0), {"num_heads": 2}),
}
# step key -> the function or class its picture draws; the steps come from grader.chapter, which alone names them
PICTURED = {step_of_name(name).key: name for name in (MASKING_FUNCTION, *MODULES)}


def student_weights(key, namespace):
    """(an (n, n) matrix of the student's attention weights, what it is) for an attention step,
    or (None, why not). Modules are run in eval mode; the weights are what reaches their first
    nn.Dropout, where the chapter applies dropout to the attention weights."""
    if PICTURED[key] == MASKING_FUNCTION:
        with seeded(3):
            scores = torch.randn(TOKENS, TOKENS) * 2
        weights = namespace[MASKING_FUNCTION](scores, D_IN)
        return weights, f"{MASKING_FUNCTION} on random {TOKENS}x{TOKENS} scores"
    name = PICTURED[key]
    args, kwargs = MODULES[name]
    with seeded(0):
        module = namespace[name](*args, **kwargs)
        x = torch.randn(2, TOKENS, D_IN)
    seen = []
    hooks = [sub.register_forward_hook(lambda _, inputs, __: seen.append(inputs[0]))
             for sub in module.modules() if isinstance(sub, torch.nn.Dropout)]
    try:
        module.eval()
        with torch.no_grad():
            module(x)
    finally:
        for hook in hooks:
            hook.remove()
    square = next((value for value in seen if isinstance(value, torch.Tensor) and value.dim() >= 2
                   and tuple(value.shape[-2:]) == (TOKENS, TOKENS)), None)
    if square is None:
        return None, (f"{name} passed no {TOKENS}x{TOKENS} attention weights through an nn.Dropout, so they "
                      "cannot be drawn (the chapter applies self.dropout to the attention weights)")
    what = "head 0 of " if kwargs.get("num_heads") else ""
    return square, f"{what}{name} on {TOKENS} tokens (sequence 0), the weights passed to its dropout"


def weights_figure(key, namespace):
    """HTML: the student's weights beside the expected causal pattern, or a line saying why not; ""
    for a step without attention weights or whose code does not run (its check line says why)."""
    if key not in PICTURED:
        return ""
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            weights, what = student_weights(key, namespace)
    except Exception:  # noqa: BLE001 - the check's own line already says what went wrong
        return ""
    if weights is None:
        return f'<p style="font-size:13px">{esc(what)}</p>'
    if not isinstance(weights, torch.Tensor) or weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        return ""
    matrix = weights.detach().cpu().double()
    while matrix.dim() > 2:
        matrix = matrix[0]
    return heatmaps_html(weights_picture(matrix, what, causal=True), BY_KEY[key].title)


LEAK, BAD_ROW, RIGHT, MUTED = "#d62728", "#ff7f0e", "#1b5e20", "#666666"
CELL = 30  # pixels a side: a small picture


def weight_text(value):
    if value is None:
        return "NaN"
    return f"{value:.2f}".replace("0.", ".", 1) if abs(value) < 9.995 else f"{value:.0e}"


def blue(value, top):
    """White to dark blue as `value` goes from 0 to `top`; grey for NaN."""
    if value is None:
        return "#bbbbbb"
    share = min(1.0, max(0.0, abs(value) / top))
    return "#" + "".join(f"{round(255 + (dark - 255) * share):02x}" for dark in (0x08, 0x51, 0x9c))


def grid_svg(title, cells, n, sums, outlines):
    """One titled n x n grid: cells[i][j] = (fill, text, ink, tooltip), sums written right of each row."""
    left, top = 22, 24
    parts = [f'<text x="0" y="14" font-size="13" font-weight="bold">{esc(title)}</text>']
    for i in range(n):
        parts.append(f'<text x="{left - 5}" y="{top + i * CELL + CELL / 2}" font-size="10" text-anchor="end" '
                     f'dominant-baseline="central" fill="{MUTED}">{i}</text>')
        for j in range(n):
            fill, label, ink, tip = cells[i][j]
            x, y = left + j * CELL, top + i * CELL
            parts.append(f'<rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{fill}" stroke="#ffffff">'
                         f"<title>{esc(tip)}</title></rect>"
                         f'<text x="{x + CELL / 2}" y="{y + CELL / 2}" font-size="9.5" text-anchor="middle" '
                         f'dominant-baseline="central" fill="{ink}">{esc(label)}</text>')
        text, colour = sums[i]
        parts.append(f'<text x="{left + n * CELL + 5}" y="{top + i * CELL + CELL / 2}" font-size="10" '
                     f'dominant-baseline="central" fill="{colour}">{esc(text)}</text>')
    parts.extend(outlines(left, top))
    width, height = left + n * CELL + 52, top + n * CELL + 4
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" role="img" '
            f'aria-label="{esc(title)}">{"".join(parts)}</svg>')


def heatmaps_html(picture, step_title):
    """The student's weights (red squares: weight on a future token; dashed orange: a row that does not
    sum to one) beside the expected pattern: zero above the diagonal, rows summing to one."""
    values, n = picture["values"], len(picture["values"])
    # Shaded against the largest weight, so that zeros stand out even when every weight is small.
    top = max([1e-9] + [abs(v) for row in values for v in row if v is not None])
    leaks, bad = picture["leaks"], set(picture["bad_rows"])
    mine = [[(blue(v, top), weight_text(v), "#ffffff" if v is not None and abs(v) / top > 0.55 else "#222222",
              f"query {i}, key {j}: {'NaN' if v is None else f'{v:.4g}'}") for j, v in enumerate(row)]
            for i, row in enumerate(values)]
    sums = [(f"Σ={weight_text(s)}", LEAK if i in bad else "#333333") for i, s in enumerate(picture["row_sums"])]

    def mine_outlines(left, top_):
        marks_ = [f'<rect x="{left + j * CELL + 3}" y="{top_ + i * CELL + 3}" width="{CELL - 6}" height="{CELL - 6}" '
                  f'fill="none" stroke="{LEAK}" stroke-width="2.5"><title>query {i} gives weight to the future '
                  f"key {j}</title></rect>" for i, j in leaks]
        marks_ += [f'<rect x="{left + 1.5}" y="{top_ + i * CELL + 1.5}" width="{n * CELL - 3}" height="{CELL - 3}" '
                   f'fill="none" stroke="{BAD_ROW}" stroke-width="2.5" stroke-dasharray="6 3"><title>row {i} does '
                   f"not sum to one</title></rect>" for i in sorted(bad)]
        return marks_

    expected = [[("#f7fcf5", "0", "#999999", "a future key: weight 0") if j > i else
                 ("#98d594", "≥0", RIGHT, "a key at or before the query: some weight") for j in range(n)]
                for i in range(n)]
    verdicts = []
    if leaks:
        verdicts.append(f'<span style="color:{LEAK}">{len(leaks)} weight(s) on future tokens (red squares)</span>')
    if bad:
        verdicts.append(f'<span style="color:{LEAK}">{len(bad)} row(s) do not sum to one (dashed)</span>')
    if not verdicts:
        verdicts.append(f'<span style="color:{RIGHT}">the future is hidden and every row sums to one</span>')
    return ('<div style="margin:6px 0 12px 0">'
            f'<div style="font-size:13px;margin-bottom:4px"><b>{esc(step_title)}</b>: '
            f'{esc(picture["what"])}; rows are query tokens, columns the keys they attend to. '
            f'{"; ".join(verdicts)}.</div>'
            '<div style="display:flex;gap:28px;flex-wrap:wrap;align-items:flex-start">'
            f"{grid_svg('your attention weights', mine, n, sums, mine_outlines)}"
            f"{grid_svg('expected pattern (causal)', expected, n, [('Σ=1', RIGHT)] * n, lambda *_: [])}"
            "</div></div>")
