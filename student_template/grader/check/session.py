"""The student side of the interface: carry out one request on the student's module.

A request names a function or class of the submission and plain inputs; the
answer is plain data (see `wire`). This code runs wherever the student's code
runs: in the student's own interpreter for `make check`, in a sandboxed worker
process for grading. It never judges anything.
"""

import ctypes
import itertools
import random
import traceback

import numpy as np

import torch

from grader.check import wire


def seed_all(seed, device):
    """torch.manual_seed(seed), without its cost on a CPU-only run: torch.manual_seed also queues
    a seed for every lazy accelerator backend, recording a stack trace each time (about 1.5 ms)."""
    if device.type == "cpu":
        torch.default_generator.manual_seed(seed)
    else:
        torch.manual_seed(seed)


_MT19937_STATE_BYTES = 624 * 4 + 4  # numpy's mt19937_state: uint32 key[624], int pos


def _numpy_raw_state():
    """The raw state of numpy's global generator, or None where it cannot be read cheaply (numpy < 1.25, or a
    global generator other than MT19937 set by the student)."""
    get_bit_generator = getattr(np.random, "get_bit_generator", None)
    generator = get_bit_generator() if get_bit_generator is not None else None
    if type(generator).__name__ != "MT19937":
        return None
    return ctypes.string_at(generator.ctypes.state_address, _MT19937_STATE_BYTES)


