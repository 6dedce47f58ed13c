"""What a student and an instructor read: diagnosis, feedback pages, the cohort report.

Everything here works from plain data (results.json dicts, verdicts), never runs
student code, and imports no torch: `diagnosis` names the most likely cause of a
step's failures, `page` renders one submission's feedback (Markdown and HTML),
`report` the class's, `svg` draws their pictures, `integrity` ranks pairs of
students by evidence of shared work (it reads the submitted files as text).

May import: grader.chapter, grader.check.causes, grader.check.loader, grader.sandbox.limits, grader.text,
grader.outfiles, grader.paths.
"""
