"""``python -m ember``: the command line (``doctor``, ``config``, ``launch``, ``export``;
``--help`` lists them).

``launch`` and ``export`` are dispatched here, before the doctor's parser: the launcher belongs
to ``distributed`` and the export tools to ``export``, layers above the plugin layer the doctor
lives in.
"""

import sys

from ember._src.distributed import launch
from ember._src.export import cli as export_cli
from ember._src.plugin import doctor

if sys.argv[1:2] == ["launch"]:
    sys.exit(launch.main(sys.argv[2:]))
if sys.argv[1:2] == ["export"]:
    sys.exit(export_cli.main(sys.argv[2:]))
sys.exit(doctor.main())
