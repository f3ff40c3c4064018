"""`python -m bertviz_lite.train`: the training command line (it lives in `bertviz_lite.training.cli`)."""

import sys

from bertviz_lite.training.cli import main

if __name__ == "__main__":
    sys.exit(main())
