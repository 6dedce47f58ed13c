"""A whole class: which files are whose, grading them all, resuming, sharding, progress.

`submissions` turns a file, folder or zip (an LMS download included, named by
`lms_names`) into named submissions; `bulk` grades them resumably into OUT; `shards` cuts a class into
slices and merges them back, only when all were cut from one version of the class;
`judges` spreads a class over one judge process per core; `progress` reports;
`tables` writes grades.csv and the terminal's table.

May import: grader.chapter, grader.judging (torch only where grading starts), grader.text, grader.outfiles.
"""
