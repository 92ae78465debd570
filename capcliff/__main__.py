"""`python -m capcliff`."""

import sys

from capcliff.cli import main

sys.exit(main())
