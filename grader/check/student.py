"""The judge's side of the interface: what a test may ask of a student's code.

Tests never touch the student's objects. They ask `student.call(...)`,
`student.build(...)` and `module.forward(...)`, and get plain tensors back.
Two transports carry the requests: in-process (a student's quick `make check`)
and a sandboxed worker process (grading; see `worker`).
"""

from grader.check import wire


class StudentError(AssertionError):
    """The student's code raised; the message is ready to show.

    `info` comes from the student's process, which may have forged it: every
    field is checked and bounded before it reaches a message."""

    TEXTS = ("missing_name", "type", "message", "location")
    FLAGS = ("not_implemented", "returned")

    def __init__(self, what, info):
        info = info if isinstance(info, dict) else {}
        # Only bounded strings and true booleans go on: every later reader (causes, results.json) gets those.
        text = {key: wire.clean_text(info.get(key) or "", 600) for key in self.TEXTS}
        self.info = {**text, **{flag: info.get(flag) is True for flag in self.FLAGS}}
        self.not_implemented = self.info["not_implemented"]
        if text["missing_name"]:
            message = (f"{text['missing_name']} is not defined in your submission; "
                       "check its spelling and that its cell or definition runs without errors")
        elif self.not_implemented:
            message = f"{what}: not implemented yet ({text['message'] or 'NotImplementedError'})"
        elif self.info["returned"]:
            message = f"{what} returned {text['message']}"
        else:
            message = f"{what} raised {text['type'] or 'an error'}: {text['message']}"
            if text["location"]:
                message += f"\n  at {text['location']}"
            if "same device" in text["message"] or "device type" in text["message"]:
                message += ("\n  The grader moved your module and its inputs to the GPU with .to(device); a tensor "
                            "your module keeps as a plain attribute (self.mask = ...) stays on the CPU. Register it "
                            "with self.register_buffer(...), and create new tensors with device=x.device.")
        super().__init__(message)


class StudentUnavailable(AssertionError):
    """The student's process is gone (time limit, crash, exit, memory); `limit` says which
    (a grader.sandbox.limits.Limit, or None where no limit is known)."""

    def __init__(self, message, limit=None):
        super().__init__(message)
        self.limit = limit


class Student:
    def __init__(self, transport, device="cpu"):
        self.transport = transport
        self.device = device

    def _ask(self, what, request):
        answer = self.transport.send(request)
        if answer.get("ok") is not True:
            raise StudentError(what, answer.get("error"))
        try:
            return wire.decode(answer.get("value"))
        except (ValueError, TypeError, KeyError, RecursionError) as error:
            raise StudentError(what, {"returned": True,
                                     "message": f"an answer the grader cannot read ({error})"}) from None
        finally:
            # Decoding is the submission's time: a worker's transport stops the step past its deadline.
            charge = getattr(self.transport, "charge", None)
            if charge is not None:
                charge(f"the grader read the answer of {what}")

    def call(self, name, *args, seed=None, **kwargs):
        """Call the student's function `name` and return its (decoded) result."""
        request = {"op": "call", "name": name, "args": wire.encode(list(args)),
                   "kwargs": wire.encode(kwargs), "seed": seed}
        return self._ask(f"{name}(...)", request)

    def build(self, name, *args, seed=None, weights=None, stand_in_heads=False, **kwargs):
        """Construct the student's class `name`; optionally inject parameters by name.

        `stand_in_heads=True` builds it while the module's `CausalAttention` is
        the grader's simple StandInHead (to judge a wrapper on its own).
        """
        request = {"op": "build", "name": name, "args": wire.encode(list(args)),
                   "kwargs": wire.encode(kwargs), "seed": seed, "stand_in_heads": stand_in_heads}
        handle = self._ask(f"{name}(...)", request)
        module = ModuleHandle(self, name, handle)
        if weights:
            module.load(weights)
        return module


class ModuleHandle:
    def __init__(self, student, name, handle, path=""):
        self.student = student
        self.name = name
        self.handle = handle
        self.path = path

    def _request(self, op, **fields):
        return {"op": op, "handle": self.handle, "path": self.path, **fields}

    @property
    def label(self):
        return f"{self.name}.{self.path}" if self.path else self.name

    def sub(self, path):
        """A handle on a submodule, e.g. `wrapper.sub("heads.0")`."""
        full = f"{self.path}.{path}" if self.path else path
        return ModuleHandle(self.student, self.name, self.handle, full)

    def load(self, weights):
        request = self._request("load_weights", weights=wire.encode(dict(weights)))
        return self.student._ask(f"setting the parameters of {self.label}", request)

    def fill_buffer(self, name, value=0.0):
        """Fill the registered buffer `name` (e.g. "mask") with `value`."""
        request = self._request("fill_buffer", name=name, value=float(value))
        return self.student._ask(f"setting {self.label}.{name}", request)

    def forward(self, *args, train=False, seed=None):
        request = self._request("forward", args=wire.encode(list(args)), train=train, seed=seed)
        return self.student._ask(f"{self.label}.forward", request)

    def state(self):
        return self.student._ask(f"reading {self.label}'s parameters", self._request("state"))

    def describe(self):
        return self.student._ask(f"inspecting {self.label}", self._request("describe"))


class InProcessTransport:
    """Runs requests in this interpreter (the student's own check). Data still crosses as frames."""

    def __init__(self, session):
        self.session = session

    def send(self, request):
        request = wire.loads(wire.dumps(request))
        return wire.loads(wire.dumps(self.session.handle(request)))


def in_process(path, device="cpu"):
    """A Student over a submission loaded into this interpreter, plus the load problems."""
    from grader.check.loader import load_definitions
    from grader.check.session import Session

    loaded = load_definitions(path)
    return Student(InProcessTransport(Session(loaded.module, device)), device), loaded.problems
