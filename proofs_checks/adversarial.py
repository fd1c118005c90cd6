"""The adversarial-search engine: :func:`adversarial_search` and :func:`adversarial_search_many` run the
worst-case search (:mod:`proofs_checks.worst_case`) and turn its best candidates into claim records with
witnesses.
"""

from __future__ import annotations

import dataclasses
import math
import time

import sympy as sp

from .records import Claim
from .spec import ClaimError, ClaimSpec
from .verdict import decide
from .witnesses import applicability, claim_record, expression_witness, round_up_constants, srepr_text
from .worst_case import SearchBudget, SearchJob, job_scalars, search_ratios, search_worst_many

__all__ = ["adversarial_search", "adversarial_search_many"]


def _candidate_filter(spec: ClaimSpec, scalars: dict):
    """``where(setting) -> bool`` for the spec's setting-form assumptions (None without any): every
    candidate of a search is checked with the setting :meth:`DistributionSpace.setting` describes."""
    checks = [a for a in spec.assumptions if a.check is not None]
    if not checks:
        return None

    def where(setting):
        full = {**scalars, **setting}
        for a in checks:
            try:
                ok = a.check(full)
            except (KeyError, TypeError, ValueError) as exc:
                raise ClaimError(
                    f"claim {spec.id}: the check of assumption {a.name!r} cannot read a search candidate's setting "
                    f"(keys {sorted(full)}): {exc!r}"
                ) from exc
            if not (ok[0] if isinstance(ok, tuple) else ok):
                return False
        return True

    return where


def adversarial_search(
    spec: ClaimSpec,
    spaces,
    params: dict,
    *,
    scalars: dict | None = None,
    seed,
    budget: SearchBudget = SearchBudget(),  # noqa: B008 (a frozen dataclass)
    scale: float = 1.0,
    require=None,
    progress=None,
    scope: str | None = None,
) -> Claim:
    """The worst ratio over the distributions of ``spaces`` that meet the spec's assumptions exactly
    (every constant defined by an assumption takes its tightest admissible value). The worst point is
    always re-checked at high precision (its re-checked values are reported); ``violated`` needs the
    re-check to confirm. ``scale`` multiplies the bound (planted false bounds in tests); ``require``:
    a condition on the constants that candidates must meet, a sympy relation such as
    ``CoordSum(sigma) > 1e-6 * G`` (non-negligible noise; :class:`SearchJob`; a callable is a TypeError).

    ``spaces`` may also be :class:`~proofs_checks.matrix_space.MatrixSpace` objects (claims about a matrix's
    entries ``M_i_j``): each is searched (:func:`~proofs_checks.matrix_space.matrix_search`) and the record of
    the worst one returned (a violated one first). ``scope``: what was searched, in words (default: derived, "searched
    (the stated budget) at the setting ...")."""
    from .witnesses import scoped

    return scoped(
        _adversarial_search(
            spec,
            spaces,
            params,
            scalars=scalars,
            seed=seed,
            budget=budget,
            scale=scale,
            require=require,
            progress=progress,
        ),
        scope,
    )


def _adversarial_search(spec, spaces, params, *, scalars, seed, budget, scale, require, progress) -> Claim:
    """:func:`adversarial_search` without its scope."""
    from .matrix_space import MatrixSpace, matrix_search

    spaces = list(spaces)
    if spaces and any(isinstance(s, MatrixSpace) for s in spaces):
        if not all(isinstance(s, MatrixSpace) for s in spaces) or require is not None:
            raise TypeError("adversarial_search: MatrixSpace spaces take neither distribution spaces nor require=")
        recs = [matrix_search(spec, s, params, scalars=scalars, seed=seed, budget=budget, scale=scale) for s in spaces]
        return max(recs, key=lambda r: (r.status == "violated", r.ratio if r.ratio is not None else -math.inf))
    return adversarial_search_many(
        [SearchJob(spec, seed, scale, require)], spaces, [params], scalars=scalars, budget=budget, progress=progress
    )[0]


def adversarial_search_many(
    jobs,
    spaces,
    params: list[dict],
    *,
    scalars: dict | None = None,
    budget: SearchBudget = SearchBudget(),  # noqa: B008 (a frozen dataclass)
    progress=None,
    workers: int = 1,
    scope: str | None = None,
) -> list[Claim]:
    """:func:`adversarial_search` for several :class:`SearchJob` on the same spaces and scalars (one
    record each, the record it gets alone); their searches share evaluations
    (:func:`search_worst_many`), spread over ``workers`` processes. ``scope``: what was searched, in words, given to
    every record (default: each record's derived one; :func:`~proofs_checks.witnesses.scoped`: ValueError on an
    empty string, before any search runs)."""
    from .witnesses import scoped

    if scope is not None and (not isinstance(scope, str) or not scope.strip()):
        raise ValueError(f"adversarial_search_many: scope must be a non-empty string (what was tested), got {scope!r}")
    return [scoped(r, scope) for r in _search_many(jobs, spaces, params, scalars, budget, progress, workers)]


