"""Frictions met writing other papers' claims, each fixed and tested from outside (as a user imports):
help() and pydoc on the API, require= checked, a batch size stated twice, a function of a mean, rate claims
that follow their RateSpec."""

from __future__ import annotations

import pydoc
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp

import proofs_checks.api as api
from proofs_checks.api import (
    ClaimError,
    ClaimSpec,
    CoordSum,
    DistributionSpace,
    Expect,
    Expect1,
    Sup1,
    adversarial_search,
    exact_expectation,
    g,
    interval_claim,
    recheck,
    sigma,
    x,
)


def test_help_and_pydoc_work_on_the_api():
    text = pydoc.render_doc(api)
    assert "claim_record" in text and "Point" in text
    for fn, words in (
        (CoordSum, "sum over the coordinates"),
        (Expect, "expectation"),
        (Expect1, "ONE sample"),
        (Sup1, "maximum"),
    ):
        assert fn.__module__ == "proofs_checks.expressions" and words in pydoc.render_doc(fn)
    out = subprocess.run([sys.executable, "-m", "pydoc", "proofs_checks.api"], capture_output=True, text=True)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-500:]


SPEC = ClaimSpec(
    id="u.var",
    statement="E(x - g)^2 <= sigma^2",
    source="user",
    term=Expect((x - g) ** 2),
    bound=sigma**2,
    assumptions=[
        api.Assumption("g = E x", g, "==", Expect1(x), per_coordinate=True),
        api.Assumption("sigma", sigma, ">=", sp.sqrt(Expect1((x - g) ** 2)), per_coordinate=True),
    ],
)


def test_require_must_be_a_relation():
    with pytest.raises(TypeError, match="require= must be a sympy relation"):
        adversarial_search(SPEC, [DistributionSpace(1, 2)], {}, seed=0, require=lambda env: True)


def test_a_scalar_n_conflicting_with_the_batch_size_is_an_error():
    dist = api.Distribution(np.array([[[-1.0, 1.0]]]), np.array([[[0.5, 0.5]]]), n=3)
    with pytest.raises(ClaimError, match="batch size n=3"):
        exact_expectation(SPEC, dist, {}, scalars={"n": 1})
    rec = exact_expectation(SPEC, dist, {}, scalars={"n": 3})  # the same value stated twice is fine
    assert rec.status == "holds" and rec.empirical == pytest.approx(1 / 3)
    with pytest.raises(ClaimError, match="conflicts with the distribution's batch size"):
        adversarial_search(SPEC, [DistributionSpace(1, 2, n=3)], {}, scalars={"n": 1}, seed=0)


M = sp.Symbol("m")
SQ = ClaimSpec(id="u.sq", statement="(E X)^2 <= B", source="user")


def test_interval_claim_tests_a_function_of_a_mean():
    rng = np.random.default_rng(0)
    vals = 2.0 + 0.1 * rng.standard_normal(200)  # (E X)^2 = 4
    ok = interval_claim(SQ, vals, 4.5, {}, of=M**2)
    assert ok.status == "holds" and ok.empirical == pytest.approx(float(vals.mean()) ** 2)
    lo, hi = ok.ci
    assert lo < ok.empirical < hi < 4.5
    bad = interval_claim(SQ, vals, 3.5, {}, of=M**2)
    assert bad.status == "violated" and bad.witness["kind"] == "mean-function"
    assert recheck({k: v for k, v in bad.witness.items() if k != "recheck"})["violated"]
    # an interval of the mean straddling 0: the image of m**2 starts at 0 (never below, never a false verdict)
    z = interval_claim(SQ, rng.standard_normal(50), 0.5, {}, of=M**2)
    assert z.ci[0] == 0.0
    with pytest.raises(TypeError, match="of= must be a sympy expression"):
        interval_claim(SQ, vals, 1.0, {}, of=lambda m: m**2)


def test_rate_claim_follows_its_ratespec_and_keeps_data_ratio_and_a_figure(tmp_path):
    from figures import figures_for
    from proofs_checks.api import Pack, RateSpec, rate_claim

    spec = ClaimSpec(
        id="u.rate",
        statement="y = O(N^-1/2)",
        source="user",
        relation="rate",
        rate=RateSpec(exponent=0.5, x_label="N", grid=(8, 16, 32, 64, 128), tail=4),
    )
    N = [8, 16, 32, 64, 128]
    y = [3.0 * n**-0.5 for n in N]
    rec = rate_claim(spec, N, y, {"T": N}, pinned=False)
    assert rec.method == "simulation" and rec.status == "holds" and rec.bound == 0.5
    assert rec.ratio == pytest.approx(1.0) and rec.data["rate"]["fit"]["points"] == 4
    assert rec.data["rate"]["x"] == N and rec.data["rate"]["x_label"] == "N"
    with pytest.raises(ClaimError, match="conflicts with its RateSpec exponent"):
        rate_claim(spec, N, y, {}, theory=0.25, pinned=False)
    with pytest.raises(ClaimError, match="conflicts with its RateSpec tail"):
        rate_claim(spec, N, y, {}, tail=3, pinned=False)
    with pytest.raises(ClaimError, match="differ from its RateSpec grid"):
        rate_claim(spec, N[:4], y[:4], {}, pinned=False)
    # a pinned slower decay: violated, and the witness names the instance it was measured on
    slow = rate_claim(spec, N, [n**-0.3 for n in N], {"instance": "hard"}, pinned=True)
    assert slow.status == "violated" and slow.witness["setting"] == {"instance": "hard"} and slow.ratio > 1
    paths = figures_for(Pack("u", title="u"), "rates", [rec, slow], str(tmp_path))
    assert any(p.endswith("rates_rates.png") for p in paths)
