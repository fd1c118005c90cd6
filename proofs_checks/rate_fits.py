"""Decay exponents with intervals: :func:`fit_exponent`, :func:`fit_slope` and the engine
:func:`rate_claim`.
"""

from __future__ import annotations

import math

import numpy as np

from .records import Claim
from .spec import ClaimError, ClaimSpec
from .verdict import decide_rate
from .witnesses import claim_record

__all__ = ["fit_exponent", "fit_slope", "rate_claim"]


# ---------------------------------------------------------------------------------------------------
# rates


def fit_exponent(x, y) -> tuple[float, float, float]:
    """Decay exponent e of y ~ x^-e by log-log least squares, with a jackknife interval (two standard
    errors): ``(e, lo, hi)``."""
    lx = np.log(np.asarray(x, dtype=float))
    ly = np.log(np.maximum(np.asarray(y, dtype=float), 1e-300))
    e = -float(np.polyfit(lx, ly, 1)[0])
    n = lx.size
    if n < 3:
        return e, -math.inf, math.inf
    loo = np.array([-np.polyfit(np.delete(lx, i), np.delete(ly, i), 1)[0] for i in range(n)])
    se = math.sqrt((n - 1) / n * float(np.sum((loo - loo.mean()) ** 2)))
    return e, e - 2.0 * se, e + 2.0 * se


def fit_slope(x, samples, *, seed, n_boot: int = 1000) -> tuple[float, float, float]:
    """Slope of log(mean of samples) on log x, with a bootstrap 95% interval (replicates resampled
    within each x): ``(slope, lo, hi)``."""
    lx = np.log(np.asarray(x, dtype=float))
    means = [float(np.mean(s)) for s in samples]
    slope = float(np.polyfit(lx, np.log(means), 1)[0])
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    boots = _slopes(lx, _boot_log_means(samples, rng, n_boot))
    lo, hi = (float(v) for v in np.quantile(boots, [0.025, 0.975]))
    return slope, lo, hi


def _slopes(lx, Y) -> np.ndarray:
    """``[np.polyfit(lx, ys, 1)[0] for ys in Y]`` as an array: polyfit's operations (its Vandermonde matrix
    scaled by its column norms, ``rcond = len(x) eps``, the slope divided by the first scale) with every row's
    least-squares problem in one call of numpy's ``lstsq`` ufunc (LAPACK's dgelsd on each row's own copy, as
    polyfit's call does it for one row); polyfit itself, row by row, where a row's rank is not 2 (its warning)
    or the first and last rows' slopes are not polyfit's bits. The bootstrap's 1000 fits of :func:`fit_slope`
    measured 24 -> 1.5 ms (process time; theorem1's six fits ~0.14 s of a report)."""
    Y = np.asarray(Y)
    lx = np.asarray(lx, dtype=np.float64)
    if not (Y.ndim == 2 and Y.dtype == np.float64 and lx.ndim == 1 and Y.shape[1] == lx.size >= 2 and len(Y)):
        return np.array([np.polyfit(lx, ys, 1)[0] for ys in Y])
    x = lx + 0.0
    lhs = np.vander(x, 2)
    scale = np.sqrt((lhs * lhs).sum(axis=0))
    lhs /= scale
    rcond = len(x) * np.finfo(x.dtype).eps
    got = _lstsq_rows(lhs, (Y + 0.0)[:, :, None], rcond)
    if got is None:
        return np.array([np.polyfit(lx, ys, 1)[0] for ys in Y])
    c, rank = got
    out = (c[..., 0].T / scale[:, None]).T[:, 0]
    ends = (0, len(Y) - 1)
    ok = np.all(rank == 2) and np.all(np.isfinite(out))
    if not (ok and all(out[i].tobytes() == np.polyfit(lx, Y[i], 1)[0].tobytes() for i in ends)):
        return np.array([np.polyfit(lx, ys, 1)[0] for ys in Y])  # (polyfit's warning or error, if any)
    return out


def _lstsq_rows(lhs, B, rcond):
    """(solutions, ranks) of the least-squares problems lhs x = B[i] (B: (rows, m, 1)) from numpy's ``lstsq`` ufunc
    (``numpy.linalg.lstsq``'s own call, one row at a time inside it), or None where numpy has no such ufunc."""
    try:
        from numpy.linalg import _umath_linalg
    except ImportError:
        return None
    with np.errstate(all="ignore"):  # (a failed row: NaN, and polyfit's own call then raises)
        c, _, rank, _ = _umath_linalg.lstsq(lhs, B, rcond, signature="ddd->ddid")
    return c, rank


