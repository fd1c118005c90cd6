"""What engine runs the optimizers' updates here, and why (:func:`engine_info`, exported as
``lptheory.engine_info``). Apart from :mod:`lptheory.fast.engine` because its check runs a real optimizer
(:class:`lptheory.optimizers.AdamW`): the engines never import the rules."""

from __future__ import annotations

import numpy as np

from .. import config
from .engine import apply
from .pool import threads

__all__ = ["engine_info"]


def engine_info(verify: bool = True) -> dict:
    """Which CPU engine runs the optimizers' updates, and why: ``{"engine": "fused" | "numpy", "numba":
    version or None, "threads": n, "reason": str, "verified": bool}``, and for the fused engine
    ``"svml_power"``: per dtype, whether its kernels compute fractional powers with numpy's own SVML
    routine in one pass (:mod:`lptheory.fast.svml`) rather than numpy.power calls between loops.

    With ``verify`` (the default) a one-step AdamW update on a small array is run through the fused engine
    and compared bit for bit with the reference engine, so ``engine == "fused"`` means the numba kernels
    compiled and ran in this environment (not only that numba imports). ``pip install .`` installs numba
    (a core dependency); ``LPTHEORY_ENGINE=numpy`` selects the reference engine."""
    from . import fused as _fused

    try:
        import numba

        version = numba.__version__
    except ImportError:
        version = None
    info = {"engine": "numpy", "numba": version, "threads": threads(fused=True), "verified": False}
    if config.numpy_engine():
        info["reason"] = "LPTHEORY_ENGINE=numpy selects the reference engine"
        return info
    if version is None:
        info["reason"] = "numba is not installed (pip install numba, or reinstall lptheory)"
        return info
    info.update(engine="fused", reason="numba is installed")
    if verify:
        from ..optimizers import AdamW  # the rules import the engines, not the reverse: imported here

        opt = AdamW(lr=1e-2, weight_decay=0.1)
        rng = np.random.default_rng(0)
        theta0, g = rng.standard_normal((2, 67)), rng.standard_normal((2, 67))
        outs = []
        for fused in (True, False):
            state = opt.init(theta0)
            new = [np.empty_like(theta0) for _ in range(1 + len(opt.buffers))]
            arrays = opt.named(theta0, g, [state[k] for k in opt.buffers], new)
            if fused:
                if not _fused.run(opt, opt.scalars(0), arrays, 1):
                    info.update(engine="numpy", reason="the fused engine declined the AdamW rule")
                    return info
            else:
                apply(type(opt).rule, np, opt.scalars(0), arrays, opt.n_scratch)
            outs.append(new[0])
        if not np.array_equal(outs[0], outs[1]):
            raise AssertionError("fused engine differs from the reference engine on a one-step AdamW update")
        info.update(verified=True, reason="numba kernels compiled, ran, and matched the reference bits")
    from . import svml as _svml

    # fractional powers inside the fused kernels through numpy's own SVML routines (same bits), per dtype
    info["svml_power"] = {dt: _svml.available(dt) for dt in ("float64", "float32")}
    return info
