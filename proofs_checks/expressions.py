"""Claims written once as sympy expressions, evaluated fast (numpy, over populations) and re-checked at
high precision (mpmath, :mod:`proofs_checks.recheck`) from the same source.

Vocabulary (all sympy, importable from :mod:`proofs_checks.api`):

* coordinate symbols ``x`` (a coordinate of the random vector, e.g. the stochastic gradient g~),
  ``g`` (its mean) and ``sigma`` (its per-sample standard deviation bound); other per-coordinate
  symbols may be declared (``coords=``);
* ``CoordSum(e)``: the sum over coordinates i of ``e`` with every coordinate symbol read at i;
* ``Expect(e)``: the expectation of ``e`` over the random vector's distribution (for a claim about a
  stochastic gradient: the mean of n samples, enumerated exactly);
* ``Expect1(e)``, ``Sup1(e)``: the expectation and the maximum over the distribution of one sample
  (to state assumptions: ``sigma**2 >= Expect1((x - g)**2)``, ``G >= Sup1(...)``);
* ``indicator(cond)``: 1 where ``cond`` holds, else 0 (a ``Piecewise``);
* scalar symbols (``p``, ``eta``, ``G``, ``n``, ...): values from the setting.

The numpy evaluator works on a population of S distributions at once (the search evaluates a whole
generation per call). Layouts: coordinate constants (S, 1, d); the outcomes of a distribution
(S, M, d) with probabilities (S, M, 1) (joint coupling) or (S, M, d) (independent coordinates:
each coordinate's M outcomes, the *marginal* layout). Under independence, ``Expect`` of a sum of
terms ``c * CoordSum(phi)`` (c free of ``x``) is computed per coordinate (linearity), so exact
expectations cost O(d M), not O(M^d); anything else is evaluated on the joint outcomes.
"""

from __future__ import annotations

from . import evaluator as _evaluator
from . import staging as _staging
from .evaluator import *  # noqa: F403  (the evaluator's names, as before the split)
from .recheck import dummy_names_in_order, lambdify_args, operator_placeholders  # noqa: F401
from .staging import *  # noqa: F403  (the staged evaluation's names)

__all__ = [*_evaluator.__all__, *_staging.__all__]