def _boot_log_means(samples, rng, n_boot: int, *, batched: bool = True) -> np.ndarray:
    """(n_boot, len(samples)): for each bootstrap round in turn, for each sample s in turn, log of the mean of s
    resampled with replacement (``rng.integers(0, s.size, s.size)``), the rounds drawn from ``rng`` in that order.

    ``batched`` (samples of one size, at most 4 million draws): the rounds' indices in one ``integers`` call of
    shape (n_boot, k, n) and the means along the last axis of one gather: the same indices as the loop's calls
    (a Generator's bounded integers of one range are drawn one by one, so one call of m values is m calls of one,
    and the generator ends in the same state), and each mean the same reduction of a contiguous row of n values
    as the 1-d ``mean`` (``tests/test_rate_fits_boot.py`` pins the two paths to each other and to the state)."""
    samples = [np.asarray(s) for s in samples]
    k = len(samples)
    sizes = {s.size for s in samples}
    if batched and k and len(sizes) == 1 and all(s.ndim == 1 for s in samples) and n_boot * k * max(sizes) <= 4_000_000:
        n = sizes.pop()
        S = np.stack(samples)
        idx = rng.integers(0, n, (n_boot, k, n))
        return np.log(S[np.arange(k)[:, None], idx].mean(axis=-1))
    out = np.empty((n_boot, k))
    for b in range(n_boot):
        out[b] = [np.log(s[rng.integers(0, s.size, s.size)].mean()) for s in samples]
    return out


def rate_claim(
    spec: ClaimSpec,
    x,
    y,
    params: dict,
    *,
    theory: float | None = None,
    pinned: bool,
    reference=None,
    reference_label: str | None = None,
    data=None,
    applicable: bool = True,
    why: str | None = None,
    method: str = "simulation",
    tail: int | None = None,
    scope: str | None = None,
) -> Claim:
    """A fitted decay exponent against the claimed one (:func:`proofs_checks.verdict.decide_rate`).

    The claimed rate comes from the spec's :class:`~proofs_checks.spec.RateSpec` (``exponent``, and
    when it gives them the ``grid`` the x-values must equal and the ``tail`` of largest points the fit
    uses); ``theory``/``tail`` given here must agree with it (a conflict is a ClaimError), or stand in
    for it when the spec has no ``rate``. ``reference``: ``(x, y)`` of another method of the same claimed
    class on the same instance. ``method``: how the data were obtained (``simulation`` for runs). ``scope``: what
    was fitted, in words (default: derived from the evidence and the setting).

    The record keeps its data (``data["rate"]``: x, y, the fit, the claimed exponent; drawn by the
    generic rate figure), a ratio-like size ``theory / fitted exponent`` (> 1 when the fitted decay is
    slower than claimed; the verdict itself uses the interval and the margin), and a ``rate-fit``
    witness that describes the instance (``setting``: the record's parameters)."""
    rs = spec.rate
    if rs is not None:
        if theory is not None and not math.isclose(float(theory), float(rs.exponent), rel_tol=1e-12):
            raise ClaimError(f"claim {spec.id}: theory={theory} conflicts with its RateSpec exponent {rs.exponent}")
        theory = rs.exponent if theory is None else theory
        if rs.tail is not None and tail is not None and int(tail) != int(rs.tail):
            raise ClaimError(f"claim {spec.id}: tail={tail} conflicts with its RateSpec tail {rs.tail}")
        tail = rs.tail if tail is None else tail
        if rs.grid and [float(v) for v in rs.grid] != [float(v) for v in x]:
            raise ClaimError(f"claim {spec.id}: the x-values {list(x)} differ from its RateSpec grid {list(rs.grid)}")
    if theory is None:
        raise ClaimError(f"claim {spec.id}: no claimed exponent (give the spec a RateSpec, or theory=)")
    xs, ys = [float(v) for v in x], [float(v) for v in y]
    if len(xs) != len(ys) or len(xs) < 2:
        raise ClaimError(f"claim {spec.id}: x and y need the same length >= 2, got {len(xs)} and {len(ys)}")
    if tail is not None and not 2 <= int(tail) <= len(xs):
        raise ClaimError(f"claim {spec.id}: tail must be in [2, {len(xs)}], got {tail}")
    fx, fy = (xs[-int(tail) :], ys[-int(tail) :]) if tail is not None else (xs, ys)
    e, lo, hi = fit_exponent(fx, fy)
    ref_e = None
    w = {
        "kind": "rate-fit",
        "claim": spec.id,
        "x": fx,
        "y": fy,
        "theory": float(theory),
        "margin": 0.05,
        "pinned": bool(pinned),
        "setting": dict(params),
    }
    if reference is not None:
        ref_e = fit_exponent(*reference)[0]
        w["reference"] = {
            "x": [float(v) for v in reference[0]],
            "y": [float(v) for v in reference[1]],
            "label": reference_label,
        }
    v = decide_rate(e, (lo, hi), theory, pinned=pinned, reference=ref_e, witness=w, applicable=applicable, why=why)
    rate = {
        "x": xs,
        "y": ys,
        "x_label": rs.x_label if rs is not None else "x",
        "fit": {"exponent": e, "lo": lo, "hi": hi, "points": len(fx)},
        "theory": float(theory),
    }
    rec = claim_record(
        spec,
        v,
        params=params,
        method=method,
        empirical=e,
        bound=float(theory),
        ci=[lo, hi],
        data={**(data or {}), "rate": rate},
        relation="rate",
        scope=scope,
    )
    rec.ratio = float(theory) / e if e > 0 and math.isfinite(e) else None
    return rec
