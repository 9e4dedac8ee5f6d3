"""``python -m ember``: the command line (``doctor``, ``config``; ``--help`` lists them)."""

import sys

from ember._src.doctor import main

sys.exit(main())
