"""A synthetic problem registers itself when its class is defined (issue 34), using public names only."""

import numpy as np
import pytest

from synthetic.problems import PROBLEMS, Problem, check_p, hoelder_r, make_problem

SHIPPED = [
    "separable",
    "flat-valley",
    "ridge",
    "logistic",
    "quadratic-diagonal",
    "quadratic-dense",
    "logsumexp",
    "kronecker-quadratic",
    "symmetric-factorization",
]


def test_shipped_keys_and_order_unchanged():
    assert list(PROBLEMS)[: len(SHIPPED)] == SHIPPED


def test_public_helpers_are_exported():
    import synthetic.problems as sp

    assert {"hoelder_r", "check_p"} <= set(sp.__all__)
    assert hoelder_r(4.0) == 2.0 and hoelder_r(float("inf")) == 1.0 and hoelder_r(2.0) == float("inf")
    with pytest.raises(ValueError, match="p"):
        check_p(1.5)


def test_defining_a_named_subclass_registers_it_and_a_clash_raises():
    class LogCosh(Problem):
        """f(x) = sum_i log cosh(x_i - c_i): 1-smooth in l_2, f* = 0, |grad_i| <= 1."""

        name = "test-logcosh"
        f_star = 0.0
        f_star_exact = True

        def __init__(self, d=3):
            self.d = d
            self.c = np.linspace(-1.0, 1.0, d)

        def f(self, x):
            x = self.check_point(x)
            y = x - self.to_backend(x, "c")
            return np.sum(np.log(np.cosh(y)), axis=-1) if isinstance(y, np.ndarray) else y.cosh().log().sum(-1)

        def grad(self, x):
            x = self.check_point(x)
            y = x - self.to_backend(x, "c")
            return np.tanh(y) if isinstance(y, np.ndarray) else y.tanh()

        def smoothness(self, p):
            p = check_p(p)
            return float(self.d ** (1.0 / hoelder_r(p)))

        def grad_sup(self, p):
            check_p(p)
            return float("inf")

    try:
        assert PROBLEMS["test-logcosh"] is LogCosh
        pr = make_problem("test-logcosh", d=4)
        assert pr.f(pr.c) == 0.0
        np.testing.assert_array_equal(pr.grad(pr.c), np.zeros(4))
        with pytest.raises(ValueError, match="d=4"):
            pr.check_point(np.zeros(3))

        with pytest.raises(ValueError, match="LogCosh") as err:

            class Other(Problem):
                name = "test-logcosh"

        assert "Other" in str(err.value)
        assert PROBLEMS["test-logcosh"] is LogCosh
    finally:
        PROBLEMS.pop("test-logcosh", None)


def test_base_and_opted_out_classes_do_not_register():
    before = dict(PROBLEMS)

    class Base(Problem):  # no name of its own: a base
        pass

    class Kept(Problem, register=False):
        name = "test-kept-out"

    assert PROBLEMS == before and "test-kept-out" not in PROBLEMS


def test_private_aliases_still_work():
    pr = make_problem("quadratic-diagonal", d=3)
    x = np.ones(3)
    assert pr._check(x) is pr.check_point(x)
    assert pr._k(x, "h") is pr.to_backend(x, "h")


def test_info_lists_problems_and_noises(capsys):
    from lptheory.app.cli import main

    main(["info"])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("problems: "))
    assert line.removeprefix("problems: ").split(", ")[: len(SHIPPED)] == SHIPPED
    assert any(ln.startswith("noise models: ") and "rademacher" in ln for ln in out.splitlines())