def _search_many(jobs, spaces, params, scalars, budget, progress, workers) -> list[Claim]:
    """:func:`adversarial_search_many` without its scope."""
    from .recheck import recheck

    t0 = time.perf_counter()
    sc_in = dict(scalars or {})
    jobs = list(jobs)
    for k, v in sc_in.items():  # inf, nan (--set r=inf, r=1e400): no evaluation at them is evidence
        if isinstance(v, float) and not math.isfinite(v):
            ids = ", ".join(sorted({jb.spec.id for jb in jobs}))
            raise ClaimError(f"claim {ids}: the scalar {k} = {v!r} is not finite; a claim is searched at finite values")
    # setting-form assumptions (Assumption(check=...)) are checked on every candidate: a job with such
    # assumptions searches only the candidates that meet them (its own filtered spaces)
    filt = {j: _candidate_filter(jb.spec, job_scalars(jb, sc_in)) for j, jb in enumerate(jobs)}
    plain = [j for j in range(len(jobs)) if filt[j] is None]
    bests = [None] * len(jobs)
    if plain:
        for j, b in zip(
            plain, search_worst_many([jobs[j] for j in plain], spaces, sc_in, budget=budget, workers=workers)
        ):
            bests[j] = b
    for j in range(len(jobs)):
        if filt[j] is not None:
            spaces_j = [dataclasses.replace(s, where=filt[j]) for s in spaces]
            bests[j] = search_worst_many([jobs[j]], spaces_j, sc_in, budget=budget, workers=workers)[0]
    out = []
    for j, (jb, best, prm) in enumerate(zip(jobs, bests, params)):
        spec, scale, require = jb.spec, jb.scale, jb.require
        sc_j = job_scalars(jb, sc_in)
        space = dataclasses.replace(best["space"], where=None)
        applicable, why, searched_within = True, None, ""
        if filt[j] is not None:
            setting = {**sc_j, **space.setting(space.decode(best["x"][None]))}
            applicable, why = applicability(spec, setting)
            if applicable:
                searched_within = "; searched only candidates meeting " + ", ".join(
                    a.name for a in spec.assumptions if a.check is not None
                )
            else:  # no candidate met them: measured anyway on the unfiltered space
                best = search_worst_many([jb], spaces, sc_in, budget=budget, workers=workers)[0]
                space = best["space"]
                setting = {**sc_j, **space.setting(space.decode(best["x"][None]))}
                applicable, why = applicability(spec, setting)
                why = (why or "") + " (no candidate of the space meets it; the worst unrestricted candidate is shown)"
        r, dist, sc, coords = search_ratios(spec, space, best["x"][None], sc_j, scale, require)
        wsc, wco = round_up_constants(spec, sc, coords)
        bound_expr = spec.bound if scale == 1.0 else sp.Float(scale) * spec.bound
        extra = {"require": srepr_text(require)} if require is not None else None  # re-checked from the witness
        w = expression_witness(spec, scalars=wsc, coords=wco, dist=dist, rhs=bound_expr, extra=extra)
        chk = recheck(w)
        if chk.get("inconclusive"):  # a side not finite at the worst case: the claim cannot be evaluated there
            at = ", ".join(f"{k}={v:g}" for k, v in prm.items() if isinstance(v, (int, float)))
            raise ClaimError(f"claim {spec.id}: at the worst case found ({at}) {chk['inconclusive']}")
        budget_txt = (
            f"{len(spaces)} restarts, {best['nfev']} exact evaluations, (d, k, n) in {[s.describe() for s in spaces]}"
        )
        prm = {
            **prm,
            "d": space.d,
            "k": space.k,
            "n": space.n,
            "search": {
                "optimizer": "differential evolution (vectorized) + Nelder-Mead polish, one run per configuration",
                "configurations (d, k, n)": [s.describe() for s in spaces],
                "restarts": len(spaces),
                "evaluations": int(best["nfev"]),
                "maxiter": budget.maxiter,
                "popsize": budget.popsize,
                "support": f"per coordinate k points u^{space.power}, u in [-1, 1] (scale-invariant ratio); "
                f"{space.coupling} coordinates; family {space.family}"
                + (f", |x| <= {space.support_bound:g}" if space.support_bound is not None else "")
                + (f", variance {space.variance:g}" if space.variance is not None else ""),
            },
            "bound_scale": scale,
        }
        emp, bnd = chk["empirical"], chk["bound"]
        note = f"float64 worst ratio {float(r[0]):.6g}{searched_within}"
        v = decide(
            spec.relation,
            emp,
            bnd,
            method="adversarial-search",
            witness=w,
            budget=budget_txt,
            note=note,
            applicable=applicable,
            why=why,
            float64=chk.get("float64"),
        )
        rec = claim_record(
            spec,
            v,
            params=prm,
            method="adversarial-search",
            empirical=emp,
            bound=bnd,
            data=None if v.status == "violated" else {"worst_case": {**w, "recheck": chk}},
        )
        if progress:
            progress(
                f"search {spec.id} {prm.get('p', '')}: worst ratio {float(r[0]):.4g} ({time.perf_counter() - t0:.1f}s)"
            )
        out.append(rec)
    return out
