"""The judge's side of the interface: what a test may ask of a student's code.

Tests never touch the student's objects. They ask `student.call(...)`,
`student.build(...)` and `module.forward(...)`, and get plain tensors back.
Two transports carry the requests: in-process (a student's quick `make check`)
and a sandboxed worker process (grading; see `worker`).
"""

import builtins

from grader.chapter import STEPS
from grader.check import public_inputs, wire


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
        elif text["type"] == "InjectionError":  # the grader's own setting of weights: no exception of the student's
            message = (f"{what}: the grader could not set the chapter's parameters in your module ({text['message']}); "
                       "check the names and shapes your __init__ creates")
        else:
            message = f"{what} raised {text['type'] or 'an error'}: {text['message']}"
            if text["location"]:
                message += f"\n  at {text['location']}"
            if "same device" in text["message"] or "device type" in text["message"]:
                message += ("\n  The grader moved your module and its inputs to the GPU with .to(device); a tensor "
                            "your module keeps as a plain attribute (self.mask = ...) stays on the CPU. Register it "
                            "with self.register_buffer(...), and create new tensors with device=x.device.")
        super().__init__(message)
        self.what = what

    def hidden_text(self, step=""):
        """This message as a hidden check may show it: without the texts the student's process chose (the error's
        message and where it was raised, an exception class of its own, a forged missing name). Those may carry
        a hidden check's inputs (sizes, seeds, values) into feedback the student reads once grades are out."""
        name = self.info["missing_name"]
        if name:
            return (f"{name if name in _CHAPTER_NAMES else 'a name it needs'} is not defined in your submission; "
                    "check its spelling and that its cell or definition runs without errors")
        if self.not_implemented:  # the step, in the judge's words: a stub's own text is the student's to change
            return f"{self.what}: not implemented yet" + (f" ({step}: its code still raises NotImplementedError)"
                                                          if step else "")
        if self.info["returned"]:
            return f"{self.what} returned a value the grader cannot take" + HIDDEN_TEXT_NOTE
        if self.info["type"] == "InjectionError":  # the grader's own setting of weights failed, not the student's code
            return (f"{self.what} failed: the module has no parameter or buffer of the name and shape the chapter "
                    "gives it (the W_query, W_key and W_value of each attention module as nn.Linear(d_in, d_out, "
                    "bias=qkv_bias), MultiHeadAttention's out_proj, the mask registered as a buffer), so the grader "
                    "could not set it")
        kind = self.info["type"] if self.info["type"] in _KNOWN_ERRORS else "an error"
        return f"{self.what} raised {kind}" + HIDDEN_TEXT_NOTE


HIDDEN_TEXT_NOTE = (" (a hidden check shows neither your error's message nor where it was raised: call your code "
                    "on inputs of your own, or run the public checks, to see them)")
_KNOWN_ERRORS = frozenset(name for name, value in vars(builtins).items()
                          if isinstance(value, type) and issubclass(value, BaseException)) | {"OutOfMemoryError"}
_CHAPTER_NAMES = frozenset(name for step in STEPS for name in step.names)


class StudentUnavailable(AssertionError):
    """The student's process is gone (time limit, crash, exit, memory); `limit` says which
    (a grader.sandbox.limits.Limit, or None where no limit is known)."""

    def __init__(self, message, limit=None):
        super().__init__(message)
        self.limit = limit


class Plans:
    """What each group of checks asked of a student's process, learned from a group whose every check passed.

    A group is the checks the judge runs through one Student (a step's public or hidden part), named by its
    first check. Its requests hardly depend on the submission (fixed inputs, seeds and weights): the next
    Student of the group sends the whole plan in one round trip as its first check begins, and each check
    reads its answers from there while it asks the plan's requests in the plan's order. Where one asks
    otherwise (the probes that follow a failure, a check that stopped early), the rest of the plan's answers
    are dropped, the student's process puts its random generators back where they were after the last answer
    read, and every request from there goes live, in the order the checks ask them: as if no plan had been
    sent. Judging stays in the judge; the plan only moves requests earlier. One book per judge process (a class
    run learns each group's plan from the first submission that passes all of it)."""

    def __init__(self):
        # first check's name -> [(what, request with handles {"$built": i}, check's name, succeeded), ...]
        self.by_group = {}
        self.round_trips = 0  # every Student's, since the book was made (make bench reads the difference)


