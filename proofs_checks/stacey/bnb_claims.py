"""Proved bounds on small spaces (``lptheory check proved``): claims of the paper and of its corrections
decided rigorously by interval branch-and-bound (:mod:`proofs_checks.bnb`, ball arithmetic).

* ``thm1.B2.kappa`` (Lemma 2's corrected constant): a rigorous enclosure [lo, hi] of
  kappa(p) = max(1, sup_{0<q<1} R_p(q)), R_p(q) = (p-1) [q^2 (1 - q^a) + (1-q) q^{1+a}] / sqrt(q (1-q)),
  a = 1/(p-1) (:mod:`.corrections`), over the whole open interval: near q = 1 the removable singularity
  (1 - q^a)/sqrt(1 - q) is enclosed by its mean-value form a xi^{a-1} sqrt(1 - q), xi in [q, 1];
  the correction's floating-point constant is compared with it.
* ``thm1.B2.two-point`` (Lemma 2, corrected): no two-point law of one coordinate (n = 1) exceeds
  kappa_hi(p), the upper end of the enclosure: E[B2] <= kappa_hi eta G^a sigma / ((p-1) sqrt(n)) with
  the tightest constants (G = max |x|, sigma the exact standard deviation). The ratio is invariant under
  scaling and x -> -x, and under swapping the two points, so x_1 = -1, x_2 = t in [-1, 1] with weight q
  on x_1. Two regions without sign tests: t = -s <= 0 (same sign as x_1; |g| = q + (1-q)s >= s) and t >= 0.
  The supremum is approached only on the face s = 0 (as s -> 0 the ratio tends to R_p(q)): boxes touching
  it are proved by the sign of s^{1-a} dD/ds (D = lhs - rhs; mean value theorem) and D(q, 0) <= 0, which
  is R_p(q) <= kappa_hi (the enclosure above). Laws with a weight below 1e-3 or |x_1 - x_2| < 1e-3 max|x|
  (where both sides vanish) are outside the box, and the record says so.
* ``asm1.diag2`` (Assumption 1): L_lip(H) <= 2^{1-2/p} L_two-sided(H) for every 2x2 diagonal H. For
  diagonal H, L_lip = ||h||_r (r = p/(p-2), Hoelder, tight); L_two-sided = ||h||_r when h_1 h_2 >= 0 and
  max |h_i| otherwise (|h_1 v_1^2 - |h_2| v_2^2| <= max_i |h_i| v_i^2 <= max |h_i| on the unit l_p ball,
  attained at e_i). By scaling and symmetry h = (1, t), t in [-1, 1]; tight at t = -1 (sympy: exactly 0),
  where the derivative's sign proves the neighbouring boxes.
"""

from __future__ import annotations

import math

from ..api import Claim
from . import PACK

DEFAULT_P = (3.0, 4.0, 8.0)
EDGE = 1e-3  # the smallest weight and the smallest relative gap of the two-point laws in the box
SOURCE_B2 = "Appendix A.1, Lemma 2 (lem:B2); the corrected constant of `lptheory check corrections`"


def _validate(options):
    for p in options.get("p") or ():
        if not (2.0 < p < math.inf):
            raise ValueError(f"--p must be in (2, inf) for this check, got {float(p)!r}")


def _kappa_range_form(p: float):
    """An enclosure of R_p over a box of q in [0, 1], valid up to both ends (the module docstring)."""
    a = 1.0 / (p - 1.0)

    def pw(num, x, e):  # x >= 0 (a ball), e > 0
        zero = num.exact(0)
        if num.name == "arb":
            x = x.nonnegative_part()
        if num.gt(x, zero):
            return x ** num.exact(e)
        top = num.upper(x)
        return num.hull(zero, num.upper(top ** num.exact(e))) if num.gt(top, zero) else zero

    def rf(balls, num):
        from ..api import Undecided

        Q = balls["q"]
        one, zero = num.exact(1), num.exact(0)
        ql, qh = num.lower(Q), num.upper(Q)
        s1 = pw(num, one - Q, 0.5)
        E = None  # encloses (1 - q^a) / sqrt(1 - q)
        if num.gt(ql, zero):
            xi = num.hull(one, pw(num, ql, a) / ql)  # xi^(a-1) in [1, ql^(a-1)] (a < 1)
            E = num.exact(a) * xi * s1
        if num.gt(one, qh):
            direct = (one - pw(num, Q, a)) / pw(num, one - Q, 0.5)
            if E is None:
                E = direct
            elif num.name == "arb":
                E = E.intersection(direct)
        if E is None:
            raise Undecided("the whole interval: split first")
        return num.exact(p - 1.0) * (pw(num, Q, 1.5) * E + s1 * pw(num, Q, 0.5 + a))

    return rf


