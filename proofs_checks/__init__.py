"""Claims of the paper, their checks and verdicts (claim records, see :mod:`proofs_checks.records`).

``CHECKS`` maps the names of ``lptheory check NAME`` to ``(module, function)``; each function takes
``(p_list, *, seed, quick, progress)`` and returns a list of :class:`proofs_checks.records.Claim`.
"""

from __future__ import annotations

import importlib

CHECKS = {
    "lemmas": (
        "proofs_checks.lemmas",
        "run_lemmas",
        "Theorem 1's per-step terms A, B1, B2, B, C: exact, Monte Carlo, adversarial search",
    ),
    "theorem1": (
        "proofs_checks.theorem1",
        "run_theorem1",
        "Theorem 1's bound, its N^{-1/4} rate and the one-step inequality along runs of Alg. 3",
    ),
    "symbolic": (
        "proofs_checks.symbolic",
        "run_symbolic",
        "every step of the proofs of Theorem 1, Lemmas B1 and B2 and Appendix B (sympy and spot checks)",
    ),
    "majorization": (
        "proofs_checks.majorization",
        "run_majorization",
        "Appendix B: l2 majorization implies l_p smoothness with constant ||L||_{p/(p-2)}",
    ),
    "smoothness": (
        "proofs_checks.smoothness_def",
        "run_smoothness",
        "Assumption 1: the Lipschitz-gradient and two-sided quadratic forms of l_p smoothness",
    ),
    "claims": (
        "proofs_checks.small_claims",
        "run_claims",
        "the smaller claims: steepest closed form, Lion-K first step, norm ratio, Corollaries 2 and 3",
    ),
    "acceleration": (
        "proofs_checks.acceleration",
        "run_acceleration",
        "eq. (1): the acceleration exponent (p+2)/p, the Guzman-Nemirovski lower bound, and where Stacey stands",
    ),
}


def get_check(name: str):
    """The function behind ``lptheory check NAME``."""
    if name not in CHECKS:
        raise ValueError(f"check must be one of {sorted(CHECKS)}, got {name!r}")
    mod, fn, _ = CHECKS[name]
    return getattr(importlib.import_module(mod), fn)
