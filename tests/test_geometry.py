import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from lptheory import geometry as G
from tests import transcriptions as T

finite_p = st.one_of(st.sampled_from([1.5, 2.0, 2.5, 2.7, 3.0, 4.0, 8.0]), st.floats(1.05, 20.0))
any_p = st.one_of(finite_p, st.just(math.inf))
vec = arrays(np.float64, st.integers(1, 12), elements=st.floats(-1e3, 1e3, allow_subnormal=False))


@given(vec, any_p)
def test_inner_product_identity(x, p):
    # <x, s_p(x)> = ||x||_{p*}^{p*}   (term A of Theorem 1's proof)
    q = G.dual_exponent(p)
    lhs = float(np.dot(x, G.steepest_map(x, p)))
    rhs = float(G.lp_norm(x, q)) ** q
    assert lhs == pytest.approx(rhs, rel=1e-11, abs=1e-300)


@given(vec, finite_p)
def test_norm_identity(x, p):
    # ||s_p(x)||_p^2 = ||x||_{p*}^{2/(p-1)}   (term C of Theorem 1's proof)
    q = G.dual_exponent(p)
    lhs = float(G.lp_norm(G.steepest_map(x, p), p)) ** 2
    rhs = float(G.lp_norm(x, q)) ** (2 / (p - 1))
    assert lhs == pytest.approx(rhs, rel=1e-10, abs=1e-300)


# magnitudes whose powers |x|^{p-1} and |x|^{1/(p-1)} stay representable for p in [1.5, 20]
moderate = st.one_of(st.just(0.0), st.floats(1e-10, 1e10), st.floats(-1e10, -1e-10))
moderate_vec = arrays(np.float64, st.integers(1, 12), elements=moderate)


