"""``python -m ragmetrics``: the same as the ``ragmetrics`` command (same arguments, output, exit codes)."""

import sys

from ragmetrics.cli import program

if __name__ == "__main__":
    sys.exit(program())
