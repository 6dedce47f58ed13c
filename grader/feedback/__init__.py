"""What a student and an instructor read: diagnosis, feedback pages, the cohort report.

Everything here works from plain data (results.json dicts, verdicts), never from
student code, and imports no torch: `diagnosis` names the most likely cause of a
step's failures, `page` renders one submission's feedback (Markdown and HTML),
`report` the class's, `svg` draws their pictures.

May import: grader.chapter, grader.check.causes, grader.sandbox.limits, grader.text, grader.outfiles.
"""
