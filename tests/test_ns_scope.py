"""Newton-Schulz records scoped to what they prove (issue 35, item 5): the scoped statement is true at its own
endpoint (outward-rounded, proved), the '~ Uniform(0.5, 1.5)' description is no finding (no source states it
as a bound), and the measured error is checked against a bound it can exceed."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from lptheory import norms as N
from proofs_checks.spectral import newton_schulz as NS


class _Ctx:
    quick, seed = True, 0


@pytest.fixture(scope="module")
def recs():
    return {r.id: r for r in NS.run_newton_schulz(_Ctx())}


def _phi5(s, dps=60):
    with mpmath.workdps(dps):
        return NS._phi_mp(mpmath.mpf(s), 5)


def test_endpoint_is_the_smallest_double_where_the_statement_holds():
    s, at, below = NS.endpoint(5)
    assert s == 0.0010670273968605506  # the double above the root 0.00106702739686055049...
    assert _phi5(s) >= 0.5 and _phi5(math.nextafter(s, 0.0)) < 0.5  # independently, at 60 digits
    assert NS.threshold(5) < s  # the nearest double to the root lies below it: phi^5 = 0.5 - 4.05e-17 there
    assert float(_phi5(NS.threshold(5)) - 0.5) == pytest.approx(-4.05e-17, rel=1e-2)
    assert (at >= 0.5) is True and (below < 0.5) is True


def test_prove_range_decides_on_the_enclosure_not_on_a_rounded_float():
    s = NS.endpoint(5)[0]
    ok, lo, hi, _ = NS.prove_range(s, 5)
    assert ok and lo <= 0.5 <= float(_phi5(s)) and hi >= 1.2023
    # one double lower the enclosure's lower end is 0.5 - 4e-17, which rounds to 0.49999999999999994 (not 0.5)
    assert NS.prove_range(math.nextafter(s, 0.0), 5, pieces=20)[0] is False
    v = mpmath.iv.mpf("0.1")
    assert NS._float_toward(v.a, -math.inf) <= 0.1 <= NS._float_toward(v.b, math.inf)


def test_scoped_record_is_true_at_its_endpoint_and_proved(recs):
    r = recs["ns.interval.scoped"]
    s = NS.endpoint(5)[0]
    assert r.status == "holds" and r.evidence == "proved"
    assert r.params["s_star"] == s and repr(s) in r.statement
    assert _phi5(r.params["s_star"]) >= 0.5


def test_description_is_not_a_finding_but_its_witness_still_rechecks(recs):
    from proofs_checks.recheck import recheck

    r = recs["ns.interval"]
    assert r.status == "not-applicable" and "no source states as a bound" in r.reason
    chk = recheck(r.witness)
    assert chk["violated"] and chk["empirical"] < 0.5


def test_measured_error_bound_can_be_exceeded(recs):
    r = recs["ns.measured-error"]
    assert r.status == "holds" and r.bound == pytest.approx(0.5) and r.empirical < r.bound
    # the same bound fails on a matrix outside the scope (sigma_min far below s* ||G||_F): a check that can fail
    G = np.diag([1.0, 1e-6])[None]
    assert float(np.max(N.ns_error(G, 5, exact=N.polar(G)))) > r.bound
