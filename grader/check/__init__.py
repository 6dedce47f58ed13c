"""What ships to students: the public checks' runner and the seam it shares with the grader.

Tests never touch the student's objects: they ask a `student.Student` for calls,
constructions and forwards and get plain tensors back (`wire`), whether the code
runs in this interpreter (the student's own check) or in a sealed worker
(grading). `loader` reads a .py or .ipynb as Python and Jupyter would;
`testing` holds the assertions that teach; `causes` the known mistakes' names.

May import: grader.chapter, torch, numpy (IPython when present). Nothing else of
the grader: `make student` copies this package into the release as it is.
"""
