"""Structure fingerprints for the integrity page: the code's syntax tree with names and equivalent idioms
normalised, cut into pieces that do not depend on the order of functions or of independent statements.

Tokens (integrity.py's code signal) change when a copier renames every identifier, writes `torch.matmul`
for `@`, `/ math.sqrt(d)` for `* d ** -0.5`, `permute(0, 2, 1, 3)` for `transpose(1, 2)` or moves
statements around. Here each function's statements are written in one canonical form:

- every name the file chooses (variables, arguments, helpers, `self.` attributes) becomes `V`, `F` or `A`;
  library names (`torch`, `nn`, `math`, `.shape`, keyword arguments) stay;
- equivalent operations become one: MATMUL (`@`, matmul, bmm), SQRT/RSQRT (`** 0.5`, `math.sqrt`,
  `torch.sqrt`, `** -0.5`, `1 / sqrt`), DIV by SQRT = MUL by RSQRT, SWAP (transpose, `.T`, `.mT`, a permute
  that swaps two axes), RESHAPE (view, reshape; `.contiguous()` dropped), SOFTMAX (torch., F., method),
  MASKFILL (masked_fill, masked_fill_, torch.where with a huge negative fill: -inf, -1e9, finfo.min), NEG
  for that fill; `+`, `*` sorted; `x op= y` written as `x = x op y`; an in-place call as its assignment;
- docstrings, `pass`, prints and asserts are dropped.

The fingerprints of a file (a set: functions' order does not matter): each statement, each larger
sub-expression, each unordered pair of statements of one function (structure without order) and each
function as the sorted list of its statements. docs/integrity.md measures each normalisation's effect.
"""

import ast
import hashlib
import re

LIBRARY = {"torch", "nn", "F", "math", "np", "numpy", "functional", "self", "super", "range", "len", "float",
           "int", "zip", "enumerate", "list", "tuple", "sum", "max", "min", "isinstance", "ValueError",
           "NotImplementedError", "AssertionError", "True", "False", "None", "print", "abs", "round", "map"}
MATMUL = {"matmul", "bmm", "mm"}
SQRT = {"sqrt"}
RESHAPE = {"view", "reshape"}
IDENTITY = {"contiguous"}
SOFTMAX = {"softmax"}
MASKFILL = {"masked_fill", "masked_fill_"}
SWAP = {"transpose", "swapaxes", "swapdims", "transpose_"}
INPLACE = re.compile(r"^[a-z_]+_$")  # torch's in-place methods end in one underscore (masked_fill_, add_)
MIN_STATEMENT = 10  # characters of canonical text: `return V`, `V=F(V)` say nothing of their own
MIN_EXPRESSION = 24  # characters of canonical text: a sub-expression shorter than this is too common to tell
MAX_CANONICAL = 256  # characters of one expression's canonical text (_bounded)
MAX_EXPRESSIONS = 10_000  # expressions read per file: a whole solution has some 700
MAX_PAIRS = 40  # statements per function whose pairs are taken (a longer function's first ones)
HUGE = 1e4  # a fill below -HUGE hides a position as -inf does
DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.M)  # the file's functions and classes
# attributes the file sets on self (self.x = ..., self.x, self.y = ...) and buffers it registers
SELF_ATTRIBUTE = re.compile(r"\bself\.(\w+)\s*(?:[,:)]|[-+*/]?=(?!=))|register_buffer\(\s*[\"'](\w+)")


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
Where = tuple[tuple[str, int, int], list[ast.stmt]]  # ((function, first line, last line), its statements)


