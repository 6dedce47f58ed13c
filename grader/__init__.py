"""The attention exercise kit's grading engine. Start reading at `cli.grade_command`."""
