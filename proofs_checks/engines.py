"""The engines, callable on any claim (:class:`proofs_checks.spec.ClaimSpec`): each takes a spec and a
setting and returns a claim record with its verdict from :mod:`proofs_checks.verdict`.

* :func:`exact_expectation`: E[term] against the bound for a finite distribution, exactly;
* :func:`monte_carlo`: the same from samples, with a Student-t interval (Bonferroni over ``tests``);
* :func:`interval_claim`: any per-replicate measurement (e.g. along simulator runs) against a bound;
* :func:`adversarial_search`: the worst ratio term / bound over a declared space of finite
  distributions (:class:`DistributionSpace`) that meet the assumptions exactly;
* :func:`value_claim`: a computed value against a bound, with a witness (exact methods);
* :func:`rate_claim` and :func:`fit_exponent`, :func:`fit_slope`: decay exponents with intervals.

Witnesses are built by :func:`expression_witness` and re-checked by :mod:`proofs_checks.recheck`,
which imports nothing from the toolkit.

This module gathers the engines; each job lives in its own module: :mod:`.evaluation` (a claim's sides and
the constants its assumptions define), :mod:`.witnesses` (records and witnesses), :mod:`.expectation` (the
expectation and value engines), :mod:`.distributions` (the spaces a search runs over), :mod:`.worst_case`
(the lockstep worst-case search), :mod:`.pools` (its worker pools), :mod:`.adversarial` (the search as an
engine) and :mod:`.rate_fits` (decay exponents). Every name importable from here before the split still is.
"""

from __future__ import annotations

# the names this module imported before it was split by job (kept importable from here)
from . import expressions as X  # noqa: F401
from .adversarial import adversarial_search, adversarial_search_many
from .distributions import FAMILIES, DistributionSpace
from .evaluation import constants, evaluate_sides, pointwise, with_batch_size
from .expectation import exact_expectation, interval_claim, monte_carlo, value_claim
from .rate_fits import fit_exponent, fit_slope, rate_claim
from .records import Claim  # noqa: F401
from .search import maximize_many  # noqa: F401
from .spec import ClaimError, ClaimSpec  # noqa: F401
from .verdict import Verdict, control_verdict, decide, decide_rate  # noqa: F401
from .witnesses import Point, claim_record, control_record, expression_witness, sample_witness
from .worst_case import SearchBudget, SearchJob, search_worst, search_worst_many

__all__ = [
    "Point",
    "claim_record",
    "control_record",
    "DistributionSpace",
    "FAMILIES",
    "SearchBudget",
    "constants",
    "with_batch_size",
    "evaluate_sides",
    "pointwise",
    "expression_witness",
    "exact_expectation",
    "monte_carlo",
    "interval_claim",
    "value_claim",
    "adversarial_search",
    "search_worst",
    "search_worst_many",
    "SearchJob",
    "adversarial_search_many",
    "fit_exponent",
    "fit_slope",
    "rate_claim",
    "sample_witness",
]