class Canon:
    """Writes the canonical text of one file's statements; knows the names the file defines."""

    def __init__(self, code: str) -> None:
        # from the text, not a walk of the tree (ast.walk is most of the cost): an approximation is enough
        self.functions = set(DEFINED.findall(code))
        self.attributes = {name for pair in SELF_ATTRIBUTE.findall(code) for name in pair if name}
        self.collected: list[str] = []  # canonical sub-expressions met since the last reset, for the fingerprints
        self.visits = 0  # expressions written so far (MAX_EXPRESSIONS)

    # --- expressions ---------------------------------------------------------------------------------------------
    def expr(self, node: ast.AST) -> str:
        self.visits += 1
        if self.visits > MAX_EXPRESSIONS:  # the rest of a file far longer than any solution is not read
            return "ELIDED"
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is not None:
            text = _bounded(method(node))
            if len(text) >= MIN_EXPRESSION and isinstance(node, (ast.Call, ast.BinOp)):
                self.collected.append(text)
            return text
        parts = [self.expr(child) if isinstance(child, ast.expr) else type(child).__name__
                 for child in ast.iter_child_nodes(node) if not isinstance(child, (ast.expr_context,))]
        return _bounded(f"{type(node).__name__}({','.join(parts)})")

    def e_Name(self, node: ast.Name) -> str:
        if node.id in self.functions:
            return "F"
        return node.id if node.id in LIBRARY else "V"

    def e_Constant(self, node: ast.Constant) -> str:
        value = node.value
        if isinstance(value, str):
            return "S"
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= -HUGE:
            return "NEG"
        return repr(value)

    def e_Attribute(self, node: ast.Attribute) -> str:
        base = self.expr(node.value)
        if node.attr in ("T", "mT"):
            return f"SWAP({base})"
        if node.attr == "min" and "finfo" in base:
            return "NEG"
        if node.attr == "inf" and base in ("torch", "math", "np", "numpy"):
            return "INF"
        if base == "self" and node.attr in self.attributes:
            return "A"
        if node.attr in self.functions:
            return f"{base}.F"
        return f"{base}.{node.attr}"

    def e_UnaryOp(self, node: ast.UnaryOp) -> str:
        inner = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            if inner == "INF":
                return "NEG"
            if inner.replace(".", "", 1).replace("e+", "", 1).isdigit() and _number(inner) >= HUGE:
                return "NEG"
            return f"-{inner}"
        if isinstance(node.op, ast.Invert) or isinstance(node.op, ast.Not):
            return f"NOT({inner})"
        return f"{type(node.op).__name__}({inner})"

    def e_BinOp(self, node: ast.BinOp) -> str:
        left, right = self.expr(node.left), self.expr(node.right)
        op = node.op
        if isinstance(op, ast.MatMult):
            return f"MATMUL({left},{right})"
        if isinstance(op, ast.Pow):
            if right in ("0.5", "(1/2)"):
                return f"SQRT({left})"
            if right in ("-0.5", "-(0.5)"):
                return f"RSQRT({left})"
            return f"POW({left},{right})"
        if isinstance(op, ast.Div):
            if right.startswith("SQRT(") and right.endswith(")"):
                inverse = "R" + right
                return inverse if left in ("1", "1.0") else _sorted("MUL", [left, inverse])
            if right.startswith("RSQRT(") and right.endswith(")"):
                return _sorted("MUL", [left, right[1:]])
            return f"DIV({left},{right})"
        if isinstance(op, (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr)):
            name = {ast.Add: "ADD", ast.Mult: "MUL", ast.BitAnd: "AND", ast.BitOr: "OR"}[type(op)]
            return _sorted(name, _flatten(name, left) + _flatten(name, right))
        if isinstance(op, ast.Sub) and right == "INF":
            return "NEG"
        return f"{type(op).__name__.upper()}({left},{right})"

    def e_Call(self, node: ast.Call) -> str:
        func = node.func
        args = [self.expr(arg) for arg in node.args]
        keywords = sorted(f"{kw.arg}={self.expr(kw.value)}" for kw in node.keywords)
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        receiver = None
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value)
            library = base in ("torch", "F", "nn.functional", "torch.nn.functional", "math", "np", "numpy")
            receiver = None if library else base
        else:
            library = name not in self.functions
        operands = ([receiver] if receiver is not None else []) + args
        if name in self.functions and receiver in (None, "self"):  # the file's own helper, whatever its name
            return f"F({','.join(args + keywords)})"
        if name in MATMUL and len(operands) == 2:
            return f"MATMUL({operands[0]},{operands[1]})"
        if name in SQRT and len(operands) == 1:
            return f"SQRT({operands[0]})"
        if name in SOFTMAX and operands:
            return f"SOFTMAX({operands[0]})"
        if name in RESHAPE and operands:
            return f"RESHAPE({operands[0]})"
        if name in IDENTITY and receiver is not None:
            return receiver
        if name in SWAP and operands:
            return f"SWAP({operands[0]})"
        if name == "permute" and receiver is not None:
            order = [arg.value for arg in node.args if isinstance(arg, ast.Constant)]
            if len(order) == len(node.args) and sum(a != b for a, b in zip(order, range(len(order)))) == 2:
                return f"SWAP({receiver})"
            return f"PERMUTE({receiver})"
        if name in MASKFILL and len(operands) >= 3:
            return f"MASKFILL({operands[0]},{_positive(operands[1])},{operands[2]})"
        if name == "where" and len(operands) == 3 and library:
            condition, yes, no = operands  # where(hidden, fill, x) is x.masked_fill(hidden, fill)
            fill, kept = (no, yes) if _is_fill(no) and not _is_fill(yes) else (yes, no)
            return f"MASKFILL({kept},{_positive(condition)},{fill})"
        if name == "float" and args == ["S"] and isinstance(node.args[0], ast.Constant):  # float("-inf"), "-1e20"
            value = _number(str(node.args[0].value).strip())
            if value <= -HUGE:
                return "NEG"
            if value >= HUGE:
                return "INF"
        if receiver == "self" and name in self.attributes:
            head = "A"
        elif name in self.functions:
            head = "F" if receiver in (None, "self") else f"{receiver}.F"
        elif isinstance(func, ast.Attribute):
            head = f"{self.expr(func.value)}.{name}" if library or receiver is None else f"{receiver}.{name}"
        elif isinstance(func, ast.Name):
            head = self.expr(func)
        else:
            head = self.expr(func)
        return f"{head}({','.join(args + keywords)})"

    def e_Subscript(self, node: ast.Subscript) -> str:
        return f"{self.expr(node.value)}[{self.expr(node.slice)}]"

    def e_Slice(self, node: ast.Slice) -> str:
        return ":".join("" if part is None else self.expr(part) for part in (node.lower, node.upper, node.step))

    def e_Tuple(self, node: ast.Tuple | ast.List) -> str:
        return "(" + ",".join(self.expr(element) for element in node.elts) + ")"

    e_List = e_Tuple

    def e_Compare(self, node: ast.Compare) -> str:
        parts = [self.expr(node.left)] + [f"{type(op).__name__}{self.expr(c)}" for op, c in
                                           zip(node.ops, node.comparators)]
        return "CMP(" + ",".join(parts) + ")"

    def e_JoinedStr(self, node: ast.JoinedStr) -> str:
        return "S"

    def e_Lambda(self, node: ast.Lambda) -> str:
        return f"LAMBDA({self.expr(node.body)})"

    def e_ListComp(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> str:
        return f"COMP({self.expr(node.elt)};" + ";".join(self.expr(g.iter) for g in node.generators) + ")"

    e_GeneratorExp = e_ListComp
    e_SetComp = e_ListComp

    # --- statements ----------------------------------------------------------------------------------------------
    def statements(self, body: list[ast.stmt]) -> list[str]:
        """[canonical text] of a body, nested blocks included once as their own entries too."""
        found = []
        for node in body:
            text = self.statement(node)
            if text:
                found.append(text)
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(node, field, None)
                if isinstance(inner, list) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                      ast.ClassDef)):
                    found += self.statements(inner)
        return found

    def statement(self, node: ast.stmt) -> str:
        if isinstance(node, ast.Expr):
            value = node.value
            if isinstance(value, ast.Constant) or (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                                                   and value.func.id == "print"):
                return ""  # docstrings, prints
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                    and INPLACE.match(value.func.attr):  # x.masked_fill_(m, v) is x = x.masked_fill(m, v)
                return f"V={self.expr(value)}"
            return self.expr(value)
        if isinstance(node, ast.Assign):
            return f"{','.join(_target(t) for t in node.targets)}={self.expr(node.value)}"
        if isinstance(node, ast.AnnAssign):
            return f"V={self.expr(node.value)}" if node.value is not None else ""
        if isinstance(node, ast.AugAssign):
            rebuilt = ast.BinOp(left=node.target, op=node.op, right=node.value)
            return f"V={self.expr(rebuilt)}"
        if isinstance(node, ast.Return):
            return f"return {self.expr(node.value)}" if node.value is not None else "return"
        if isinstance(node, (ast.If, ast.While)):
            return f"{type(node).__name__.lower()} {self.expr(node.test)}"
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return f"for {self.expr(node.iter)}"
        if isinstance(node, ast.Raise):
            return "raise"
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return "with " + ",".join(self.expr(item.context_expr) for item in node.items)
        return ""  # pass, assert, import, global, try headers: style, not structure


