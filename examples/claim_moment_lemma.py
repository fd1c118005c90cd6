"""A lemma-style claim of "another paper", checked with the public claim API only.

Claim: for a random variable X with mean g and r > 0, E|X - g|^r <= (E|X - g|^2)^{r/2}.
It is Jensen's inequality for the concave t -> t^{r/2}, so it holds for r <= 2 (with equality for
symmetric two-point X: tight) and fails for r > 2. The search over finite distributions must find the
violation, and its witness must re-check without the toolkit.

    lptheory check examples/claim_moment_lemma.py            (add --quick for a smoke run)
    lptheory report --claims examples/claim_moment_lemma.py --out examples_out/moment
"""

import sympy as sp

from proofs_checks.api import (
    Assumption,
    ClaimSpec,
    DistributionSpace,
    Expect,
    Expect1,
    Pack,
    SearchBudget,
    adversarial_search,
    g,
    x,
)

PACK = Pack(
    "moment-lemma",
    title="Example: a moment inequality (Jensen) checked by search",
    description="E|X - EX|^r <= (Var X)^{r/2}: true for r <= 2, false for r > 2.",
)
r = sp.Symbol("r", positive=True)

LEMMA = ClaimSpec(
    id="moment.jensen",
    statement="E|X - E X|^r <= (E|X - E X|^2)^{r/2} for every random variable X with finite moments",
    source="Example lemma (Jensen's inequality for t -> t^{r/2})",
    assumptions=[Assumption("g is the mean of X", g, "==", Expect1(x), per_coordinate=True)],
    term=Expect(sp.Abs(x - g) ** r),
    bound=Expect1((x - g) ** 2) ** (r / 2),
    show=("r", "k"),
)


@PACK.check(title="Moment inequality over finite distributions", options=("r",), defaults={"r": [1.5, 2.0, 3.0]})
def jensen(ctx):
    """The worst E|X - EX|^r / (Var X)^{r/2} over distributions with k = 2..4 support points."""
    spaces = [DistributionSpace(d=1, k=k) for k in (2, 3, 4)]
    budget = SearchBudget(maxiter=30, popsize=8) if ctx.quick else SearchBudget(maxiter=100, popsize=12)
    return [
        adversarial_search(LEMMA, spaces, {"r": float(v)}, scalars={"r": float(v)}, seed=[ctx.seed, i], budget=budget)
        for i, v in enumerate(ctx.r)
    ]
