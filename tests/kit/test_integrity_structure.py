"""Structure beyond tokens (issue 28): a copy disguised the way students disguise it (every identifier
renamed, equivalent operators swapped, functions and independent statements reordered, comments gone) is
still flagged; the public write-ups and known mistakes are not evidence; honest files are never flagged.

In process, on the code alone (no grading): the cohort's honest files (tests/kit/integrity_cohort/) are the
class, and `disguise` writes the copies. The page's behaviour signal is left out here, so these copies must
be caught by their code alone.
"""

import ast
import json
import random
from pathlib import Path

import pytest

from grader.feedback import integrity, integrity_ast

COHORT = Path(__file__).parent / "integrity_cohort"
KEEP = {"torch", "nn", "F", "math", "np", "self", "super", "range", "len", "float", "int", "zip", "enumerate",
        "list", "tuple", "sum", "max", "min", "print", "isinstance", "ValueError", "AssertionError", "copy",
        "NotImplementedError", "True", "False", "None", "abs", "round", "map", "functional", "dict", "str"}


def honest_names():
    copies = {copy for _, copy in json.loads((COHORT / "pairs.json").read_text())["disguised"]}
    return sorted(path.stem for path in COHORT.glob("*.py") if path.stem not in copies)


# --- the disguise ----------------------------------------------------------------------------------------------
class _Disguise(ast.NodeTransformer):
    """Renames every identifier the file chooses and swaps each idiom for an equivalent one."""

    def __init__(self, names, rng, tree, rename=True, swap=True, reorder=True):
        self.names, self.rng, self.rename, self.swap, self.reorder = names, rng, rename, swap, reorder
        self.own = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute) and isinstance(
            node.value, ast.Name) and node.value.id == "self" and isinstance(node.ctx, ast.Store)}
        self.own |= {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"
                     and node.args and isinstance(node.args[0], ast.Constant)}
        self.own |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}

    def new(self, name):
        if name in KEEP or name.startswith("__") or not self.rename:
            return name
        if name not in self.names:
            self.names[name] = f"{self.rng.choice('abcdefghkmnpqrstuvwxyz')}{len(self.names)}_{self.rng.randrange(99)}"
        return self.names[name]

    def visit_Name(self, node):
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.new(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        node.name = self.new(node.name)
        node.returns = None
        if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            node.body = node.body[1:] or [ast.Pass()]  # docstrings go
        self.generic_visit(node)
        node.body = _reordered(node.body, self.rng, self.reorder)
        return node

    def visit_ClassDef(self, node):
        node.name = self.new(node.name)
        self.generic_visit(node)
        methods = [item for item in node.body if isinstance(item, ast.FunctionDef)]
        others = [item for item in node.body if not isinstance(item, ast.FunctionDef)]
        if self.reorder:
            self.rng.shuffle(methods)
        node.body = others + methods or [ast.Pass()]
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "self" and node.attr in self.own:
            node.attr = self.new(node.attr)
        return node

    def visit_Constant(self, node):  # register_buffer("mask", ...) names an attribute too
        if isinstance(node.value, str) and node.value in self.own:
            node.value = self.new(node.value)
        return node

    def visit_keyword(self, node):
        self.generic_visit(node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if not self.swap:
            return node
        if isinstance(node.op, ast.MatMult):  # a @ b -> torch.matmul(a, b)
            return _call("torch.matmul", node.left, node.right)
        if isinstance(node.op, ast.Pow) and _is_number(node.right, -0.5):  # x ** -0.5 -> 1 / math.sqrt(x)
            return ast.BinOp(ast.Constant(1.0), ast.Div(), _call("math.sqrt", node.left))
        if isinstance(node.op, ast.Div) and isinstance(node.right, ast.BinOp) and isinstance(node.right.op, ast.Pow) \
                and _is_number(node.right.right, 0.5):  # a / x ** 0.5 -> a * x ** -0.5
            return ast.BinOp(node.left, ast.Mult(), ast.BinOp(node.right.left, ast.Pow(), ast.Constant(-0.5)))
        if isinstance(node.op, (ast.Add, ast.Mult)):  # a * b -> b * a
            node.left, node.right = node.right, node.left
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Attribute) and self.swap:
            name = func.attr
            if name == "matmul" and len(node.args) == 2:  # torch.matmul(a, b) -> a @ b
                return ast.BinOp(node.args[0], ast.MatMult(), node.args[1])
            if name == "view":
                func.attr = "reshape"
            elif name == "reshape" and not _is_module(func.value):
                func.attr = "view"
            elif name == "transpose" and len(node.args) == 2 and all(isinstance(a, ast.Constant) for a in node.args) \
                    and {node.args[0].value, node.args[1].value} == {1, 2}:  # (b, n, h, d): transpose(1, 2)
                func.attr = "permute"
                node.args = [ast.Constant(value) for value in (0, 2, 1, 3)]
            elif name == "softmax" and _is_module(func.value):  # torch.softmax(x, dim=-1) -> x.softmax(dim=-1)
                return ast.Call(ast.Attribute(node.args[0], "softmax", ast.Load()), node.args[1:], node.keywords)
            elif name in ("masked_fill", "masked_fill_") and len(node.args) == 2:
                where = _call("torch.where", node.args[0], node.args[1], func.value)
                if name == "masked_fill_":  # x.masked_fill_(m, v) -> x = torch.where(m, v, x), below
                    where.in_place_of = func.value
                return where
        return node


def _reordered(body, rng, reorder=True):
    """The body with neighbouring independent statements swapped (neither reads what the other writes)."""
    body = list(body)
    for index in range(len(body) - 1 if reorder else 0):
        first, second = body[index], body[index + 1]
        if isinstance(first, ast.Return) or isinstance(second, ast.Return) or rng.random() < 0.4:
            continue
        written = {name for node in (first, second) for name in _written(node)}
        read = [set(_read(first)), set(_read(second))]
        if not written & (read[0] | read[1]) and not _written(first) & _written(second):
            body[index], body[index + 1] = second, first
    return [_in_place(node) for node in body]


def _in_place(node):
    if isinstance(node, ast.Expr) and hasattr(node.value, "in_place_of"):
        return ast.Assign([_store(node.value.in_place_of)], node.value, lineno=0)
    return node


def _store(node):
    node = ast.parse(ast.unparse(node), mode="eval").body
    for inner in ast.walk(node):
        if hasattr(inner, "ctx"):
            inner.ctx = ast.Load()
    node.ctx = ast.Store()
    return node


def _written(node):
    return {ast.unparse(target) for inner in ast.walk(node) if isinstance(inner, (ast.Assign, ast.AugAssign))
            for target in (inner.targets if isinstance(inner, ast.Assign) else [inner.target])} | {
        ast.unparse(inner.value) for inner in ast.walk(node) if isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute) and inner.func.attr.endswith("_")
        for inner in [inner.func]}


