"""The judge: run the graded tests of each step against a submission's worker, keep the verdicts.

`suite` finds the `@graded` tests and gives each its points (from grader.chapter);
`judge` grades one file step by step; `model` is the result model (plain data,
no torch); `results_json` writes and reads a submission's results.json.

May import: grader.chapter, grader.check, grader.sandbox, grader.feedback.
"""
