"""The old private path of :mod:`lptheory.fast.pool` (the benchmarks import it): the same module object."""

import sys

from .fast import pool as _module

sys.modules[__name__] = _module
