"""lptheory: numerical theory verification for non-Euclidean (l_p) stochastic optimization.

Core layer: l_p geometry (:mod:`lptheory.geometry`), the paper's optimizers and baselines
(:mod:`lptheory.optimizers`), learning-rate schedules (:mod:`lptheory.schedules`).
"""

from . import geometry, optimizers, schedules
from .fast.info import engine_info
from .geometry import *  # noqa: F403  (its __all__: dual_exponent, lp_norm, steepest_map, ...)
from .optimizers import SGD, Adam, AdamW, Lion, LpDescent, SignSGD, StaceyP2, StaceyPP

__version__ = "0.1.0"

__all__ = [
    "engine_info",
    "geometry",
    "optimizers",
    "schedules",
    "norms",
    "spectral",
    *geometry.__all__,
    "LpDescent",
    "StaceyP2",
    "StaceyPP",
    "SGD",
    "SignSGD",
    "Adam",
    "AdamW",
    "Lion",
]

# matrix geometry and optimizers (issue 26)
from . import norms, spectral  # noqa: E402
