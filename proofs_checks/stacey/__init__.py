"""The Stacey (ICML 2025) paper pack: every claim check of the paper on the public claim API, registered
on :data:`PACK` exactly as a user's pack is (decorators of :class:`proofs_checks.packs.Pack`).

Checks (``lptheory check NAME``): ``lemmas`` (Theorem 1's per-step terms), ``theorem1`` (the bound,
its rate and the one-step inequality along runs of Alg. 3), ``symbolic`` (every step of the proofs),
``majorization`` (Appendix B), ``smoothness`` (Assumption 1's two forms), ``claims`` (the smaller
claims), ``corrections`` (what holds instead of the violated claims), ``acceleration`` (eq. (1)).
Every formula of the paper is in :mod:`.formulas`; the figures are in :mod:`.figures` (imported only
when the report draws them); the report's Corrections section and the annotated proof printed by
``lptheory check symbolic`` are registered here. The check functions live in their modules and are
imported when a check runs (loading the pack stays fast).
"""

from __future__ import annotations

import math

from ..corrections import CORRECTION_COLUMNS, EVIDENCE_KINDS, correction_rows
from ..packs import Pack

__all__ = ["PACK"]

PACK = Pack(
    "stacey",
    title="lptheory report: Stacey (ICML 2025)",
    description="Stochastic l_p steepest descent (Algorithm 3), the accelerated Stacey(p,2) and Stacey(p,p) optimizers "
    "(Algorithms 1 and 2), Theorem 1 and its lemmas (Appendix A.1), the l2-majorization lemma (Appendix B) and the "
    "acceleration exponent (p+2)/p of eq. (1).",
    figures="proofs_checks.stacey.figures",
    columns=("p", "d", "n", "noise", "problem", "instance", ("method_name", "method"), "T"),
)


def p_range(lo: float, lo_open: bool):
    """``validate`` of a check whose exponents must lie in [lo, inf) (``(lo, inf)`` when ``lo_open``)."""

    def validate(options):
        for p in options.get("p") or ():
            bad = (p < lo or (lo_open and p == lo)) or not math.isfinite(p)
            if bad:
                rng = f"({lo:g}, inf)" if lo_open else f"[{lo:g}, inf)"
                raise ValueError(f"--p must be in {rng} for this check, got {float(p)!r}")

    return validate


@PACK.check(
    "lemmas",
    title="Theorem 1: the per-step terms and their lemmas (Appendix A.1)",
    description="Theorem 1's per-step terms A, B1, B2, B, C: exact, Monte Carlo, adversarial search",
    options=("p",),
    defaults={"p": [2.5, 3.0, 4.0, 8.0]},
    validate=p_range(2.0, False),
    parallel=True,
)
def _lemmas(ctx):
    from .lemmas import run_lemmas

    return run_lemmas(ctx)


@PACK.check(
    "theorem1",
    title="Theorem 1 along runs of Algorithm 3: bound, N^{-1/4} rate, one-step inequality",
    description="Theorem 1's bound, its N^{-1/4} rate and the one-step inequality along runs of Alg. 3",
    options=("p",),
    defaults={"p": [3.0, 4.0]},
    validate=p_range(2.0, True),
)
def _theorem1(ctx):
    from .theorem1 import run_theorem1

    return run_theorem1(ctx)


@PACK.check(
    "symbolic",
    title="Symbolic audit of the proofs (Appendix A.1, Appendix B)",
    description="every step of the proofs of Theorem 1, Lemmas B1 and B2 and Appendix B (sympy and spot checks)",
)
def _symbolic(ctx):
    from .symbolic import run_symbolic

    return run_symbolic(ctx)


@PACK.text_format("symbolic")
def _annotated_proof(records) -> str:
    """``lptheory check symbolic`` prints the records as an annotated proof, then the verdict counts."""
    from ..records import format_table
    from .symbolic import format_proof

    return format_proof(records) + "\n\n" + format_table(records).rsplit("\n\n", 1)[-1]


@PACK.check(
    "majorization",
    title="Appendix B: l2 majorization implies l_p smoothness",
    description="Appendix B: l2 majorization implies l_p smoothness with constant ||L||_{p/(p-2)}",
    options=("p",),
    defaults={"p": [3.0, 4.0, 8.0]},
    validate=p_range(2.0, True),
)
def _majorization(ctx):
    from .majorization import run_majorization

    return run_majorization(ctx)


@PACK.check(
    "smoothness",
    title="Assumption 1: the two forms of l_p smoothness",
    description="Assumption 1: the Lipschitz-gradient and two-sided quadratic forms of l_p smoothness",
    options=("p",),
    defaults={"p": [3.0, 4.0, 8.0]},
    validate=p_range(2.0, False),
)
def _smoothness(ctx):
    from .smoothness import run_smoothness

    return run_smoothness(ctx)


@PACK.check(
    "claims",
    title="Smaller claims (Sections 1, 4.1, 4.2; Corollaries 2 and 3)",
    description="the smaller claims: steepest closed form, Lion-K first step, norm ratio, Corollaries 2 and 3",
)
def _claims(ctx):
    from .claims import run_claims

    return run_claims(ctx)


@PACK.check(
    "corrections",
    title="Corrections: what holds instead of the violated claims",
    description="corrected statements for the violated claims (Lemma 2's constant and Theorem 1, Assumption 1, "
    "Lion-K), found and re-checked by the toolkit",
    options=("p",),
    defaults={"p": [3.0, 4.0, 8.0, 16.0, 50.0]},
    validate=p_range(2.0, True),
    parallel=True,
)
def _corrections(ctx):
    from .corrections import run_corrections

    return run_corrections(ctx)


PACK.report_section(
    "corrections",
    title="Corrections",
    intro="What holds instead of the violated claims, found and re-checked by the toolkit "
    "(lptheory check corrections). " + EVIDENCE_KINDS,
    columns=CORRECTION_COLUMNS,
)(correction_rows)


@PACK.check(
    "acceleration",
    title="Acceleration exponents (eq. (1)) and where Stacey stands",
    description="eq. (1): the acceleration exponent (p+2)/p, the Guzman-Nemirovski lower bound, and where Stacey "
    "stands",
    options=("p",),
    defaults={"p": [2.0, 3.0, 4.0, 6.0]},
    validate=p_range(2.0, False),
)
def _acceleration(ctx):
    from .acceleration import run_acceleration

    return run_acceleration(ctx)


PACK.summary(__import__("proofs_checks.stacey.summary", fromlist=["summarize"]).summarize)
PACK.notation(__import__("proofs_checks.stacey.notation", fromlist=["TEX"]).TEX)

from . import bnb_claims, coverage, coverage_more  # noqa: E402,F401  (register 'proved', 'coverage', 'coverage-more'; issue 23)
