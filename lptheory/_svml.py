"""The old private path of :mod:`lptheory.fast.svml` (the benchmarks import it): the same module object."""

import sys

from .fast import svml as _module

sys.modules[__name__] = _module
