"""Cohort integrity: pairs of submissions that share more than the book explains, ranked by evidence.

After a bulk grade, OUT/integrity.html and OUT/integrity.csv list every pair of
students with some evidence of shared work, highest score first. Three signals,
each computed and shown on its own; none is proof (docs/integrity.md):

  code       fingerprints of the code (copydetect's k-grams, names normalised as MOSS does) that the
             two files share, once the starter code, the chapter's listings and the reference solution
             are removed as boilerplate, each weighted by how rare it is in the cohort;
  behaviour  the same wrong output on the same checks (hidden or visible), weighted by how few other
             submissions fail that check with that exact output;
  details    identical unusual names, comments, string literals or commented-out code that few others have.

The score mixes them with fixed weights; the threshold above which a pair is flagged was measured
on a cohort of independently written solutions and disguised copies (tests/kit/integrity_cohort/).
The page reads OUT/results/*.json (for behaviour) and the submitted files (for code and details).
"""

import ast
import builtins
import csv
import functools
import importlib.util
import io
import json
import keyword
import math
import re
import sys
import time
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import quote

from grader.check.causes import CAUSES
from grader.check.loader import SubmissionError, read_chunks
from grader.feedback.integrity_ast import structure_prints
from grader.outfiles import write_atomic
from grader.paths import CHAPTER_TEXT, ROOT, SOLUTION
from grader.results import SubmissionResult, as_result
from grader.text import csv_row
from grader.text import html as esc

STARTERS = (ROOT / "exercises" / "attention.py", ROOT / "exercises" / "attention.ipynb")  # what students start from
PUBLIC_CORPORA = Path(__file__).parent / "public_corpora"  # the chapter's public write-ups, as boilerplate
PUBLIC_NAMES = ("the book's bonus notebook", "the Annotated Transformer", "Karpathy's lecture", "nanoGPT and minGPT",
                "d2l", "Hugging Face GPT-2 attention", "PyTorch's SDPA reference")  # public_corpora/README.md
K = 25  # characters of normalised code per fingerprint: copydetect's default noise threshold (about one statement)
COMMON = 10  # a fingerprint, output or detail found in more submissions than this is common knowledge (MOSS's -m)
OWN_FLOOR = 150  # fingerprints: a file with less own code than this is compared as if it had this much
BEHAVIOUR_FULL = 3.0  # rarity-weighted shared wrong outputs that make the behaviour signal 1
DETAILS_FULL = 4.0  # rarity-weighted shared unusual details that make the details signal 1
WEIGHTS = {"code": 0.6, "behaviour": 0.25, "details": 0.15}
THRESHOLD = 0.30  # from the null model of honest work (integrity_null.py): see docs/integrity.md
NULL_RATE = 2.2e-6  # P(an honest pair scores above THRESHOLD): the null model's fitted tail, docs/integrity.md
KNOWN_MISTAKE = 0.2  # weight of a shared wrong output that names a mistake of the fault catalogue (common by nature)
TOKEN_SUPPORT = 2.0  # token evidence counts up to this multiple of the structure evidence (Pair.code)
STRUCTURE_FLOOR = 100  # structure fingerprints: a file with fewer of its own is compared as if it had this many
MAX_CODE = 200_000  # characters compared per file: a solution is 5-15 kB; pasted data only costs time
SHOWN_PAIRS = 15  # pairs with a side-by-side view on the page (the flagged ones and the next highest)
MIN_COMMENT, MIN_STRING = 15, 12  # characters: shorter ones are too common to mean anything
COINED = re.compile(r"[a-z][_0-9A-Z]|[A-Za-z][_0-9]")  # names put together (p_attn, headDim, w2), not plain words
# Python's token classes, as the stdlib tokenizer tells them apart (tests/kit/test_integrity.py compares the two).
ESCAPE = r"\\[\s\S]"  # a backslash and any character, a newline included
# An unterminated string runs to the end of its line (of the file, for ''' and """), as one token: each
# opening quote is then read once, so no file, however hostile, costs more than one pass.
QUOTED = "|".join((rf"'''(?:{ESCAPE}|[^\\])*?(?:'''|\Z)", rf'"""(?:{ESCAPE}|[^\\])*?(?:"""|\Z)',
                   rf"'(?:{ESCAPE}|[^\\'\n])*(?:'|(?=\n)|\Z)", rf'"(?:{ESCAPE}|[^\\"\n])*(?:"|(?=\n)|\Z)'))