class Session:
    def __init__(self, module, device="cpu"):
        self.module = module
        self.device = torch.device(device)
        self.handles = {}
        self.batch_built = None  # while a batch runs: the handles its builds (and its batches') made, in order
        self.plan_states = []  # the random state before each request of the last plan batch, and after the last
        self.numpy_last = None  # (numpy's raw generator bytes, np.random.get_state()) of the last numpy_state

    # -- dispatch ---------------------------------------------------------
    def handle(self, request):
        """Carry out one request (checked against wire.OPERATIONS, the one place that declares them);
        return a JSON-ready answer."""
        try:
            request = self.parse(request)
        except wire.ProtocolError as error:
            return {"ok": False, "error": describe_error(error, self.module)}
        if request["op"] == "batch":
            return self.handle_batch(request)
        try:
            operation = getattr(self, "op_" + request["op"])
            if request.get("seed") is not None:
                seed_all(int(request["seed"]), self.device)
            with torch.no_grad():
                value = operation(request)
            return {"ok": True, "value": wire.encode(value)}
        except BaseException as error:  # noqa: BLE001 - a student's SystemExit is an answer too
            if isinstance(error, KeyboardInterrupt):
                raise
            return {"ok": False, "error": describe_error(error, self.module)}

    @staticmethod
    def parse(request):
        """The request with its defaults, if it is one of the operations a Session carries out (ProtocolError if not:
        an unknown operation, a missing or unknown field, or one for the worker's own loop such as "load")."""
        operation = wire.operation_of(request)
        if not operation.session:
            raise wire.ProtocolError(f"request {operation.name!r} is for the worker's loop, not a Session")
        return operation.parse(request)

    def handle_batch(self, request):
        """Several requests in one round trip, carried out in order up to the first that fails (a batch in it
        fails if any of its requests did), as the judge would have sent them one by one (it stops at a failure
        too), or all of them with "keep_going" (the judge then reads each failure where it would have met it).
        A request whose "handle" is "previous" acts on the module that the last "build" before it made; one
        whose handle is {"$built": i}, on the i-th module built by this batch and the batches in it (a
        check.student.Plans plan, written before the handles exist; `batch_built`, the outer batch's). A plan
        runs while each request fails or succeeds as `expect` says (a check's request that must fail included)."""
        outer = self.batch_built is None
        if outer:
            self.batch_built = []
        try:
            return self._batch(request, self.batch_built)
        finally:
            if outer:
                self.batch_built = None

    def _batch(self, request, built):
        answers, previous = [], None
        expect = request["expect"] if request["plan"] else None
        if expect is not None and (type(expect) is not list or len(expect) != len(request["requests"])):
            return {"ok": False, "error": describe_error(wire.ProtocolError("a plan expects one outcome per request"))}
        if request["plan"]:
            self.plan_states = [self.random_state()]
        for item in request["requests"] or []:
            unbuilt = False
            if isinstance(item, dict) and item.get("handle") == "previous":
                item = {**item, "handle": previous}
            elif isinstance(item, dict) and isinstance(item.get("handle"), dict):
                item = {**item, "handle": self._built_handle(item["handle"], built)}
                unbuilt = item["handle"] is None
            answer = self._unbuilt(item) if unbuilt else self.handle(item)
            answers.append(answer)
            if request["plan"]:
                self.plan_states.append(self.random_state())
            failed = not answer["ok"] or any(inner.get("ok") is not True for inner in answer.get("answers", ()))
            if not failed and item["op"] == "build":
                previous = answer["value"]
                built.append(previous)
            # A plan stops where a request fails or succeeds otherwise than expected; a batch at a failure.
            if failed == bool(expect[len(answers) - 1]) if expect is not None else failed and not request["keep_going"]:
                break
        return {"ok": True, "answers": answers}

    def random_state(self):
        """Every random generator student code may draw from without a seed of its own: torch's (the device's
        too), Python's and numpy's global ones."""
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return torch.get_rng_state(), cuda, random.getstate(), self.numpy_state()

    def numpy_state(self):
        """np.random.get_state(), read again only where numpy's global generator may have moved since the last
        read. get_state builds its 624-entry key one entry at a time (about 100 us): a plan's states, taken
        before and after each request, cost more than most requests. The generator's raw MT19937 state (key and
        position, 2500 bytes) is compared instead, through numpy's public ctypes interface; a cached gaussian
        (legacy normal draws use it up without moving the key) always reads again."""
        raw = _numpy_raw_state()
        last = self.numpy_last
        if raw is None or last is None or raw != last[0] or last[1][3]:
            self.numpy_last = last = raw, np.random.get_state()
        return last[1]

    def op_rewind(self, request):
        """Back to the random state before request `to` of the last plan batch (see random_state)."""
        to = request["to"]
        if type(to) is not int or not 0 <= to < len(self.plan_states):
            raise wire.ProtocolError(f"rewind to {to!r}: the last plan kept {len(self.plan_states)} states")
        cpu, cuda, python, numpy = self.plan_states[to]
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, self.device)
        random.setstate(python)
        np.random.set_state(numpy)
        self.numpy_last = None  # the state set may carry a cached gaussian the last read had not

    @staticmethod
    def _built_handle(reference, built):
        """The handle {"$built": i} names, or None where this batch built no such module."""
        index = reference.get("$built")
        return built[index] if type(index) is int and 0 <= index < len(built) else None

    def _unbuilt(self, item):
        error = wire.ProtocolError(f"request {item.get('op')!r} names a module this batch did not build")
        return {"ok": False, "error": describe_error(error, self.module)}

    def _inputs(self, request):
        args = wire.decode(request.get("args", []), self.device)
        kwargs = wire.decode(request.get("kwargs") or {"$dict": []}, self.device)
        return args, kwargs

    def _lookup(self, name):
        if not hasattr(self.module, name):
            raise MissingName(name)
        return getattr(self.module, name)

    # -- operations -------------------------------------------------------
    def op_call(self, request):
        args, kwargs = self._inputs(request)
        return self._lookup(request["name"])(*args, **kwargs)

    def op_build(self, request):
        args, kwargs = self._inputs(request)
        cls = self._lookup(request["name"])
        if request.get("stand_in_heads"):
            # Build with StandInHead as the module's CausalAttention, so the
            # wrapper is judged on its own, whatever state CausalAttention is in.
            original = getattr(self.module, "CausalAttention", None)
            self.module.CausalAttention = StandInHead
            try:
                module = cls(*args, **kwargs)
            finally:
                self.module.CausalAttention = original
            name_the_heads(module)
        else:
            module = cls(*args, **kwargs)
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"{request['name']}(...) did not create an nn.Module (got {type(module).__name__})")
        if not on_device(module, self.device):  # .to() walks every submodule even when nothing moves
            module.to(self.device)
        handle = len(self.handles) + 1
        self.handles[handle] = module
        return handle

    def _module(self, request):
        module = self.handles[int(request["handle"])]
        path = request.get("path") or ""
        return module.get_submodule(path) if path else module

    def op_load_weights(self, request):
        module = self._module(request)
        weights = wire.decode(request["weights"], self.device)
        for name, value in weights.items():
            owner_path, _, leaf = name.rpartition(".")
            owner = module.get_submodule(owner_path) if owner_path else module
            target = getattr(owner, leaf, None)
            if not isinstance(target, torch.nn.Parameter):
                raise InjectionError(f"{name} is not an nn.Parameter of {type(module).__name__} "
                                     f"(found {type(target).__name__}); create it as the chapter does")
            if tuple(target.shape) != tuple(value.shape):
                raise InjectionError(f"{name} has shape {tuple(target.shape)}, expected {tuple(value.shape)}")
            target.copy_(value.to(target.dtype))
        return None

    def op_fill_buffer(self, request):
        """Fill a registered buffer (a mask) with one value: the judge sees whether forward uses it."""
        module = self._module(request)
        name = str(request["name"])
        owner_path, _, leaf = name.rpartition(".")
        owner = module.get_submodule(owner_path) if owner_path else module
        if leaf not in getattr(owner, "_buffers", {}) or owner._buffers[leaf] is None:
            found = type(getattr(owner, leaf, None)).__name__
            raise InjectionError(f"{name} is not a registered buffer of {type(module).__name__} (found {found}); "
                                 "create it with self.register_buffer(...), so that it moves with the module")
        owner._buffers[leaf].fill_(float(request.get("value", 0.0)))
        return None

    def op_forward(self, request):
        module = self._module(request)
        module.train(bool(request.get("train", False)))
        args, kwargs = self._inputs(request)
        return module(*args, **kwargs)

    def op_forward_elsewhere(self, request):
        """Run forward in eval mode as if the module and its inputs were on another device (see wire.OPERATIONS)."""
        module = self._module(request)
        args, kwargs = self._inputs(request)
        module.train(False)
        placed = [*module.parameters(), *module.buffers(), *(arg for arg in args if isinstance(arg, torch.Tensor))]
        with torch.no_grad(), DevicesMixed(placed):
            module(*args, **kwargs)
        return None

    def op_state(self, request):
        module = self._module(request)
        state = {name: tensor for name, tensor in module.named_parameters()}
        state.update({name: tensor for name, tensor in module.named_buffers()})
        return state

    def op_describe(self, request):
        return describe_module(self._module(request), self.module.__name__)


