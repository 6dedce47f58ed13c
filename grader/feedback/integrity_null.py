"""The integrity threshold's null model: how honest pairs score, measured on honest work only.

`python -m grader.feedback.integrity_null FOLDER...` reads the honest solutions in the folders (every
`*.py`; files named in a `pairs.json` of the folder as copies are left out), scores every pair of them as
the class step does (code and details; behaviour needs grading, and a shared known mistake weighs little),
then does the same on shuffles: synthetic students made of one function from each of several honest
authors, arranged as Latin squares (student s takes function k from author (s + m·k) mod A, A prime), so
that no two synthetic students share an author for any function. Then it fits an exponential tail to the
top 5 % of the honest scores (a peaks-over-threshold estimate: a few thousand pairs cannot show a rate of
1e-5 directly) and prints, for candidate thresholds, the rate per honest pair and the expected number of
honest pairs above it in classes of 100 and 200. docs/integrity.md holds the figures;
integrity.THRESHOLD and integrity.NULL_RATE come from them.
"""

import ast
import json
import math
import random
import sys
from collections.abc import Iterable
from pathlib import Path

from grader.chapter import STEPS
from grader.feedback import integrity

SLOTS = tuple(name for step in STEPS for name in step.names)  # the chapter's functions and classes, one slot each
HEADER = "import math\nimport torch\nfrom torch import nn\nimport torch.nn.functional as F\n"
TAIL = 0.05  # the share of the highest honest scores the tail is fitted to


def honest_files(folders: Iterable[str | Path]) -> dict[str, str]:
    """{name: code} of the honest solutions in `folders` (copies named in a folder's pairs.json left out)."""
    codes = {}
    for folder in map(Path, folders):
        copies = set()
        if (folder / "pairs.json").is_file():
            copies = {copy for _, copy in json.loads((folder / "pairs.json").read_text())["disguised"]}
        for path in sorted(folder.glob("*.py")):
            if path.stem not in copies:
                codes[f"{folder.name}/{path.stem}"] = path.read_text(encoding="utf-8")
    return codes


def definitions(code: str) -> dict[str, str]:
    """{top-level function or class name: its source}."""
    lines = code.split("\n")
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {}
    return {node.name: "\n".join(lines[node.lineno - 1 - len(node.decorator_list):node.end_lineno])
            for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def shuffles(codes: dict[str, str], count: int, seed: int = 0) -> list[dict[str, str]]:
    """`count` classes of synthetic honest students (Latin squares over the authors that define every slot)."""
    parts = {name: definitions(code) for name, code in codes.items()}
    authors = [name for name in sorted(parts) if all(slot in parts[name] for slot in SLOTS)]
    size, rng = len(authors), random.Random(seed)
    rng.shuffle(authors)  # which authors a prime count leaves out: by chance, not by folder
    while authors and any(len(authors) % d == 0 for d in range(2, int(len(authors) ** 0.5) + 1)):
        authors.pop()  # a prime number of authors: every multiplier m gives a Latin square
    size, rng = len(authors), random.Random(seed)
    classes = []
    for m in range(1, min(count, size - 1) + 1):
        order = authors[:]
        rng.shuffle(order)
        classes.append({f"shuffle{m}-s{s}": HEADER + "\n\n".join(
            parts[order[(s + m * k) % size]][slot] for k, slot in enumerate(SLOTS)) for s in range(size)})
    return classes


def honest_scores(classes: Iterable[dict[str, str]]) -> tuple[list[float], int]:
    """(scores of the pairs with any evidence, number of pairs compared), over classes of {name: code}."""
    scores, total = [], 0
    for members in classes:
        students = [integrity.Student(name, code) for name, code in members.items()]
        scores += [pair.score for pair in integrity.compare(students)]
        total += len(students) * (len(students) - 1) // 2
    return scores, total


def tail(scores: list[float], total: int) -> tuple[float, float, float]:
    """(u, beta, p_u): an exponential tail fitted above u, the score exceeded by a share p_u of all pairs."""
    ranked = sorted(scores, reverse=True) + [0.0] * (total - len(scores))
    k = max(20, int(total * TAIL))
    u = ranked[k]
    return u, sum(score - u for score in ranked[:k]) / k, k / total


def rate(fit: tuple[float, float, float], threshold: float) -> float:
    """P(an honest pair scores above `threshold`) under the fitted tail."""
    u, beta, share = fit
    return share * math.exp(-(threshold - u) / beta) if beta > 0 else 0.0


def main(argv: list[str]) -> int:
    cohort = Path(__file__).parents[2] / "tests" / "kit" / "integrity_cohort"
    folders = argv or [str(cohort), str(cohort / "more_honest")]
    codes = honest_files(folders)
    classes = [codes] + shuffles(codes, 12)
    scores, total = honest_scores(classes)
    fit = tail(scores, total)
    print(f"{len(codes)} honest files, {len(classes) - 1} shuffles: {total} honest pairs, highest score "
          f"{max(scores, default=0):.3f}, {sum(s > integrity.THRESHOLD for s in scores)} above {integrity.THRESHOLD}")
    print(f"tail above {fit[0]:.3f} (the top {fit[2]:.0%}): exponential, scale {fit[1]:.4f}")
    for threshold in (0.20, 0.25, 0.30, 0.35, 0.40):
        per_pair = rate(fit, threshold)
        print(f"threshold {threshold:.2f}: {per_pair:.1e} per honest pair, expected honest pairs above it: "
              f"{per_pair * 4950:.2g} in a class of 100, {per_pair * 19900:.2g} in a class of 200")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