TOKEN = re.compile("|".join((
    r"(?P<comment>#[^\r\n]*)",
    r"(?P<string>[rRbBuUfF]{0,2}(?:" + QUOTED + "))",
    r"(?P<name>[^\W\d]\w*)",
    r"(?P<number>0[xXoObB][\da-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?[jJ]?)",
    r"(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|\.\.\.|[-+*/%&|^@=<>!]=|[-+*/%&|^@~<>=.,:;()\[\]{}])",
)))  # whitespace and line continuations match nothing: finditer steps over them
KEPT_NAMES = set(keyword.kwlist) | set(dir(builtins)) | {"self", "cls"}
NOT_IMPLEMENTED = re.compile(r"not implemented yet|NotImplementedError")
Token = tuple[str | None, str, int]  # (kind: comment, string, name, number or op; text; start in the code)
Place = tuple[str, int, int]  # (function, first line, last line) in a file
Failure = tuple[str, str, str, str]  # (check, visibility, output, known mistake or GENERIC or "")
Shared = list[tuple[Any, int]]  # (item, how many submissions have it)
Sources = dict[str, str] | Iterable[tuple[str, Path | None]] | None  # class_code's input


@dataclass
class Student:
    name: str
    code: str = ""  # the submitted code (a notebook's code cells joined), "" when unreadable or not given
    found: list[Token] = field(default_factory=list)  # tokens(code)
    own: set[int] = field(default_factory=set)  # the code's fingerprints, less the boilerplate's
    structure: dict[str, Place] = field(default_factory=dict)  # syntax-tree fingerprint -> where, less boilerplate
    failures: dict[str, Failure] = field(default_factory=dict)  # signature -> (check, visibility, output, known)
    details: dict[str, str] = field(default_factory=dict)  # key -> what to show


@dataclass
class Pair:
    a: Student
    b: Student
    tokens: float = 0.0  # token fingerprints in common
    structure: float = 0.0  # syntax-tree fingerprints in common (names, equivalent idioms and order normalised)
    behaviour: float = 0.0
    details: float = 0.0
    shared_prints: int = 0
    shared_structure: Shared = field(default_factory=list)  # (fingerprint, how many submissions have it)
    shared_failures: Shared = field(default_factory=list)  # (signature, how many submissions have it)
    shared_details: Shared = field(default_factory=list)

    @property
    def code(self) -> float:
        """The code signal: structure, or tokens as far as structure backs them (at most TOKEN_SUPPORT times
        it). Structure keeps a renamed, reworded, reordered copy; tokens also change when a student types a
        public write-up with other brackets, line breaks or order, so tokens that structure (which removes the
        write-ups' idioms in every equivalent form) does not confirm are most likely public code."""
        return max(self.structure, min(self.tokens, TOKEN_SUPPORT * self.structure))

    @property
    def score(self) -> float:
        return (WEIGHTS["code"] * self.code + WEIGHTS["behaviour"] * self.behaviour
                + WEIGHTS["details"] * self.details)

    @property
    def flagged(self) -> bool:
        return self.score > THRESHOLD


# --- reading code --------------------------------------------------------------------------------------------------
def read_code(path: str | Path) -> str:
    """The code of a .py or .ipynb submission (cells joined; its first MAX_CODE characters), or "" when it
    cannot be read."""
    try:
        return "\n".join(chunk.source for chunk in read_chunks(path))[:MAX_CODE]
    except (SubmissionError, OSError, ValueError, RecursionError, MemoryError):  # one file, never the report
        return ""


def tokens(code: str) -> list[Token]:
    """[(kind, text, start)] of `code`: comments, strings, names, numbers and operators, by one regular
    expression (the stdlib tokenizer splits the same way at four times the cost: docs/integrity.md).
    Whitespace, and characters no token takes (a stray `$`, the quote of an unterminated string), are skipped."""
    return [(match.lastgroup, match.group(), match.start()) for match in TOKEN.finditer(code)]


