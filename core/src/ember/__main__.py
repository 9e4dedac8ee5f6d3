"""``python -m ember``: the command line (``doctor``, ``config``, ``launch``; ``--help`` lists
them).

``launch`` is dispatched here, before the doctor's parser: the launcher belongs to
``distributed``, a layer above the plugin layer the doctor lives in.
"""

import sys

from ember._src.distributed import launch
from ember._src.plugin import doctor

if sys.argv[1:2] == ["launch"]:
    sys.exit(launch.main(sys.argv[2:]))
sys.exit(doctor.main())
