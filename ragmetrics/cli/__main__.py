"""``python -m ragmetrics.cli``: the same as the ``ragmetrics`` command."""

import sys

from ragmetrics.cli.app import main

sys.exit(main())
