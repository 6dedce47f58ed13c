"""Values on the wire between the judge and the student's process.

A message is one frame: the length of a JSON header, the header, then the raw
bytes of every tensor in it (the header points at them by offset and length).
The judge never unpickles anything that the student's process produced: a
tensor crosses as dtype, shape and raw bytes and comes back as a plain CPU
`torch.Tensor`, whatever subclass the student returned. Raw bytes rather than
base64 text inside the JSON: a class run sends hundreds of thousands of tensors.
"""

import base64
import json
import math
import re
import struct
import threading
from dataclasses import dataclass, field as dataclass_field

import numpy as np
import torch

# Bounds on one answer: far above what any step returns, far below what would
# strain the judge. The judge decodes what a worker sends outside every limit of the
# worker, so a forged frame is held to the same bounds as an honest answer: tensor bytes,
# JSON header bytes, items (values of lists, tuples and dicts) and tensors.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
MAX_HEADER_BYTES = 4 * 1024 * 1024
MAX_ITEMS = 100_000
MAX_TENSORS = 4096
MAX_DEPTH = 32
MAX_TEXT = 10_000
# Characters of text in one answer, all its strings together: many strings just under MAX_TEXT each cost the judge
# 86 times its worker's CPU in the host-name search (a red team, 440 strings of 9,000 characters per answer)
MAX_ANSWER_TEXT = 64_000
MAX_INT_BITS = 256
_INT_BOUND = 1 << MAX_INT_BITS

_DTYPES = {
    "float16": (torch.float16, np.float16),
    "bfloat16": (torch.bfloat16, None),
    "float32": (torch.float32, np.float32),
    "float64": (torch.float64, np.float64),
    "int8": (torch.int8, np.int8),
    "int16": (torch.int16, np.int16),
    "int32": (torch.int32, np.int32),
    "int64": (torch.int64, np.int64),
    "uint8": (torch.uint8, np.uint8),
    "bool": (torch.bool, np.bool_),
}
_NAME_OF_DTYPE = {torch_dtype: name for name, (torch_dtype, _) in _DTYPES.items()}
_ITEM_SIZE = {name: np.dtype(np_dtype or np.float32).itemsize for name, (_, np_dtype) in _DTYPES.items()}


class Unsendable(Exception):
    """Student code returned something that cannot cross to the judge; the message says what and why."""


