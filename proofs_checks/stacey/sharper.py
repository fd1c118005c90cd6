"""Sharper statements the evidence supports (issue 35, item 7), searched adversarially on the quantities of
the claims they sharpen, and proved where a proof is found.

``thm1.B.sharper``: Theorem 1's combined term (Appendix A.1, the "Therefore" line),

    E[B] = E[eta <g_t, s(g_t) - s(g~_t)>] <= eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t),

the paper's bound eta (2p-1) G^{1/(p-1)} ||sigma||_1 / ((p-1) sqrt(n_t)) with its coefficient (2p-1)/(p-1)
replaced by 1, i.e. the paper's bound times (p-1)/(2p-1). How it was found: the combined lemma's adversarial
search (``thm1.B`` in ``lptheory check lemmas`` and ``corrections``) finds worst ratios r(p) = 0.065, 0.115,
0.185, 0.312, 0.391, 0.458 at p = 2.5, 3, 4, 8, 16, 50, i.e. D(p) = r(p) (2p-1)/(p-1) = 0.174, 0.287, 0.431,
0.668, 0.808, 0.925: below 1 and increasing towards it. No simple closed form fits D(p) itself (tried:
1 - (p-1)^{-1/2}, 1 - (p-1)^{-2/3}, (p-2)/p, (p-2)/(p+1), (p-2)/(p-1), (1 - 1/(p-1))^{3/2}: each off by 2% to
40% somewhere on the grid), so the conjecture was the simplest closed form above every D(p) found, the constant
1. It is searched here (the same search, spaces and budget as the corrections' re-check of ``thm1.B``, a
fresh seed) at those p and at larger ones (200, 1000), where D(p) is nearest 1: ``violated`` with a re-checked
witness if anything beats the sharper bound. Otherwise it is **proved** by
:mod:`proofs_checks.stacey.combined_proof`, for every p >= 2, with the still sharper coefficient
K(p) = M_a / 2 < 1, M_a = max_{t in [0, 1]} (1 + t^a)/(1 + t), a = 1/(p-1) (K = 0.559, 0.604, 0.667, 0.787,
0.870, 0.946, 0.983, 0.996 at the p of :data:`P_GRID`): the record's evidence is then ``proved`` and its reason
gives the interval [D(p) searched, K(p) proved] in which the sharp constant lies.
"""

from __future__ import annotations

import numpy as np

from ..api import DistributionSpace, SearchJob, adversarial_search_many
from . import formulas as F
from .corrections import WIDER
from .lemmas import NONDEGENERATE, SEARCH_BUDGET, SEARCH_CONFIGS

__all__ = ["run_sharper", "P_GRID", "scale_of", "spaces"]

#: the exponents of the search: the grid of the combined lemma's records, and two larger ones
P_GRID = (2.5, 3.0, 4.0, 8.0, 16.0, 50.0, 200.0, 1000.0)

STATEMENT = (
    "E[B] = E[eta <g_t, s(g_t) - s(g~_t)>] <= eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t) (found by this toolkit: the "
    "combined lemma thm1.B with its coefficient (2p-1)/(p-1) replaced by 1, i.e. the paper's "
    "bound times (p-1)/(2p-1))"
)


def scale_of(p: float) -> float:
    """(p-1)/(2p-1): the factor that turns the paper's bound on E[B] into the conjectured one."""
    return (p - 1.0) / (2.0 * p - 1.0)


def spaces(mode: str) -> list:
    """The spaces of the corrections' re-check of thm1.B (``mode``: "quick" | "full"): the lemmas' search
    configurations plus the wider ones (coupled coordinates, larger batches)."""
    base = [DistributionSpace(d, k, n) for d, k, n in SEARCH_CONFIGS[mode]]
    return base + [DistributionSpace(d, k, n, coupling=c) for d, k, n, c in WIDER[mode]]


def run_sharper(ctx):
    """``lptheory check sharper``: ``thm1.B.sharper`` at each p of :data:`P_GRID` (module docstring)."""
    import dataclasses

    mode = "quick" if ctx.quick else "full"
    spec = F.LEMMA_SPECS["thm1.B"]
    jobs, params = [], []
    for p in P_GRID:
        seed = np.random.SeedSequence([ctx.seed, int(p * 1000), 35])
        jobs.append(SearchJob(spec, seed, scale_of(p), NONDEGENERATE, {"p": p}))
        params.append({"p": p, "lemma": "thm1.B", "conjecture": "coefficient 1"})
    recs = adversarial_search_many(
        jobs, spaces(mode), params, scalars={"eta": 1.0, "L": 1.0}, budget=SEARCH_BUDGET[mode]
    )
    out = []
    for p, rec in zip(P_GRID, recs):
        note = (
            f"; the search's worst ratio against the paper's bound is "
            f"{float(rec.empirical) / float(rec.bound) * scale_of(p):.4g}, against the sharper bound "
            f"{float(rec.empirical) / float(rec.bound):.4g}"
            if rec.empirical is not None and rec.bound
            else ""
        )
        out.append(
            dataclasses.replace(
                rec,
                id="thm1.B.sharper",
                statement=STATEMENT,
                source="this toolkit, from the evidence of thm1.B (issue 35: sharper statements)",
                reason=(rec.reason or "") + note,
            )
        )
    from .combined_proof import prove_records

    out = prove_records(out)  # the searched holds, proved for every law (combined_proof), or the proof refuted
    ctx.say(f"{len(out)} exponents searched, {sum(r.evidence == 'proved' for r in out)} proved")
    from .sharp import SHARP_P, sharp_records  # issue 44: the sharp constants (the moment engine)

    p_sharp = list(getattr(ctx, "p", None) or SHARP_P)
    sharp = sharp_records(p_sharp, crossing_tol=2e-3 if ctx.quick else 2e-5)
    ctx.say(f"sharp constants of B, B1, B2 at p = {', '.join(f'{p:g}' for p in p_sharp)}")
    return out + sharp
