"""An exact check that enumerates a claim's whole finite class is class-wide (issue 35, the gap left open).

``proofs_checks.records.holds_scope`` returns ``"exhaustive"`` for a ``holds`` whose evidence is ``exact`` and
whose ``data["exhaustive"]`` (set by :func:`proofs_checks.records.mark_exhaustive`) says every member of the
finite class was computed (``checked == members``); every consumer (the counts line, the report's sentence, the
tables, ``results.csv``, ``--fail-on unproved``) treats it as class-wide, and a record that claims it but
checked fewer members, or carries it on another evidence level, stays ``tested``.
"""

from __future__ import annotations

import csv
import itertools
import json
import textwrap

import pytest

from lptheory.app import cli
from proofs_checks.api import ClaimSpec, mark_exhaustive, value_claim
from proofs_checks.records import (
    CLASS_WIDE_SCOPES,
    HOLDS_SCOPES,
    Claim,
    exhaustive_marker,
    format_table,
    holds_scope,
    holds_scope_sentence,
    holds_split_text,
    is_exhaustive,
    status_counts_text,
    status_text,
    to_html,
    validate_record,
)
from proofs_checks.regression import compare

# The audit of issue 35's gap (the 120 exact holds of the quick report at seed 0): no check of the Stacey pack
# enumerates its claim's whole class -- each computes exactly on chosen vectors, laws, problems, grids or settings
# of an infinite class -- so none is marked.
AUDITED_EXHAUSTIVE: frozenset = frozenset()

SPEC = ClaimSpec(
    id="signs.l1",
    statement="for every sign vector s in {-1, 1}^4, |<s, a>| <= ||a||_1 with a = (1, 2, 3, 4)",
    source="test",
)
A = (1, 2, 3, 4)
SIGNS = list(itertools.product((-1, 1), repeat=len(A)))  # the claim's whole class: 16 members


def _signs_record(checked: int, *, cls: str = "the 16 sign vectors of {-1, 1}^4") -> Claim:
    """The claim checked exactly on the first ``checked`` sign vectors, marked with the 16-member class."""
    worst = max(abs(sum(s * a for s, a in zip(sv, A))) for sv in SIGNS[:checked])
    rec = value_claim(SPEC, float(worst), float(sum(A)), {"d": 4})
    return mark_exhaustive(rec, cls, len(SIGNS), checked)


def _rec(rid, status="holds", evidence="exact", data=None):
    return {
        "id": rid,
        "statement": "s",
        "source": "src",
        "params": {},
        "status": status,
        "empirical": 1.0,
        "bound": 2.0,
        "ratio": 0.5,
        "ci": None,
        "method": "exact",
        "witness": {"kind": "value"} if status == "violated" else None,
        "reason": None if status in ("holds", "violated") else "why",
        "evidence": evidence,
        "data": data,
    }


def _marker(members=16, checked=16):
    return {"exhaustive": {"class": "the 16 sign vectors of {-1, 1}^4", "members": members, "checked": checked}}


def test_a_complete_exact_enumeration_is_class_wide_and_a_partial_one_is_not():
    full, part = _signs_record(16), _signs_record(15)
    assert full.status == part.status == "holds" and full.evidence == part.evidence == "exact"
    assert full.data["exhaustive"] == {"class": "the 16 sign vectors of {-1, 1}^4", "members": 16, "checked": 16}
    assert is_exhaustive(full) and holds_scope(full) == "exhaustive"
    assert not is_exhaustive(part) and holds_scope(part) == "tested"
    assert "exhaustive" in CLASS_WIDE_SCOPES and "tested" not in CLASS_WIDE_SCOPES
    assert set(CLASS_WIDE_SCOPES) < set(HOLDS_SCOPES)
    # the scope says what was enumerated (the derived scope replaced; a check's own scope kept, the words appended)
    assert (
        full.scope == "16 of the 16 members of the 16 sign vectors of {-1, 1}^4 computed exactly"
        " (the claim's whole class)"
    )
    assert part.scope.endswith("(not the whole class)")
    own = value_claim(SPEC, 10.0, 10.0, {"d": 4})
    own.scope = "every sign vector"
    assert mark_exhaustive(own, "the 16 sign vectors", 16, 16).scope.startswith("every sign vector; 16 of the 16")


