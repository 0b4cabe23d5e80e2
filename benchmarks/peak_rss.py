"""Peak resident memory of a fresh process that reads one file with ``spark_logsource.iter_batches``.

The child reports ``VmHWM`` from ``/proc/self/status``, not ``getrusage().ru_maxrss``: Linux keeps ``ru_maxrss``
across ``execve``, so a child forked from a large benchmark process would report the parent's peak instead of its
own (``VmHWM`` belongs to the address space, which ``execve`` replaces).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import spark_logsource
n = sum(b.num_rows for b in spark_logsource.iter_batches(sys.argv[2], sys.argv[3], **json.loads(sys.argv[4])))
hwm = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(n, int(hwm.split()[1]))
"""


def peak_rss_kib(fmt: str, path: Path, options: dict[str, str] | None = None) -> tuple[int, int]:
    """Rows read and the peak RSS (KiB) of a fresh process reading ``path`` as ``fmt`` with ``options``."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(REPO), fmt, str(path), json.dumps(options or {})],
                         check=True, capture_output=True, text=True)
    rows, kib = out.stdout.split()
    return int(rows), int(kib)
