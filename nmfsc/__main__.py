"""``python -m nmfsc``: the ``nmfsc`` command line (see :mod:`nmfsc.cli`)."""

import sys

from nmfsc.cli import main

if __name__ == "__main__":
    sys.exit(main())
