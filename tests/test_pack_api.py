"""A pack is a self-contained plug-in: checks, figures, report sections and text layouts registered on its
``Pack`` object (as a user writes them, from outside the packages); ``--set`` values typed from the option's
default; no generic module names the built-in pack's claims, checks or figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lptheory.app.cli import main
from proofs_checks.api import ClaimSpec, Pack, value_claim

ROOT = Path(__file__).resolve().parents[1]

USER_PACK = """
from proofs_checks.api import ClaimSpec, Pack, value_claim

PACK = Pack("toy", title="Toy paper", columns=("a", ("a_twice", "b")))
SPEC = ClaimSpec(id="toy.le", statement="a <= 2", source="Toy, eq. (1)", show=("a",))


@PACK.check(title="Toy claim", options=("a", "n", "flag", "grid"),
            defaults={"a": 1.5, "n": 2, "flag": False, "grid": [1.0, 2.0]})
def toy(ctx):
    assert isinstance(ctx.a, float) and isinstance(ctx.n, int) and isinstance(ctx.flag, bool)
    assert all(isinstance(v, float) for v in ctx.grid)
    return [value_claim(SPEC, ctx.a, 2.0, {"a": ctx.a, "b": 2 * ctx.a, "n": ctx.n, "flag": ctx.flag})]


@PACK.figure("toy", "toy_picture")
def picture(records, stem):
    open(stem + ".png", "wb").write(b"png")
    return [stem + ".png"]


@PACK.report_section("notes", title="Toy notes", intro="One row per record.", columns=(("id", "claim"), ("a", "a")))
def notes(claims):
    return [{"id": c["id"], "a": str(c["params"]["a"]), "status": c["status"]} for c in claims]


@PACK.text_format("toy")
def toy_text(records):
    return "TOY: " + ", ".join(r["id"] for r in records)
"""


@pytest.fixture()
def toy(tmp_path):
    path = tmp_path / "toy_claims.py"
    path.write_text(USER_PACK)
    return str(path)


def test_set_keeps_scalars_scalar_and_typed(toy, capsys):
    assert main(["check", toy, "--set", "a=3", "--set", "n=4", "--set", "flag=yes", "--json", "--quiet"]) == 0
    rec = json.loads(capsys.readouterr().out)["claims"][0]
    assert rec["params"] == {"a": 3.0, "b": 6.0, "n": 4, "flag": True} and rec["status"] == "inconclusive"
    assert main(["check", toy, "--set", "grid=3,4", "--json", "--quiet"]) == 0


@pytest.mark.parametrize(
    "arg, msg",
    [
        ("n=1.5", "--set n: expected an integer"),
        ("a=x", "--set a: expected a number"),
        ("a=1,2", "--set a: takes one value"),
        ("flag=maybe", "--set flag: expected a boolean"),
    ],
)
def test_set_bad_value_exits_2_naming_the_key(toy, capsys, arg, msg):
    assert main(["check", toy, "--set", arg, "--quiet"]) == 2
    assert msg in capsys.readouterr().err


def test_coerce_option_is_the_one_typing_function():
    from proofs_checks.api import check

    @check(title="t", options=("C", "ks"), defaults={"C": 3.0, "ks": [1, 2]})
    def t(ctx):
        return []

    c = t.__lptheory_check__
    assert c.coerce_option("C", "3") == 3.0 and isinstance(c.coerce_option("C", "3"), float)
    assert c.coerce_option("ks", "4,5") == [4, 5]
    with pytest.raises(ValueError, match="--set ks: expected an integer"):
        c.coerce_option("ks", "1.5")
    with pytest.raises(ValueError, match="does not take --set D"):
        c.coerce_option("D", "1")
    assert c.resolve({"C": [7]}) == {"C": 7.0, "ks": [1, 2]}  # the CLI's list of one value


def test_registered_text_figure_section_and_columns(toy, tmp_path, capsys):
    assert main(["check", toy, "--quiet"]) == 0
    assert capsys.readouterr().out.strip() == "TOY: toy.le"
    out = tmp_path / "rep"
    assert main(["report", "--claims", toy, "--quick", "--quiet", "--out", str(out)]) == 0
    assert (out / "toy_picture.png").exists() and not (out / "toy_ratios.png").exists()
    page = (out / "index.html").read_text()
    order = [page.index(f'id="{a}"') for a in ("summary", "notes", "sec-toy", "verdicts")]
    assert order == sorted(order)
    assert "Toy notes" in (out / "report.md").read_text()
    head = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert head[head.index("relation") + 1 : head.index("setting")] == ["a", "a_twice"]


def test_default_setting_columns_are_the_records_own():
    pack = Pack("x", title="x")
    spec = ClaimSpec(id="x.1", statement="s", source="src", show=("alpha", "beta"))
    recs = [value_claim(spec, 1.0, 2.0, {"alpha": 1, "beta": 2, "gamma": {"nested": 1}})]
    assert pack.setting_columns(recs) == (("alpha", "alpha"), ("beta", "beta"))


def test_generic_modules_do_not_name_the_paper():
    """No generic module names a Stacey claim id, check or figure; the default pack is named in one place."""
    generic = [p for p in (ROOT / "proofs_checks").glob("*.py")] + list((ROOT / "figures").rglob("*.py"))
    generic += list((ROOT / "figures" / "templates").glob("*.j2"))
    words = re.compile(r"thm1\.|lionk\.|asm1\.|sym\.lemma|check corrections|figures\.stacey|stacey\.symbolic")
    for path in generic:
        assert not words.search(path.read_text()), path
    hits = [p for p in generic if "proofs_checks.stacey" in p.read_text()]
    assert [p.name for p in hits] == ["packs.py"]
    assert not (ROOT / "figures" / "stacey.py").exists()


def test_a_check_that_returns_no_records_is_named_on_stderr(tmp_path, toy, capsys):
    """A check returning [] ran but decided nothing: one warning line names it (exit status unchanged); a check
    with records gets none."""
    empty = tmp_path / "empty_claims.py"
    empty.write_text(
        "from proofs_checks.api import Pack\nPACK = Pack('empty', title='t')\n"
        "@PACK.check(title='nothing')\ndef nothing(ctx):\n    return []\n"
    )
    assert main(["check", str(empty), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "check 'nothing' returned no records" in err
    assert main(["check", toy, "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err
