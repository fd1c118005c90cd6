"""proofs_checks.expectation.t_ppf: scipy.stats.t.ppf's bits without importing scipy.stats."""

import math
import sys

import numpy as np
import pytest
from scipy.stats import t as student_t

from proofs_checks.api import t_ppf


def _bits(v):
    return np.float64(v).tobytes()


def test_the_bits_of_scipy_stats_t_ppf():
    rng = np.random.default_rng(5)
    qs = [0.5, 0.95, 0.975, 1 - 0.025 / 256, 1 - 0.05 / 96, 1e-12, 1 - 1e-12, 0.025, *rng.random(40)]
    dfs = [1, 2, 3, 15, 31, 63, 1023, 4095, 1e6, 2.5, math.inf, *rng.integers(1, 5000, 10).tolist()]
    for q in qs:
        for df in dfs:
            want = float(student_t.ppf(q, df))
            assert _bits(t_ppf(q, df)) == _bits(want), (q, df)


@pytest.mark.parametrize(("q", "df"), [(0.0, 5), (1.0, 5), (0.0, math.inf), (1.0, 0.5)])
def test_the_support_ends_as_scipy(q, df):
    want = float(student_t.ppf(q, df))
    assert t_ppf(q, df) == want, (q, df, want)


@pytest.mark.parametrize(
    ("q", "df", "name"),
    [(-0.1, 5, "q"), (1.1, 5, "q"), (math.nan, 4, "q"), (0.5, 0, "df"), (0.9, -3, "df"), (0.9, math.nan, "df")],
)
def test_where_scipy_says_nan_a_value_error_names_the_argument(q, df, name):
    assert math.isnan(float(student_t.ppf(q, df)))  # scipy's bad value: never passed on silently
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        t_ppf(q, df)


@pytest.mark.parametrize("shape", [(1, 3), (0, 3), (5,)])
def test_monte_carlo_needs_two_samples(shape):
    import sympy as sp

    from proofs_checks.api import ClaimSpec, Expect, monte_carlo, x

    spec = ClaimSpec(id="t.mc", statement="E x^2 <= 2", source="a test", term=Expect(x**2), bound=sp.Integer(2))
    assert monte_carlo(spec, np.ones((2, 1)), {}).status == "holds"  # two samples suffice
    with pytest.raises(ValueError, match="samples"):
        monte_carlo(spec, np.ones(shape), {})


def test_a_planted_quantile_is_caught():
    # the comparison above is not vacuous: the normal quantile (df -> inf) differs from t's at df = 63
    assert _bits(t_ppf(0.975, math.inf)) != _bits(float(student_t.ppf(0.975, 63)))


def test_needs_no_scipy_stats(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy.stats", None)  # any import of it now raises ImportError
    with pytest.raises(ImportError):
        import scipy.stats  # noqa: F401
    assert _bits(t_ppf(0.975, 63)) == _bits(1.998340542520741)
