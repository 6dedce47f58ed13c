"""What grading found, as plain data: the result model lives in grader.results (below the feedback layer,
which reads it); these names stay here for the judge and for code written against them."""

from grader.results import ResultsFormatError, SubmissionResult, TestResult, zero_result

__all__ = ["ResultsFormatError", "SubmissionResult", "TestResult", "zero_result"]
