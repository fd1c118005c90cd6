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
  :func:`adversarial_search` over :class:`DistributionSpace` (or :class:`MatrixSpace`: matrices, symmetric or
  not, with a spectral bound; :func:`matrix_symbols`) with a :class:`SearchBudget`,
  :func:`rate_claim`, :func:`fit_exponent`, :func:`fit_slope`, :func:`pointwise`; the simulator
  (:func:`simulate` with :class:`Observer`, :class:`Metric`, :class:`Series`, :class:`Regret`,
  :class:`StateNorm`);
* corrections (what holds instead of a violated "term <= bound"): :func:`best_constant`,
  :func:`family_supremum`, :func:`recheck_correction`, :func:`correction_record`, :func:`as_correction`;
* verdicts: :func:`decide`, :func:`decide_rate`, :func:`combine` (the one set of rules);
* negative controls, one convention for every pack (a control's record is never ``holds`` nor
  ``violated``: ``inconclusive``, "negative control 'x' fails as it must"): :func:`control_verdict`,
  :func:`gate_on_controls` (on verdicts or on records, e.g. :func:`rate_claim`'s), :func:`control_record` on a
  record an engine built for the control;
* witnesses: :func:`recheck` and :func:`register_recheck` (new witness kinds; re-checked standalone with
  ``allow_modules``/``--allow-module``); :func:`divergence_claim` (an iteration that leaves every bound violates
  a convergence claim, witness kind ``divergence``); ``MinEig`` (the smallest eigenvalue of a symmetric matrix, in
  a witness's conditions, enclosed rigorously); ``SingVal``, ``PolarFactor``, ``Rank`` (a matrix's k-th singular value,
  its orthogonal polar factor's entries and its numerical rank, recomputed by the re-check from the matrix's entries
  at 60 digits);
* packs: :class:`Pack`, :func:`check`, :class:`Context`, :func:`load_pack`;
* "proved" is earned (issue 44): a record's evidence ``proved`` needs the certificate of a toolkit decision
  (:mod:`proofs_checks.certificates`): :func:`branch_and_bound`/:func:`bnb_record`, :func:`enclose_max`,
  :func:`compose_bound` (proved interval images through f o f o ... o f, no hand chaining),
  :func:`prove_expression` or a re-checked witness, :func:`prove_identity`/:func:`identity_claim` (an identity
  with its case split and spot checks, :func:`spot_gap`), :func:`decide_identity` given ``lhs``/``rhs``;
  a hand-built ``Verdict(..., evidence="proved")`` is refused (ValueError) when its record is built;
  :func:`is_issued` (whether a certificate was issued by a toolkit decision in this process), :func:`certify`
  (the packs shipped here only: refused from any other file).
* the moment engine (issue 44, :mod:`proofs_checks.moment`): :func:`sharp_bound` (the sharp constant of a
  one-coordinate moment bound E phi(X; g) <= C tau over laws with E X = g, Var X <= tau^2 on a bounded support,
  an explicit law re-checked at 50 digits below and quadratic majorants decided in arb above),
  :func:`check_certificate` (a quadratic majorant decided by branch and bound), :func:`law_value` (a law re-checked
  at 50 digits), :func:`kept_decision` (a decider's result kept on disk between runs: signed, keyed by the hash of
  the toolkit's sources, its certificates re-admitted when read back; the packs shipped here only, refused from any
  other file).

Pack-author tools (what the packs shipped here use beyond the list above; every pack in the repository
imports from ``proofs_checks`` only names of this module, ``tests/test_pack_names.py``):

* many searches at once: :class:`SearchJob` (one claim at one setting) and :func:`adversarial_search_many`
  (several jobs over the same spaces, one lockstep search); :func:`batch_outcomes` (the exact law of the mean
  of ``n`` samples);
* proofs: :func:`decide_identity` (an equality of a proof: sympy reduces it to 0 and spot checks agree) and
  :func:`decide_step` (a step checked by its rule's precondition and spot checks); :func:`branch_and_bound`
  (``lhs <relation> rhs`` decided on every point of a box by ball arithmetic) and :func:`bnb_record` (its result
  as a record), :class:`TightPoint` (a face on which the claim is tight), :func:`enclose_max` (a rigorous
  enclosure of a supremum);
* rigorous re-checks: :func:`prove_expression` (a witness's violation proved in ball arithmetic),
  :class:`Undecided` (raised by a ball evaluation that cannot decide a step), ``DPS`` (the working precision,
  in decimal digits, of a re-check that evaluates a claim anew from a witness: 60);
* reading and caching expressions safely: :func:`parse_expression` (sympy ``srepr`` text read without running
  it: the reader of every expression a data file carries), :class:`RefusedExpression` (its error: a text
  outside the grammar), :func:`cached_limit` (``sympy.limit`` kept on disk, signed entries);
* verdict constants: ``RATE_MARGIN`` (the margin a fitted exponent must clear, 0.05); :func:`t_ppf` (the Student-t
  quantile of the engines' intervals, scipy's bits without importing ``scipy.stats``);
* scope and power (issue 35): :func:`scope_to_instances` (a verdict on chosen instances of a claim over a class:
  evidence ``instance``, never holds), :func:`planted_scale_control` and :func:`planted_record_control` (a
  planted violation of known size through the same search, its control record named ``PLANTED``;
  ``PLANTED_SIZE``, 25%, the default size); :func:`mark_exhaustive` (an exact record that computed every member of
  the claim's finite class says so: its holds is class-wide, ``holds (exhaustive)``);
* report sections: :func:`format_table` (records as a readable table), :func:`is_control` (a negative
  control's record, kept apart from the findings), :func:`correction_rows`,
  ``CORRECTION_COLUMNS`` (the corrections table's (key, heading) columns), ``EVIDENCE_KINDS`` (the legend of
  the evidence kinds), :func:`annotate_supported` (marks records whose method holds with room).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names for readers and type checkers; at run time __getattr__ below imports them
    from lptheory.simulate import Metric, Observer, Regret, Series, StateNorm, StepView, exact_oracle, simulate

    from .bnb import TightPoint, branch_and_bound, compose_bound, enclose_max
    from .certificates import certify, is_issued
    from .corrections import (
        CORRECTION_COLUMNS,
        EVIDENCE_KINDS,
        annotate_supported,
        as_correction,
        best_constant,
        correction_record,
        correction_rows,
        family_supremum,
        recheck_correction,
    )
    from .disk_cache import cached_limit
    from .engines import (
        DistributionSpace,
        Point,
        SearchBudget,
        SearchJob,
        adversarial_search,
        adversarial_search_many,
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
    from .expectation import t_ppf
    from .expressions import (
        CoordSum,
        Distribution,
        Env,
        Expect,
        Expect1,
        Sup1,
        batch_outcomes,
        evaluate,
        g,
        indicator,
        sigma,
        x,
    )
    from .identity import identity_claim, prove_identity, spot_gap
    from .matrix_space import MatrixSpace, matrix_symbols
    from .moment import check_certificate, kept_decision, law_value, sharp_bound
    from .packs import Check, Context, Pack, PackError, check
    from .packs import load as load_pack
    from .planted import PLANTED, PLANTED_SIZE, planted_record_control, planted_scale_control  # issue 35: power
    from .practice.task import PracticeTask, split_arrays
    from .recheck import DPS, Undecided
    from .recheck import register as register_recheck
    from .records import Claim, format_table, is_control, mark_exhaustive
    from .safe_parse import RefusedExpression, parse_expression
    from .spec import Assumption, ClaimError, ClaimSpec, RateSpec
    from .verdict import (
        RATE_MARGIN,
        Verdict,
        combine,
        control_verdict,
        decide,
        decide_identity,
        decide_rate,
        decide_step,
        scope_to_instances,
    )
    from .verdict import certified_recheck as recheck
    from .witnesses import (
        MinEig,
        PolarFactor,
        Rank,
        SingVal,
        bnb_record,
        divergence_claim,
        gate_on_controls,
        prove_expression,
    )


# module -> the names it gives this one, separated by spaces ("a=b": that module's b, named a here), each imported
# on first use (PEP 562 __getattr__): ``import proofs_checks.api`` itself imports neither sympy nor scipy.optimize
# (issue 46: a pack or a command that needs only Pack, the records or the verdict rules does not pay for them)
_EXPORTS = {
    "lptheory.simulate": "Metric Observer Regret Series StateNorm StepView exact_oracle simulate",
    ".bnb": "TightPoint branch_and_bound compose_bound enclose_max",
    ".certificates": "certify is_issued",
    ".corrections": (
        "CORRECTION_COLUMNS EVIDENCE_KINDS annotate_supported as_correction best_constant correction_record "
        "correction_rows family_supremum recheck_correction"
    ),
    ".disk_cache": "cached_limit",
    ".engines": (
        "DistributionSpace Point SearchBudget SearchJob adversarial_search adversarial_search_many claim_record "
        "control_record exact_expectation expression_witness fit_exponent fit_slope interval_claim monte_carlo "
        "pointwise rate_claim sample_witness value_claim"
    ),
    ".expectation": "t_ppf",
    ".expressions": "CoordSum Distribution Env Expect Expect1 Sup1 batch_outcomes evaluate g indicator sigma x",
    ".identity": "identity_claim prove_identity spot_gap",
    ".matrix_space": "MatrixSpace matrix_symbols",
    ".moment": "check_certificate kept_decision law_value sharp_bound",
    ".packs": "Check Context Pack PackError check load_pack=load",
    ".planted": "PLANTED PLANTED_SIZE planted_record_control planted_scale_control",
    ".practice.task": "PracticeTask split_arrays",  # the practice pack's task value (torch only when used)
    ".recheck": "DPS Undecided register_recheck=register",
    ".records": "Claim format_table is_control mark_exhaustive",
    ".safe_parse": "RefusedExpression parse_expression",
    ".spec": "Assumption ClaimError ClaimSpec RateSpec",
    ".verdict": (
        "RATE_MARGIN Verdict combine control_verdict decide decide_identity decide_rate decide_step scope_to_instances "
        "recheck=certified_recheck"
    ),
    ".witnesses": "MinEig PolarFactor Rank SingVal bnb_record divergence_claim gate_on_controls prove_expression",
}
_WHERE = {
    name.partition("=")[0]: (module, name.partition("=")[2] or name)
    for module, names in _EXPORTS.items()
    for name in names.split()
}


def __getattr__(name: str):
    """A public name, imported from its module on first use (then kept in this module's namespace)."""
    try:
        module, attr = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __package__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


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
    "CORRECTION_COLUMNS",
    "DPS",
    "EVIDENCE_KINDS",
    "RATE_MARGIN",
    "SearchJob",
    "TightPoint",
    "Undecided",
    "adversarial_search_many",
    "annotate_supported",
    "batch_outcomes",
    "branch_and_bound",
    "correction_rows",
    "decide_identity",
    "decide_step",
    "enclose_max",
    "format_table",
    "prove_expression",
    "cached_limit",
    "parse_expression",
    "RefusedExpression",
    "scope_to_instances",
    "t_ppf",
    "is_control",
    "mark_exhaustive",
    "PLANTED",
    "PLANTED_SIZE",
    "planted_scale_control",
    "planted_record_control",
    "MinEig",
    "bnb_record",
    "divergence_claim",
    "MatrixSpace",
    "matrix_symbols",
    "PracticeTask",
    "split_arrays",
    "compose_bound",
    "certify",
    "is_issued",
    "identity_claim",
    "prove_identity",
    "spot_gap",
    "SingVal",
    "PolarFactor",
    "Rank",
    "sharp_bound",
    "check_certificate",
    "law_value",
    "kept_decision",
]