class DevicesMixed(torch.overrides.TorchFunctionMode):
    """Raise as a GPU would where a tensor made on the CPU meets one on the module's device, with everything on the
    CPU: the module's parameters and buffers and the inputs (`placed`) count as on the device, and so does what is
    computed from them or made with a `device=`; a tensor made otherwise in forward (torch.ones(n, n)) is the CPU's.
    A 0-dim tensor is a scalar on every device, and conversions, shape-only and indexing calls take any device.
    (The 'meta' device would do it too, but its first use imports a second of decompositions in every worker.)"""

    TAKE_ANY_DEVICE = {"to", "type_as", "copy_", "new_tensor", "new_empty", "new_zeros", "new_ones", "new_full",
                       "view_as", "reshape_as", "expand_as", "__getitem__", "__setitem__", "__get__", "__set__"}

    def __init__(self, placed):
        super().__init__()
        self.kept = list(placed)  # alive while the ids below are read: an id is an object's only while it lives
        self.placed = {id(tensor) for tensor in self.kept}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        tensors = [value for value in _flat([*args, *kwargs.values()]) if isinstance(value, torch.Tensor)]
        placed = any(id(value) in self.placed for value in tensors)
        if placed and name not in self.TAKE_ANY_DEVICE and any(
                id(value) not in self.placed and value.dim() > 0 for value in tensors):
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:0 and cpu! (in {name or 'an operation'})")
        result = func(*args, **kwargs)
        moved = kwargs.get("device") is not None or (name in ("to", "cuda") and any(
            isinstance(value, (torch.device, str)) for value in args[1:]))
        if placed or moved:
            for value in _flat([result]):
                if isinstance(value, torch.Tensor):
                    self.kept.append(value)
                    self.placed.add(id(value))
        return result


def _flat(values, depth=0):
    """The items of `values`, with those of nested lists and tuples (torch.cat([a, b])), two levels deep."""
    for value in values:
        if isinstance(value, (list, tuple)) and depth < 2:
            yield from _flat(value, depth + 1)
        else:
            yield value


def name_the_heads(module):
    """A wrapper that keeps its heads under a name of its own (self.attention_heads) is correct: its one
    nn.ModuleList of heads is shown to the checks as `heads` too, the chapter's name they read, listed first so that
    its paths are heads.0, heads.1... Its own name still works in its forward. Nothing changes for a wrapper that
    has a `heads` (a plain list there is a slip the checks name) or several such lists."""
    if hasattr(module, "heads"):
        return
    found = [name for name, child in module.named_children() if isinstance(child, torch.nn.ModuleList)
             and len(child) and all(isinstance(head, StandInHead) for head in child)]
    if len(found) == 1:
        # No public way to put a submodule first: named_modules() lists a module held twice once, by its first name.
        module._modules = {"heads": module._modules[found[0]], **module._modules}


