"""Bounds as regression tests: --fail-on and --baseline exit codes against planted regressions, lptheory
diff on real runs, the pytest plugin (pytester) and the hypothesis strategies."""

from __future__ import annotations

import copy
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lptheory.app import cli
from lptheory.app.testing import strategies as S
from proofs_checks.regression import compare

pytest_plugins = ["pytester"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MOMENT = os.path.join(ROOT, "examples", "claim_moment_lemma.py")


@pytest.fixture(scope="module")
def moment_run(tmp_path_factory):
    """One quick run of the example claim file (r = 1.5, 2 hold; r = 3 violated), as a baseline."""
    out = tmp_path_factory.mktemp("moment")
    assert cli.main(["check", MOMENT, "--quick", "--out", str(out), "--quiet"]) == 0
    path = out / "check_jensen.json"
    return path, json.loads(path.read_text())


def _check(args, capsys):
    rc = cli.main(["check", MOMENT, "--quick", "--quiet", *args])
    return rc, capsys.readouterr()


def test_fail_on_violated_and_unchanged_baseline(moment_run, capsys):
    path, _ = moment_run
    rc, out = _check(["--fail-on", "violated"], capsys)
    assert rc == 1 and "violated" in out.err and "moment.jensen" in out.err
    rc, out = _check(["--baseline", str(path)], capsys)  # same seed, same records: nothing regressed
    assert rc == 0, out.err
    rc, out = _check(["--baseline", str(path), "--fail-on", "regressed"], capsys)
    assert rc == 0, out.err


def test_planted_regressions_fail_the_run(moment_run, tmp_path, capsys):
    path, doc = moment_run
    recs = doc["claims"]
    holds = [i for i, r in enumerate(recs) if r["status"] == "holds"]
    # 1. a status that worsens: the baseline says the violated claim held
    b1 = copy.deepcopy(doc)
    viol = next(i for i, r in enumerate(recs) if r["status"] == "violated")
    b1["claims"][viol]["status"] = "holds"
    (tmp_path / "b1.json").write_text(json.dumps(b1))
    rc, out = _check(["--baseline", str(tmp_path / "b1.json")], capsys)
    assert rc == 1 and "holds -> violated" in out.err
    # 2. a ratio that drifts towards its bound: the baseline's ratio was much smaller
    b2 = copy.deepcopy(doc)
    b2["claims"][holds[0]]["ratio"] = recs[holds[0]]["ratio"] * 0.5
    (tmp_path / "b2.json").write_text(json.dumps(b2))
    rc, out = _check(["--baseline", str(tmp_path / "b2.json"), "--ratio-tolerance", "0.05"], capsys)
    assert rc == 1 and "ratio" in out.err and "towards the bound" in out.err
    # ... within the tolerance it passes
    rc, out = _check(["--baseline", str(tmp_path / "b2.json"), "--ratio-tolerance", "1.5"], capsys)
    assert rc == 0, out.err
    # 3. a record of the baseline missing from the run
    b3 = copy.deepcopy(doc)
    extra = copy.deepcopy(recs[holds[0]])
    extra["params"]["r"] = 1.25
    b3["claims"].append(extra)
    (tmp_path / "b3.json").write_text(json.dumps(b3))
    rc, out = _check(["--baseline", str(tmp_path / "b3.json")], capsys)
    assert rc == 1 and "missing" in out.err


def test_a_baseline_with_other_checks_compares_only_the_checks_run(moment_run, tmp_path, capsys):
    """A whole report as the baseline of one check: the records of checks not run are left out (with a note),
    not reported missing; a record of the same check that disappeared still fails the run."""
    path, doc = moment_run
    b = copy.deepcopy(doc)
    for k, r in enumerate(copy.deepcopy(doc["claims"])):
        b["claims"].append({**r, "check": "another-check", "id": f"other.{k}"})
    (tmp_path / "whole.json").write_text(json.dumps(b))
    rc = cli.main(["check", MOMENT, "--quick", "--baseline", str(tmp_path / "whole.json")])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert f"--baseline: {len(doc['claims'])} records of checks not run here ignored" in out.err
    extra = copy.deepcopy(doc["claims"][0])
    extra["params"]["r"] = 1.25  # a record of the check that ran, absent from this run
    b["claims"].append(extra)
    (tmp_path / "whole2.json").write_text(json.dumps(b))
    rc, out = _check(["--baseline", str(tmp_path / "whole2.json")], capsys)
    assert rc == 1 and "missing" in out.err and "other." not in out.err


def test_a_witness_that_stops_rechecking_is_a_regression(moment_run):
    _, doc = moment_run
    now = copy.deepcopy(doc["claims"])
    viol = next(r for r in now if r["status"] == "violated")
    assert compare(now, doc["claims"]) == []
    w = viol["witness"]
    w["scalars"] = {**w.get("scalars", {}), "r": 1.5}  # the recorded point no longer violates the claim
    problems = compare(now, doc["claims"])
    assert [p["kind"] for p in problems] == ["witness"]


def test_diff_of_two_runs(moment_run, tmp_path, capsys):
    path, doc = moment_run
    assert cli.main(["check", MOMENT, "--quick", "--seed", "1", "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
    new = tmp_path / "check_jensen.json"
    assert cli.main(["diff", str(path), str(new)]) == 0
    text = capsys.readouterr().out
    assert "3 -> 3 records" in text and "moment.jensen" in text and "ratio" in text
    assert cli.main(["diff", str(path), str(new), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["summary"]["old"] == 3 and got["summary"]["status_changed"] == 0
    assert all(c["change"] for c in got["changes"])
    assert cli.main(["diff", str(path), str(path)]) == 0
    assert "0 changed" in capsys.readouterr().out
    # an evidence change alone (searched -> proved: how far a holds reaches) is a change, named as such
    raised = json.loads(path.read_text())
    rec = next(r for r in raised["claims"] if r["status"] == "holds")
    before, rec["evidence"] = rec.get("evidence"), "proved" if rec.get("evidence") != "proved" else "exact"
    other = tmp_path / "raised.json"
    other.write_text(json.dumps(raised))
    assert cli.main(["diff", str(path), str(other)]) == 0
    text = capsys.readouterr().out
    assert "1 changed (0 in status, 1 in evidence)" in text
    assert f"holds ({before}) -> holds ({rec['evidence']})" in text
    assert cli.main(["diff", str(path), str(tmp_path / "nope.json")]) == 2
    assert "NEW" in capsys.readouterr().err


# -------------------------------------------------------------------------------------------------
# the pytest plugin

PLUGIN_TESTS = f'''
import pytest
import sympy as sp
from proofs_checks.api import ClaimSpec, Assumption, Expect, Expect1, DistributionSpace, SearchBudget, g, x

r = sp.Symbol("r", positive=True)
SPEC = ClaimSpec(
    id="moment.jensen",
    statement="E|X - EX|^r <= (Var X)^(r/2)",
    source="test",
    assumptions=[Assumption("mean", g, "==", Expect1(x), per_coordinate=True)],
    term=Expect(sp.Abs(x - g) ** r),
    bound=Expect1((x - g) ** 2) ** (r / 2),
)
SETTING = lambda v: dict(spaces=[DistributionSpace(d=1, k=2), DistributionSpace(d=1, k=3)], scalars={{"r": v}},
                         params={{"r": v}})
BUDGET = SearchBudget(maxiter=20, popsize=6)

def test_holds(lptheory):
    lptheory.assert_claim_holds(SPEC, SETTING(1.5), budget=BUDGET)

def test_false_claim(lptheory):
    lptheory.assert_claim_holds(SPEC, SETTING(3.0), budget=BUDGET)

def test_violation(lptheory, lptheory_seed):
    assert lptheory_seed == 7
    lptheory.assert_violation_found(SPEC, SETTING(3.0), budget=BUDGET)

def test_pack_check(lptheory):
    lptheory.assert_violation_found("{MOMENT}:jensen", {{"r": [3.0]}}, quick=True)

@pytest.mark.lptheory_slow
def test_slow(lptheory):
    lptheory.assert_claim_holds("{MOMENT}:jensen", {{"r": [1.5]}})
'''


@pytest.mark.slow
def test_pytest_plugin(pytester):
    pytester.makepyfile(test_claims=PLUGIN_TESTS)
    res = pytester.runpytest_subprocess("--lptheory-seed", "7", "-rs", "-p", "no:cacheprovider")
    res.assert_outcomes(passed=3, failed=1, skipped=1)
    text = res.stdout.str()
    # the failure prints the record and how to reproduce it
    assert "do not hold" in text and "moment.jensen" in text and "violated" in text
    assert "reproduce: adversarial_search('moment.jensen'" in text and "seed=7" in text
    assert "a slow claim check: run with --lptheory-slow" in text
    res = pytester.runpytest_subprocess(
        "--lptheory-seed", "7", "--lptheory-slow", "-k", "slow", "-p", "no:cacheprovider"
    )
    res.assert_outcomes(passed=1, deselected=4)


# -------------------------------------------------------------------------------------------------
# hypothesis strategies


@settings(max_examples=40, deadline=None)
@given(dist=S.finite_distributions(sigma=0.3, p=3.0, G=2.0))
def test_finite_distributions_meet_the_assumptions(dist):
    """Mean g exactly (to rounding), sigma as asked (or scaled down with the whole distribution to meet
    G), every outcome's dual norm within G."""
    w, v = dist.weights, dist.values
    np.testing.assert_allclose((w * v).sum(axis=1), dist.g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.sqrt((w * (v - dist.g[:, None]) ** 2).sum(axis=1)), dist.sigma, rtol=1e-12)
    assert np.all(dist.sigma <= 0.3 * (1 + 1e-12))
    worst = np.abs(v).max(axis=1)
    assert (worst**1.5).sum() ** (1 / 1.5) <= 2.0
    assert np.all(np.abs(w.sum(axis=1) - 1) < 1e-12)


@settings(max_examples=60, deadline=None)
@given(p=S.exponents())
def test_exponents_range(p):
    assert p > 1.0 and (math.isinf(p) or p <= 1e3)


def test_exponents_reach_the_special_values():
    from hypothesis import find

    for target in (2.0, math.inf, 1.0 + 1e-6, 1e3):
        assert find(S.exponents(), lambda p, t=target: p == t) == target


@settings(max_examples=25, deadline=None)
@given(pl=S.smooth_quadratics(), seed=st.integers(0, 1000))
def test_smooth_quadratics_constant_is_exact(pl, seed):
    """||grad f(x) - grad f(y)||_{p*} <= L ||x - y||_p at random pairs, with equality reachable (the
    constant is exact): the best ratio over the coordinate directions of the largest curvature is L at p = 2."""
    from lptheory.geometry import dual_exponent, lp_norm

    prob, L = pl
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((2, 64, prob.d))
    for p in (2.0, 3.0):
        Lp = prob.smoothness(p)
        ratio = lp_norm(prob.grad(x) - prob.grad(y), dual_exponent(p)) / lp_norm(x - y, p)
        assert np.all(ratio <= Lp * (1 + 1e-12))
    assert math.isfinite(L) and L >= 0


@settings(max_examples=20, deadline=None)
@given(noise=S.noise_models())
def test_noise_models_have_their_sigma(noise):
    rng = np.random.default_rng(0)
    draws = np.stack([noise.sample_mean(rng, 1) for _ in range(4000)])
    sd = draws.std(axis=0)
    assert np.all(np.abs(sd - noise.sigma) <= 0.15 * noise.sigma + 1e-9)


def test_terminal_tables_keep_long_record_labels_on_their_own_line():
    """``lptheory diff`` and the --baseline table: a record label longer than the column (a search's whole
    setting) goes on its own line with its columns below, so lines stay short; short labels stay one row."""
    from proofs_checks.regression import RECORD_WIDTH, format_regressions, format_rows

    long = "lemmas:thm1.B1 (" + ", ".join(f"k{i}=v{i}" for i in range(60)) + ")"
    rows = [
        {"record": "claims:x (p=3.0)", "change": "status", "status": "holds -> violated", "ratio": "0.5 -> 1.5"},
        {"record": long, "change": "ratio", "status": "holds -> holds", "ratio": "0.1 -> 0.2"},
    ]
    lines = format_rows(rows, [], [("change", 20), ("status", 28), ("ratio", 0)])
    assert len(lines) == 4 and lines[1].startswith("claims:x (p=3.0)") and lines[1].endswith("0.5 -> 1.5")
    assert lines[2] == long and lines[3].split() == ["ratio", "holds", "->", "holds", "0.1", "->", "0.2"]
    assert max(len(x) for x in lines if x != long) <= RECORD_WIDTH + 20 + 28 + 3 + len("0.5 -> 1.5")
    text = format_regressions([{"kind": "missing", "record": long, "detail": "in the baseline, not in this run"}])
    assert text.splitlines()[2] == "missing       " + long
    assert text.splitlines()[3].strip() == "in the baseline, not in this run"


def test_the_check_table_tells_negative_controls_from_findings():
    """A violated negative control (id with a ``.control`` part, or a ``control`` parameter) is marked as such
    in the table and counted apart; the 'finding about the paper' line stays for the other violated records."""
    from proofs_checks.records import format_table, is_control

    base = {"statement": "s", "source": "src", "method": "exact", "empirical": 2.0, "bound": 1.0, "ratio": 2.0}
    finding = {**base, "id": "x.claim", "params": {"p": 3.0}, "status": "violated"}
    control = {**base, "id": "x.claim.control-near", "params": {"p": 3.0}, "status": "violated"}
    moved = {**base, "id": "x.rate", "params": {"p": 3.0, "control": "static"}, "status": "violated"}
    assert [is_control(r) for r in (finding, control, moved)] == [False, True, True]
    text = format_table([control, moved])
    assert text.count("VIOLATED (control)") == 2 and "finding about the paper, not a failure" not in text
    assert (
        "verdicts: 0 holds, 0 violated, 0 inconclusive, 0 not-applicable; 2 negative controls, counted apart (2 fail"
        in text
    )
    text = format_table([finding, control])
    assert "finding about the paper, not a failure of the run" in text
    assert "verdicts: 0 holds, 1 violated, 0 inconclusive, 0 not-applicable; 1 negative control, counted apart" in text


def test_controls_by_the_one_convention_are_counted_apart_everywhere():
    """Controls recorded by control_verdict (inconclusive) are neither counted among the claims' statuses nor
    open questions: the table, the totals and --fail-on count them apart; one that does not fail is named."""
    from proofs_checks.records import control_failed, format_table, status_counts_text, to_html
    from proofs_checks.regression import compare

    base = {"statement": "s", "source": "src", "method": "exact", "empirical": 2.0, "bound": 1.0, "ratio": 2.0}
    claim = {**base, "id": "x.claim", "params": {}, "status": "holds", "reason": None}
    fails = {**base, "id": "x.claim.control-a", "params": {}, "status": "inconclusive"}
    fails["reason"] = "negative control 'a' fails as it must. The control: ..."
    passes = {**base, "id": "x.claim.control-b", "params": {}, "status": "inconclusive"}
    passes["reason"] = "negative control 'b' PASSES the rule it must fail: ..."
    assert [control_failed(r) for r in (fails, passes)] == [True, False]
    text = status_counts_text([claim, fails, passes])
    assert text.startswith("1 holds (0 proved, 1 on what was tested), 0 violated, 0 inconclusive, 0 not-applicable; ")
    assert "; 2 negative controls, counted apart (1 fails" in text
    assert "1 does not fail (x.claim.control-b)" in text
    table = format_table([claim, fails])
    assert (
        "inconclusive (control)" in table and "verdicts: 1 holds (0 proved, 1 on what was tested), 0 violated" in table
    )
    assert "0 inconclusive" in to_html([claim, fails])
    assert compare([claim, fails], None, fail_on=("inconclusive",)) == []  # failing as it must: not a finding
    assert [p["record"] for p in compare([claim, passes], None, fail_on=("inconclusive",))] == [
        "None:x.claim.control-b"
    ]


def test_check_of_several_checks_prints_their_totals(capsys):
    """``lptheory check A B``: each check's table counts its own records; a last line counts them all."""
    assert cli.main(["check", "majorization", "claims", "--quick"]) == 0
    out = capsys.readouterr().out
    tail = out.strip().splitlines()[-1]
    assert tail.startswith("all 2 checks: ")
    per = [ln for ln in out.splitlines() if ln.startswith("verdicts: ")]
    assert len(per) == 2
    holds = sum(int(ln.split(": ")[1].split(" holds")[0]) for ln in per)
    assert f"{holds} holds" in tail
