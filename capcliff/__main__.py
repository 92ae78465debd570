"""`python -m capcliff`."""

import sys

from capcliff.cli.main import main

sys.exit(main())
