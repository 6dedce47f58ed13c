"""Run graded tests against a student's code and say what passed: the verdict of one check."""

import contextlib
import traceback

from grader.check import public_inputs
from grader.check.student import Student, StudentError, StudentUnavailable
from grader.check.wire import ProtocolError
from grader.check.testing import details_of, hidden_check


def run_test(test, student, details=None):
    """Run one graded test; return (passed, message). A failure's plain-data details (see
    testing.details_of) go into `details` when given, with "limit" (the StudentUnavailable's
    limit) when the student's process hit one."""
    details = {} if details is None else details
    shift = getattr(student, "public_shift", 0) if test.moved else 0  # see check.public_inputs
    passed, message = _run(test, student, details, shift)
    if not passed and shift and "limit" not in details:
        message += MOVED_NOTE
        details["inputs"] = "moved"  # its numbers are this submission's shift's (feedback.integrity reads it)
    if isinstance(student, Student):
        student.end(passed)
    return passed, message


# Said where it matters: a check that passes on the shipped inputs and fails on others puzzles a student.
MOVED_NOTE = ("\n(At grading this check ran on other inputs than your copy of it uses: if it passes for you, try "
              "your code on inputs of your own.)")


def _run(test, student, details, shift):
    try:
        if isinstance(student, Student):
            student.begin(test.name)  # may send the plan of the checks that start here (see check.student.Plans)
        with public_inputs.shifted(shift), (contextlib.nullcontext() if test.kind == "public" else hidden_check()):
            test.function(student)
        return True, ""
    except StudentUnavailable as error:
        details.update(details_of(error), limit=error.limit)
        return False, str(error)
    except StudentError as error:
        details.update(details_of(error))
        return False, _shown(test, error, str(error))
    except AssertionError as error:
        details.update(details_of(error))
        return False, _shown(test, error, str(error) or "assertion failed")
    except (NameError, ImportError, ProtocolError):  # no output of the student's can cause these in the check:
        raise  # a grader bug, never recorded as the student's failure (the run reports it instead)
    except Exception as error:  # noqa: BLE001 - an odd student output tripped the check itself
        where = traceback.extract_tb(error.__traceback__)[-1]
        # a hidden check names the error only: its text may quote what the student's process sent
        said = f"{type(error).__name__}: {error}" if test.kind == "public" else type(error).__name__
        return False, (f"the check could not run on your output ({said}); "
                       f"check the shapes and types your code returns [at {where.name}]")


def _shown(test, error, message):
    """The failure message as the check may show it. A hidden check's says what the student's code raised in the
    judge's words only (StudentError.hidden_text): the texts the student's process chose could carry the check's
    inputs into feedback the student reads once grades are out. Wherever a check quoted the crash (a cause named
    from it, a probe's reading), the quote is replaced; the check's own words stay."""
    if test.kind == "public":
        return message
    for crash in _crashes(error):
        quoted = str(crash)
        first, _, rest = quoted.partition("\n")
        shown = crash.hidden_text(test.step)
        if quoted in message:
            message = message.replace(quoted, shown)
        elif first in message:
            message = message.replace(first, shown)
            if rest:
                message = message.replace("\n" + rest, "")
    return message


def _crashes(error, depth=0):
    """The StudentErrors behind a failure: itself, or what it was raised from (a named crash, a probe)."""
    if error is None or depth > 4:
        return []
    own = [error] if isinstance(error, StudentError) else []
    return own + _crashes(error.__cause__ or error.__context__, depth + 1)