def _host_names():
    """What of the grading machine student code can read (sys.path, a module's __file__, a traceback, its uid)
    but no feedback may show: the kit's folder, the Python installation and virtual environment, the grading
    user's home, name and the machine's name, longest first, each with the placeholder it becomes."""
    import os
    import socket
    import sys

    from grader.paths import ROOT

    places: dict[str, str] = {}
    for path, placeholder in ((ROOT, "<kit>"), (sys.prefix, "<python>"), (sys.base_prefix, "<python>"),
                              (sys.exec_prefix, "<python>"), (os.path.expanduser("~"), "<home>")):
        for form in {str(path), os.path.realpath(path)}:
            if len(form) > 4 and form.count("/") >= 2 or form.startswith(("/root", "/home")):
                places.setdefault(form.rstrip("/"), placeholder)  # never "/", "/usr", "/opt": not the host's own
    names = set()
    try:  # (no pwd module on Windows, where a student may run the public checks)
        import pwd

        user = pwd.getpwuid(os.getuid()).pw_name
        if len(user) >= 3 and user not in ("root", "nobody"):  # a word of its own ("square root") is no secret
            names.add((user, "<user>"))
    except (ImportError, AttributeError, KeyError):
        pass
    host = socket.gethostname()
    if len(host) >= 2 and host not in ("localhost", "sandbox"):  # as a word of its own: "vm" too (a red team)
        names.add((host, "<host>"))
    parts = [(re.escape(path), placeholder) for path, placeholder in sorted(places.items(), key=lambda i: -len(i[0]))]
    parts += [(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", placeholder) for name, placeholder in names]
    return re.compile("|".join(f"(?P<m{index}>{pattern})" for index, (pattern, _) in enumerate(parts))), \
        [placeholder for _, placeholder in parts], max([len(path) for path in places] + [len(name) for name, _ in names]
                                                       + [0])


_HOST_PATTERN, _HOST_PLACEHOLDERS, _LONGEST_HOST = _host_names()


def _without_host(text):
    return _HOST_PATTERN.sub(lambda match: _HOST_PLACEHOLDERS[int(match.lastgroup[1:])], text)


def clean_text(text, limit=MAX_TEXT):
    """A string safe to show and to write as UTF-8: lone surrogates replaced, length bounded, and the grading
    machine's own paths and names (`_host_names`) replaced by placeholders. Every text of a worker that the
    judge keeps passes here (decode, StudentError, load problems), so none reaches a student's feedback."""
    # Cut first (with room for a host path across the cut): a 4 MB string searched whole cost the judge 170 ms of
    # CPU per answer, which a red team turned into 100 times its worker's CPU and a class run 33 times as long.
    margin = limit + _LONGEST_HOST
    if type(text) is str and text.isascii():  # the common case, decided without a copy
        text = text[:margin]
        if _HOST_PATTERN.search(text) is not None:
            text = _without_host(text)
        return text if len(text) <= limit else text[:limit] + "... (cut)"
    text = (str.__str__(text) if isinstance(text, str) else str(text))[:margin]
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    text = _without_host(text)
    return text if len(text) <= limit else text[:limit] + "... (cut)"


class Foreign:
    """A value of a type the judge does not compare (a numpy array, a module...).

    `type_name` is what the student's process said the type is; `shown_type` is what a message may say of it:
    one of a few library types' names, else no name (a class's name is the student's code's to choose, and a
    hidden check's message must not carry text the student's code chose)."""

    def __init__(self, type_name, text, array=None):
        self.type_name = type_name
        self.text = text
        self.array = array

    @property
    def shown_type(self):
        return _SHOWN_TYPES.get(self.type_name, "a value of another type")


# The few types a message names. A fixed list, not "any library's type": the student's code chooses a class's
# __module__ and __qualname__, and a choice among many real types would still be a channel.
_SHOWN_TYPES = {"numpy.ndarray": "numpy.ndarray", "builtins.set": "set", "builtins.frozenset": "frozenset",
                "builtins.bytes": "bytes", "builtins.bytearray": "bytearray", "builtins.complex": "complex",
                "builtins.range": "range", "builtins.function": "function", "builtins.generator": "generator"}


def _tensor_payload(tensor, budget):
    tensor = torch.Tensor.detach(tensor)
    if tensor.layout is not torch.strided:
        raise Unsendable(f"a {str(tensor.layout).replace('torch.', '')} tensor; return an ordinary dense tensor "
                         "(.to_dense())")
    if tensor.is_meta:
        raise Unsendable("a tensor on the 'meta' device, which has a shape but no values; create your "
                         "tensors on the input's device (device=x.device), not on 'meta'")
    if tensor.dtype is torch.bfloat16:
        tensor = tensor.float()
    name = _NAME_OF_DTYPE.get(tensor.dtype)
    if name is None:
        raise Unsendable(f"a tensor of dtype {tensor.dtype}, which the grader cannot compare; "
                         "return a float (or bool/int) tensor")
    budget.spend(tensor.numel() * tensor.element_size(), lambda: f"a tensor of shape {tuple(tensor.shape)}",
                 tensors=1)
    array = torch.Tensor.contiguous(tensor if tensor.is_cpu else torch.Tensor.cpu(tensor)).numpy()
    # raw bytes: `dumps` moves them out of the JSON header
    return {"dtype": name, "shape": list(array.shape), "data": array.tobytes()}


class _Budget:
    """What one answer may still hold: bytes, items and tensors; `error` is raised when one runs out."""

    def __init__(self, error=None):
        self.bytes, self.items, self.tensors, self.text = MAX_ANSWER_BYTES, MAX_ITEMS, MAX_TENSORS, MAX_ANSWER_TEXT
        self.error = error or _too_big

    def spend(self, size, what, items=0, tensors=0, text=0):
        """Take `size` bytes, `items`, `tensors` and `text` characters from what is left. `what` names the value in
        the error: a string, or a function that writes it (formatted only then: this runs for every value of a
        message)."""
        self.bytes -= size
        self.items -= items
        self.tensors -= tensors
        self.text -= text
        if self.bytes < 0 or self.items < 0 or self.tensors < 0 or self.text < 0:
            raise self.error(what() if callable(what) else what)


def _too_big(what):
    return Unsendable(f"{what}, more than any answer here needs (at most {MAX_ANSWER_BYTES >> 20} MB, "
                      f"{MAX_ITEMS} values, {MAX_TENSORS} tensors and {MAX_ANSWER_TEXT} characters of text); is a "
                      "shape or a loop much larger than intended?")


def _over_budget(what):
    return ValueError(f"{what}: more than one answer may hold")


def encode(value):
    """Turn a value into plain data for `dumps` (both directions use this); tensors' values are bytes.

    Raises Unsendable (with a message for the student) for what cannot cross:
    meta or sparse tensors, odd dtypes, huge or deeply nested values."""
    return _encode(value, _Budget(), 0)


def _encode(value, budget, depth):
    if depth > MAX_DEPTH:
        raise Unsendable(f"a value nested more than {MAX_DEPTH} levels deep; return a tensor or a short tuple")
    kind = type(value)
    if isinstance(value, torch.Tensor):  # the common case first
        payload = _tensor_payload(value, budget)
        payload["device"] = _device_text(torch.Tensor.device.__get__(value))
        if kind is not torch.Tensor and kind is not torch.nn.Parameter:
            payload["class"] = clean_text(kind.__qualname__, 200)
        return {"$tensor": payload}
    # Exact base types only: a subclass of int/float/str could lie in its __repr__ or __str__.
    if value is None or kind is bool or kind is float or (kind is int and -_INT_BOUND < value < _INT_BOUND):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        value = int.__index__(value)
        if value.bit_length() > MAX_INT_BITS:
            raise Unsendable(f"an integer with {value.bit_length()} bits; a result here is a tensor or a float")
        return value
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        budget.spend(len(value), "a string")
        return clean_text(value, MAX_TEXT)
    if isinstance(value, np.ndarray):
        array = None
        if value.dtype.name in _DTYPES:
            array = _tensor_payload(torch.from_numpy(np.ascontiguousarray(value)), budget)
        return {"$foreign": {"type": "numpy.ndarray", "text": f"shape {list(value.shape)}", "array": array}}
    if isinstance(value, (np.floating, np.integer)):
        return _encode(value.item(), budget, depth + 1)
    if isinstance(value, (tuple, list, dict)):
        budget.spend(8 * len(value), lambda: f"a {type(value).__name__} of {len(value)} items", items=len(value))
    if isinstance(value, tuple):
        return {"$tuple": [_encode(item, budget, depth + 1) for item in tuple.__iter__(value)]}
    if isinstance(value, list):
        return [_encode(item, budget, depth + 1) for item in list.__iter__(value)]
    if isinstance(value, dict):
        return {"$dict": [[clean_text(key, 200), _encode(item, budget, depth + 1)]
                          for key, item in dict.items(value)]}
    text = object.__repr__(value)
    return {"$foreign": {"type": clean_text(type(value).__module__ + "." + type(value).__qualname__, 200),
                         "text": clean_text(text, 200)}}


_DEVICE_TEXTS: dict[torch.device, str] = {}


def _device_text(device):
    """str(device), remembered: a class run sends hundreds of thousands of tensors from a few devices."""
    text = _DEVICE_TEXTS.get(device)
    if text is None:
        text = _DEVICE_TEXTS[device] = str(device)
    return text


def _tensor_from_payload(payload, budget):
    if not isinstance(payload, dict):
        raise ValueError("malformed tensor")
    name = payload.get("dtype")
    if name not in _DTYPES:
        raise ValueError(f"unsupported tensor dtype {clean_text(name, 40)!r}")
    np_dtype = _DTYPES[name][1] or np.float32  # bfloat16 travels as float32
    shape = payload.get("shape")
    if not isinstance(shape, list) or len(shape) > MAX_DEPTH or not all(
            type(size) is int and 0 <= size <= MAX_ANSWER_BYTES for size in shape):
        raise ValueError("malformed tensor shape")
    data = payload.get("data")
    if isinstance(data, str):  # base64 text: a tensor written as plain JSON
        if len(data) > MAX_HEADER_BYTES:
            raise ValueError("tensor text too long")
        raw: bytes | memoryview = base64.b64decode(data, validate=True)
    elif isinstance(data, (bytes, memoryview)):
        raw = data
    else:
        raise ValueError("malformed tensor data")
    expected = math.prod(shape) * _ITEM_SIZE[name]
    if len(raw) != expected:
        raise ValueError("tensor payload has the wrong size")
    budget.spend(expected, "too many tensors or too much tensor data", tensors=1)
    # A copy: the tensor must not keep the whole frame alive (nor share it with other tensors).
    return torch.from_numpy(np.frombuffer(raw, dtype=np_dtype).reshape(shape).copy())


_DEVICE_NAMES: dict[str, str] = {}


def _device_name(text):
    """The device a tensor says it came from, if it names a real device type; else 'unknown'. Remembered for
    a few names (an honest worker sends one or two; a forged one may send any number)."""
    name = _DEVICE_NAMES.get(text) if type(text) is str else None
    if name is None:
        try:
            name = str(torch.device(str(text)))
        except (RuntimeError, ValueError, TypeError):
            name = "unknown"
        if type(text) is str and len(_DEVICE_NAMES) < 16:
            _DEVICE_NAMES[text] = name
    return name


_LEAVES = frozenset({int, float, bool, type(None)})  # JSON's plain values: they decode to themselves


def decode(data, device=None, _depth=0, _budget=None):
    """Inverse of `encode`. Tensors land on `device` (default: CPU) as plain tensors.

    Each decoded tensor carries `.wire_device` (where the student's tensor
    lived) and `.wire_class` (its class, if it was a subclass). Malformed data
    (from a student process that forged its answers) raises ValueError, and so
    does an answer beyond one answer's budget (items, tensors, bytes): decoding
    costs the judge at most what an honest answer could.
    """
    if type(data) in _LEAVES:  # most values of a message: decided before anything else
        return data
    budget = _budget or _Budget(_over_budget)
    if _depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    if isinstance(data, list):
        budget.spend(0, "too many values", items=len(data))
        return [decode(item, device, _depth + 1, budget) for item in data]
    if isinstance(data, str):
        budget.spend(0, "more text than an answer holds", text=len(data))
        return clean_text(data, MAX_TEXT)
    if not isinstance(data, dict):
        return data
    if "$tensor" in data:
        payload = data["$tensor"]
        tensor = _tensor_from_payload(payload, budget)
        if device is not None:
            tensor = tensor.to(device)
        tensor.wire_device = _device_name(payload.get("device", "cpu"))
        tensor.wire_class = clean_text(payload["class"], 200) if payload.get("class") else None
        return tensor
    if "$tuple" in data:
        if not isinstance(data["$tuple"], list):
            raise ValueError("malformed tuple")
        budget.spend(0, "too many values", items=len(data["$tuple"]))
        return tuple(decode(item, device, _depth + 1, budget) for item in data["$tuple"])
    if "$dict" in data:
        items = data["$dict"]
        if not isinstance(items, list):
            raise ValueError("malformed dict")
        budget.spend(0, "too many values", items=len(items))
        decoded = {}
        for item in items:
            if not isinstance(item, list) or len(item) != 2:
                raise ValueError("malformed dict")
            decoded[clean_text(item[0], 200)] = decode(item[1], device, _depth + 1, budget)
        return decoded
    if "$foreign" in data:
        info = data["$foreign"]
        if not isinstance(info, dict):
            raise ValueError("malformed value")
        array = _tensor_from_payload(info["array"], budget) if info.get("array") else None
        return Foreign(clean_text(info.get("type"), 200), clean_text(info.get("text"), 200), array)
    raise ValueError("unrecognised value on the wire")


_HEADER = struct.Struct(">I")


def dumps(message):
    """One frame: header length, JSON header, then the raw bytes that `encode` left in the message."""
    _OUTGOING.blobs, _OUTGOING.offset = [], 0
    try:
        header = _ENCODE(message).encode("utf-8")
        blobs = _OUTGOING.blobs
    finally:
        _OUTGOING.blobs = None
    return b"".join([_HEADER.pack(len(header)), header, *blobs])


def _blob_reference(value):
    """The JSON encoder's hook for what JSON cannot hold: raw bytes move behind the header, by reference."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{type(value).__name__} cannot be sent")
    _OUTGOING.blobs.append(value)
    _OUTGOING.offset += len(value)
    return {"$blob": [_OUTGOING.offset - len(value), len(value)]}


_OUTGOING = threading.local()  # the frame being written by this thread: its blobs so far
# One encoder for all frames, made once, used through json's public API: `encode` takes json's C encoder
# where this Python has one (json.dumps would build a new JSONEncoder per call, about as costly as a small
# message). No circular check (messages are trees built by `encode`); compact separators (smaller headers).
# Measured against the private c_make_encoder/scan_once this replaced (a forward request's header with one
# (2, 4, 6) tensor, CPU time, best of 21 x 20,000 on this 2-core machine): encoding 3.8 -> 4.8 us, decoding
# 2.8 -> 3.8 us; about 2 us of a message's 20-30 us (json's one-shot encode makes its C encoder per call,
# decode skips whitespace around the value): the price of not depending on one Python's private signatures.
_ENCODE = json.JSONEncoder(default=_blob_reference, check_circular=False, separators=(",", ":")).encode


_FRAME = threading.local()  # the frame being parsed by this thread: its blobs and the spans referenced so far


def _blob(fields):
    """The JSON decoder's hook for every object: {"$blob": [offset, length]} becomes that span of the frame."""
    if "$blob" not in fields:
        return fields
    where, blobs = fields["$blob"], _FRAME.blobs
    if len(fields) != 1 or type(where) is not list or len(where) != 2:
        raise ValueError("malformed blob reference")
    start, length = where
    if type(start) is not int or type(length) is not int or start < 0 or length < 0 or start + length > len(blobs):
        raise ValueError("malformed blob reference")
    _FRAME.spans.append(where)
    return blobs[start:start + length]


_DECODER = json.JSONDecoder(object_hook=_blob)  # one for all frames: json.loads(..., object_hook=) builds one each time


def loads(raw):
    """Parse one frame. Anything unsound (a bad length, an offset out of range, bad JSON, JSON nested
    deeply enough to exhaust the parser) is a ValueError: the sender is untrusted.

    A frame costs the judge at most what an honest answer could: its header is bounded in
    bytes and items, and each blob byte is referenced at most once (a forged header that
    names one blob a thousand times would otherwise be copied a thousand times)."""
    try:
        if len(raw) < _HEADER.size:
            raise ValueError("short frame")
        end = _HEADER.size + _HEADER.unpack_from(raw)[0]
        if end > len(raw):
            raise ValueError("header longer than the frame")
        if end - _HEADER.size > MAX_HEADER_BYTES:
            raise ValueError("header too long")
        text = bytes(raw[_HEADER.size:end]).decode("utf-8")
        # Every value after the first in a container follows a comma: a bound on the items, before parsing.
        if text.count(",") + text.count("[") + text.count("{") > 4 * MAX_ITEMS:
            raise ValueError("too many values")
        # Every tensor is a "$tensor" key (the same text inside a string is escaped, \"$tensor\"): a bound on the
        # tensors, before any is built.
        if text.count('"$tensor"') > MAX_TENSORS:
            raise ValueError("too many tensors")
        _FRAME.blobs, _FRAME.spans = memoryview(raw)[end:], []
        try:
            message = _DECODER.decode(text)  # one JSON value (JSONDecodeError for anything else after it)
            spans = _FRAME.spans
        finally:
            _FRAME.blobs = _FRAME.spans = None
        spans.sort()
        if any(start + length > following for (start, length), (following, _) in zip(spans, spans[1:])):
            raise ValueError("blob referenced twice or overlapping")
        # Lone surrogates (valid JSON escapes, invalid UTF-8) can only come from a \ud... escape.
        return _clean_strings(message) if "\\ud" in text or "\\uD" in text else message
    except (ValueError, RecursionError, UnicodeDecodeError, MemoryError, struct.error) as error:
        raise ValueError(f"not a message: {type(error).__name__}") from None


def _clean_strings(value):
    """Replace lone surrogates (valid in JSON, invalid in UTF-8 files) in every string of a message."""
    if isinstance(value, str):
        return value if value.isascii() else clean_text(value, len(value))
    if isinstance(value, list):
        return [_clean_strings(item) for item in value]
    if isinstance(value, dict):
        return {_clean_strings(key): _clean_strings(item) for key, item in value.items()}
    return value


# -- the protocol -------------------------------------------------------------------------------------------
# Every request the judge sends a student's process, declared once: the judge builds them with `request`, the
# student's side (check.session.Session) reads them with `parse_request`, so a misspelt, missing or extra field
# is an error at one place, on either side, with the operation and the field named.


class ProtocolError(ValueError):
    """A request that is not one of OPERATIONS as declared: a bug of the grader (the judge writes every request)."""


_REQUIRED = object()  # a field's default that says it has none


@dataclass(frozen=True)
class Operation:
    """One operation: its name, its fields (each with its default, or _REQUIRED) and what it does."""

    name: str
    fields: dict[str, object]
    doc: str
    # Carried out by check.session.Session (op_<name>); else by the worker's loop around it (load, stop).
    session: bool = True
    _allowed: frozenset[str] = dataclass_field(init=False, repr=False, compare=False, default=frozenset())
    _required: frozenset[str] = dataclass_field(init=False, repr=False, compare=False, default=frozenset())

    def __post_init__(self) -> None:
        # Decided once: every request of a grading is parsed twice (built by the judge, read by the worker).
        object.__setattr__(self, "_allowed", frozenset(self.fields) | {"op"})
        object.__setattr__(self, "_required", frozenset(field for field, default in self.fields.items()
                                                        if default is _REQUIRED))

    def parse(self, request: dict[str, object]) -> dict[str, object]:
        """`request` with every optional field present (its default where it was left out)."""
        keys = request.keys()
        if keys <= self._allowed and keys >= self._required:  # sound: its fields in their declared order
            parsed = {"op": self.name, **self.fields}
            parsed.update(request)
            parsed["op"] = self.name
            return parsed
        extra = sorted(set(request) - set(self.fields) - {"op"})
        missing = [field for field, default in self.fields.items() if default is _REQUIRED and field not in request]
        if extra or missing:
            problems = ([f"unknown field(s) {extra}"] if extra else []) + ([f"missing {missing}"] if missing else [])
            raise ProtocolError(f"request {self.name!r}: {'; '.join(problems)} "
                                f"(its fields: {sorted(self.fields)})")
        return {"op": self.name, **{field: request.get(field, default) for field, default in self.fields.items()}}


_MODULE = {"handle": _REQUIRED, "path": ""}  # which built module (a handle `build` returned) and which submodule
OPERATIONS: dict[str, Operation] = {operation.name: operation for operation in (
    Operation("call", {"name": _REQUIRED, "args": _REQUIRED, "kwargs": None, "seed": None},
              "the submission's function `name` on encoded args and kwargs, torch seeded with `seed` first; "
              "answers its encoded result"),
    Operation("build", {"name": _REQUIRED, "args": _REQUIRED, "kwargs": None, "seed": None, "stand_in_heads": False},
              "construct the submission's class `name` (its CausalAttention replaced by the grader's stand-in "
              "with `stand_in_heads`), moved to the device; answers a handle for the requests below"),
    Operation("load_weights", {**_MODULE, "weights": _REQUIRED},
              "set the named nn.Parameters of a built module to encoded tensors"),
    Operation("fill_buffer", {**_MODULE, "name": _REQUIRED, "value": 0.0},
              "fill the registered buffer `name` of a built module with one value"),
    Operation("forward", {**_MODULE, "args": _REQUIRED, "kwargs": None, "train": False, "seed": None},
              "a built module's output for encoded args, in training mode with `train`, seeded with `seed`"),
    Operation("forward_elsewhere", {**_MODULE, "args": _REQUIRED},
              "a built module run in eval mode on encoded args as if it and they were on another device (a tensor "
              "its forward makes on the CPU and mixes with them raises, as on a GPU: check.session.DevicesMixed); "
              "answers None, or the error its forward raised"),
    Operation("state", dict(_MODULE), "a built module's parameters and buffers by name"),
    Operation("describe", dict(_MODULE), "a built module's structure (check.session.describe_module)"),
    Operation("rewind", {"to": _REQUIRED, "name": None},
              "the random generators back to where they were before request `to` of the last plan batch (the "
              "judge left the plan there: what it asks next runs as if the rest of the plan had not); `name` says "
              "what the judge was doing, for a limit's message"),
    Operation("batch", {"requests": _REQUIRED, "name": None, "keep_going": False, "plan": False, "expect": None},
              "several requests in one round trip, in order, up to the first that fails (all with `keep_going`); "
              "a handle \"previous\" means the module the last build of the batch made, {\"$built\": i} the i-th "
              "module built by the batch; with `plan` (check.student.Plans), the random generators' state before each "
              "request is kept for `rewind`, and `expect` (a boolean per request: succeeds) says where it stops; "
              "answers {answers: [...]}"),
    Operation("load", {"name": _REQUIRED, "chunks": _REQUIRED},
              "the worker's first request: the submission's file, to load", session=False),
    Operation("stop", {}, "the worker's last request: exit", session=False),
)}


def operation_of(request: object) -> Operation:
    """The declared operation of a request (a dict with "op"), or ProtocolError saying what is wrong."""
    if not isinstance(request, dict):
        raise ProtocolError(f"a request is a dict with an 'op', not a {type(request).__name__}")
    op = request.get("op")
    operation = OPERATIONS.get(op) if isinstance(op, str) else None
    if operation is None:
        raise ProtocolError(f"unknown operation {clean_text(str(request.get('op')), 40)!r} "
                            f"(the operations: {sorted(OPERATIONS)})")
    return operation


def parse_request(request: object) -> dict[str, object]:
    """A received request checked against OPERATIONS, with its defaults filled in (ProtocolError if unsound)."""
    return operation_of(request).parse(request)  # type: ignore[arg-type]


def request(op: str, **fields: object) -> dict[str, object]:
    """A request to send, checked against OPERATIONS: the fields given, in their declared order."""
    operation = operation_of({"op": op})
    operation.parse(fields)
    return {"op": op, **{field: fields[field] for field in operation.fields if field in fields}}