@pytest.mark.parametrize("evidence", ["measured", "searched", "fit", "instance"])
def test_a_marker_on_a_level_that_is_not_exact_computation_stays_tested(evidence):
    """A Monte-Carlo mean, a search, a fit or an instance does not compute each member exactly."""
    assert holds_scope(_rec("x", evidence=evidence, data=_marker())) == "tested"
    assert holds_scope(_rec("x", evidence="proved", data=_marker())) == "proved"  # the stronger word wins
    for status in ("violated", "inconclusive", "not-applicable"):
        assert holds_scope(_rec("x", status, data=_marker())) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"class": "c", "members": 16},  # a key missing
        {"class": "c", "members": 16, "checked": 16, "extra": 1},
        {"class": "", "members": 16, "checked": 16},
        {"class": "c", "members": 0, "checked": 0},
        {"class": "c", "members": 16, "checked": 17},  # more checked than the class has
        {"class": "c", "members": 16, "checked": -1},
        {"class": "c", "members": 16.0, "checked": 16.0},
        {"class": "c", "members": True, "checked": True},
        "all of them",
    ],
)
def test_a_malformed_marker_is_refused_on_construction_and_never_counts(bad):
    rec = _rec("x", data={"exhaustive": bad})
    assert holds_scope(rec) == "tested"  # read from a file that the checks did not write: never class-wide
    with pytest.raises((TypeError, ValueError), match="'x'.*exhaustive"):
        validate_record(rec)
    with pytest.raises((TypeError, ValueError), match="exhaustive"):
        Claim(id="x", statement="s", source="src", params={}, status="holds", method="exact", data={"exhaustive": bad})


def test_exhaustive_marker_names_the_bad_argument():
    with pytest.raises(TypeError, match="class must be a string"):
        exhaustive_marker(3, 1, 1)
    with pytest.raises(ValueError, match="members must be >= 1"):
        exhaustive_marker("c", 0, 0)
    with pytest.raises(ValueError, match=r"checked must be in \[0, members = 4\], got 5"):
        exhaustive_marker("c", 4, 5)
    with pytest.raises(TypeError, match="checked must be an int"):
        exhaustive_marker("c", 4, 4.0)


def test_every_count_keeps_exhaustive_apart_from_tested_and_reads_as_before_without_one():
    proved, tested = _rec("a", evidence="proved"), _rec("b")
    full, planted = _signs_record(16).to_dict(), _signs_record(8).to_dict()  # planted: claims the class, checked 8
    control = {**_rec("b.control-x", "inconclusive"), "reason": "negative control 'x' fails as it must."}
    # without an exhaustive record every word is the one of before the third scope
    assert holds_split_text([proved, tested, control]) == "1 proved, 1 on what was tested"
    assert status_counts_text([proved, tested]).startswith("2 holds (1 proved, 1 on what was tested), 0 violated")
    assert holds_scope_sentence([proved, tested]).startswith(
        "Of the 2 holds, 1 is proved (for the claim's whole class)"
    )
    rows = [proved, tested, full, planted, control]
    assert holds_split_text(rows) == "1 proved, 1 exhaustive, 2 on what was tested"
    assert status_counts_text(rows).startswith("4 holds (1 proved, 1 exhaustive, 2 on what was tested), 0 violated")
    sentence = holds_scope_sentence(rows)
    assert sentence.startswith("Of the 4 holds, 1 is proved and 1 checked exhaustively")
    assert "and 2 hold on what was tested only" in sentence
    # the tables: the terminal, HTML (and through status_text, Markdown and LaTeX) say the same
    assert [status_text(r) for r in (full, planted)] == ["holds (exhaustive)", "holds (tested)"]
    table = format_table([full, planted])
    assert table.count("holds (exhaustive)") == 1 and table.count("holds (tested)") == 1
    assert "verdicts: 2 holds (0 proved, 1 exhaustive, 1 on what was tested)" in table
    html = to_html([full, planted])
    assert "holds (exhaustive)" in html and "holds (tested)" in html


