"""`python -m bertviz_lite.serve --workers N`: N app processes behind HAProxy (it lives in `bertviz_lite.server.balancer`)."""

import sys

from bertviz_lite.server.balancer import main

if __name__ == "__main__":
    sys.exit(main())
