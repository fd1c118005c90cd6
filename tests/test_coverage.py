"""Issue 23, coverage: statements of the paper that had no record (signSGD at p = inf, the bias, Alg. 2's mirror step
and p-uniform convexity)."""

from __future__ import annotations

from proofs_checks.stacey import coverage as CV


def test_symbolic_statements_are_proved():
    for rec in (CV.signsgd_record(), CV.p_inf_record(), CV.mirror_step_record()):
        assert rec.status == "holds" and rec.evidence == "proved", rec.reason


def test_bias_is_proved_in_ball_arithmetic():
    rec = CV.bias_record(3.0)
    assert rec.status == "holds" and rec.evidence == "proved" and rec.empirical > rec.bound


def test_uniform_convexity_proved_and_a_planted_constant_is_refused():
    rec = CV.uniform_convexity_record(3.0, 4000)
    assert rec.status == "holds" and rec.evidence == "proved", rec.reason
    planted = CV.uniform_convexity_record(3.0, 4000, scale=2.0)  # 2^{2-p} doubled: false (x = 1, y = -1)
    assert planted.status != "holds" and "wrong way" in planted.reason


def test_uniform_convexity_kept_decisions_give_the_same_record(tmp_path, monkeypatch):
    """The eight branch-and-bound decisions are kept on disk (moment.kept_decision): computed, read back and with the
    cache off, the same record; read back it is still holds (proved), and the planted constant (another key) is
    still refused."""
    from proofs_checks import moment

    monkeypatch.setattr(moment, "_users_code_loaded", lambda: False)  # claim files other tests loaded
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", "0")
    off = CV.uniform_convexity_record(4.0, 4000).to_dict()
    monkeypatch.setenv("LPTHEORY_SHARP_CACHE", str(tmp_path))
    c0 = moment.kept_counts()
    computed = CV.uniform_convexity_record(4.0, 4000).to_dict()
    read = CV.uniform_convexity_record(4.0, 4000)
    c1 = moment.kept_counts()
    assert (c1["computed"] - c0["computed"], c1["read"] - c0["read"]) == (1, 1)
    assert off == computed == read.to_dict()
    assert read.status == "holds" and read.evidence == "proved"
    assert all(b.get("certificate") for b in read.data["bnb"])
    planted = CV.uniform_convexity_record(4.0, 4000, scale=2.0)
    assert planted.status != "holds" and "wrong way" in planted.reason


def test_the_limits_kept_on_disk_give_the_records_of_sympy_s_limits(tmp_path, monkeypatch):
    """signsgd_record and p_inf_record take their limits through cached_limit: computed, read back and with the
    cache off (sympy's limit each time, as before), the same records."""
    monkeypatch.setenv("LPTHEORY_LIMIT_CACHE", "0")
    off = [CV.signsgd_record().to_dict(), CV.p_inf_record().to_dict()]
    monkeypatch.setenv("LPTHEORY_LIMIT_CACHE", str(tmp_path))
    computed = [CV.signsgd_record().to_dict(), CV.p_inf_record().to_dict()]
    assert len(list(tmp_path.iterdir())) == 5  # one entry per limit
    read = [CV.signsgd_record().to_dict(), CV.p_inf_record().to_dict()]
    assert off == computed == read
    assert all(r["status"] == "holds" and r["evidence"] == "proved" for r in read)
