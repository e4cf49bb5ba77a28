"""`python -m openenvgen_runtime.doctor PACKAGE_ID ...`: see `openenvgen_runtime.doctor.run`."""

import sys

from openenvgen_runtime.doctor.run import main

if __name__ == "__main__":
    sys.exit(main())
