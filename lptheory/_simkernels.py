"""The old private path of :mod:`lptheory.fast.simkernels` (the benchmarks import it): the same module object."""

import sys

from .fast import simkernels as _module

sys.modules[__name__] = _module
