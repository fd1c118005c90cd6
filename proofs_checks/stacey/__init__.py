"""The Stacey (ICML 2025) paper pack: every claim check of the paper on the public claim API.

Checks (``lptheory check NAME``): ``lemmas`` (Theorem 1's per-step terms), ``theorem1`` (the bound,
its rate and the one-step inequality along runs of Alg. 3), ``symbolic`` (every step of the proofs),
``majorization`` (Appendix B), ``smoothness`` (Assumption 1's two forms), ``claims`` (the smaller
claims), ``acceleration`` (eq. (1)). Every formula of the paper is in :mod:`.formulas`.
"""

from __future__ import annotations

import math

from ..packs import Check, Pack


def _p_range(lo: float, lo_open: bool):
    def validate(options):
        for p in options.get("p") or ():
            bad = (p < lo or (lo_open and p == lo)) or not math.isfinite(p)
            if bad:
                rng = f"({lo:g}, inf)" if lo_open else f"[{lo:g}, inf)"
                raise ValueError(f"--p must be in {rng} for this check, got {p:g}")

    return validate


def _lazy(module: str, fn: str):
    def run(ctx):
        import importlib

        return getattr(importlib.import_module(f"proofs_checks.stacey.{module}"), fn)(ctx)

    run.__name__ = fn
    return run


PACK = Pack(
    "stacey",
    title="lptheory report: Stacey (ICML 2025)",
    description="Stochastic l_p steepest descent (Algorithm 3), the accelerated Stacey(p,2) and Stacey(p,p) optimizers "
    "(Algorithms 1 and 2), Theorem 1 and its lemmas (Appendix A), the l2-majorization lemma (Appendix B) and the "
    "acceleration exponent (p+2)/p of eq. (1).",
    figures="figures.stacey:FIGURES",
)
_CHECKS = [
    (
        "lemmas",
        "lemmas",
        "run_lemmas",
        "Theorem 1: the per-step terms and their lemmas (Appendix A.1)",
        "Theorem 1's per-step terms A, B1, B2, B, C: exact, Monte Carlo, adversarial search",
        (2.5, 3.0, 4.0, 8.0),
        (2.0, False),
    ),
    (
        "theorem1",
        "theorem1",
        "run_theorem1",
        "Theorem 1 along runs of Algorithm 3: bound, N^{-1/4} rate, one-step inequality",
        "Theorem 1's bound, its N^{-1/4} rate and the one-step inequality along runs of Alg. 3",
        (3.0, 4.0),
        (2.0, True),
    ),
    (
        "symbolic",
        "symbolic",
        "run_symbolic",
        "Symbolic audit of the proofs (Appendix A.1, Appendix B)",
        "every step of the proofs of Theorem 1, Lemmas B1 and B2 and Appendix B (sympy and spot checks)",
        None,
        None,
    ),
    (
        "majorization",
        "majorization",
        "run_majorization",
        "Appendix B: l2 majorization implies l_p smoothness",
        "Appendix B: l2 majorization implies l_p smoothness with constant ||L||_{p/(p-2)}",
        (3.0, 4.0, 8.0),
        (2.0, True),
    ),
    (
        "smoothness",
        "smoothness",
        "run_smoothness",
        "Assumption 1: the two forms of l_p smoothness",
        "Assumption 1: the Lipschitz-gradient and two-sided quadratic forms of l_p smoothness",
        (3.0, 4.0, 8.0),
        (2.0, False),
    ),
    (
        "claims",
        "claims",
        "run_claims",
        "Smaller claims (Sections 1, 4.1, 4.2; Corollaries 2 and 3)",
        "the smaller claims: steepest closed form, Lion-K first step, norm ratio, Corollaries 2 and 3",
        None,
        None,
    ),
    (
        "corrections",
        "corrections",
        "run_corrections",
        "Corrections: what holds instead of the violated claims",
        "corrected statements for the violated claims (Lemma 2's constant and Theorem 1, Assumption 1, Lion-K), found "
        "and re-checked by the toolkit",
        (3.0, 4.0, 8.0, 16.0, 50.0),
        (2.0, True),
    ),
    (
        "acceleration",
        "acceleration",
        "run_acceleration",
        "Acceleration exponents (eq. (1)) and where Stacey stands",
        "eq. (1): the acceleration exponent (p+2)/p, the Guzman-Nemirovski lower bound, and where Stacey stands",
        (2.0, 3.0, 4.0, 6.0),
        (2.0, False),
    ),
]
for _name, _mod, _fn, _title, _desc, _p, _rng in _CHECKS:
    PACK.add(
        Check(
            _name,
            _lazy(_mod, _fn),
            _title,
            _desc,
            options=("p",) if _p else (),
            defaults={"p": list(_p)} if _p else {},
            validate=_p_range(*_rng) if _rng else None,
            parallel=_name in ("lemmas", "corrections"),
        )
    )

from . import bnb_claims, coverage  # noqa: E402,F401  (register the 'proved' and 'coverage' checks, issue 23)