PLANS = Plans()


def succeeded(answer):
    """Whether an answer (a batch's: every answer in it) says the request ran without an error."""
    inner = answer.get("answers")
    return answer.get("ok") is True and (not isinstance(inner, list) or all(map(succeeded, inner)))


class Student:
    def __init__(self, transport, device="cpu", plans=None, planned=True, public_shift=0):
        """`plans`: the book of plans to use and teach (see Plans); by default the judge's own for a sandboxed worker
        (a transport with steps, sandbox.transport.WorkerTransport), none otherwise: in process a round trip costs
        no more than the call, and the checks share the student code's interpreter and its random generators.
        `public_shift`: how far grading moves the public checks' seeds for this submission (check.public_inputs)."""
        self.transport = transport
        self.device = device
        self.public_shift = public_shift
        self.plans = plans if plans is not None else PLANS if hasattr(transport, "begin_step") else None
        self.tally = self.plans  # counts this Student's round trips even where no plan is used
        if not planned:  # the judge grades a group again without its plan (see plan_lost)
            self.plans = None
        # The student's process ended inside the plan batch (a hang, a crash, an exit): which check's request
        # ended it is unknown, so the checks before it cannot be credited; the judge grades the group again live.
        self.plan_lost = False
        self.round_trips = 0  # requests that crossed to the student's process, plan batches included
        self.group = None  # the name of the first check run through this Student (see Plans)
        self.test = None  # the check running now
        self.asked = []  # (what, planned form, check) of each request, in order, while they may make a plan
        self.all_passed = True
        self.built = {}  # handle -> its index among the modules built through this Student
        self.ahead = []  # (what, planned form, check, answer) of the plan's requests not asked yet, in order
        self.read_ahead = 0  # answers of the plan read so far

    # -- plans ----------------------------------------------------------------------------------------------
    def begin(self, test_name):
        """A check starts (check.runner.run_test): the first of this Student sends its group's plan, if known."""
        if self.plans is None:
            return
        self.test = test_name
        if self.group is None:
            # a group's requests depend on the seeds grading moved them by (check.public_inputs): one plan each
            self.group = f"{test_name} (shift {self.public_shift})" if self.public_shift else test_name
            plan = self.plans.by_group.get(self.group)
            if plan:
                self._send_ahead(plan)
        elif self.ahead and self.ahead[0][2] != test_name:
            self._leave_plan(f"the checks of {test_name}")  # (the plan of another list of checks)

    def end(self, passed):
        """A check ended. If it left some of its plan's requests unasked (it stopped early), the plan ends here. A
        group whose checks have all passed so far, on its plan, teaches what it asked as its group's plan (a
        longer one, where the plan it had ended early)."""
        if self.plans is None:
            return
        self.all_passed = self.all_passed and passed
        if self.ahead and self.ahead[0][2] == self.test:
            try:
                self._leave_plan(f"the checks of {self.test}")
            except StudentUnavailable:  # the next request says so, as it would have
                pass
        if self.all_passed and self.asked and self.group is not None:
            if len(self.asked) > len(self.plans.by_group.get(self.group, ())):
                self.plans.by_group[self.group] = list(self.asked)

    def _send_ahead(self, plan):
        request = wire.request("batch", name=plan[0][0], requests=[planned for _, planned, _, _ in plan],
                               plan=True, expect=[succeeded for _, _, _, succeeded in plan])
        try:
            answer = self._send_now(request)
        except StudentUnavailable:
            self.plan_lost = True
            raise
        answers = answer.get("answers") if answer.get("ok") is True else None
        # From the student's process: at most one answer (a dict) per request; anything else is not used.
        if not (isinstance(answers, list) and len(answers) <= len(plan)
                and all(isinstance(item, dict) for item in answers)):
            return
        self.ahead = [(what, planned, test, item) for (what, planned, test, _), item in zip(plan, answers)]
        for _, planned, _, item in self.ahead:
            self._note_built(planned, item)

    def _leave_plan(self, what):
        """Drop the plan's answers not read, and put the random generators back where they were after the last
        one read (Session.op_rewind): what runs next runs as it would have without the plan."""
        self.ahead, self.asked = [], None  # a Student off its plan teaches none
        self._send_now(wire.request("rewind", to=self.read_ahead, name=what))

    def _planned(self, request):
        """`request` with every handle written as the index of its module among those built here ({"$built": i}),
        as the plan batch (Session.handle_batch) resolves it; None if one is not (a module of an earlier group)."""
        if request["op"] == "batch":
            items = [self._planned(item) for item in request["requests"]]
            return None if None in items else {**request, "requests": items}
        handle = request.get("handle")
        if handle is None or handle == "previous":
            return request
        index = self.built.get(handle) if type(handle) is int else None
        return None if index is None else {**request, "handle": {"$built": index}}

    def _note_built(self, request, answer):
        """Remember the handles that `request`'s answer made (a build's; a batch's builds in order)."""
        if request["op"] == "batch":
            inner = answer.get("answers") if answer.get("ok") is True else None
            if isinstance(inner, list):
                for item, item_answer in zip(request["requests"], inner):
                    if isinstance(item_answer, dict):
                        self._note_built(item, item_answer)
        elif request["op"] == "build" and answer.get("ok") is True and type(answer.get("value")) is int:
            self.built.setdefault(answer["value"], len(self.built))

    def _send(self, what, request):
        """The answer to `request`: the plan's, while the checks ask the plan's requests in its order; else from the
        student's process now (see Plans)."""
        planned = self._planned(request)
        if self.ahead:
            _, ahead, test, answer = self.ahead[0]
            if planned is not None and ahead == planned and test == self.test:
                del self.ahead[0]
                self.read_ahead += 1
                self._keep_asked(what, planned, answer)
                return answer
            self._leave_plan(what)
        answer = self._send_now(request)
        self._note_built(request, answer)
        self._keep_asked(what, planned, answer)
        return answer

    def _keep_asked(self, what, planned, answer):
        if self.asked is not None and self.plans is not None:
            keep = planned is not None and self.test
            self.asked = self.asked + [(what, planned, self.test, succeeded(answer))] if keep else None

    def _send_now(self, request):
        self.round_trips += 1
        if self.tally is not None:
            self.tally.round_trips += 1
        return self.transport.send(request)

    def _ask(self, what, request):
        return self._read(what, self._send(what, request))

    def _ask_many(self, asks, keep_going=False):
        """Several (what, request) pairs in one round trip (see Session.handle_batch): the value of each, or
        StudentError for the first that failed, as if they had been asked one by one. With `keep_going`
        every request runs, and the list holds a StudentError (not raised) for each one that failed."""
        request = wire.request("batch", name=asks[-1][0], requests=[r for _, r in asks], keep_going=keep_going)
        answer = self._send(asks[-1][0], request)
        answers = answer.get("answers") if answer.get("ok") is True else None
        # From the student's process: one answer per request (up to the first failure), nothing else.
        if not (isinstance(answers, list) and 1 <= len(answers) <= len(asks)
                and all(isinstance(item, dict) for item in answers)
                and (len(answers) == len(asks) or (not keep_going and answers[-1].get("ok") is not True))):
            raise StudentError(asks[0][0], {"returned": True, "message": "an answer the grader cannot read"})
        if not keep_going:
            return [self._read(what, item) for (what, _), item in zip(asks, answers)]
        values = []
        for (what, _), item in zip(asks, answers):
            try:
                values.append(self._read(what, item))
            except StudentError as error:
                values.append(error)
        return values

    def outputs_of(self, name, *args, runs, seed=None, **kwargs):
        """For each (weights, inputs) of `runs`: a fresh `name(*args, **kwargs)` (seeded with `seed`), those
        weights set, its output (eval mode) for `inputs`; all in one round trip, as `build(...).forward(...)`
        one after another (StudentError for the first step that fails)."""
        asks = []
        for weights, inputs in runs:
            build = wire.request("build", name=name, args=wire.encode(list(args)), kwargs=wire.encode(kwargs),
                                 seed=public_inputs.seed(seed), stand_in_heads=False)
            module = ModuleHandle(self, name, "previous")
            asks += [(f"{name}(...)", build)] + ([module.loading(weights)] if weights else [])
            asks.append(module._forwarding(inputs, False, None))
        values = self._ask_many(asks)
        return [value for (what, request), value in zip(asks, values) if request["op"] == "forward"]

    def _read(self, what, answer):
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
        request = wire.request("call", name=name, args=wire.encode(list(args)), kwargs=wire.encode(kwargs),
                               seed=public_inputs.seed(seed))
        return self._ask(f"{name}(...)", request)

    def build(self, name, *args, seed=None, weights=None, stand_in_heads=False, **kwargs):
        """Construct the student's class `name`; optionally inject parameters by name.

        `stand_in_heads=True` builds it while the module's `CausalAttention` is
        the grader's simple StandInHead (to judge a wrapper on its own).
        """
        request = wire.request("build", name=name, args=wire.encode(list(args)), kwargs=wire.encode(kwargs),
                               seed=public_inputs.seed(seed), stand_in_heads=stand_in_heads)
        if not weights:
            return ModuleHandle(self, name, self._ask(f"{name}(...)", request))
        load = ModuleHandle(self, name, "previous").loading(weights)  # the module built just before
        return ModuleHandle(self, name, self._ask_many([(f"{name}(...)", request), load])[0])