def _read(node):
    return {ast.unparse(inner) for inner in ast.walk(node) if isinstance(inner, (ast.Name, ast.Attribute))}


def _call(dotted, *args):
    module, name = dotted.split(".")
    return ast.Call(ast.Attribute(ast.Name(module, ast.Load()), name, ast.Load()), list(args), [])


def _is_number(node, value):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value == value
    return isinstance(node, ast.Constant) and node.value == value


def _is_module(node):
    return isinstance(node, ast.Name) and node.id in ("torch", "F") or ast.unparse(node) in ("nn.functional",)


def disguise(code, seed=0, swap=True, rename=True, reorder=True):
    """`code` as a student who copied it would hand it in: every identifier renamed (the exercise's names
    too), `@` and torch.matmul swapped, `x ** -0.5` as `1 / math.sqrt(x)`, `/ x ** 0.5` as `* x ** -0.5`,
    transpose(1, 2) as permute(0, 2, 1, 3), view and reshape swapped, torch.softmax as a method, masked_fill as
    torch.where, operands of + and * swapped, top-level definitions, methods and neighbouring independent
    statements reordered, docstrings and comments gone. swap=False keeps the idioms (a student who follows a
    tutorial with names and an order of their own); rename and reorder likewise turn one kind off."""
    rng = random.Random(seed)
    tree = ast.parse(code)
    tree = _Disguise({}, rng, tree, rename, swap, reorder).visit(tree)
    imports = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    rest = [node for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))]
    if reorder:
        rng.shuffle(rest)
    tree.body = imports + [ast.Import([ast.alias("math")]), ast.Import([ast.alias("torch")])] + rest
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


# --- the normalisations, one by one ----------------------------------------------------------------------------
def statements(code):
    """The canonical statements of a one-function file."""
    return sorted(key for key in integrity_ast.structure_prints(code) if key.startswith("s "))


def function(body):
    return "import math\nimport torch\nimport torch.nn.functional as F\n\n\ndef f(q, k, d, m):\n    " + body + "\n"


