"""A claim on an iteration f o f o ... o f, proved without hand chaining (issue 44, item 3).

Claim: the logistic map f(x) = (5/2) x (1 - x) brings every start x in [0.1, 0.9] within 10^-3 of its fixed
point 3/5 in 8 steps: 0.599 <= f^8(x) <= 0.601. As one polynomial, f^8 has degree 256; :func:`compose_bound`
encloses the images f([0.1, 0.9]), f(f([0.1, 0.9])), ... step by step in ball arithmetic (each a proved
enclosure of the image of a set that contains the previous one), so the claim is proved by the toolkit and its
record keeps evidence ``proved`` with the certificate of the composition. Negative control through the same
decision: the false target [0.601, 0.7] must be found violated (f^8(1/2) = 0.59979... is outside it, proved in
ball arithmetic and re-checked from its witness).

A claim file cannot write "proved" itself: ``Verdict("holds", ..., evidence="proved")`` built by hand is refused
when its record is built (ValueError: no certificate of a toolkit decision).

    lptheory check examples/claim_composition.py
"""

import sympy as sp

from proofs_checks.api import ClaimSpec, Pack, bnb_record, compose_bound, control_record, gate_on_controls

PACK = Pack(
    "composition",
    title="Example: an iteration's claim at depth 8, proved by compose_bound",
    description="0.599 <= f^8(x) <= 0.601 on [0.1, 0.9] for f(x) = 5/2 x (1 - x).",
)
x = sp.Symbol("x")
F = sp.Rational(5, 2) * x * (1 - x)


def _spec(cid: str, lo: float, hi: float, depth: int) -> ClaimSpec:
    return ClaimSpec(
        id=cid,
        statement=f"{lo} <= f^{depth}(x) <= {hi} for every x in [0.1, 0.9], f(x) = 5/2 x (1 - x)",
        source="Example: the logistic map's contraction to its fixed point 3/5",
        show=("depth",),
    )


@PACK.check(title="The logistic map at depth 8", options=("depth",), defaults={"depth": 8})
def logistic(ctx):
    """f^depth([0.1, 0.9]) enclosed step by step (:func:`compose_bound`), against the target [0.599, 0.601]; the
    false target [0.601, 0.7] is the negative control."""
    depth = int(ctx.depth)
    res = compose_bound(F, {"x": (0.1, 0.9)}, depth, target=(0.599, 0.601))
    rec = bnb_record(res, _spec("compose.logistic", 0.599, 0.601, depth), {"depth": depth})
    ctl = compose_bound(F, {"x": (0.1, 0.9)}, depth, target=(0.601, 0.7))
    raw = bnb_record(ctl, _spec("compose.logistic.control-false-target", 0.601, 0.7, depth), {"depth": depth})
    ctl_rec = control_record(raw, "false target", "the target [0.601, 0.7], which misses the fixed point 3/5")
    return [gate_on_controls("compose_bound", rec, {"false target": raw}), ctl_rec]