def without_lines(code: str, found: Iterable[Token], lines: Container[str]) -> list[Token]:
    """The tokens of `found` that do not stand on a line of `lines` (stripped): a student's own tokens once
    every line typed from the book or the starter file is taken out. Fingerprints alone would keep the
    k-grams that straddle two boilerplate lines (a solved function, then the notebook's demo line)."""
    kept, starts = [], [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    boiler = [line.strip() in lines for line in code.splitlines()]
    row = 0
    for token in found:
        while row + 1 < len(starts) and starts[row + 1] <= token[2]:
            row += 1
        if row >= len(boiler) or not boiler[row]:
            kept.append(token)
    return kept


def written(found: Iterable[Token]) -> list[tuple[str, int, int]]:
    """[(what, start, end)]: each token as copydetect's filter writes it (names V, defined functions F,
    classes O, strings S; comments dropped), and where it stands in the code. copydetect's own filter
    lexes with Pygments, which costs four times the regular expression of `tokens` again."""
    out, previous = [], ""
    for kind, text, start in found:
        if kind == "comment":
            continue
        if kind == "name":
            what = text if text in KEPT_NAMES else {"def": "F", "class": "O"}.get(previous, "V")
        else:
            what = "S" if kind == "string" else text
        previous = text
        out.append((what, start, start + len(text)))
    return out


def normalise(found: Iterable[Token]) -> str:
    """The normalised code: what the fingerprints are taken of (whitespace is gone with the tokens)."""
    return "".join(what for what, _, _ in written(found))


def origins(found: Iterable[Token]) -> list[tuple[int, int]]:
    """Per character of normalise(found): (start, end) in the code of the token it came from."""
    spans = []
    for what, start, end in written(found):
        spans.extend([(start, end)] * len(what))
    return spans


@functools.lru_cache(maxsize=None)
def copydetect_utils() -> ModuleType | None:
    """copydetect.utils (its k-gram hashing and document fingerprints), or None where copydetect is not
    installed (the code signal is then left out). Imported without running the package's __init__, which
    loads its HTML report and the report's plots (matplotlib.pyplot: 0.4 s of every class run) for nothing
    used here: a bare package object stands in while the module loads, and is taken away after (a later
    `import copydetect` runs the real one)."""
    if "copydetect.utils" in sys.modules:
        return sys.modules["copydetect.utils"]
    try:
        spec = importlib.util.find_spec("copydetect")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    stand_in = "copydetect" not in sys.modules
    if stand_in:
        sys.modules["copydetect"] = importlib.util.module_from_spec(spec)
    try:
        import copydetect.utils  # noqa: F401 - loads under the stand-in

        return sys.modules["copydetect.utils"]
    except ImportError:
        return None
    finally:
        if stand_in:
            sys.modules.pop("copydetect", None)


def fingerprints(text: str) -> set[int]:
    """Every k-gram of the normalised code, hashed (copydetect's hashed_kgrams: window 1, all of them, so
    that the result does not depend on Python's per-process string hashes)."""
    utils = copydetect_utils()
    if utils is None or len(text) < K:
        return set()
    return set(utils.hashed_kgrams(text, K).tolist())


def positions(text: str) -> dict[int, int]:
    """{fingerprint: first position in text} (copydetect's document fingerprints), for the side-by-side view."""
    utils = copydetect_utils()
    if utils is None or len(text) < K:
        return {}
    _, where = utils.get_document_fingerprints(text, K, 1)
    return {int(hashed): int(min(found)) for hashed, found in where.items()}


def boilerplate_code() -> list[str]:
    """The code everyone may share: the starter files (the notebook's setup and check cells too), the
    reference solution, the chapter's listings and the chapter's public write-ups (public_corpora/)."""
    texts = [read_code(path) for path in (*STARTERS, SOLUTION) if path.is_file()]
    if CHAPTER_TEXT.is_file():
        texts += re.findall(r"```python\n(.*?)```", CHAPTER_TEXT.read_text(encoding="utf-8"), flags=re.S)
    texts += [path.read_text(encoding="utf-8") for path in sorted(PUBLIC_CORPORA.glob("*.txt"))]
    return texts


@functools.lru_cache(maxsize=1)
def known_mistakes() -> tuple[str, ...]:
    """The titles of the fault catalogue's mistakes, lower case: an output that names one shows a mistake the
    chapter's students are known to make, which two honest students make independently."""
    return tuple(cause.title.lower() for cause in CAUSES.values())


GENERIC = "a failure without a measured value (an interface or crash message every student with that design gets)"


def known_mistake(output: str) -> str:
    """The catalogue mistake an output names ("" when none): the grader names a cause only when sure."""
    text = " ".join(output.split()).lower()
    return next((title for title in known_mistakes() if title in text), "")


# --- the signals ---------------------------------------------------------------------------------------------------
def failure_signatures(result: SubmissionResult | dict[str, Any]) -> dict[str, Failure]:
    """{signature: (check, visibility, output, known)} for each check of `result` (a SubmissionResult, or its
    results.json dict) failed with a wrong output (not a stub, a limit). `known`: the mistake of the fault
    catalogue the output names, GENERIC for an output with no number in it (a missing attribute, a crash: not
    a specific wrong output), or "". Every check that names the same
    known mistake gives one signature, the mistake's, and one output printed by several checks is one
    signature: one mistake fails many checks, and is one piece of evidence (a weak one for a known or generic
    mistake: mistake_weight), not one per check."""
    found: dict[str, Failure] = {}
    for test in as_result(result).tests:
        if test.passed:
            continue
        output = test.output
        extra = test.extra_data
        if extra.get("limit") or NOT_IMPLEMENTED.search(output):
            continue  # timeouts, crashes of the sandbox and unfinished stubs are no behaviour of the code
        picture = json.dumps(extra.get("picture"), sort_keys=True) if extra.get("picture") else ""
        known = known_mistake(output) or ("" if re.search(r"\d", output) else GENERIC)
        if not known and extra.get("inputs") == "moved":
            # its numbers come from this submission's own inputs (grader.check.public_inputs): two copies mostly
            # differ there, and a common mistake split over the shifts would look rare; the known mistake, the
            # hidden checks' outputs (the same inputs for everyone) carry the evidence
            continue
        # one signature per known mistake, and per output whatever the check that printed it (one mistake
        # fails many checks with the same message): one piece of evidence each
        signature = f"known\0{known}" if known else f"{' '.join(output.split())}\0{picture}"
        found.setdefault(signature, (test.name, test.visibility or "visible", output, known))
    return found


def unusual_details(found: Iterable[Token], usual: Container[str]) -> dict[str, str]:
    """{key: shown text}: names the file defines or uses (not library attributes), comments, long strings
    and commented-out code, less those in `usual` (the boilerplate's); `found` is tokens(code)."""
    details: dict[str, str] = {}
    before = ("", "")
    for kind, text, _ in found:
        if kind == "name" and COINED.search(text) and text not in KEPT_NAMES and (
                before[1] != "." or before[0] == "self"):
            key, shown = "name " + text, f"name `{text}`"
        elif kind == "comment":
            words = " ".join(text.lstrip("#").split()).lower()
            dead = _is_code(text.lstrip("#").strip())
            if len(words) < MIN_COMMENT and not dead:
                continue
            key, shown = ("dead " if dead else "comment ") + words, (
                "commented-out code" if dead else "comment") + f" `{text.strip()[:120]}`"
        elif kind == "string" and len(text) >= MIN_STRING:
            words = " ".join(text.split())  # the key without its quotes: 'x' and "x" are one string
            key, shown = "string " + words.lstrip("rRbBuUfF").strip("'\""), f"string `{words[:120]}`"
        else:
            key = None
        if kind != "comment":
            before = (before[1], text)
        if key and key not in usual:
            details.setdefault(key, shown)
    return details


class BoilerplateText:
    """`key in this`: a string or comment detail whose words lie within one of the boilerplate's (the starter's
    docstring cut to its first line, one sentence of it): what two students kept of the starter is no detail of
    their own. A blind cohort's honest pairs were shown "rare shared strings" that were the stub's docstrings so cut."""

    def __init__(self, usual):
        self.texts = {kind: "\0".join(key.partition(" ")[2] for key in usual if key.startswith(kind + " "))
                      for kind in ("string", "comment")}

    def __contains__(self, key):
        kind, _, words = key.partition(" ")
        return kind in self.texts and len(words) >= MIN_STRING and words in self.texts[kind]


def _is_code(text):
    """Whether a comment's text is a Python statement (commented-out code), not prose or a shape note."""
    if not re.search(r"[=(]", text):
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(isinstance(node, (ast.Call, ast.Assign, ast.AugAssign, ast.Return)) for node in ast.walk(tree))


def mistake_weight(student: Student, signature: str) -> float:
    """A shared wrong output that names a known mistake weighs KNOWN_MISTAKE; a rare, unexplained one weighs 1."""
    return KNOWN_MISTAKE if student.failures[signature][3] else 1.0


def rarity(count: int, total: int) -> float:
    """The weight of an item `count` of `total` submissions have: 1 when only a pair has it, falling
    like an inverse document frequency, log(total / count), the more others have it."""
    return math.log(total / count) / math.log(total / 2) if total > 2 else 1.0


def shared_weights(students: Sequence[Student], attribute: str, factor: Callable[[Student, Any], float] | None = None
                   ) -> dict[tuple[int, int], tuple[float, Shared]]:
    """{(i, j): (weighted sum, [(item, count)])} over the items two students share, rare items only;
    `factor(student, item)` scales an item's weight (a known mistake weighs less)."""
    owners: dict[Any, list[int]] = {}
    for index, student in enumerate(students):
        for item in getattr(student, attribute):
            owners.setdefault(item, []).append(index)
    sums: dict[tuple[int, int], tuple[float, Shared]] = {}
    for item, who in owners.items():
        if not 2 <= len(who) <= COMMON:
            continue
        weight = rarity(len(who), len(students))
        if factor is not None:
            weight *= factor(students[who[0]], item)
        for pair in combinations(who, 2):
            total, items = sums.get(pair, (0.0, []))
            items.append((item, len(who)))
            sums[pair] = (total + weight, items)
    return sums


# --- the class -----------------------------------------------------------------------------------------------------
def class_code(sources: Sources) -> dict[str, str]:
    """{name: code} of the class's (name, path) list (a path of None: no code), the input of the code and details
    signals. One function for both paths: a whole-class run reads its files here, and each slice of a sharded
    class reads its own here and keeps them for `merge`, which passes them back as this dict (cohort.shards)."""
    if isinstance(sources, dict):
        return sources
    return {name: read_code(path) for name, path in sources or () if path is not None}


def load_students(out: str | Path, sources: Sources) -> list[Student]:
    """The graded students of OUT with their failures, and their code where `sources` gives it (class_code)."""
    codes = class_code(sources)
    students = []
    for path in sorted((Path(out) / "results").glob("*.json")):
        try:
            result = SubmissionResult.from_json(path.read_text(encoding="utf-8"), path.stem)
        except (OSError, ValueError):
            continue  # the report names unreadable results files; here they only give no evidence
        student = Student(result.name, failures=failure_signatures(result))
        student.code = codes.get(result.name, "")
        students.append(student)
    return students


def compare(students: Sequence[Student]) -> list[Pair]:
    """Every pair with some evidence, highest score first."""
    boilerplate = boilerplate_code()
    common, usual, lines, public = set(), set(), set(), set()
    for text in boilerplate:
        found = tokens(text)
        common |= fingerprints(normalise(found))
        usual |= set(unusual_details(found, ()))
        lines |= {line.strip() for line in text.splitlines()} - {""}
        public |= set(structure_prints(text))
    within = BoilerplateText(usual)
    for student in students:
        student.found = without_lines(student.code, tokens(student.code), lines)
        student.own = fingerprints(normalise(student.found)) - common
        student.details = {key: shown for key, shown in unusual_details(student.found, usual).items()
                           if key not in within}
        student.structure = {key: where for key, where in structure_prints(student.code).items() if key not in public}
    pairs = {}

    def pair(i, j):
        if (i, j) not in pairs:
            pairs[i, j] = Pair(students[i], students[j])
        return pairs[i, j]

    for (i, j), (total, items) in shared_weights(students, "own").items():
        found = pair(i, j)
        size = math.sqrt(max(len(students[i].own), OWN_FLOOR) * max(len(students[j].own), OWN_FLOOR))
        found.tokens, found.shared_prints = min(1.0, total / size), len(items)
    for (i, j), (total, items) in shared_weights(students, "structure").items():
        found = pair(i, j)
        size = math.sqrt(max(len(students[i].structure), STRUCTURE_FLOOR)
                         * max(len(students[j].structure), STRUCTURE_FLOOR))
        found.structure, found.shared_structure = min(1.0, total / size), items
    for (i, j), (total, items) in shared_weights(students, "failures", mistake_weight).items():
        found = pair(i, j)
        found.behaviour, found.shared_failures = min(1.0, total / BEHAVIOUR_FULL), items
    for (i, j), (total, items) in shared_weights(students, "details").items():
        found = pair(i, j)
        found.details, found.shared_details = min(1.0, total / DETAILS_FULL), items
    # a pair whose only evidence is tokens that structure does not back (public code typed otherwise) has none
    return sorted((p for p in pairs.values() if p.score > 0), key=lambda p: (-p.score, p.a.name, p.b.name))


def reasons(pair: Pair) -> str:
    """One line per signal, for the CSV (the page shows each in full)."""
    parts = []
    if pair.code:
        parts.append(f"code {pair.code:.2f}: {len(pair.shared_structure)} rare pieces of structure (names, "
                     f"equivalent operators and order normalised) and {pair.shared_prints} rare token fingerprints "
                     "of their own code in common")
    if pair.behaviour:
        hidden = sum(pair.a.failures[s][1] != "visible" for s, _ in pair.shared_failures)
        known = sum(bool(pair.a.failures[s][3]) for s, _ in pair.shared_failures)
        parts.append(f"behaviour {pair.behaviour:.2f}: the same wrong output on {len(pair.shared_failures)} "
                     f"check(s) ({hidden} hidden)" + (f", {known} a known or generic mistake (discounted)"
                                                      if known else ""))
    if pair.details:
        parts.append(f"details {pair.details:.2f}: {len(pair.shared_details)} unusual name(s), comment(s) or "
                     "string(s) in common")
    return "; ".join(parts)


def csv_text(pairs: Iterable[Pair]) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(["student_a", "student_b", "score", "flagged", "reasons"])
    for pair in pairs:
        writer.writerow(csv_row([pair.a.name, pair.b.name, f"{pair.score:.3f}", "yes" if pair.flagged else "no",
                                 reasons(pair)]))
    return stream.getvalue()


# --- the page ------------------------------------------------------------------------------------------------------
def matching_blocks(pair: Pair) -> list[tuple[int, int, int, int]]:
    """[(a_start, a_end, b_start, b_end)] in characters of the two files' code: the shared rare regions,
    found as runs of fingerprints that sit in the same order in both files (so that functions moved
    around still line up block by block), without overlaps in either file."""
    a, b = pair.a, pair.b
    a_spans, b_spans = origins(a.found), origins(b.found)
    a_at, b_at = positions(normalise(a.found)), positions(normalise(b.found))
    starts = sorted((a_at[h], b_at[h]) for h in a.own & b.own if h in a_at and h in b_at)
    runs: list[list[int]] = []  # [a first, a last, b first, b last] start of a run's fingerprints
    for i, j in starts:
        if runs and 0 < i - runs[-1][1] <= 2 * K and abs((j - i) - (runs[-1][3] - runs[-1][1])) <= K:
            runs[-1][1], runs[-1][3] = i, j
        else:
            runs.append([i, i, j, j])
    blocks: list[tuple[int, int, int, int]] = []
    a_end = 0
    b_ends: list[tuple[int, int]] = []
    for i0, i1, j0, j1 in runs:
        i1, j1 = min(i1 + K, len(a_spans)), min(j1 + K, len(b_spans))
        i0 = max(i0, a_end)  # a k-gram reaches K characters past its start: the next run may begin inside
        j0 = max([j0] + [end for start, end in b_ends if start <= j0 < end])
        if i1 - i0 >= K // 2 and j1 - j0 >= K // 2:  # what clipping leaves of a run can be a sliver
            blocks.append((a_spans[i0][0], a_spans[i1 - 1][1], b_spans[j0][0], b_spans[j1 - 1][1]))
            a_end = i1
            b_ends.append((j0, j1))
    return blocks


def shared_functions(pair: Pair) -> list[tuple[tuple[Place, Place], int]]:
    """[((function of a, function of b), pieces)]: where the pair's shared structure sits, most first."""
    counts: dict[tuple[Place, Place], int] = {}
    for key, _ in pair.shared_structure:
        place = (pair.a.structure[key], pair.b.structure[key])
        counts[place] = counts.get(place, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _places_text(places):
    def name(where):
        return "the top level" if not where[1] else f"{where[0]} (lines {where[1]}-{where[2]})"

    return "; ".join(f"{esc(name(where_a))} and {esc(name(where_b))} ({count})" for (where_a, where_b), count in places)


def failure_kind(known: str) -> str:
    """How a shared failure counts, in words."""
    if not known:
        return "specific, not a known mistake (counts in full)"
    kind = "generic: " if known == GENERIC else "known mistake: "
    return f"{kind}{known} (weighs {KNOWN_MISTAKE:g})"


def discounted(pair: Pair) -> str:
    """What was left out of this pair's evidence, in words."""
    known = sorted({pair.a.failures[s][3] for s, _ in pair.shared_failures if pair.a.failures[s][3]})
    parts = ["code also in the book's listings, the starter file, the reference solution or the chapter's public "
             f"write-ups ({esc(', '.join(PUBLIC_NAMES))}) was removed first",
             f"anything more than {COMMON} submissions share weighs nothing"]
    if known:
        parts.append("known mistakes of the fault catalogue that honest students make independently weigh "
                     f"{KNOWN_MISTAKE:g} each, once per mistake: " + esc("; ".join(known)))
    return "; ".join(parts) + "."


def numbered_lines(code: str, first: int, last: int, limit: int = 40) -> str:
    """Lines first..last (1-based) of `code`, numbered and escaped for HTML (at most `limit`)."""
    lines = code.split("\n")[first - 1:min(last, first + limit - 1)]
    width = len(str(first + len(lines)))
    return "\n".join(f"<span class='ln'>{first + index:>{width}}</span> {esc(line)}"
                     for index, line in enumerate(lines))


def snippet(code: str, start: int, end: int) -> str:
    """The whole lines of `code` around [start, end), the shared part marked, escaped for HTML."""
    first = code.rfind("\n", 0, start) + 1
    last = code.find("\n", end)
    last = len(code) if last < 0 else last
    number = code.count("\n", 0, first) + 1
    text = esc(code[first:start]) + "<mark>" + esc(code[start:end]) + "</mark>" + esc(code[end:last])
    lines = text.split("\n")
    width = len(str(number + len(lines)))
    return "\n".join(f"<span class='ln'>{number + index:>{width}}</span> {line}" for index, line in enumerate(lines))


def shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def student_link(name: str, out: str | Path) -> str:
    page = Path(out) / "feedback" / f"{name}.html"
    href = esc(f"feedback/{quote(name)}.html")
    return f"<a href='{href}'>{esc(name)}</a>" if page.is_file() else esc(name)


def pair_section(index: int, pair: Pair, out: str | Path) -> str:
    a, b = pair.a, pair.b
    parts = [f"<section id='pair-{index}'><h3>{index}. {student_link(a.name, out)} and {student_link(b.name, out)}"
             f" <small>score {pair.score:.2f}{' · above the threshold' if pair.flagged else ''}</small></h3><ul>"]
    places = shared_functions(pair)
    parts.append(f"<li><b>Code</b> {pair.code:.2f} (structure {pair.structure:.2f}, tokens {pair.tokens:.2f}): " + (
        f"{len(pair.shared_structure)} pieces of structure (statements, expressions, statements found together "
        "in one function) and "
        f"{pair.shared_prints} token fingerprints are in both files and in few others, once every name is "
        "replaced, equivalent operators are written one way and order is ignored. "
        + (f"Most of them sit in {_places_text(places[:4])}: read these side by side below."
           if places else "") if pair.code else "no rare code in common.") + "</li>")
    if pair.shared_failures:
        rows = "".join(
            f"<tr><td>{esc(a.failures[s][0])}</td><td>{esc(a.failures[s][1])}</td><td>{count - 2}</td>"
            f"<td>{esc(failure_kind(a.failures[s][3]))}</td>"
            f"<td><small>{esc(shorten(a.failures[s][2], 300))}</small></td></tr>" for s, count in pair.shared_failures)
        parts.append(f"<li><b>Behaviour</b> {pair.behaviour:.2f}: both fail these checks with identical output "
                     "(a common mistake can do this too):<table><tr><th>check</th><th>visibility</th>"
                     f"<th>others with this output</th><th>kind</th><th>output</th></tr>{rows}</table></li>")
    else:
        parts.append(f"<li><b>Behaviour</b> {pair.behaviour:.2f}: no wrong output in common.</li>")
    if pair.shared_details:
        items = ", ".join(f"{esc(a.details[key])}{f' (+{count - 2} others)' if count > 2 else ''}"
                          for key, count in pair.shared_details[:12])
        parts.append(f"<li><b>Details</b> {pair.details:.2f}: {items}</li>")
    else:
        parts.append(f"<li><b>Details</b> {pair.details:.2f}: no unusual name, comment or string in common.</li>")
    parts.append(f"<li><b>Not counted</b>: {discounted(pair)}</li></ul>")
    for (where_a, where_b), _ in places[:3]:
        if where_a[1] and where_b[1]:
            parts.append(f"<table class='side'><tr><th>{esc(a.name)}: {esc(where_a[0])}</th><th>{esc(b.name)}: "
                         f"{esc(where_b[0])}</th></tr><tr><td><pre>{numbered_lines(a.code, *where_a[1:])}</pre></td>"
                         f"<td><pre>{numbered_lines(b.code, *where_b[1:])}</pre></td></tr></table>")
    blocks = matching_blocks(pair) if a.code and b.code else []
    if blocks:
        parts.append(f"<table class='side'><tr><th>{esc(a.name)}</th><th>{esc(b.name)}</th></tr>" + "".join(
            f"<tr><td><pre>{snippet(a.code, i0, i1)}</pre></td><td><pre>{snippet(b.code, j0, j1)}</pre></td></tr>"
            for i0, i1, j0, j1 in blocks) + "</table>")
    parts.append("</section>")
    return "".join(parts)


def page(pairs: Sequence[Pair], students: Sequence[Student], out: str | Path, seconds: float) -> str:
    flagged = [pair for pair in pairs if pair.flagged]
    with_code = sum(bool(s.code) for s in students)
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Cohort integrity</title>"
             f"<style>{STYLE}</style></head><body><h1>Cohort integrity</h1>",
             f"<p class='sub'>{len(students)} submissions ({with_code} with code read) · "
             f"{len(students) * (len(students) - 1) // 2} pairs compared · {len(pairs)} with some evidence · "
             f"{len(flagged)} above the threshold {THRESHOLD:.2f} · {seconds:.1f} s</p>",
             "<p class='warn'><b>Evidence, not proof.</b> Each pair below shares more than the rest of the class "
             "does; none of these signals shows that anyone copied. Honest students type the book's code, follow "
             "the same public tutorials and make the same common mistakes. Read the matching code, talk to the "
             "students, and follow your institution's procedure before drawing any conclusion.</p>",
             "<p>Three signals, each shown separately: <b>code</b> (the stronger of two: the structure of the syntax "
             "tree, with every name replaced, equivalent operators written one way and the order of functions and "
             "statements ignored; and copydetect's token fingerprints), after removing the starter file, the "
             "chapter's listings, the reference solution and the chapter's public write-ups "
             f"({esc(', '.join(PUBLIC_NAMES))}), each piece weighted by its rarity in this class; <b>behaviour</b> "
             "(identical wrong outputs on the same checks, weighted by rarity; a known mistake of the fault "
             "catalogue, or a message with no measured value, counts once and weighs "
             f"{KNOWN_MISTAKE:g}) and <b>details</b> (identical unusual names, "
             "comments, strings or commented-out code). "
             f"Score = {WEIGHTS['code']:g} × code + {WEIGHTS['behaviour']:g} × behaviour + "
             f"{WEIGHTS['details']:g} × details; the threshold and the method are in docs/integrity.md.</p>",
             f"<p><b>False alarms.</b> The threshold {THRESHOLD:.2f} was set on honest work only (independently "
             "written solutions and shuffles of them), never on copies: on those, an honest pair scores above it "
             f"with a probability of about {NULL_RATE:.0e}, so in a class of this size ({len(students)}) about "
             f"{expected_false_flags(len(students)):.2g} honest pair(s) are expected above it "
             f"({expected_false_flags(100):.2g} in a class of 100). The measurement is in docs/integrity.md.</p>"]
    if not with_code:
        parts.append("<p class='warn'>The submitted files were not available to this step (a merge of shards): "
                     "only the behaviour signal is shown.</p>")
    elif copydetect_utils() is None:
        parts.append("<p class='warn'>copydetect is not installed (<code>pip install -r requirements-publish.txt"
                     "</code>): the code signal is left out.</p>")
    if not pairs:
        parts.append("<p>No pair shares anything beyond the book, the starter code and common mistakes.</p>")
    else:
        parts.append("<table><tr><th>#</th><th>student</th><th>student</th><th>score</th><th>code</th>"
                     "<th>behaviour</th><th>details</th><th>reasons</th></tr>" + "".join(
                         f"<tr{' class=flag' if pair.flagged else ''}><td>{index}</td><td>{esc(pair.a.name)}</td>"
                         f"<td>{esc(pair.b.name)}</td><td>{pair.score:.2f}</td><td>{pair.code:.2f}</td>"
                         f"<td>{pair.behaviour:.2f}</td><td>{pair.details:.2f}</td><td><small>"
                         + (f"<a href='#pair-{index}'>{esc(reasons(pair))}</a>" if index <= shown_count(pairs)
                            else esc(reasons(pair))) + "</small></td></tr>"
                         for index, pair in enumerate(pairs[:max(50, len(flagged))], start=1)) + "</table>")
        if len(pairs) > max(50, len(flagged)):
            parts.append(f"<p class='sub'>{len(pairs) - max(50, len(flagged))} more pairs with weaker evidence "
                         "are in integrity.csv.</p>")
        parts.append("<h2>The pairs side by side</h2><p class='sub'>Marked: code two files share beyond the "
                     "boilerplate, region by region (functions moved around still line up).</p>")
        parts += [pair_section(index, pair, out) for index, pair in enumerate(pairs[:shown_count(pairs)], start=1)]
    parts.append("</body></html>")
    return "\n".join(parts)


def expected_false_flags(size: int) -> float:
    """The honest pairs expected above the threshold in a class of `size` (the null model's rate per pair)."""
    return NULL_RATE * size * (size - 1) / 2


def shown_count(pairs: Iterable[Pair]) -> int:
    return max(SHOWN_PAIRS, sum(pair.flagged for pair in pairs))


def write_integrity(out: str | Path, sources: Sources = None) -> str:
    """Write OUT/integrity.html and OUT/integrity.csv; `sources` is the class's (name, path) list or its
    slices' {name: code} (class_code; None: the files are not at hand, and only behaviour is compared).
    Returns a summary."""
    started = time.monotonic()
    out = Path(out)
    if sources is None and (out / "integrity.html").is_file():
        return (f"integrity: kept {out / 'integrity.html'} from the last grading of the whole class (the submitted "
                "files are not at hand here; grade the class again to refresh it)")
    students = load_students(out, sources)
    pairs = compare(students)
    seconds = time.monotonic() - started
    write_atomic(out / "integrity.csv", csv_text(pairs))
    write_atomic(out / "integrity.html", page(pairs, students, out, seconds))
    flagged = sum(pair.flagged for pair in pairs)
    return (f"integrity: {len(students)} submissions, {flagged} pair(s) above the threshold {THRESHOLD:.2f} "
            f"in {time.monotonic() - started:.2f} s: {out / 'integrity.html'}")


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:80rem;color:#222;
line-height:1.45;padding:0 1rem} .sub{color:#666} .warn{background:#fff8e1;border-left:4px solid #f0b400;
padding:.5rem .8rem}
h2{border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem} h3{margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem} td,th{border:1px solid #ddd;padding:.25rem .5rem;
text-align:left;vertical-align:top} th{background:#f5f5f5} tr.flag td{background:#fff3e0}
table.side{width:100%;table-layout:fixed} table.side td{width:50%}
pre{margin:0;font-size:.78rem;white-space:pre-wrap;word-break:break-all} mark{background:#ffe08a}
.ln{color:#999;user-select:none}
"""
