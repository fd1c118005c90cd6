"""The re-check at every scale (relative tolerances, no absolute floor) and ``proved`` only when every part of a
witness is proved (conditions on expressions such as ``MinEig(...) >= 0`` enclosed rigorously, n x n included;
an infeasible witness never proved; enclosures reported with outward-rounded float ends)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

from proofs_checks.api import ClaimSpec, CoordSum, Point, g, prove_expression, recheck, value_claim
from proofs_checks.ball import BallEval, ball_backend, working_precision
from proofs_checks.bnb import outward_box
from proofs_checks.witnesses import srepr_text

d = sp.Symbol("d", real=True)
# steepest descent for the l_inf norm: lmo(g) = -sign(g), <g, lmo(g)> = -||g||_1; planted false value: -1.52 ||g||_1
L1_SPEC = ClaimSpec(
    id="lmo.linf.planted",
    statement="<g, lmo(g)> <= -1.52 ||g||_1 (planted false: the value is -||g||_1)",
    source="planted",
    term=CoordSum(g * d),
    bound=-sp.Float(1.52) * CoordSum(sp.Abs(g)),
    relation="<=",
)
# steepest descent for the l2 norm: lmo(g) = -g / ||g||_2, <g, lmo(g)> = -||g||_2; planted: >= -||g||_2 / 1.52
L2_SPEC = ClaimSpec(
    id="lmo.l2.planted",
    statement="<g, lmo(g)> >= -||g||_2 / 1.52 (planted false)",
    source="planted",
    term=CoordSum(g * d),
    bound=-sp.sqrt(CoordSum(g**2)) / sp.Float(1.52),
    relation=">=",
)
SCALES = (1e-88, 1e-92, 1e-150, 1e-300, 1e300)


@pytest.mark.parametrize("scale", SCALES)
def test_planted_linf_lmo_violated_at_every_scale(scale):
    gv = np.array([0.3, -1.2, 0.7]) * scale
    dv = -np.sign(gv)
    rec = value_claim(
        L1_SPEC, float(gv @ dv), -1.52 * float(np.abs(gv).sum()), {"scale": scale},
        at=Point({}, {"g": gv.tolist(), "d": dv.tolist()}),
    )  # fmt: skip
    assert rec.status == "violated", rec.reason
    assert rec.evidence == "proved"
    chk = recheck({k: v for k, v in rec.witness.items() if k != "recheck"})
    assert chk["violated"] and chk["proved"]
    assert chk["empirical"] / chk["bound"] == pytest.approx(1 / 1.52, rel=1e-12)


@pytest.mark.parametrize("scale", (1e-150, 1e-300, 1e300))
def test_planted_l2_lmo_rechecks_at_every_scale(scale):
    # the float64 sides would under/overflow (g^2); the witness alone is re-checked at 60 digits and in balls
    gv = [0.3 * scale, -1.2 * scale, 0.7 * scale]
    norm = math.sqrt(sum((v / scale) ** 2 for v in gv)) * scale
    dv = [-v / norm for v in gv]
    w = Point({}, {"g": gv, "d": dv}).witness(L2_SPEC)
    chk = recheck(w)
    assert chk["violated"] and chk["proved"], chk.get("proof")
    assert chk["ratio"] is None or chk["ratio"] > 0
    assert chk["empirical"] / chk["bound"] == pytest.approx(1.52, rel=1e-12)


@pytest.mark.parametrize("scale", (1e-300, 1.0, 1e300))
def test_true_claim_not_violated_at_any_scale(scale):
    # the same witness with the true value -1 ||g||_1 (tight, equality): never a violation
    spec = ClaimSpec(id="lmo.linf.true", statement="<g, lmo(g)> <= -||g||_1", source="x", term=CoordSum(g * d),
                     bound=-CoordSum(sp.Abs(g)), relation="<=")  # fmt: skip
    gv = (np.array([0.3, -1.2, 0.7]) * scale).tolist()
    chk = recheck(Point({}, {"g": gv, "d": [-1.0, 1.0, -1.0]}).witness(spec))
    assert not chk["violated"]


@pytest.mark.parametrize("relation", ["<=", ">=", "=="])
def test_cancellation_to_zero_is_rounding_not_a_violation(relation, monkeypatch):
    # lhs = sqrt(a) sqrt(b) - a at a = b is 0 exactly, but at 60 digits it leaves a residue far below its terms
    # (relative to the compared values 0 and the residue, any residue fails): the measured rounding error says so
    import proofs_checks.recheck as R

    a, b = sp.symbols("a b", positive=True)
    lhs = sp.sqrt(a) * sp.sqrt(b) - a
    w = {"kind": "expression", "relation": relation, "lhs": srepr_text(lhs), "rhs": srepr_text(sp.Integer(0)),
         "scalars": {"a": 0.1, "b": 0.1}}  # fmt: skip
    with mpmath.workdps(60):
        residue = R._Eval(w).ev(R.parse(w["lhs"]), {"i": None})
    assert residue != 0  # the case is real: the 60-digit value is not 0
    assert not recheck(w)["violated"]
    monkeypatch.setattr(R, "_rounding_slack", lambda *args: 0)  # without the measured rounding error
    broken = (relation == "<=" and residue > 0) or (relation == ">=" and residue < 0) or relation == "=="
    assert recheck(w)["violated"] == broken


# ---------------------------------------------------------------------------------------------------
# proved means every part proved


def _psd_witness(M, y=2.0):
    """y <= 1 (false for y = 2) under the condition MinEig(M) >= 0 (the witness is feasible iff M is PSD)."""
    n = len(M)
    syms = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"M_{min(i, j)}_{max(i, j)}"))
    sc = {f"M_{i}_{j}": float(M[i][j]) for i in range(n) for j in range(i, n)} | {"y": y}
    cond = sp.Function("MinEig")(sp.ImmutableMatrix(syms))
    return {
        "kind": "expression",
        "relation": "<=",
        "lhs": srepr_text(sp.Symbol("y")),
        "rhs": srepr_text(sp.Integer(1)),
        "scalars": sc,
        "assumptions": [
            {"name": "M psd", "lhs": srepr_text(cond), "relation": ">=", "rhs": srepr_text(0), "per_coordinate": False}
        ],
    }


@pytest.mark.parametrize("backend", ["arb", "iv"])
@pytest.mark.parametrize("M", [[[1.0, 2.0], [2.0, 1.0]], [[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, -0.5]]])
def test_infeasible_witness_never_proved(M, backend):
    pr = prove_expression(_psd_witness(M), backend=backend)
    assert pr["proved"] is False
    assert "breaks its condition 'M psd'" in pr["proof"]
    chk = recheck(_psd_witness(M))
    assert not chk["violated"] and not chk["assumptions_ok"] and not chk["proved"]


@pytest.mark.parametrize("backend", ["arb", "iv"])
@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_feasible_nxn_witness_proved_with_rigorous_min_eig(n, backend):
    rng = np.random.default_rng(n)
    A = rng.standard_normal((n, n))
    A = A @ A.T + 0.05 * np.eye(n)
    pr = prove_expression(_psd_witness(A.tolist()), backend=backend)
    assert pr["proved"], pr["proof"]


def test_condition_without_certain_enclosure_lowers_evidence_and_is_named():
    # MinEig exactly 0 (a singular PSD matrix): the enclosure straddles 0, so the condition is not certain
    w = _psd_witness([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    chk = recheck(w)
    assert chk["violated"] and not chk["proved"]
    assert "condition 'M psd' is not certain" in chk["proof"]
    spec = ClaimSpec(id="y.le.1", statement="y <= 1", source="x", term=sp.Symbol("y"), bound=sp.Integer(1))
    from proofs_checks.verdict import decide

    v = decide("<=", 2.0, 1.0, method="exact", witness=w)
    assert v.status == "violated" and v.evidence is None and "not proved rigorously" in v.reason
    assert spec.id == "y.le.1"


@pytest.mark.parametrize("backend", ["arb", "iv"])
@pytest.mark.parametrize("n", [3, 5])
def test_min_eig_enclosure_contains_the_eigenvalue_and_is_tight(n, backend):
    rng = np.random.default_rng(10 + n)
    A = rng.standard_normal((n, n))
    A = (A + A.T) / 2
    num = ball_backend(None if backend == "arb" else "iv", 256)
    with working_precision(num, 256):
        ev = BallEval({}, num)
        enc = ev._min_eig([[num.exact(float(A[i, j])) for j in range(n)] for i in range(n)])
        lo, hi = num.bounds(enc)
        width = float(num.upper(num.upper(enc) - num.lower(enc)))
    with mpmath.workdps(80):
        true = min(mpmath.eigsy(mpmath.matrix(A.tolist()), eigvals_only=True))
    assert lo <= true <= hi
    assert width < 1e-25 * (1 + abs(float(true)))


def test_bounds_are_rounded_outward():
    num = ball_backend("arb", 128)
    with working_precision(num, 128):
        third = num.exact(1) / num.exact(3)
        lo, hi = num.bounds(third)
        assert num.exact(lo) <= third.lower() and num.exact(hi) >= third.upper()
        assert num.exact(1 / 3) > third.upper() or num.exact(1 / 3) < third.lower()  # nearest rounding lies inside
        assert lo < 1 / 3 or hi > 1 / 3
    ivn = ball_backend("iv", 128)
    with working_precision(ivn, 128):
        t = ivn.exact(1) / ivn.exact(3)
        lo, hi = ivn.bounds(t)
        assert mpmath.mpf(lo) <= t.a and mpmath.mpf(hi) >= t.b


def test_bnb_box_ends_rounded_outward():
    third = sp.Rational(1, 3)
    lo, hi = outward_box({"t": (third, "0.1")})["t"]
    assert sp.Rational(lo) <= third and sp.Rational(hi) >= sp.Rational("0.1")
    lo2, _ = outward_box({"t": (sp.sqrt(2) / 1000, 1.0)})["t"]
    assert sp.Rational(lo2) < sp.sqrt(2) / 1000
    assert outward_box({"t": (0.25, 1)})["t"] == (0.25, 1.0)


def test_bnb_claims_counterexample_needs_a_proved_recheck():
    from proofs_checks.bnb import BnBResult
    from proofs_checks.stacey.bnb_claims import _point_witness, _record

    q = sp.Symbol("q", real=True)
    bad = BnBResult("violated", 0, 1, witness={"point": {"q": 0.5}}, reason="separate at q = 0.5")
    real = _record("t.real", "q <= 0.4", "s", {}, [bad], witness=_point_witness(q, sp.Float(0.4), {"q": 0.5}, {}, "t"))
    assert real.status == "violated" and real.witness["recheck"]["proved"]
    # a witness that does not re-check (here: it holds at the point) never makes a violated record
    fake = _record("t.fake", "q <= 0.6", "s", {}, [bad], witness=_point_witness(q, sp.Float(0.6), {"q": 0.5}, {}, "t"))
    assert fake.status == "inconclusive" and "does not prove it" in fake.reason