def kappa_enclosure(p: float) -> dict:
    """Rigorous [lo, hi] of sup_{0<q<1} R_p(q) (:func:`proofs_checks.bnb.enclose_max`)."""
    import sympy as sp

    from ..api import enclose_max

    q = sp.Symbol("q", positive=True)
    P = sp.nsimplify(p)
    a = 1 / (P - 1)
    R = (P - 1) * (q**2 * (1 - q**a) + (1 - q) * q ** (1 + a)) / sp.sqrt(q * (1 - q))
    return enclose_max(R, {"q": (0.0, 1.0)}, range_form=_kappa_range_form(p), rtol=1e-12, max_boxes=20000)


class Decided:
    """A branch-and-bound decision read from its document (``BnBResult.to_dict()``, kept on disk or fresh): what a
    record reads of the result, ``status``, ``reason``, ``witness`` and ``to_dict()`` (a copy of the document)."""

    def __init__(self, doc: dict):
        self.doc = doc
        self.status, self.reason, self.witness = doc["status"], doc["reason"], doc["witness"]

    def to_dict(self) -> dict:
        return dict(self.doc)


def decisions(p: float, budget: int) -> dict:
    """The decisions of ``lptheory check proved`` at ``p``: ``{"enclosure": kappa_enclosure(p), "two_point":
    [region s, region t], "asm1": [t <= 0, t >= 0]}`` (each a ``BnBResult.to_dict()``), the two-point laws
    decided against K = max(1, kappa_hi) (the face certificate only when the enclosure converged). Kept on disk
    between runs (:func:`proofs_checks.moment.kept_decision`: signed, keyed by ``p``, ``budget`` and the hash of the
    sources, the certificates re-admitted when read back), as the sharp constants are: a warm run reads the same
    documents instead of re-proving them, and a fresh decision goes through JSON as well, so the records are the
    same either way (``tests/test_bnb_claims_kept.py``)."""
    from ..api import kept_decision

    p, budget = float(p), int(budget)
    return kept_decision("proved_p", (p, budget), lambda: _decide(p, budget))


def _decide(p: float, budget: int) -> dict:
    """:func:`decisions` computed."""
    enc = kappa_enclosure(p)
    hi = enc["hi"]
    (rb, _, _), (ra, _, _) = _two_point(p, max(1.0, hi), budget, kappa_hi=hi if enc["converged"] else None)
    opp, same = _asm1(p, budget)
    return {
        "enclosure": enc,
        "two_point": [rb.to_dict(), ra.to_dict()],
        "asm1": [opp.to_dict(), same.to_dict()],
    }


def _two_point_sides(p: float):
    """``((lhs_b, rhs_b), (lhs_a, rhs_a))``: the two regions' sides of :func:`_two_point` (K a symbol)."""
    import sympy as sp

    q, t = sp.symbols("q t", real=True)
    s_ = sp.Symbol("s", positive=True)
    Ks = sp.Symbol("K", positive=True)
    P = sp.nsimplify(p)
    a = 1 / (P - 1)
    ag = q + (1 - q) * s_  # region t = -s <= 0: g = -|g|, |g| >= s
    lhs_b = q * ag * (1 - ag**a) + (1 - q) * ag * (ag**a - s_**a)
    rhs_b = Ks * (1 - s_) * sp.sqrt(q * (1 - q)) / (P - 1)
    g = (1 - q) * t - q  # region t >= 0
    gm, gp = sp.Max(-g, 0), sp.Max(g, 0)
    lhs_a = q * gm * (1 - gm**a) + (1 - q) * gp * (sp.Abs(t) ** a - gp**a)
    rhs_a = Ks * (1 + t) * sp.sqrt(q * (1 - q)) / (P - 1)
    return (lhs_b, rhs_b), (lhs_a, rhs_a)


