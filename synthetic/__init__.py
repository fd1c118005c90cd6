"""Synthetic problems with certified constants and noise models (layer above :mod:`lptheory`).

Filled by the synthetic-problems issue; may import :mod:`lptheory`, never a higher layer.
"""
from . import matrix as _matrix  # noqa: E402,F401  (registers the matrix problems in synthetic.problems.PROBLEMS)
