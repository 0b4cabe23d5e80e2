"""A worker that breaks the pipe protocol: mode ``hugemeta`` (see the package)."""

import sys

from tests.support.lying_pipe import main

if __name__ == "__main__":
    sys.exit(main("hugemeta"))
