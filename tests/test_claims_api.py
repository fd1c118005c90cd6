"""The public claim API as a user meets it, from outside the packages: claim files, the examples,
planted wrong bounds, broken claim files, the optimizer/problem/noise extension points."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from lptheory.app.cli import main
from proofs_checks.api import (
    Assumption,
    ClaimError,
    ClaimSpec,
    Distribution,
    DistributionSpace,
    Env,
    Expect,
    Expect1,
    SearchBudget,
    adversarial_search,
    evaluate,
    g,
    load_pack,
    recheck,
    x,
)

EXAMPLES = Path(__file__).parents[1] / "examples"
CLAIM_FILES = ["claim_moment_lemma.py", "claim_online_regret.py", "claim_signsgd_cantelli.py"]


@pytest.mark.parametrize("name", CLAIM_FILES)
def test_examples_use_only_the_public_api(name):
    src = (EXAMPLES / name).read_text()
    assert len(src.splitlines()) < 80, "keep the examples short"
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            assert not any(part.startswith("_") for part in (node.module or "").split(".")), node.module
            assert not any(a.name.startswith("_") for a in node.names)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            pytest.fail(f"{name} uses the private name {node.attr}")
    assert "monkeypatch" not in src and "setattr" not in src


@pytest.mark.slow
def test_cantelli_example_reproduces_the_sharp_constant(capsys):
    """examples/claim_signsgd_cantelli.py: Cantelli's constant 1 holds, certified on both sides at every (g, tau)
    (the bracket proved, within 1e-6); the claimed 0.999 never holds (the law beats it); the planted certificate is
    refused."""
    assert main(["check", str(EXAMPLES / "claim_signsgd_cantelli.py"), "--quiet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    for r in doc["claims"]:
        s = r["data"]["sharp"]
        assert s["evidence"] == "proved" and r["data"]["planted"] == "violated"
        assert r["status"] == ("holds" if r["params"]["C"] == 1.0 else "inconclusive")


def test_moment_lemma_example_finds_the_violation_and_holds_tight(capsys):
    assert main(["check", str(EXAMPLES / "claim_moment_lemma.py"), "--quick", "--quiet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_r = {r["params"]["r"]: r for r in doc["claims"]}
    assert by_r[3.0]["status"] == "violated"
    assert recheck({k: v for k, v in by_r[3.0]["witness"].items() if k != "recheck"})["violated"]
    for r in (1.5, 2.0):
        assert by_r[r]["status"] == "holds" and by_r[r]["ratio"] == pytest.approx(1.0, abs=1e-6)  # tight


def test_online_example_runs_a_user_optimizer_on_a_time_varying_problem(capsys):
    assert main(["check", str(EXAMPLES / "claim_online_regret.py"), "--quick", "--quiet", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    recs = doc["claims"]
    assert {r["id"] for r in recs} == {"adagrad.regret", "adagrad.rate"}
    assert all(r["status"] == "holds" for r in recs if r["id"] == "adagrad.regret")
    rate = next(r for r in recs if r["id"] == "adagrad.rate")
    # issue 23: a rate holds only when its interval's lower end is above claim - margin; the quick grid's
    # jackknife interval (about [0.41, 0.61] against 0.5) is too wide to decide, and says so
    assert rate["status"] == "holds" or (rate["status"] == "inconclusive" and "does not decide" in rate["reason"])
    assert 0.4 < rate["empirical"] < 0.7


def test_report_from_a_claim_file(tmp_path, capsys):
    out = tmp_path / "rep"
    assert (
        main(["report", "--claims", str(EXAMPLES / "claim_moment_lemma.py"), "--quick", "--quiet", "--out", str(out)])
        == 0
    )
    page = (out / "index.html").read_text()
    assert "Example: a moment inequality" in page and "moment.jensen" in page
    assert (out / "jensen_ratios.png").exists()  # the generic figure of a pack without registered figures
    assert f"lptheory check {EXAMPLES / 'claim_moment_lemma.py'} jensen" in (out / "report.md").read_text()
    # r = 3 is violated: its witness is written beside the report, and the printed re-check names that file
    printed = capsys.readouterr().out
    hint = re.search(r"^witnesses: .*re-check one: python -m proofs_checks\.recheck (\S+)$", printed, re.M)
    assert hint, printed
    assert hint.group(1) == str(out / "witnesses" / "moment.jensen.json") and Path(hint.group(1)).is_file()
    from proofs_checks.recheck import main as recheck_main

    assert recheck_main([hint.group(1)]) == 0
    assert json.loads(capsys.readouterr().out)["violated"] is True


def test_planted_wrong_bound_in_a_user_claim_is_found():
    """A true claim (Jensen at r = 1.5) with its bound halved: the search must find the violation."""
    r = 1.5
    spec = ClaimSpec(
        id="planted",
        statement="E|X - EX|^r <= (1/2)(Var X)^{r/2}",
        source="planted",
        assumptions=[Assumption("mean", g, "==", Expect1(x), per_coordinate=True)],
        term=Expect(abs(x - g) ** r),
        bound=Expect1((x - g) ** 2) ** (r / 2) / 2,
    )
    rec = adversarial_search(spec, [DistributionSpace(1, 2)], {"r": r}, seed=0, budget=SearchBudget(20, 8))
    assert rec.status == "violated" and rec.ratio == pytest.approx(2.0, rel=1e-3)


def _claim_file(tmp_path, body):
    f = tmp_path / "claims.py"
    f.write_text(
        textwrap.dedent(
            """
        import sympy as sp
        from proofs_checks.api import ClaimSpec, Pack, value_claim
        PACK = Pack("bad", title="bad claims")
        """
        )
        + textwrap.dedent(body)
    )
    return f


@pytest.mark.parametrize(
    "body,msg",
    [
        ("x = (\n", "syntax error"),
        ("S = ClaimSpec(id='c1', source='here')\n", "claim 'c1': field 'statement'"),
        (
            "S = ClaimSpec(id='c2', statement='s', source='here', bound=3)\n",
            "claim c2: bound must be a sympy expression",
        ),
        ("S = ClaimSpec(id='c3', statement='s', source='here', bound=sp.nan)\n", "claim c3: bound is not finite"),
        (
            "S = ClaimSpec(id='c4', statement='s', source='here')\n"
            "@PACK.check(title='t')\n"
            "def nan_bound(ctx):\n"
            "    return [value_claim(S, 1.0, float('nan'), {'p': 3.0})]\n",
            "claim c4: the bound is not finite",
        ),
    ],
)
def test_broken_claim_files_are_exit_2_naming_file_and_claim(tmp_path, capsys, body, msg):
    f = _claim_file(tmp_path, body)
    out = tmp_path / "rep"
    assert main(["report", "--claims", str(f), "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert msg in err and str(f) in err and "Traceback" not in err
    assert not out.exists()  # no partial report


def test_claim_file_discovery_by_module_path(tmp_path, monkeypatch):
    pkg = tmp_path / "mypaper"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "claims.py").write_text((EXAMPLES / "claim_moment_lemma.py").read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    pack = load_pack("mypaper.claims")
    assert pack.name == "moment-lemma" and "jensen" in pack.checks
    assert load_pack("mypaper.claims:PACK") is pack


def test_expressions_are_one_source_for_numpy_and_mpmath():
    """A user expression evaluated in float64 (over a population) and re-checked at 60 digits agree."""
    from proofs_checks.api import expression_witness

    spec = ClaimSpec(
        id="demo",
        statement="E X^4 <= 3 (E X^2)^2",
        source="demo",
        assumptions=[Assumption("mean", g, "==", Expect1(x), per_coordinate=True)],
        term=Expect((x - g) ** 4),
        bound=3 * Expect1((x - g) ** 2) ** 2,
    )
    rng = np.random.default_rng(0)
    v, w = rng.uniform(-1, 1, (5, 1, 3)), rng.dirichlet(np.ones(3), size=(5, 1))
    dist = Distribution(v, w, 2)
    from proofs_checks.engines import constants

    sc, co, _ = constants(spec, dist, {})
    vals = evaluate(spec.term, Env(scalars=sc, coords=co, dist=dist))
    for i in range(5):
        chk = recheck(expression_witness(spec, scalars=sc, coords=co, dist=dist, row=i))
        assert chk["empirical"] == pytest.approx(vals[i], rel=1e-12)


def test_bad_spec_fields_raise_claim_errors():
    with pytest.raises(ClaimError, match="relation"):
        ClaimSpec(id="a", statement="s", source="s", relation="<")
    with pytest.raises(ClaimError, match="assumption"):
        Assumption("a", g, ">=", None)