def _two_point(p: float, K: float, max_boxes: int, kappa_hi: float | None = None):
    """The two regions' branch-and-bound for E[B2] <= K (...) over two-point laws. The face certificate
    (R_p(q) <= K on s = 0) is used only when ``kappa_hi`` (a proved upper bound of sup R_p) is <= K;
    otherwise the face is left to the enclosures (and a K below kappa is caught near the face)."""
    import sympy as sp

    from ..api import TightPoint, branch_and_bound

    (lhs_b, rhs_b), (lhs_a, rhs_a) = _two_point_sides(p)
    s_ = sp.Symbol("s", positive=True)  # the sides' s (a symbol is its name and assumptions)
    a = 1 / (sp.nsimplify(p) - 1)
    face = f"on s = 0 the claim is R_p(q) <= kappa_hi = {K!r} for every q (the enclosure of kappa)"
    reg_b = branch_and_bound(
        lhs_b,
        rhs_b,
        {"q": (EDGE, 1 - EDGE), "s": (0.0, 1 - EDGE)},
        scalars={"K": K},
        tight=[TightPoint("s", 0.0, face=face, weight=s_ ** (1 - a))] if kappa_hi is not None and kappa_hi <= K else [],
        max_boxes=max_boxes,
    )
    reg_a = branch_and_bound(
        lhs_a, rhs_a, {"q": (EDGE, 1 - EDGE), "t": (0.0, 1.0)}, scalars={"K": K}, max_boxes=max_boxes
    )
    return (reg_b, lhs_b, rhs_b), (reg_a, lhs_a, rhs_a)


def _asm1(p: float, max_boxes: int):
    import sympy as sp

    from ..api import TightPoint, branch_and_bound

    t = sp.Symbol("t", real=True)
    P = sp.nsimplify(p)
    r = P / (P - 2)
    lip = (1 + sp.Abs(t) ** r) ** (1 / r)
    opp = branch_and_bound(lip, 2 ** (1 / r), {"t": (-1.0, 0.0)}, tight=[TightPoint("t", -1.0)], max_boxes=max_boxes)
    same = branch_and_bound(lip, 2 ** (1 / r) * lip, {"t": (0.0, 1.0)}, max_boxes=max_boxes)
    return opp, same


def _record(id_, statement, source, params, parts, *, show=("p",), witness=None, note="", scope=None):
    if any(r.status == "violated" for r in parts):
        bad = next(r for r in parts if r.status == "violated")
        status, reason = "violated", f"counterexample: {bad.reason}"
        if witness is not None:  # violated only when the witness re-checks on its own, as every violation
            from ..api import recheck

            try:
                chk = recheck(witness)
            except ValueError as exc:  # a witness the re-check refuses proves nothing
                chk = {"violated": False, "proved": False, "proof": f"refused: {exc}"}
            witness = {**witness, "recheck": chk}
            if not (chk["violated"] and chk.get("proved")):
                status = "inconclusive"
                reason += f"; the witness's re-check does not prove it ({chk.get('proof')})"
    elif all(r.status == "proved" for r in parts):
        status = "holds"
        reason = "proved by interval branch-and-bound: " + "; ".join(r.reason for r in parts)
    else:
        status = "inconclusive"
        reason = "not proved everywhere: " + "; ".join(r.reason for r in parts)
    data = {"bnb": [r.to_dict() for r in parts]}
    return Claim(
        id=id_,
        statement=statement,
        source=source,
        status=status,
        method="exact",
        params=params,
        reason=reason + note,
        witness=witness if status == "violated" else None,
        data=data,
        relation="<=",
        show=list(show),
        evidence="proved" if status in ("holds", "violated") else "exact",
        scope=scope if status == "holds" else None,
    )


def _point_witness(lhs, rhs, point, scalars, claim):
    import sympy as sp

    return {
        "kind": "expression",
        "claim": claim,
        "relation": "<=",
        "lhs": sp.srepr(lhs),
        "rhs": sp.srepr(rhs),
        "scalars": {**{k: float(v) for k, v in point.items()}, **scalars},
    }


