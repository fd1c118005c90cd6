"""The old private path of :mod:`lptheory.fast.fused` (the benchmarks import it): the same module object."""

import sys

from .fast import fused as _module

sys.modules[__name__] = _module
