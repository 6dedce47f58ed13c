"""The chapter's known mistakes and correct variants, each an edit of the clean solution.

`bugs` (the catalogue: the kit's first faults and `learners`, the mistakes from
learners' public code, each with its source), `split` (the held-out split, drawn
once and frozen), `variants` (correct implementations that must get full marks
and no cause), `samples` (the sample class), `measure` (`make diagnose-report`).
See docs/diagnosis.md. Never shipped to students.

May import: grader.markers (the clean solution), grader.judging and grader.feedback (to measure).
"""
