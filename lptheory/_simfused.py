"""The old private path of :mod:`lptheory.fast.simfused` (the benchmarks import it): the same module object."""

import sys

from .fast import simfused as _module

sys.modules[__name__] = _module
