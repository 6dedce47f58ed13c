"""The chapter's known mistakes and correct variants, each an edit of the clean solution.

Used to build the sample class (`samples`), to measure diagnosis (`measure`,
`make diagnose-report`) and by the kit's tests. Never shipped to students.

May import: grader.build.markers (the clean solution), grader.judging (to measure).
"""
