"""``python -m spark_logsource.cli``: the ``spark-logsource`` command."""

import sys

from spark_logsource.cli import main

sys.exit(main())
