"""The attention exercise kit's grading engine.

Start reading at `grader.cli` (`python -m grader grade PATH`), then follow a
submission through the subpackages in the order it meets them (see
docs/architecture.md):

  chapter        the chapter described once: steps, points, names, colours
  cohort/        which files make up a class (a cohort of students), grading them all (resumable, sharded)
  sandbox/       the sealed worker that runs one student's code, and its limits
  check/         the seam between tests and student code, and the student's own checker (all that ships to students)
  results        the result model: one submission's per-test verdicts, read and written as results.json
  judging/       the judge: runs the graded tests against the worker
  feedback/      diagnosis, the feedback page, the cohort report
  faults/        the catalogue of known student mistakes and correct variants
  build/         everything generated from solutions/: exercises, notebook, samples, the student release
  integrations/  (above build/) Otter, nbgrader, Gradescope, Canvas/Moodle, and `publish`, which builds dist/

Lower layers never import higher ones: chapter, paths, text, outfiles, stopping, errors, markers < check < sandbox
< results < feedback < judging < cohort < faults < build < integrations < cli (tests/kit/test_layout.py
checks every import against these layers).
"""
