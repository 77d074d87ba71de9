"""`python -m sourcegrad.bench`: see `sourcegrad.bench.runner`."""

import sys

from .runner import main

sys.exit(main())