def on_device(module, device):
    """Whether every parameter and buffer of `module` is already on `device`."""
    return all(tensor.device == device for tensor in itertools.chain(module.parameters(), module.buffers()))


class StandInHead(torch.nn.Module):
    """What a wrapper gets instead of the student's CausalAttention when judged on its own.

    Same constructor and parameters as the chapter's CausalAttention, created in
    the same order, and a simple forward (not attention): enough to see how the
    wrapper builds, stores and combines its heads. Every constructor argument shows
    in the output (`stand_in_output` computes it from the weights alone): the judge
    checks what the wrapper built from what it computes, never from what the
    student's process reports about its modules.
    """

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_query = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = torch.nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = torch.nn.Dropout(dropout)
        self.register_buffer("mask", torch.zeros(context_length, context_length))  # its size shows, not its values

    def forward(self, x):
        return stand_in_output(x, self.W_query, self.W_key, self.W_value, self.mask.shape[-1], self.dropout)


def stand_in_output(x, query, key, value, context_length, dropout=None):
    """StandInHead's forward from its parts (callables or (weight, bias) pairs): dropout (in training)
    acts on the tanh term, and context_length adds context_length / 100 to every output."""
    query, key, value = (part if callable(part) else _linear(*part) for part in (query, key, value))
    dropped = torch.tanh(query(x))
    if dropout is not None:
        dropped = dropout(dropped)
    return dropped + value(x) * key(x).sum(dim=-1, keepdim=True) + context_length / 100


def _linear(weight, bias=None):
    return lambda x: torch.nn.functional.linear(x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype))


StandInHead.__name__ = StandInHead.__qualname__ = "CausalAttention"


class MissingName(Exception):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


class InjectionError(Exception):
    pass


def describe_module(root, student_module_name):
    """Structure facts the judge checks: submodules, parameters, buffers, stray tensors."""
    modules, buffers, plain_tensors = {}, {}, {}
    for path, sub in root.named_modules():
        entry = {
            "class": type(sub).__name__,
            "student_class": type(sub).__module__ == student_module_name,
            "id": id(sub),
        }
        if isinstance(sub, torch.nn.Linear):
            entry.update(in_features=sub.in_features, out_features=sub.out_features, bias=sub.bias is not None)
        if isinstance(sub, torch.nn.Dropout):
            entry.update(p=float(sub.p))
        if isinstance(sub, (torch.nn.ModuleList, torch.nn.Sequential)):
            entry.update(length=len(sub))
        modules[path] = entry
        prefix = f"{path}." if path else ""
        non_persistent = getattr(sub, "_non_persistent_buffers_set", set())
        for name, tensor in sub.named_buffers(recurse=False):
            buffers[prefix + name] = {"shape": list(tensor.shape), "dtype": str(tensor.dtype),
                                      "persistent": name not in non_persistent}
        for name, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and not name.startswith("_"):
                plain_tensors[prefix + name] = {"shape": list(value.shape), "device": str(value.device)}
    parameters = {name: {"shape": list(p.shape), "id": id(p)}
                  for name, p in root.named_parameters(remove_duplicate=False)}
    return {"modules": modules, "parameters": parameters, "buffers": buffers, "plain_tensors": plain_tensors}


def describe_error(error, module=None):
    """An exception from student code as plain data, with a traceback of the student's own lines.

    The exception is the student's object: its __str__ or __repr__ may raise,
    so every piece is taken defensively."""
    frames = traceback.extract_tb(error.__traceback__)
    student_file = getattr(module, "__file__", None) or ""
    student_base = student_file.rsplit("/", 1)[-1]
    student_frames = [frame for frame in frames if student_base and frame.filename.startswith(student_base)]
    location = ""
    if student_frames:
        last = student_frames[-1]
        location = f"{last.filename}, line {last.lineno}, in {last.name}: {(last.line or '').strip()}"
    info = {
        "type": wire.clean_text(type(error).__name__, 100),
        "message": _safe_text(error, 500),
        "location": wire.clean_text(location, 300),
        "not_implemented": isinstance(error, NotImplementedError),
    }
    if isinstance(error, MissingName):
        info["missing_name"] = wire.clean_text(error.name, 100)
    if isinstance(error, SystemExit):
        info["message"] = f"your code called exit({_safe_text(error.code, 100, repr)})"
    if isinstance(error, wire.Unsendable):
        info["returned"] = True  # not raised by the student: what their code returned cannot be sent
    return info


def _safe_text(value, limit, show=str):
    try:
        return wire.clean_text(show(value), limit)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything, SystemExit included
        return f"<{type(value).__name__} that cannot be shown>"
