"""Check your attention exercises: `python check.py [STEP] [FILE]`.

    python check.py                     every step, on the exercise file you edited last
    python check.py masking             one step
    python check.py masking my_file.py  one step, on a file of your choice

Runs the public checks in your own Python (PyTorch 2.1 or newer); exit status 0
when every selected check passes. The course's grader also runs hidden checks.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the checker's package sits beside this file

try:
    import torch  # noqa: F401 - say clearly what is missing before anything else
except ImportError:
    sys.exit("PyTorch is not installed in this Python: see README.md, 'Install', then run this again.")

from grader.check.console import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
