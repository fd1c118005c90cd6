"""A figure that cannot be drawn never discards a report (issue 37, Deliver 4): ``lptheory report`` skips it
with a warning naming the figure and its check, writes every data file and page, and exits as it would
without the figure; the other figures are drawn."""

from __future__ import annotations

import json
import os
import textwrap

import pytest

from lptheory.app import cli

CLAIMS = textwrap.dedent(
    """
    from proofs_checks.api import ClaimSpec, Pack, value_claim

    PACK = Pack("figs", title="figures that fail")
    S = ClaimSpec(id="c1", statement="s", source="here")


    @PACK.check(title="drawn")
    def drawn(ctx):
        return [value_claim(S, 1.0, 2.0, {"p": 3.0})]


    @PACK.check(title="plain")
    def plain(ctx):
        return [value_claim(S, 1.5, 2.0, {"p": 4.0})]


    @PACK.figure("drawn", stem="drawn_broken")
    def broken(records, stem):
        with open(stem + ".png", "w") as fh:  # a partial file, then the failure
            fh.write("partial")
        raise ValueError("Data cannot be log-scaled because all values are <= 0.")


    @PACK.figure("drawn", stem="drawn_fine")
    def fine(records, stem):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        import os

        with open(stem + ".pid", "w") as fh:  # which process drew it
            fh.write(str(os.getpid()))
        fig = plt.figure(figsize=(1, 1))
        fig.savefig(stem + ".png", dpi=50)
        plt.close(fig)
        return [stem + ".png"]
    """
)

DATA = ("claims.json", "results.csv", "index.html", "report.md", "report.tex")


def _report(tmp_path, capsys, *extra):
    f = tmp_path / "claims_figs.py"
    f.write_text(CLAIMS)
    out = tmp_path / "rep"
    rc = cli.main(["report", "--claims", str(f), "--out", str(out), "--jobs", "1", "--quiet", *extra])
    return rc, out, capsys.readouterr()


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_pack_figure_that_raises_is_skipped_and_the_report_written(tmp_path, capsys, jobs):
    """In this process (--jobs 1) and in the worker that ran the check (--jobs 2: the figures are drawn there,
    the skipped one comes back by name)."""
    rc, out, cap = _report(tmp_path, capsys, "--jobs", jobs)
    assert rc == 0, cap.err
    assert "warning: figure drawn_broken of check drawn not drawn: ValueError: Data cannot be log-scaled" in cap.err
    assert "Traceback" not in cap.err
    for name in DATA:
        assert (out / name).is_file(), name
    doc = json.loads((out / "claims.json").read_text())
    assert [r["check"] for r in doc["claims"]] == ["drawn", "plain"]
    assert not (out / "drawn_broken.png").exists()  # its partial file removed, not published
    assert (out / "drawn_fine.png").is_file() and (out / "plain_ratios.png").is_file()  # the others drawn
    html = (out / "index.html").read_text()
    assert "drawn_fine.png" in html and "drawn_broken" not in html
    drew_here = int((out / "drawn_fine.pid").read_text()) == os.getpid()
    assert drew_here == (jobs == "1")  # with --jobs 2, drawn by the worker that ran the check


def test_with_traceback_the_skipped_figure_shows_where_it_failed(tmp_path, capsys):
    rc, out, cap = _report(tmp_path, capsys, "--traceback")
    assert rc == 0 and "Traceback" in cap.err and "in broken" in cap.err
    assert (out / "claims.json").is_file()


def test_the_reports_own_figure_that_raises_is_skipped(tmp_path, capsys, monkeypatch):
    """The generic figures (a check without figures of its own) are skipped the same way."""
    import figures.generic

    def refuse(*a, **k):
        raise OverflowError("cannot convert float infinity to integer")

    monkeypatch.setattr(figures.generic, "plot_rates", refuse)
    rc, out, cap = _report(tmp_path, capsys)
    assert rc == 0, cap.err
    assert "warning: figure plain_rates of check plain not drawn: OverflowError" in cap.err
    assert (out / "plain_ratios.png").is_file() and all((out / n).is_file() for n in DATA)


def test_write_report_warns_by_default(tmp_path, recwarn):
    """The library call (no callback) warns with a RuntimeWarning naming the figure and still writes the data."""
    import importlib.util

    from figures.report import write_report
    from proofs_checks.records import meta

    f = tmp_path / "claims_figs.py"
    f.write_text(CLAIMS)
    spec = importlib.util.spec_from_file_location("claims_figs_lib", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pack = mod.PACK
    recs = {"drawn": [mod.value_claim(mod.S, 1.0, 2.0, {"p": 3.0}).to_dict()]}
    write_report(str(tmp_path / "r"), pack=pack, records=recs, meta=meta("report", 0, {}))
    msgs = [str(w.message) for w in recwarn if issubclass(w.category, RuntimeWarning)]
    assert any("figure drawn_broken of check drawn not drawn: ValueError" in m for m in msgs), msgs
    assert (tmp_path / "r" / "claims.json").is_file()
