"""Run graded tests against a student's code and say what passed: the verdict of one check."""

import traceback

from grader.check.student import Student, StudentError, StudentUnavailable
from grader.check.wire import ProtocolError
from grader.check.testing import details_of


def run_test(test, student, details=None):
    """Run one graded test; return (passed, message). A failure's plain-data details (see
    testing.details_of) go into `details` when given, with "limit" (the StudentUnavailable's
    limit) when the student's process hit one."""
    details = {} if details is None else details
    passed, message = _run(test, student, details)
    if isinstance(student, Student):
        student.end(passed)
    return passed, message


def _run(test, student, details):
    try:
        if isinstance(student, Student):
            student.begin(test.name)  # may send the plan of the checks that start here (see check.student.Plans)
        test.function(student)
        return True, ""
    except StudentUnavailable as error:
        details.update(details_of(error), limit=error.limit)
        return False, str(error)
    except StudentError as error:
        details.update(details_of(error))
        return False, str(error)
    except AssertionError as error:
        details.update(details_of(error))
        return False, str(error) or "assertion failed"
    except (NameError, ImportError, ProtocolError):  # no output of the student's can cause these in the check:
        raise  # a grader bug, never recorded as the student's failure (the run reports it instead)
    except Exception as error:  # noqa: BLE001 - an odd student output tripped the check itself
        where = traceback.extract_tb(error.__traceback__)[-1]
        return False, (f"the check could not run on your output ({type(error).__name__}: {error}); "
                       f"check the shapes and types your code returns [at {where.name}]")
