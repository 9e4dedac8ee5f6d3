"""``python -m ember``: the command line (``doctor``, ``config``; ``--help`` lists them)."""

import sys

from ember._src.plugin.doctor import main

sys.exit(main())
