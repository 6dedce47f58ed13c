"""The error every command turns into one line and exit status 2: bad input from the person running it."""


class UsageError(Exception):
    """An argument, file or folder the command cannot use; the message names it and says what to do."""
