"""Issue 44, item 3: evidence "proved" is earned from a decision of the toolkit, never written by a claim file."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest
import sympy as sp

from proofs_checks.api import (
    ClaimSpec,
    Verdict,
    bnb_record,
    branch_and_bound,
    certify,
    claim_record,
    compose_bound,
    is_issued,
)
from proofs_checks.records import Claim

ROOT = Path(__file__).resolve().parent.parent
x = sp.Symbol("x")

HAND_BUILT = """
from proofs_checks.api import ClaimSpec, Pack, Verdict, claim_record

PACK = Pack("asserted", title="A proof written by hand")
SPEC = ClaimSpec(id="square.below", statement="x^2 <= x for every x in [0, 3]", source="the author")


@PACK.check(title="x^2 <= x")
def square(ctx):
    return [claim_record(SPEC, Verdict("holds", "obvious", evidence="proved"), params={}, method="exact")]
"""


def test_a_hand_built_proved_verdict_is_refused_and_never_printed_as_holds_proved(tmp_path, capsys):
    from lptheory.app.cli import main

    path = tmp_path / "claims_asserted.py"
    path.write_text(HAND_BUILT)
    rc = main(["check", str(path)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert "holds (proved)" not in text
    assert "evidence 'proved' is refused" in text and "square.below" in text
    assert rc != 0


def test_the_same_claim_decided_by_the_toolkit_is_a_proved_violation():
    spec = ClaimSpec(id="square.below", statement="x^2 <= x for every x in [0, 3]", source="the author")
    res = branch_and_bound(x**2, x, {"x": (0.0, 3.0)})
    rec = bnb_record(res, spec)
    assert rec.status == "violated" and rec.evidence == "proved"
    assert is_issued(rec.witness["recheck"]["certificate"])


def test_a_forged_or_altered_certificate_is_refused():
    spec = ClaimSpec(id="c", statement="x^2 <= x + 1 on [0, 1]", source="test")
    cert = branch_and_bound(x**2, x + 1, {"x": (0.0, 1.0)}).certificate
    assert is_issued(cert)
    ok = claim_record(spec, Verdict("holds", "bnb", evidence="proved", certificate=cert), params={}, method="exact")
    assert ok.evidence == "proved"
    altered = {**cert, "decided": "the Riemann hypothesis"}
    made_up = {**cert, "certificate_id": "0" * 32}
    for bad in (altered, made_up):
        assert not is_issued(bad)
        with pytest.raises(ValueError, match="were not issued by a toolkit decision"):
            claim_record(spec, Verdict("holds", "bnb", evidence="proved", certificate=bad), params={}, method="exact")
    # one good certificate does not cover a forged one beside it
    with pytest.raises(ValueError, match="1 of its 2 certificates"):
        Claim(
            id="c",
            statement="s",
            source="s",
            status="holds",
            method="exact",
            evidence="proved",
            data={"certificate": [cert, made_up]},
        )


def test_certify_is_refused_outside_the_toolkits_deciders():
    with pytest.raises(ValueError, match="only the toolkit's deciders issue certificates"):
        certify("combined-proof", "anything")


def test_a_derived_proved_level_without_a_certificate_falls_back():
    w = {
        "kind": "expression",
        "relation": "<=",
        "lhs": "Integer(2)",
        "rhs": "Integer(1)",
        "scalars": {},
        "recheck": {"violated": True, "proved": True},
    }  # a re-check written by hand
    rec = Claim(id="c", statement="s", source="s", status="violated", method="exact", witness=w)
    assert rec.evidence == "exact"


def test_compose_bound_images_contain_the_iterates():
    f = sp.Rational(7, 2) * x * (1 - x)  # not contracting: the images stay wide, but must hold every iterate
    res = compose_bound(f, {"x": (0.2, 0.8)}, 6, pieces=16)
    images = res.witness["images"]
    assert res.status == "inconclusive" and len(images) == 7  # no target: nothing claimed
    rng = random.Random(0)
    for _ in range(200):
        v = rng.uniform(0.2, 0.8)
        for k in range(1, 7):
            v = 3.5 * v * (1 - v)
            assert images[k][0] - 1e-12 <= v <= images[k][1] + 1e-12
    with pytest.raises(ValueError, match="depth"):
        compose_bound(f, {"x": (0.2, 0.8)}, 0)
    with pytest.raises(ValueError, match="exactly one variable"):
        compose_bound(f, {"x": (0.2, 0.8), "y": (0, 1)}, 2)


def test_the_depth_8_example_is_proved_without_hand_chaining():
    spec = importlib.util.spec_from_file_location("claim_composition", ROOT / "examples" / "claim_composition.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from proofs_checks.packs import Context

    recs = mod.PACK.checks["logistic"].run(Context(seed=0, quick=True, options={"depth": 8}))
    main, ctl = recs
    assert (main.status, main.evidence) == ("holds", "proved")
    assert main.data["certificate"]["kind"] == "composition" and is_issued(main.data["certificate"])
    lo, hi = main.data["bnb"]["witness"]["images"][-1]
    assert 0.599 <= lo <= 0.6 <= hi <= 0.601
    assert ctl.status == "inconclusive" and "fails as it must" in ctl.reason  # the false target is found violated
    # a target the depth does not reach: not proved (nothing hard-coded)
    res = compose_bound(mod.F, {"x": (0.1, 0.9)}, 3, target=(0.599, 0.601))
    assert res.status != "proved"


def test_the_refusal_is_documented_in_the_readme():
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "evidence 'proved' is refused: it carries no certificate" in readme
    assert '`compose_bound(f, {"x": (lo, hi)}, depth, target=(a, b))`' in readme


def test_proved_assigned_after_construction_is_refused_too():
    """``rec.evidence = "proved"`` on a built record (no certificate) is refused as at construction (the sharp
    records once did that by assignment)."""
    import pytest

    from proofs_checks.api import ClaimSpec, value_claim

    rec = value_claim(ClaimSpec(id="t.assigned", statement="s", source="here"), 1.0, 2.0, {"p": 3.0})
    with pytest.raises(ValueError, match="refused"):
        rec.evidence = "proved"
    rec.evidence = "exact"  # any other level is the engine's business
    assert rec.evidence == "exact"
