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
