"""Issue 44, item 4: SVD, polar factor and rank in the witness grammar, recomputed by the re-check from the
matrix the witness carries (so a witness cannot claim singular values of another matrix)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from proofs_checks.api import ClaimSpec, Point, PolarFactor, Rank, SingVal, parse_expression, recheck, value_claim

a, b, c, d, s1 = sp.symbols("a b c d s1", real=True)
M = sp.ImmutableMatrix([[a, b], [c, d]])
VALS = {"a": 3.0, "b": 1.0, "c": -2.0, "d": 0.5}
SPEC = ClaimSpec(id="t.svd", statement="sigma_1(M) <= 3", source="test")


def _w(lhs, rhs, rel="<=", scalars=VALS, **extra):
    return {
        "kind": "expression",
        "relation": rel,
        "lhs": sp.srepr(lhs),
        "rhs": sp.srepr(rhs),
        "scalars": scalars,
        **extra,
    }


def test_the_operators_read_back_through_the_safe_parser():
    for e in (SingVal(M, 1), PolarFactor(M, 0, 1), Rank(M, sp.Float(1e-30))):
        assert parse_expression(sp.srepr(e)) == e


def test_singular_values_polar_factor_and_rank_are_those_of_the_matrix():
    A = np.array([[3.0, 1.0], [-2.0, 0.5]])
    U, S, Vt = np.linalg.svd(A)
    Q = U @ Vt
    for k in (1, 2):
        chk = recheck(_w(SingVal(M, k), sp.Float(S[k - 1]), "=="))
        assert chk["assumptions_ok"] and not chk["violated"] and abs(chk["empirical"] - S[k - 1]) < 1e-12
    for i in range(2):
        for j in range(2):
            chk = recheck(_w(PolarFactor(M, i, j), sp.Float(Q[i, j]), "=="))
            assert not chk["violated"] and abs(chk["empirical"] - Q[i, j]) < 1e-12
    singular = {"a": 1.0, "b": 2.0, "c": 2.0, "d": 4.0}
    assert recheck(_w(Rank(M, sp.Float(1e-30)), sp.Integer(1), "==", singular))["empirical"] == 1.0
    assert recheck(_w(Rank(M, sp.Float(1e-30)), sp.Integer(2), ">=", singular))["violated"]


def test_a_violation_through_the_svd_re_checks_and_a_wrong_stated_singular_value_is_refused():
    # sigma_1 of [[3, 1], [-2, 0.5]] is 3.68...: "sigma_1 <= 3" is violated, re-checked at 60 digits (not proved:
    # singular values are not enclosed in ball arithmetic)
    rec = value_claim(SPEC, 3.68, 3.0, {}, at=Point(VALS, lhs=SingVal(M, 1), rhs=sp.Integer(3)))
    assert rec.status == "violated" and rec.witness["recheck"]["violated"]
    assert rec.evidence == "exact"
    # a witness that states the singular value as a number must say whose it is: the condition is re-derived
    stated = {**VALS, "s1": 2.9}
    w = _w(
        s1,
        sp.Integer(3),
        ">=",
        stated,
        assumptions=[
            {
                "name": "s1 = sigma_1(M)",
                "lhs": sp.srepr(s1),
                "relation": "==",
                "rhs": sp.srepr(SingVal(M, 1)),
                "per_coordinate": False,
            }
        ],
    )
    chk = recheck(w)
    assert not chk["assumptions_ok"] and not chk["violated"]


def test_malformed_calls_are_refused():
    with pytest.raises(ValueError, match="SingVal"):
        recheck(_w(SingVal(M, 3), sp.Integer(1)))
    with pytest.raises(ValueError, match="rank deficient"):
        recheck(_w(PolarFactor(M, 0, 0), sp.Integer(1), "<=", {"a": 1.0, "b": 2.0, "c": 2.0, "d": 4.0}))