EQUIVALENT = {
    "matmul": ["s = q @ k", "s = torch.matmul(q, k)", "s = q.matmul(k)", "s = torch.bmm(q, k)"],
    "scale": ["s = q * d ** -0.5", "s = q / math.sqrt(d)", "s = q / d ** 0.5", "s = q * (1 / math.sqrt(d))",
              "s = q / torch.sqrt(d)", "s = d ** -0.5 * q"],
    "swap": ["s = k + q.transpose(1, 2)", "s = k + q.permute(0, 2, 1, 3)", "s = k + torch.transpose(q, 1, 2)",
             "s = q.mT + k"],
    "reshape": ["s = q.view(2, 3, -1)", "s = q.reshape(2, 3, -1)", "s = q.contiguous().view(2, 3, -1)"],
    "softmax": ["s = torch.softmax(q, dim=-1)", "s = F.softmax(q, dim=-1)", "s = q.softmax(dim=-1)",
                "s = torch.nn.functional.softmax(q, -1)"],
    "mask": ["s = q.masked_fill(m, float('-inf'))", "s = q.masked_fill(m, -torch.inf)", "s = q.masked_fill(m, -1e9)",
             "s = torch.where(m, float('-inf'), q)", "s = torch.where(~m, q, -math.inf)",
             "s = q.masked_fill(m, torch.finfo(q.dtype).min)", "s = q.masked_fill(m, float('-1e20'))"],
    "in place": ["q.masked_fill_(m, -torch.inf)", "q = q.masked_fill(m, -torch.inf)"],
    "names": ["attn = q @ k", "wei = q @ k", "scores = q @ k"],
}


@pytest.mark.parametrize("idiom", sorted(EQUIVALENT))
def test_each_equivalent_idiom_gives_the_same_structure(idiom):
    written = [statements(function(body)) for body in EQUIVALENT[idiom]]
    assert written[0] and all(other == written[0] for other in written), dict(zip(EQUIVALENT[idiom], written))


def test_what_differs_in_meaning_stays_different():
    different = ["s = q / math.sqrt(d)", "s = q / d", "s = q * math.sqrt(d)", "s = q @ k", "s = q @ k.T",
                 "s = q.masked_fill(m, 0.0)", "s = q.masked_fill(m, -torch.inf)", "s = torch.triu(q, diagonal=1)",
                 "s = torch.tril(q, diagonal=1)", "s = k + q.transpose(1, 2)", "s = k + q.permute(0, 2, 3, 1)"]
    written = [tuple(statements(function(body))) for body in different]
    assert len(set(written)) == len(written)


def test_order_of_functions_and_independent_statements_does_not_matter():
    first = function("a = q @ k\n    b = torch.softmax(a * d ** -0.5, dim=-1)\n    c = m.sum(-1)\n    return b, c")
    second = function("c = m.sum(-1)\n    a = q @ k\n    b = torch.softmax(a * d ** -0.5, dim=-1)\n    return b, c")
    assert integrity_ast.structure_prints(first).keys() == integrity_ast.structure_prints(second).keys()


@pytest.mark.parametrize("name", honest_names())
def test_a_fully_disguised_copy_has_exactly_the_structure_of_its_original(name):
    code = (COHORT / f"{name}.py").read_text()
    copy = disguise(code, seed=7)
    assert copy != code and compile(copy, name, "exec")
    assert integrity_ast.structure_prints(copy).keys() == integrity_ast.structure_prints(code).keys()
    assert integrity_ast.structure_prints(code)


def test_the_public_write_ups_parse_and_cover_the_chapter():
    corpora = sorted(integrity.PUBLIC_CORPORA.glob("*.txt"))
    assert len(corpora) >= 8
    for path in corpora:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        assert {"causal_attention_weights", "CausalAttention", "MultiHeadAttention"} <= defined, path.name


def test_the_starters_docstrings_cut_short_are_no_detail_of_a_students_own():
    """A blind cohort (2026-11-28): honest students who kept the stub's docstrings cut to their first line were shown
    sharing "rare" strings (details 1.0 for three honest pairs, one ranked above two copies)."""
    cut = '\n\nclass Kept:\n    """Single-head causal self-attention with dropout on the attention weights."""\n'
    own = '\n\nclass Mine:\n    """My own long note on how the heads are cut and merged back together."""\n'
    names = honest_names()[:8]
    students = [integrity.Student(name, (COHORT / f"{name}.py").read_text() + (cut + own if index < 2 else ""))
                for index, name in enumerate(names)]
    integrity.compare(students)
    strings = [key for key in students[0].details if key.startswith("string ")]
    assert not [key for key in strings if "Single-head causal" in key], strings
    assert [key for key in strings if "My own long note" in key], "a string of the student's own is still a detail"


