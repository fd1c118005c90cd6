"""The public claim API: everything a user needs to check a claim of their own paper.

A claim file (or a package found through the entry-point group ``lptheory.checks``) defines a
:class:`Pack` and registers checks on it; each check returns claim records built by the engines::

    import sympy as sp
    from proofs_checks.api import (ClaimSpec, Assumption, DistributionSpace, Expect, Expect1, Pack, x, g,
                                   adversarial_search)

    PACK = Pack("my-paper", title="My paper: Lemma 3")
    r = sp.Symbol("r", positive=True)
    LEMMA = ClaimSpec(id="lemma3", statement="E|X - EX|^r <= Var(X)^{r/2}", source="Lemma 3",
                      assumptions=[Assumption("X has mean g", g, "==", Expect1(x))],
                      term=Expect(sp.Abs(x - g) ** r), bound=Expect1((x - g) ** 2) ** (r / 2))

    @PACK.check(title="Lemma 3", options=("r",), defaults={"r": [1.0, 3.0]})
    def lemma3(ctx):
        return [adversarial_search(LEMMA, [DistributionSpace(1, 3)], {"r": v}, scalars={"r": v}, seed=ctx.seed)
                for v in ctx.r]

``lptheory check my_claims.py`` runs it; ``lptheory report --claims my_claims.py`` writes the report.

What is here
------------
* claims: :class:`ClaimSpec`, :class:`Assumption`, :class:`RateSpec`, :class:`Claim` (the record);
* the expression vocabulary: ``x``, ``g``, ``sigma``, :func:`CoordSum`, :func:`Expect`,
  :func:`Expect1`, :func:`Sup1`, :func:`indicator`; :class:`Distribution`, :class:`Env`, :func:`evaluate`;
* engines: :func:`exact_expectation`, :func:`monte_carlo`, :func:`interval_claim`, :func:`value_claim`
  (its witness built from the :class:`Point` where the value was computed), :func:`claim_record` (a
  record from a combined verdict),
  :func:`adversarial_search` over :class:`DistributionSpace` with a :class:`SearchBudget`,
  :func:`rate_claim`, :func:`fit_exponent`, :func:`fit_slope`, :func:`pointwise`; the simulator
  (:func:`simulate` with :class:`Observer`, :class:`Metric`, :class:`Series`, :class:`Regret`,
  :class:`StateNorm`);
* corrections (what holds instead of a violated "term <= bound"): :func:`best_constant`,
  :func:`family_supremum`, :func:`recheck_correction`, :func:`correction_record`, :func:`as_correction`;
* verdicts: :func:`decide`, :func:`decide_rate`, :func:`combine` (the one set of rules);
* negative controls, one convention for every pack (a control's record is never ``holds`` nor
  ``violated``: ``inconclusive``, "negative control 'x' fails as it must"): :func:`control_verdict` and
  :func:`gate_on_controls` on verdicts, :func:`control_record` on a record an engine built for the control;
* witnesses: :func:`recheck` and :func:`register_recheck` (new witness kinds);
* packs: :class:`Pack`, :func:`check`, :class:`Context`, :func:`load_pack`.
"""

from __future__ import annotations

from lptheory.simulate import Metric, Observer, Regret, Series, StateNorm, StepView, exact_oracle, simulate

from .corrections import as_correction, best_constant, correction_record, family_supremum, recheck_correction
from .engines import (
    DistributionSpace,
    Point,
    SearchBudget,
    adversarial_search,
    claim_record,
    control_record,
    exact_expectation,
    expression_witness,
    fit_exponent,
    fit_slope,
    interval_claim,
    monte_carlo,
    pointwise,
    rate_claim,
    sample_witness,
    value_claim,
)
from .expressions import CoordSum, Distribution, Env, Expect, Expect1, Sup1, evaluate, g, indicator, sigma, x
from .packs import Check, Context, Pack, PackError, check
from .packs import load as load_pack
from .recheck import recheck
from .recheck import register as register_recheck
from .records import Claim
from .spec import Assumption, ClaimError, ClaimSpec, RateSpec
from .verdict import Verdict, combine, control_verdict, decide, decide_rate, gate_on_controls

__all__ = [
    "Assumption",
    "Check",
    "Claim",
    "ClaimError",
    "ClaimSpec",
    "Context",
    "CoordSum",
    "Distribution",
    "DistributionSpace",
    "Env",
    "Expect",
    "Expect1",
    "Metric",
    "Observer",
    "Pack",
    "PackError",
    "Point",
    "RateSpec",
    "Regret",
    "SearchBudget",
    "Series",
    "StateNorm",
    "StepView",
    "Sup1",
    "Verdict",
    "adversarial_search",
    "as_correction",
    "best_constant",
    "check",
    "claim_record",
    "combine",
    "control_record",
    "control_verdict",
    "correction_record",
    "decide",
    "decide_rate",
    "evaluate",
    "exact_expectation",
    "exact_oracle",
    "family_supremum",
    "expression_witness",
    "fit_exponent",
    "fit_slope",
    "g",
    "gate_on_controls",
    "indicator",
    "interval_claim",
    "load_pack",
    "monte_carlo",
    "pointwise",
    "rate_claim",
    "recheck",
    "recheck_correction",
    "register_recheck",
    "sample_witness",
    "sigma",
    "simulate",
    "value_claim",
    "x",
]