def _is_fill(text):
    """A value masked positions are filled with: a constant, -inf or its stand-ins, zeros_like."""
    return text in ("NEG", "INF") or text.startswith("torch.zeros_like(") or _number(text) != 0.0 or text in (
        "0", "0.0")


def _target(node):
    if isinstance(node, (ast.Tuple, ast.List)):
        return "(" + ",".join(_target(element) for element in node.elts) + ")"
    if isinstance(node, ast.Subscript):
        return "V[]"
    return "V"


def _bounded(text):
    """A canonical expression past MAX_CANONICAL characters as its digest: equal texts still match, and the next
    level up neither copies nor splits it again. A solution's longest is some 150 characters; a file of chains of
    hundreds of terms (a red team's, 1 MB) cost 5-25 s of the judge's CPU here, quadratic in each chain's length."""
    if len(text) <= MAX_CANONICAL:
        return text
    return "LONG" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _number(text):
    try:
        return float(text)
    except ValueError:
        return 0.0


def _flatten(name, text):
    """The operands of a chain `a + b + c`, written flat so that its grouping does not matter."""
    if text.startswith(name + "(") and text.endswith(")"):
        return _split(text[len(name) + 1:-1])
    return [text]


def _split(text):
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


def _sorted(name, operands):
    return f"{name}({','.join(sorted(operands))})"


