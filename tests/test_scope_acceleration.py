"""Issue 35, item 1: the acceleration exponent is instance evidence, and no non-accelerated method earns the
accelerated method's word at any p (plain Euclidean gradient descent, heavy-ball momentum, l_p steepest
descent fed in as the accelerated method), on either fixed instance."""

import pytest

from proofs_checks.stacey import acceleration as ACC
from proofs_checks.verdict import INSTANCE_ONLY, Verdict, scope_to_instances

_NON_ACCELERATED = ("gd-euclidean", "heavy-ball", "steepest-lp")


def _gaps(p, inst, grid):
    return {m: [ACC.run_method(m, p, inst, T) for T in grid] for m in ("accelerated-lp", *_NON_ACCELERATED)}


@pytest.mark.parametrize("p", [3.0, 4.0, 6.0, 8.0, 10.0, 16.0])
def test_non_accelerated_methods_never_get_the_accelerated_word(p):
    grid = ACC.exponent_grid(True)
    for inst in ACC.FIXED:
        gaps = _gaps(p, inst, grid)
        controls = {c: gaps[c] for c in _NON_ACCELERATED}
        for m in _NON_ACCELERATED:  # the method fed in under the accelerated method's name
            recs = ACC.exponent_records(p, inst, grid, {"accelerated-lp": gaps[m]}, {}, controls=controls)
            main = next(r for r in recs if not r.params.get("control"))
            assert main.status != "holds", (p, inst, m)
            assert not main.reason.startswith(INSTANCE_ONLY), (p, inst, m, main.reason)
            assert main.evidence == "instance"


def test_plain_gd_is_faster_than_the_claim_at_large_p_so_the_fit_cannot_say_holds():
    """The issue's case: on spectral-quarter plain GD decays faster than (p+2)/p for p >= 8, so the fit alone
    would pass it; the gd-euclidean control passes too and the accelerated method's record says it cannot tell."""
    grid = ACC.exponent_grid(True)
    gaps = _gaps(8.0, "spectral-quarter", grid)
    recs = ACC.exponent_records(8.0, "spectral-quarter", grid, {"accelerated-lp": gaps["gd-euclidean"]}, {})
    main = next(r for r in recs if not r.params.get("control"))
    assert main.empirical > 1.25 and main.status == "inconclusive" and "cannot tell" in main.reason
    ctrl = next(r for r in recs if r.params.get("control") == "gd-euclidean")
    assert "PASSES" in ctrl.reason and ctrl.status == "inconclusive"


def test_spread_grids_rule_and_record_spread():
    grids = ACC.spread_grids(True)
    assert [g[0] for g in grids] == [8, 10, 11, 13, 16] and grids[0] == ACC.exponent_grid(True)
    assert all(len(g) == len(grids[0]) and all(b == 2 * a for a, b in zip(g, g[1:])) for g in grids)
    union = sorted({T for g in grids for T in g})
    series = {"accelerated-lp": {T: ACC.run_method("accelerated-lp", 3.0, "spectral-flat", T) for T in union}}
    grid = grids[0]
    recs = ACC.exponent_records(
        3.0,
        "spectral-flat",
        grid,
        {"accelerated-lp": [series["accelerated-lp"][T] for T in grid]},
        {},
        spread={"grids": grids, "series": series},
    )
    sp = recs[0].data["spread"]
    assert len(sp["exponent"]) == 5 and sp["min"] <= recs[0].empirical <= sp["max"]
    assert sp["exponent"][0] == pytest.approx(recs[0].empirical, abs=0)
    assert "over the 5 grids" in recs[0].reason


def test_scope_to_instances_keeps_violated_and_never_holds():
    v = scope_to_instances(Verdict("holds", "ok"), "instance A", "see B")
    assert v.status == "inconclusive" and v.evidence == "instance" and "instance A" in v.reason
    w = scope_to_instances(Verdict("violated", "slower", {"kind": "rate-fit"}), "instance A", "see B")
    assert w.status == "violated" and w.witness == {"kind": "rate-fit"} and w.evidence == "instance"
    with pytest.raises(ValueError, match="scope"):
        scope_to_instances(Verdict("holds", "ok"), "", "see B")