class ModuleHandle:
    def __init__(self, student, name, handle, path=""):
        self.student = student
        self.name = name
        self.handle = handle
        self.path = path

    def _request(self, op, **fields):
        return wire.request(op, handle=self.handle, path=self.path, **fields)

    @property
    def label(self):
        return f"{self.name}.{self.path}" if self.path else self.name

    def sub(self, path):
        """A handle on a submodule, e.g. `wrapper.sub("heads.0")`."""
        full = f"{self.path}.{path}" if self.path else path
        return ModuleHandle(self.student, self.name, self.handle, full)

    def loading(self, weights):
        """(what, request) that sets parameters by name (see `load`)."""
        request = self._request("load_weights", weights=wire.encode(dict(weights)))
        return f"setting the parameters of {self.label}", request

    def load(self, weights):
        return self.student._ask(*self.loading(weights))

    def fill_buffer(self, name, value=0.0):
        """Fill the registered buffer `name` (e.g. "mask") with `value`."""
        request = self._request("fill_buffer", name=name, value=float(value))
        return self.student._ask(f"setting {self.label}.{name}", request)

    def forward(self, *args, train=False, seed=None, weights=None):
        """The module's output for `args`; with `weights`, after setting those parameters (as `load` then
        `forward`, in one round trip)."""
        if weights:
            return self.forward_many([args], train=train, seed=seed, weights=weights)[0]
        return self.student._ask(*self._forwarding(args, train, seed))

    def forward_many(self, inputs, train=False, seed=None, weights=None):
        """The outputs for each args tuple of `inputs`, in one round trip: as many `forward` calls one after
        another (StudentError for the first that fails); `weights` are set before the first."""
        asks = [self.loading(weights)] if weights else []
        asks += [self._forwarding(args, train, seed) for args in inputs]
        values = self.student._ask_many(asks)
        return values[1:] if weights else values

    def forward_each(self, calls, weights=None):
        """For each (args, train, seed) of `calls`: its output, or the StudentError its forward raised (not
        raised here: the caller meets it where it would have called); all in one round trip. `weights` are
        set first (their failure is raised)."""
        asks = [self.loading(weights)] if weights else []
        asks += [self._forwarding(args, train, seed) for args, train, seed in calls]
        values = self.student._ask_many(asks, keep_going=True)
        if weights:
            if isinstance(values[0], StudentError):
                raise values[0]
            values = values[1:]
        return values

    def _forwarding(self, args, train, seed):
        return f"{self.label}.forward", self._request("forward", args=wire.encode(list(args)), train=train,
                                                      seed=public_inputs.seed(seed))

    def forward_elsewhere(self, *args):
        """Run forward as if the module and `args` were on another device (StudentError for what it raised)."""
        request = self._request("forward_elsewhere", args=wire.encode(list(args)))
        return self.student._ask(f"{self.label}.forward on another device", request)

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
