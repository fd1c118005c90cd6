"""Evaluation of a claim's sides and of the constants its assumptions define, on a population of
distributions (the numpy evaluator of :mod:`proofs_checks.expressions`).
"""

from __future__ import annotations

import numpy as np

from . import expressions as X
from .spec import ClaimError, ClaimSpec

__all__ = ["constants", "with_batch_size", "pointwise", "evaluate_sides"]


def require_finite(spec, name, values, params):
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        raise ClaimError(
            f"claim {spec.id}: the {name} is not finite ({v.ravel()[:4].tolist()}) at the setting {params}; "
            "a claim must evaluate to finite numbers where it is checked"
        )


# ---------------------------------------------------------------------------------------------------
# constants from the assumptions


def constants(
    spec: ClaimSpec,
    dist: X.Distribution,
    scalars: dict,
    given: dict | None = None,
    rows=None,
    lanes=None,
    quiet: bool = False,
):
    """The constants defined by the spec's assumptions (distribution form), evaluated on ``dist``:
    returns ``(scalars, coords, checks)``. A constant in ``given`` (a stated value) is kept and its
    assumption checked (``checks``: list of (name, ok) per assumption); otherwise the tightest
    admissible value is used. ``rows``, ``lanes``: per-row scalars (:class:`~proofs_checks.expressions.Env`);
    ``quiet``: the caller silences numpy's floating-point errors (one ``errstate`` for many evaluations)."""
    given = dict(given or {})
    sc = dict(scalars)
    coords = {}
    checks = []
    env = X.Env(scalars=sc, dist=dist, rows=rows, lanes=lanes)  # grows with each constant (outcomes shared)
    for a in spec.defining():
        val = _per(a.value, env, a.per_coordinate, quiet)
        name = a.symbol.name
        if name in given:
            stated = np.asarray(given[name], dtype=np.float64)
            stated_b = np.broadcast_to(stated, val.shape)
            tol = 1e-9 * (np.abs(val) + np.abs(stated_b) + 1e-300)
            if a.relation == "==":
                ok = np.abs(stated_b - val) <= tol
            elif a.relation == ">=":
                ok = stated_b >= val - tol
            else:
                ok = stated_b <= val + tol
            checks.append((a.name, bool(np.all(ok))))
            val = stated_b
        if a.per_coordinate:
            coords[name] = val
            env.coords[name] = env._coord(val)
        else:
            sc[name] = val
            env.scalars[name] = env._scalar(val)
    return sc, coords, checks


def _per(expr, env, per_coordinate, quiet=False):
    """An expression evaluated per coordinate ((S, d)) or as a scalar ((S,))."""
    return X.evaluate_shaped(expr, env, per_coordinate=per_coordinate, quiet=quiet)


def with_batch_size(spec: ClaimSpec, n: int, scalars: dict) -> dict:
    """The scalars with ``n``, the batch size of the distribution (its ``n``); a user scalar ``n`` that
    differs from it is a ClaimError (the expectation would be over another batch than the one stated)."""
    if "n" in scalars:
        given = np.asarray(scalars["n"], dtype=np.float64)
        if given.size != 1 or float(given.reshape(-1)[0]) != float(n):
            raise ClaimError(
                f"claim {spec.id}: scalars n={scalars['n']!r} conflicts with the distribution's batch size n={n} "
                "(set the batch size on the DistributionSpace / Distribution, not as a scalar)"
            )
    return {"n": n, **{k: v for k, v in scalars.items() if k != "n"}}


def pointwise(expr, x, *, scalars: dict | None = None, coords: dict | None = None) -> np.ndarray:
    """``expr`` (an expression in the random vector's coordinate ``x``, e.g. a pathwise term) at the
    points ``x`` (R, d), one value per row; ``coords`` per row (R, d) or shared (d,)."""
    xv = np.asarray(x, dtype=np.float64)
    R, d = xv.shape
    dist = X.Distribution(xv[:, :, None], np.ones((R, d, 1)), 1)
    return X.evaluate(X.Expect(expr), X.Env(scalars=scalars or {}, coords=coords or {}, dist=dist, S=R))


def evaluate_sides(spec: ClaimSpec, env: X.Env, quiet: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(term, bound) of ``spec`` on ``env``, (S,) arrays. A side left out of the spec (None) is a
    ClaimError naming it (it used to surface as an AttributeError deep in the expression compiler).
    ``quiet``: the caller silences numpy's floating-point errors (:func:`~proofs_checks.expressions.evaluate_quiet`)."""
    for side in ("term", "bound"):
        if getattr(spec, side) is None:
            raise ClaimError(
                f"claim {spec.id}: ClaimSpec has no {side} (give {side}=<a sympy expression>); the exact and "
                "search engines evaluate both sides"
            )
    ev = X.evaluate_quiet if quiet else X.evaluate
    return ev(spec.term, env), ev(spec.bound, env)
