"""The kit inside other tools: Otter, nbgrader, Gradescope, Canvas and Moodle gradebooks.

The only modules that import otter or nbgrader. `incell` runs one kit test
in-process over a notebook's globals (what Otter's and nbgrader's generated
cells call); `otter`, `nbgrader` and `gradescope` build their autograders;
`otter_engine` grades through the real `otter run`; `lms` writes gradebook imports.

May import: anything below it, grader.build included (`publish` builds dist/ from the release and the
autograders).
"""
