"""The API gaps of issue 35, each closed and tested from outside the packages: only ``proofs_checks.api`` names
(and the standalone re-check's command line) are used here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy as sp

from proofs_checks import api

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spec(id_, term=None, bound=None, relation="<="):
    return api.ClaimSpec(id=id_, statement=id_, source="test", term=term, bound=bound, relation=relation)


# ---------------------------------------------------------------------------------------------------
# MinEig exported, and a witness with a MinEig condition proved (3x3) or refused (infeasible)


def _mineig_point(M):
    n = len(M)
    syms = sp.Matrix(n, n, lambda i, j: sp.Symbol(f"m{min(i, j)}{max(i, j)}"))
    sc = {f"m{i}{j}": float(M[i][j]) for i in range(n) for j in range(i, n)} | {"y": 2.0}
    cond = ("M is PSD", api.MinEig(sp.ImmutableMatrix(syms)), ">=", sp.Integer(0))
    return api.Point(sc, lhs=sp.Symbol("y"), rhs=sp.Integer(1), conditions=(cond,))


def test_min_eig_exported_and_its_condition_proved_or_refused():
    spec = _spec("y.le.1", sp.Symbol("y"), sp.Integer(1))
    good = api.value_claim(spec, 2.0, 1.0, {}, at=_mineig_point([[2, 1, 0], [1, 2, 1], [0, 1, 2]]))
    assert good.status == "violated" and good.evidence == "proved"
    bad = api.value_claim(spec, 2.0, 1.0, {}, at=_mineig_point([[2, 1, 0], [1, 2, 1], [0, 1, -1]]))
    assert bad.status == "inconclusive" and "M is PSD" in bad.reason
    pr = api.prove_expression(_mineig_point([[2, 1, 0], [1, 2, 1], [0, 1, -1]]).witness(spec))
    assert not pr["proved"] and "breaks its condition 'M is PSD'" in pr["proof"]


# ---------------------------------------------------------------------------------------------------
# controls on records


def test_gate_on_controls_takes_records_and_verdicts():
    spec = _spec("c.claim", sp.Symbol("a"), sp.Integer(1))
    holds = api.value_claim(spec, 0.5, 1.0, {"m": "method"})
    fails = api.value_claim(spec, 2.0, 1.0, {"m": "control"})  # inconclusive (no witness): not holds
    passes = api.value_claim(spec, 0.1, 1.0, {"m": "control"})
    out = api.gate_on_controls("the method", holds, {"static": fails})
    assert isinstance(out, api.Claim) and out.status == "holds" and "fails as it must" in out.reason
    out2 = api.gate_on_controls("the method", holds, {"static": passes})
    assert isinstance(out2, api.Claim) and out2.status == "inconclusive" and "cannot tell" in out2.reason
    v = api.decide("<=", 0.5, 1.0, method="exact")
    assert api.gate_on_controls("m", v, {"static": passes}).status == "inconclusive"  # a verdict still works
    with pytest.raises(TypeError, match="controls"):
        api.gate_on_controls("m", holds, {"static": "holds"})


# ---------------------------------------------------------------------------------------------------
# divergence recordable as a violation


def test_diverging_iteration_violates_a_convergence_claim_with_a_witness_that_rechecks():
    x = sp.Symbol("x", real=True)
    eta, L = sp.symbols("eta L", positive=True)
    spec = _spec("gd.converges")
    # gradient descent on f = L x^2 / 2 with eta = 2.5 / L: x <- (1 - eta L) x = -1.5 x, diverges
    rec = api.divergence_claim(
        spec, {"x": x - eta * L * x}, {"x": 1.0}, {"eta": 2.5}, threshold=1e6, scalars={"eta": 2.5, "L": 1.0}
    )
    assert rec.status == "violated", rec.reason
    w = rec.witness
    assert w["kind"] == "divergence" and w["steps"] == 35 and np.isfinite(w["last"]["x"])
    chk = api.recheck(w)
    assert chk["violated"] and chk["empirical"] > 1e6
    # a convergent step size: nothing to record as a violation
    rec2 = api.divergence_claim(
        spec, {"x": x - eta * L * x}, {"x": 1.0}, {"eta": 0.5}, threshold=1e6, scalars={"eta": 0.5, "L": 1.0},
        max_steps=200,
    )  # fmt: skip
    assert rec2.status == "inconclusive"
    # overflow before the threshold is crossed: the last finite iterate is the witness (never inf or NaN)
    rec3 = api.divergence_claim(spec, {"x": x**3}, {"x": 10.0}, {}, threshold=1e300)
    assert rec3.status == "violated" and np.isfinite(rec3.empirical)
    assert api.recheck(rec3.witness)["violated"]


# ---------------------------------------------------------------------------------------------------
# branch-and-bound results as records


def test_bnb_results_become_records():
    t = sp.Symbol("t", real=True)
    spec = _spec("poly.bound", t * (1 - t), sp.Rational(1, 4))
    proved = api.branch_and_bound(t * (1 - t), sp.Float(0.3), {"t": (0.0, 0.2)})
    rec = api.bnb_record(proved, spec, {"what": "t(1-t) <= 0.3 on [0, 0.2]"})
    assert proved.status == "proved" and rec.status == "holds" and rec.evidence == "proved"
    assert rec.params["box"] == {"t": [0.0, 0.2]}
    bad = api.branch_and_bound(t * (1 - t), sp.Float(0.2), {"t": (0.0, 1.0)})
    rec2 = api.bnb_record(bad, spec)
    assert bad.status == "violated" and rec2.status == "violated" and rec2.evidence == "proved"
    assert rec2.witness["kind"] == "expression"
    chk = api.recheck(rec2.witness)
    assert chk["violated"] and chk["proved"]
    with pytest.raises(ValueError, match="branch_and_bound"):
        api.bnb_record(object(), spec)


# ---------------------------------------------------------------------------------------------------
# a registered witness kind re-checks standalone, only with consent


CLAIM_FILE = textwrap.dedent(
    """
    from proofs_checks.api import register_recheck

    def _recheck_double(w, dps=30):
        v = float(w["value"])
        return {"violated": 2 * v > float(w["bound"]), "assumptions_ok": True, "empirical": 2 * v,
                "bound": float(w["bound"]), "ratio": None, "checks": [], "dps": dps}

    register_recheck("double-test-kind", _recheck_double)
    """
)


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_registered_kind_rechecks_standalone_with_consent(tmp_path):
    claims = tmp_path / "my_claims.py"
    claims.write_text(CLAIM_FILE)
    wit = {"kind": "double-test-kind", "value": 3.0, "bound": 5.0, "module": str(claims)}
    wfile = tmp_path / "w.json"
    wfile.write_text(json.dumps(wit))
    env = {**os.environ, "PYTHONPATH": ROOT}
    run = [sys.executable, "-m", "proofs_checks.recheck"]
    refused = subprocess.run([*run, str(wfile)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert refused.returncode == 2 and "--allow-module" in refused.stderr and "my_claims.py" in refused.stderr
    ok = subprocess.run([*run, "--allow-module", str(claims), str(wfile)], capture_output=True, text=True, env=env,
                        cwd=tmp_path)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert out["violated"] is True and out["module"] == str(claims)
    # in this process (the claim file not imported): refused without consent, re-checked with it
    code = (
        "import json, sys; from proofs_checks.api import recheck; w = json.load(open(sys.argv[1]));\n"
        "try:\n    recheck(w)\nexcept ValueError as e:\n    print('refused', e)\n"
        "print(recheck(w, allow_modules=[sys.argv[2]])['violated'])"
    )
    res = subprocess.run([sys.executable, "-c", code, str(wfile), str(claims)], capture_output=True, text=True,
                         env=env, cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0].startswith("refused") and res.stdout.splitlines()[-1] == "True"
    # a witness naming another module is not imported on the strength of an allowance for a different one
    other = tmp_path / "evil.py"
    other.write_text("raise SystemExit('ran code named by a data file')\n")
    wfile.write_text(json.dumps({**wit, "module": str(other)}))
    res2 = subprocess.run([*run, "--allow-module", str(claims), str(wfile)], capture_output=True, text=True,
                          env=env, cwd=tmp_path)  # fmt: skip
    assert res2.returncode == 2 and "ran code" not in res2.stderr + res2.stdout


# ---------------------------------------------------------------------------------------------------
# branch-and-bound on compositions (a mean-value form at every node) and tight points inside a box

_NS = (sp.Float("3.4445"), sp.Float("-4.7750"), sp.Float("2.0315"))  # the quintic Newton-Schulz polynomial


def _ns_power(k):
    x = sp.Symbol("x", real=True)
    y = x
    for _ in range(k):
        y = _NS[0] * y + _NS[1] * y**3 + _NS[2] * y**5
    return y


@pytest.mark.parametrize("k, most", [(3, 500), (4, 2500)])
def test_compositions_proved_with_few_boxes(k, most):
    # phi^k(x) <= 1.21 on [0, 1] (the sup is 1.20237): the natural extension and the whole-expression mean-value
    # form needed 987 (k = 3) and 8189 (k = 4) box evaluations; the nested form needs 395 and 1781
    res = api.branch_and_bound(_ns_power(k), sp.Float("1.21"), {"x": (0.0, 1.0)}, max_boxes=200000)
    assert res.status == "proved" and res.evaluations <= most, res.reason
    # and it still finds a violation where there is one (1.2 < sup)
    bad = api.branch_and_bound(_ns_power(k), sp.Float("1.2"), {"x": (0.0, 1.0)}, max_boxes=200000)
    assert bad.status == "violated"
    assert api.recheck(api.bnb_record(bad, _spec("ns", _ns_power(k), sp.Float("1.2"))).witness)["violated"]


def test_tight_point_inside_the_box_is_split_at():
    # t (1 - t) <= 1/4 on [0, 0.9]: equality at t = 1/2, which no bisection of [0, 0.9] makes a box end
    t = sp.Symbol("t", real=True)
    plain = api.branch_and_bound(t * (1 - t), sp.Rational(1, 4), {"t": (0.0, 0.9)}, max_boxes=5000)
    assert plain.status == "inconclusive"  # no certificate: the boxes around t = 1/2 cannot separate
    res = api.branch_and_bound(
        t * (1 - t), sp.Rational(1, 4), {"t": (0.0, 0.9)}, tight=[api.TightPoint("t", 0.5)], max_boxes=5000
    )
    assert res.status == "proved", res.reason


# ---------------------------------------------------------------------------------------------------
# matrix search spaces with spectral constraints, and their power on planted violations


@pytest.mark.parametrize("symmetric", [True, False])
def test_matrix_space_search_holds_and_finds_a_planted_violation(symmetric):
    M = api.matrix_symbols(3)
    # |M_01| <= ||M||_2 <= 2 (true, tight at M = 2 (e0 e1^T + e1 e0^T) / 2-ish); planted: the bound times 0.9
    spec = api.ClaimSpec(id="entry.le.norm", statement="|M_01| <= 2 when ||M||_2 <= 2", source="test",
                         term=sp.Abs(M[0, 1]), bound=sp.Float(2.0))  # fmt: skip
    space = api.MatrixSpace(3, symmetric=symmetric, spectral_bound=2.0)
    budget = api.SearchBudget(60, 10)
    rec = api.adversarial_search(spec, [space], {}, seed=0, budget=budget)
    assert rec.status == "holds" and rec.evidence == "searched" and 0.99 < rec.ratio <= 1.0
    planted = api.adversarial_search(spec, [space], {}, seed=0, budget=budget, scale=0.9)
    assert planted.status == "violated" and planted.evidence == "proved" and planted.ratio > 1.1
    w = planted.witness
    assert any("MinEig" in a["lhs"] for a in w["assumptions"])  # the spectral constraint re-derived
    chk = api.recheck(w)
    assert chk["violated"] and chk["assumptions_ok"] and chk["proved"]


def test_matrix_space_candidates_meet_their_constraints():
    rng = np.random.default_rng(0)
    xs = rng.uniform(-1, 1, (50, api.MatrixSpace(4, symmetric=True, spectral_bound=1.5).dim))
    mats = api.MatrixSpace(4, symmetric=True, spectral_bound=1.5).decode(xs)
    assert np.array_equal(mats, mats.transpose(0, 2, 1))
    assert np.abs(np.linalg.eigvalsh(mats)).max() <= 1.5
    psd = api.MatrixSpace(3, symmetric=True, spectral_bound=1.0, psd=True)
    assert np.linalg.eigvalsh(psd.decode(rng.uniform(-1, 1, (50, psd.dim)))).min() >= -1e-12
    rect = api.MatrixSpace(2, 5, spectral_bound=3.0)
    assert np.linalg.norm(rect.decode(rng.uniform(-1, 1, (50, rect.dim))), ord=2, axis=(1, 2)).max() <= 3.0
    with pytest.raises(api.ClaimError, match="psd"):
        api.MatrixSpace(3, psd=True)
    with pytest.raises(api.ClaimError, match="square"):
        api.MatrixSpace(2, 3, symmetric=True)
