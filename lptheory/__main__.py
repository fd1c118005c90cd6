"""``python -m lptheory``: the command line (:mod:`lptheory.app.cli`)."""

import sys

from lptheory.app.cli import main

sys.exit(main())
