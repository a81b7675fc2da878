"""``python -m ragmetrics``: the same as the ``ragmetrics`` command (same arguments, output, exit codes)."""

import sys

from ragmetrics.cli import main

if __name__ == "__main__":
    sys.exit(main())
