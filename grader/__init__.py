"""The attention exercise kit's grading engine.

Start reading at `grader.cli` (`python -m grader grade PATH`), then follow a
submission through the subpackages in the order it meets them (see
docs/architecture.md):

  chapter        the chapter described once: steps, points, names, colours
  classes/       which files make up a class, grading them all (resumable, sharded)
  sandbox/       the sealed worker that runs one student's code, and its limits
  check/         the seam between tests and student code, and the student's own checker (all that ships to students)
  judging/       the judge: runs the graded tests against the worker; the torch-free result model
  feedback/      diagnosis, the feedback page, the cohort report
  integrations/  Otter, nbgrader, Gradescope, Canvas/Moodle gradebooks
  build/         everything generated from solutions/: exercises, notebook, samples, releases
  faults/        the catalogue of known student mistakes and correct variants

Lower layers never import higher ones: chapter, paths, text, outfiles < check < sandbox
< feedback < judging < classes < integrations < build < cli (a kit test checks there is no import circle).
"""