def _positive(condition):
    """A mask and its complement say the same thing about which positions are hidden."""
    while condition.startswith("NOT(") and condition.endswith(")"):
        condition = condition[4:-1]
    return condition


def parse(code: str) -> ast.Module | None:
    """The syntax tree of `code`, or None; lines Python cannot read (a notebook's magics, a half-finished line)
    are blanked one at a time, at most 20 of them."""
    lines = code.split("\n")
    for _ in range(20):
        try:
            return ast.parse("\n".join(lines))
        except SyntaxError as error:
            row = (error.lineno or 0) - 1
            if not 0 <= row < len(lines) or not lines[row].strip():
                return None
            lines[row] = ""
        except (ValueError, RecursionError, MemoryError):
            return None
    return None


def functions(body: list[ast.stmt], found: list[Where] | None = None) -> list[Where]:
    """[(where, body)] of every function (methods and nested ones included) and, first, the module's own
    statements; where = (name, first line, last line), (module, 0, 0) for the module. A descent through
    statement bodies only (expressions hold no function worth comparing)."""
    if found is None:
        found = [(("module", 0, 0), [node for node in body if not isinstance(node, DEFINITIONS)])]
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(((node.name, node.lineno, node.end_lineno or node.lineno), node.body))
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                functions(inner, found)
    return found


def structure_prints(code: str) -> dict[str, tuple[str, int, int]]:
    """{fingerprint: (function, first line, last line) where it was found} of a file's structure (empty when
    the file cannot be parsed)."""
    tree = parse(code)
    if tree is None:
        return {}
    try:
        return _prints(tree, Canon(code))
    except RecursionError:
        return {}


def _prints(tree, canon):
    prints: dict[str, tuple[str, int, int]] = {}
    for where, body in functions(tree.body):
        canon.collected = []
        statements = [text for text in canon.statements(body) if len(text) >= MIN_STATEMENT]
        for text in statements:
            prints.setdefault("s " + text, where)
        for text in canon.collected:
            prints.setdefault("e " + text, where)
        distinct = sorted(set(statements))[:MAX_PAIRS]
        for i, first in enumerate(distinct):
            for second in distinct[i + 1:]:
                prints.setdefault("p " + first + "\n" + second, where)
        if len(distinct) >= 2:
            prints.setdefault("f " + "\n".join(sorted(statements)), where)
    return prints
