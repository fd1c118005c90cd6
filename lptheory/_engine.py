"""The old private path of :mod:`lptheory.fast.engine` (the benchmarks import it): the same module object."""

import sys

from .fast import engine as _module

sys.modules[__name__] = _module
