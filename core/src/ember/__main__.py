"""``python -m ember doctor``: report installed plugins, platforms and devices."""

import sys

from ember._src.doctor import main

sys.exit(main())