@given(moderate_vec, st.one_of(st.sampled_from([1.5, 2.0, 2.5, 2.7, 3.0, 4.0, 8.0]), st.floats(1.5, 20.0)))
def test_mirror_maps_invert_each_other(x, p):
    y = G.mirror_map(x, p)
    np.testing.assert_allclose(G.inverse_mirror_map(y, p), x, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(G.mirror_map(G.inverse_mirror_map(x, p), p), x, rtol=1e-12, atol=1e-300)


def test_special_cases():
    x = np.array([-2.0, -0.0, 0.0, 3.0, 5e-324])
    np.testing.assert_array_equal(G.steepest_map(x, 2), x)
    np.testing.assert_array_equal(G.steepest_map(x, math.inf), np.sign(x))
    for p in [1.2, 2.5, 3, 4, 7.3, math.inf]:
        assert G.steepest_map(np.zeros(3), p).tolist() == [0, 0, 0]
    # the Alg. 3 form x/|x|^{(p-2)/(p-1)} on nonzero x
    xs = np.array([-2.0, 0.3, 7.0])
    for p in [1.5, 2.5, 3.0, 4.0, 9.0, math.inf]:
        np.testing.assert_allclose(G.steepest_map(xs, p), T.s_alg3(xs, p), rtol=1e-14)


@given(vec, st.sampled_from([2.0, 2.5, 3.0, 4.0, 6.0, math.inf]), st.sampled_from([1e-12, 1e-8, 1e-4, 0.3]))
def test_regularized_forms_match_literal(x, p, eps):
    np.testing.assert_allclose(G.regularized_steepest_map(x, p, eps, "paper"), T.s_eps_paper(x, p, eps), rtol=1e-13)
    np.testing.assert_allclose(
        G.regularized_steepest_map(x, p, eps, "official"), T.s_eps_official(x, p, eps), rtol=1e-13, atol=1e-300
    )


def test_regularized_forms_differ():
    # a planted swap of the two eps forms must be visible
    x = np.array([1e-3, 0.5, 2.0])
    a = G.regularized_steepest_map(x, 3.0, 1e-2, "paper")
    b = G.regularized_steepest_map(x, 3.0, 1e-2, "official")
    assert np.max(np.abs(a - b) / np.abs(a)) > 1e-3


@pytest.mark.parametrize("p", [1.1, 1.5, 2.0, 2.5, 2.7, 3.0, 4.0, 8.0, 50.0, math.inf])
@pytest.mark.parametrize("eps", [0.0, 5e-324, 1e-300, 1e-12, 1e-8])
@pytest.mark.parametrize("mode", ["paper", "official"])
def test_zero_and_subnormal_never_nan(p, eps, mode):
    x = np.array([0.0, -0.0, 5e-324, -5e-324, 1e-310, -2.2e-308, 1.0])
    outs = [G.steepest_map(x, p)]
    if p >= 2:
        outs.append(G.regularized_steepest_map(x, p, eps, mode))
    if not math.isinf(p):
        outs += [G.mirror_map(x, p), G.inverse_mirror_map(x, p)]
    for o in outs:
        assert np.all(np.isfinite(o)), (p, eps, mode, o)
        assert o[0] == 0.0 and o[1] == 0.0


@pytest.mark.parametrize(
    "p", [1.5, 2.0, 2.5, 3.0, pytest.param(4.0, marks=pytest.mark.slow), pytest.param(6.0, marks=pytest.mark.slow)]
)
def test_steepest_step_is_the_argmin_scipy(p, rng):
    for _ in range(5):
        g = rng.standard_normal(6)
        eta = float(rng.uniform(0.1, 2.0))

        def obj(u, g=g, eta=eta):
            return eta * g @ u + 0.5 * float(G.lp_norm(u, p)) ** 2

        u_star = G.steepest_step(g, p, eta)
        best = min(
            (
                minimize(
                    obj,
                    rng.standard_normal(6),
                    method="Nelder-Mead",
                    options={"maxiter": 20000, "xatol": 1e-12, "fatol": 1e-14},
                )
                for _ in range(3)
            ),
            key=lambda r: r.fun,
        )
        assert obj(u_star) <= best.fun + 1e-9
        # closed-form optimal value: -(1/2) ||eta g||_{p*}^2
        q = G.dual_exponent(p)
        assert obj(u_star) == pytest.approx(-0.5 * (eta * float(G.lp_norm(g, q))) ** 2, rel=1e-12)


@given(
    arrays(np.float64, 5, elements=st.floats(-10, 10)),
    st.sampled_from([1.5, 2.0, 3.0, 4.0, math.inf]),
    st.floats(0.01, 3.0),
)
def test_steepest_step_beats_random_feasible_points(g, p, eta):
    assume(np.any(g != 0))
    rng = np.random.default_rng(0)
    obj = lambda u: eta * g @ u + 0.5 * float(G.lp_norm(u, p)) ** 2  # noqa: E731
    fu = obj(G.steepest_step(g, p, eta))
    U = rng.standard_normal((200, 5)) * rng.uniform(0, 20, size=(200, 1))
    assert all(fu <= obj(u) + 1e-9 * (1 + abs(fu)) for u in U)


def test_steepest_step_special_p():
    g = np.array([[1.0, -2.0, 3.0]])
    np.testing.assert_allclose(G.steepest_step(g, 2, 0.5), -0.5 * g)
    np.testing.assert_allclose(G.steepest_step(g, math.inf, 0.5), -0.5 * 6.0 * np.sign(g))


def test_lp_norm_extremes():
    assert float(G.lp_norm(np.array([1e300, 1e300]), 3)) == pytest.approx(1e300 * 2 ** (1 / 3))
    assert float(G.lp_norm(np.array([1e-300, 1e-300]), 3)) == pytest.approx(1e-300 * 2 ** (1 / 3))
    assert float(G.lp_norm(np.zeros(4), 2.5)) == 0.0
    assert G.lp_norm(np.ones((3, 4)), 2).shape == (3,)
    assert G.dual_exponent(2) == 2 and G.dual_exponent(math.inf) == 1 and G.dual_exponent(3) == 1.5


@pytest.mark.parametrize("bad", [1.0, 0.5, -3, float("nan")])
def test_bad_p(bad):
    with pytest.raises(ValueError, match="p must"):
        G.steepest_map(np.ones(3), bad)
    with pytest.raises(ValueError, match="p must"):
        G.dual_exponent(bad)


def test_bad_types():
    with pytest.raises(TypeError):
        G.steepest_map(np.ones(3), "3")
    with pytest.raises(TypeError):
        G.steepest_map("abc", 3)
    with pytest.raises(ValueError, match="eps"):
        G.regularized_steepest_map(np.ones(3), 3, -1.0)
    with pytest.raises(ValueError, match="mode"):
        G.regularized_steepest_map(np.ones(3), 3, 0.1, "fast")
    with pytest.raises(ValueError, match="p must"):
        G.regularized_steepest_map(np.ones(3), 1.5, 0.1)