# --- public code and common mistakes are not evidence ----------------------------------------------------------
def class_of(codes):
    students = [integrity.Student(name, code) for name, code in codes.items()]
    return {frozenset((pair.a.name, pair.b.name)): pair for pair in integrity.compare(students)}


def test_two_students_who_follow_the_same_public_write_up_share_nothing_rare():
    honest = {name: (COHORT / f"{name}.py").read_text() for name in honest_names()[:12]}
    for path in sorted(integrity.PUBLIC_CORPORA.glob("*.txt")):
        tutorial = path.read_text(encoding="utf-8")
        pairs = class_of({**honest, "first": disguise(tutorial, seed=1, swap=False),
                          "second": disguise(tutorial, seed=2, swap=False)})
        pair = pairs.get(frozenset(("first", "second")))
        assert pair is None or (pair.code < 0.1 and not pair.flagged), (path.name, pair and pair.code)


def results(*outputs):
    return {"tests": [{"name": f"step: check {index}", "score": 0.0, "max_score": 2.0, "output": output,
                       "visibility": "after_published"} for index, output in enumerate(outputs)]}


def test_a_shared_known_mistake_weighs_little_and_a_rare_wrong_output_counts():
    known = "the weights differ at [0, 1]; dropout does not rescale the surviving weights; multiply by 1/(1-p)"
    common = integrity.failure_signatures(results(known, known.replace("[0, 1]", "[2, 3]"), known + " (hidden)"))
    assert len(common) == 1 and next(iter(common.values()))[3] == "dropout does not rescale the surviving weights"
    rare = integrity.failure_signatures(results("entry [0, 1] is 0.4507, should be 0.3812",
                                                "row 2 sums to 0.8125", "output[1, 0] is 7.25"))
    assert len(rare) == 3 and not any(value[3] for value in rare.values())
    cohort = [integrity.Student(name, failures=common) for name in ("a", "b")] + [
        integrity.Student(name, failures=rare) for name in ("c", "d")] + [integrity.Student(f"x{i}") for i in range(20)]
    pairs = {frozenset((p.a.name, p.b.name)): p for p in integrity.compare(cohort)}
    assert pairs[frozenset("ab")].behaviour == pytest.approx(integrity.KNOWN_MISTAKE / integrity.BEHAVIOUR_FULL)
    assert pairs[frozenset("cd")].behaviour == 1.0


# --- the null model ------------------------------------------------------------------------------------------
def test_no_honest_pair_of_the_cohort_or_its_shuffles_is_flagged_and_the_stated_rate_holds():
    from grader.feedback import integrity_null

    codes = integrity_null.honest_files([COHORT, COHORT / "more_honest"])
    classes = [codes] + integrity_null.shuffles(codes, 3)
    assert len(codes) >= 35 and len(classes) == 4 and all(len(members) >= 31 for members in classes)
    scores, total = integrity_null.honest_scores(classes)
    assert max(scores) < integrity.THRESHOLD
    per_pair = integrity_null.rate(integrity_null.tail(scores, total), integrity.THRESHOLD)
    assert per_pair * 4950 <= 0.1, f"{per_pair * 4950:.3f} honest pairs expected above the threshold per class of 100"
    assert per_pair <= 3 * integrity.NULL_RATE, (per_pair, integrity.NULL_RATE)  # the page's figure still holds


def test_fully_disguised_copies_are_flagged_on_their_code_alone_and_nothing_else_is():
    """Every honest file of the cohort and a fully disguised copy of each, in one class, code only (no
    behaviour): the copy pairs are flagged unless the original is public code (measured 28 of 31; 0 of 31
    with the token fingerprints alone, before the structure signal), and no other pair is."""
    honest = {name: (COHORT / f"{name}.py").read_text() for name in honest_names()}
    copies = {f"copy_of_{name}": disguise(code, seed=100 + index) for index, (name, code) in enumerate(honest.items())}
    pairs = class_of({**honest, **copies})
    flagged = {pair for pair, found in pairs.items() if found.flagged}
    copy_pairs = {frozenset((name, f"copy_of_{name}")) for name in honest}
    assert flagged <= copy_pairs, sorted(map(sorted, flagged - copy_pairs))
    assert len(flagged) >= 26, f"{len(flagged)} of {len(copy_pairs)} disguised copies flagged"
