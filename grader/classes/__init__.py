"""A whole class: which files are whose, grading them all, resuming, sharding, progress.

`submissions` turns a file, folder or zip (an LMS download included, named by
`lms_names`) into named submissions; `bulk` grades them resumably into OUT;
`judges` spreads a class over one judge process per core; `progress` reports;
`tables` writes grades.csv and the terminal's table.

May import: grader.chapter, grader.judging (torch only where grading starts), grader.text, grader.outfiles.
"""
