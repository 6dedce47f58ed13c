"""Everything generated from solutions/ (the one source of truth): `make student` and `make publish`.

`grader.markers` (a lower layer: the fault catalogue reads it too) reads the solution's
`### BEGIN/END SOLUTION` regions and `# %% step:` cells (unbalanced or nested markers are
errors naming file and line); `exercises` writes the stubs, the notebook, the sample class and the student
release folder; `release` the student download; `shipping` which grader modules a release or an
autograder carries (`grader.integrations.publish` builds every part of dist/).

May import: anything below it (grader.faults and lower); never grader.integrations or grader.cli.
"""