@PACK.check(
    "proved",
    title="Proved bounds on small spaces (interval branch-and-bound)",
    description="Lemma 2's corrected constant kappa(p) enclosed rigorously and checked against every two-point law; "
    "Assumption 1's 2^(1-2/p) on 2x2 diagonal quadratics; ball arithmetic (arb), branch-and-bound",
    options=("p",),
    defaults={"p": list(DEFAULT_P)},
    validate=_validate,
    cost=2,
)
def run_proved(ctx):
    """``lptheory check proved``: see the module docstring."""
    from .corrections import kappa_b2

    budget = 20000 if ctx.quick else 100000
    out = []
    for p in [float(v) for v in ctx.get("p") or DEFAULT_P]:
        dec = decisions(p, budget)
        enc = dec["enclosure"]
        lo, hi = enc["lo"], enc["hi"]
        k_float = kappa_b2(p)["sup"]
        inside = lo - 4 * math.ulp(lo) <= k_float <= hi + 4 * math.ulp(hi)
        params = {
            "p": p,
            "kappa_lo": lo,
            "kappa_hi": hi,
            "q_star": enc["argmax"]["q"],
            "evaluations": enc["evaluations"],
        }
        if enc["converged"] and inside:
            status, reason = (
                "holds",
                (
                    f"sup_q R_p(q) in [{lo!r}, {hi!r}] (rigorous, {enc['evaluations']} boxes over 0 < q < 1); the "
                    f"correction's float64 value {k_float!r} lies in it; kappa = max(1, sup) = {max(1.0, hi)!r} at most"
                ),
            )
        else:
            status, reason = (
                "inconclusive",
                (
                    f"enclosure [{lo!r}, {hi!r}] ({'converged' if enc['converged'] else 'not converged'}); the "
                    f"correction's value {k_float!r} is {'inside' if inside else 'outside'}"
                ),
            )
        out.append(
            Claim(
                id="thm1.B2.kappa",
                statement="kappa(p) = max(1, sup_{0<q<1} R_p(q)), R_p(q) = (p-1)[q^2(1-q^a) + (1-q)q^{1+a}]/sqrt(q(1-q)), "
                "a = 1/(p-1): a rigorous enclosure, and the correction's value within it",
                source=SOURCE_B2,
                status=status,
                method="exact",
                params=params,
                empirical=k_float,
                bound=hi,
                relation="<=",
                reason=reason,
                show=["p", "kappa_lo", "kappa_hi"],
                evidence="proved" if status == "holds" else "exact",
                data={"enclosure": enc},
            )
        )
        K = max(1.0, hi)
        rb, ra = (Decided(d) for d in dec["two_point"])
        wit = None
        for res, (lhs, rhs) in zip((rb, ra), _two_point_sides(p)):
            if res.status == "violated":
                wit = _point_witness(lhs, rhs, res.witness["point"], {"K": K}, "thm1.B2.two-point")
        out.append(
            _record(
                "thm1.B2.two-point",
                "E[B2] <= kappa_hi(p) eta G^{1/(p-1)} sigma / ((p-1) sqrt(n_t)) for every two-point law of one "
                f"coordinate (n_t = 1; weights >= {EDGE:g}, |x_1 - x_2| >= {EDGE:g} max|x|), G and sigma tightest",
                SOURCE_B2,
                {
                    "p": p,
                    "kappa_hi": K,
                    "regions": ["x_2 = -s <= 0 (same sign as x_1 = -1)", "x_2 = t >= 0"],
                    "budget": budget,
                },
                [rb, ra],
                show=("p", "kappa_hi"),
                witness=wit,
                scope=(
                    f"proved at p = {p:g} for the two-point laws of one coordinate in the branch-and-bound box only: "
                    f"weights >= {EDGE:g} and |x_1 - x_2| >= {EDGE:g} max|x| (n_t = 1, G and sigma tightest); laws "
                    "with a smaller weight or gap, and laws of more points, are not covered"
                ),
            )
        )
        opp, same = (Decided(d) for d in dec["asm1"])
        out.append(
            _record(
                "asm1.diag2",
                "L_lip(H) <= 2^{1-2/p} L_two-sided(H) for every 2x2 diagonal H (Assumption 1's two forms of "
                "l_p smoothness)",
                "Section 2, Assumption 1; the corrected constant of `lptheory check corrections` (asm1.corrected)",
                {"p": p, "constant": 2 ** (1 - 2 / p), "regions": ["h = (1, t), t in [-1, 0]", "t in [0, 1]"]},
                [opp, same],
            )
        )
        ctx.say(f"proved p={p:g}: kappa in [{lo:.12g}, {hi:.12g}]")
    return out
