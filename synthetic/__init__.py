"""Synthetic problems with certified constants and noise models (layer above :mod:`lptheory`).

Filled by the synthetic-problems issue; may import :mod:`lptheory`, never a higher layer.
"""

from . import _fused_oracle as _fused_oracle  # noqa: E402,F401  (registers the simulator's multi-step kernel)
from . import matrix as _matrix  # noqa: E402,F401  (defining the matrix problems registers them in synthetic.problems.PROBLEMS)
