"""Alias of :mod:`lptheory.app.sweep` (sweeps are application code: they moved to the application floor).

``from proofs_checks import sweep`` and ``import proofs_checks.sweep`` keep working and give the very same
module object (monkeypatching either name patches both)."""

import sys

from lptheory.app import sweep as _sweep
from lptheory.app.sweep import *  # noqa: F403  (the public names, for readers of this module)
from lptheory.app.sweep import __all__  # noqa: F401

sys.modules[__name__] = _sweep
