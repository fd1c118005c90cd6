"""synthetic.smoothness.quad_forms: numpy's einsum("ni,ij,nj->n") bits from one compiled pass, its probe and
its fallback."""

import types

import numpy as np
import pytest

from synthetic import smoothness as S

K = S._quad_kernel()
pytestmark = pytest.mark.skipif(K is None, reason="no compiled smooth kernel here")


def _einsum(U, H, V):
    return np.einsum("ni,ij,nj->n", U, H, V)


@pytest.mark.parametrize(("n", "d"), [(4008, 8), (4006, 6), (4004, 4), (1011, 3), (1003, 2), (63, 2), (5, 7)])
def test_the_bits_of_numpy_einsum(n, d):
    rng = np.random.default_rng([n, d])
    U = rng.standard_normal((n, d)) * 10.0 ** rng.uniform(-3, 3, (n, 1))
    V = rng.standard_normal((n, d))
    H = rng.standard_normal((d, d))
    for Hm in (H, (H + H.T) / 2):
        assert S.quad_forms(U, Hm).tobytes() == _einsum(U, Hm, U).tobytes()
        assert S.quad_forms(U, Hm, V).tobytes() == _einsum(U, Hm, V).tobytes()
    assert S._QUAD_OK.get(d, True)  # the route was taken (or not tried: too small), not switched off


def test_other_layouts_keep_numpy():
    rng = np.random.default_rng(3)
    U = np.asfortranarray(rng.standard_normal((500, 4)))
    H = rng.standard_normal((4, 4))
    assert not S._quad_route(U, H, U)
    assert not S._quad_route(U.astype(np.float32), H, U)
    assert S.quad_forms(U, H).tobytes() == _einsum(U, H, U).tobytes()


def test_a_planted_order_is_caught_and_numpy_used(monkeypatch):
    def reversed_order(U, H, V, out):  # the same terms summed j-major: other bits
        n, d = U.shape
        for r in range(n):
            acc = 0.0
            for j in range(d):
                for i in range(d):
                    acc += (U[r, i] * H[i, j]) * V[r, j]
            out[r] = acc

    fake = types.SimpleNamespace(quad_forms=reversed_order)
    assert not S._quad_probe(fake, 5)
    monkeypatch.setattr(S, "_quad_kernel", lambda: fake)
    monkeypatch.setattr(S, "_QUAD_OK", {})
    rng = np.random.default_rng(4)
    U, H = rng.standard_normal((300, 5)), rng.standard_normal((5, 5))
    assert S.quad_forms(U, H).tobytes() == _einsum(U, H, U).tobytes()
    assert S._QUAD_OK == {5: False}


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 8.0, 16.0])
@pytest.mark.parametrize(("n", "d"), [(6, 2), (32, 2), (8, 3), (16, 4), (1, 5)])
def test_pair_ratios_are_numpys(p, n, d):
    from lptheory.geometry import lp_norm

    rng = np.random.default_rng([n, d, int(p)])
    u, v = rng.standard_normal((n, d)), rng.standard_normal((n, d)) * 1e3
    H = rng.standard_normal((d, d))
    got = S.pair_ratios(u, H, v, p)
    assert got is not None
    assert got.tobytes() == (_einsum(u, H, v) / (lp_norm(u, p) * lp_norm(v, p))).tobytes()


def test_pair_ratios_planted_disagreement_and_nonfinite(monkeypatch):
    p = 5.0
    k = S._duality_kernel(p)
    real = k[0]

    def off(u, H, v, p_, rp, ip, ri, pad, out):
        ok = real.pair_ratios(u, H, v, p_, rp, ip, ri, pad, out)
        out *= 1 + 2**-50
        return ok

    fake = types.SimpleNamespace(pair_ratios=off)
    assert not S._pair_probe(fake, p, k[3], k[4])
    monkeypatch.setattr(S, "_PAIR_OK", {p: False})
    rng = np.random.default_rng(9)
    u, H = rng.standard_normal((6, 2)), rng.standard_normal((2, 2))
    assert S.pair_ratios(u, H, u, p) is None  # switched off: the caller's numpy
    monkeypatch.setattr(S, "_PAIR_OK", {})
    u[1, 0] = np.nan
    assert S.pair_ratios(u, H, u, p) is None and S._PAIR_OK == {p: True}


@pytest.mark.parametrize("p", [2.0, 3.0, 8.0])
def test_two_sided_constant_refined_passes_are_numpys(p, monkeypatch):
    from proofs_checks.stacey import smoothness as PS

    rng = np.random.default_rng(int(p))
    Hs = [np.array([[a, b], [b, c]]) for a, b, c in rng.uniform(-1, 1, (20, 3))] + [np.diag([1.0, -1.0])]
    fast = [PS.two_sided_constant(H, p, grid=2000) for H in Hs]
    assert S._REFINE_OK.get(p) is True
    monkeypatch.setattr(S, "circle_refine", lambda *a, **k: None)  # the numpy passes
    slow = [PS.two_sided_constant(H, p, grid=2000) for H in Hs]
    assert np.array(fast).tobytes() == np.array(slow).tobytes()


def test_circle_refine_planted_disagreement():
    p = 6.0
    k = S._duality_kernel(p)
    real = k[0]

    def off(c, w, passes, H, p_, rp, ip, ri, pad, th, U, vals):
        ok = real.circle_refine(c, w, passes, H, p_, rp, ip, ri, pad, th, U, vals)
        U[7, 1] = np.nextafter(U[7, 1], 2.0)  # one sine one ulp off
        return ok

    assert S._refine_probe(real, p, k[3], k[4])
    assert not S._refine_probe(types.SimpleNamespace(circle_refine=off), p, k[3], k[4])
