"""Check your attention exercises: `python check.py [STEP] [FILE]`.

    python check.py                     every step, on the exercise file you edited
    python check.py masking             one step
    python check.py masking my_file.py  one step, on a file of your choice
    python check.py --help              the steps, the options, the exit statuses

Runs the public checks in your own Python (3.10 or newer, PyTorch 2.1 or newer, numpy) and
exits with status 0 when every selected check passes. The course's grader also runs hidden checks.
"""

import sys
from pathlib import Path

if sys.version_info < (3, 10):
    sys.exit(f"This checker needs Python 3.10 or newer; this is Python {sys.version.split()[0]} ({sys.executable}).")

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the checker's package sits beside this file

from grader.check.console import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