def test_fail_on_unproved_catches_a_planted_mis_marked_record():
    """The planted record claims the 16-member class but computed 8 members: --fail-on unproved fails on it,
    never on the complete one or on a proved one."""
    full, planted = _signs_record(16).to_dict(), _signs_record(8).to_dict()
    proved = _rec("a", evidence="proved")
    assert compare([full, proved], None, fail_on=("unproved",)) == []
    found = compare([full, planted, proved], None, fail_on=("unproved",))
    assert [(p["kind"], p["record"].split(" ")[0]) for p in found] == [("unproved", "None:signs.l1")]
    assert "8 of the 16 members" in found[0]["detail"]


@pytest.mark.slow  # waits for the quick report (built in the background: minutes)
def test_the_audited_pack_marks_exactly_the_audited_ids(stacey_quick_report):
    """No record of the Stacey pack is marked exhaustive except those the audit found (none): a check cannot
    start counting class-wide without the audit (and this set) changing with it; every marker present is
    well-formed (the report's records pass validate_record)."""
    recs = stacey_quick_report[1]["claims"]
    marked = {r["id"] for r in recs if isinstance(r.get("data"), dict) and "exhaustive" in r["data"]}
    assert marked == set(AUDITED_EXHAUSTIVE)
    assert {r["id"] for r in recs if holds_scope(r) == "exhaustive"} == set(AUDITED_EXHAUSTIVE)
    for r in recs:
        validate_record(r)


CLAIM_FILE = """
import itertools
from proofs_checks.api import ClaimSpec, Pack, mark_exhaustive, value_claim

PACK = Pack("signs", title="sign vectors")
S = ClaimSpec(id="signs.l1", statement="for every s in {{-1, 1}}^4, |<s, a>| <= ||a||_1, a = (1, 2, 3, 4)", source="t")

@PACK.check(title="signs")
def signs(ctx):
    a = (1, 2, 3, 4)
    cls = list(itertools.product((-1, 1), repeat=4))[:{checked}]
    worst = max(abs(sum(s * x for s, x in zip(v, a))) for v in cls)
    rec = value_claim(S, float(worst), float(sum(a)), {{"d": 4}})
    return [mark_exhaustive(rec, "the 16 sign vectors of {{-1, 1}}^4", 16, len(cls))]
"""


@pytest.mark.parametrize("checked", [16, 8])
def test_report_outputs_follow_the_marker_end_to_end(tmp_path, capsys, checked):
    """lptheory report of a claim file whose check enumerates the class: claims.json keeps the marker,
    results.csv's holds_scope, the HTML counts, the LaTeX table and --fail-on unproved all say exhaustive
    (class-wide) for 16 of 16, tested for the planted 8 of 16."""
    f = tmp_path / "claims_signs.py"
    f.write_text(textwrap.dedent(CLAIM_FILE.format(checked=checked)))
    out = tmp_path / "rep"
    argv = ["report", "--claims", str(f), "--out", str(out), "--jobs", "1", "--quiet", "--fail-on", "unproved"]
    rc = cli.main(argv)
    text = capsys.readouterr()
    word = "exhaustive" if checked == 16 else "tested"
    assert rc == (0 if checked == 16 else 1)
    if checked == 16:
        assert "verdicts: 1 holds (0 proved, 1 exhaustive, 0 on what was tested)" in text.out
    else:
        assert "verdicts: 1 holds (0 proved, 1 on what was tested)" in text.out
        assert "unproved" in text.err and "signs.l1" in text.err
    (rec,) = json.loads((out / "claims.json").read_text())["claims"]
    assert rec["data"]["exhaustive"] == {"class": "the 16 sign vectors of {-1, 1}^4", "members": 16, "checked": checked}
    with open(out / "results.csv", newline="") as fh:
        assert {row["holds_scope"] for row in csv.DictReader(fh)} == {word}
    assert f"holds ({word})" in (out / "report.tex").read_text()
    html = (out / "index.html").read_text()
    assert ("1 exhaustive" in html) == (checked == 16)
