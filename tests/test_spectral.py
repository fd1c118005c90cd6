"""Norms, matrix optimizers, matrix problems and the spectral claim pack (issue 26)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lptheory import norms as N
from lptheory import optimizers as O
from lptheory import spectral as S

try:
    import torch
except ImportError:  # the numpy tests run without torch (an optional extra)
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="needs torch (the [torch] extra)")

MATRIX_NORMS = [
    N.Schatten(1.0),
    N.Schatten(1.5),
    N.Schatten(2.0),
    N.Schatten(3.0),
    N.Schatten(math.inf),
    N.ColNorm(),
    N.RowNorm(),
    N.ColNorm(rms=True),
    N.RowNorm(rms=True),
    N.SpectralRMS(),
]
VECTOR_NORMS = [N.Lp(1.0), N.Lp(1.5), N.Lp(2.0), N.Lp(4.0), N.Lp(math.inf)]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _svd_polar(g):
    u, s, vh = np.linalg.svd(g, full_matrices=False)
    return u @ vh


# ------------------------------------------------------------------------------------------------
# norms: closed forms, duality, optimality (hypothesis)
# ------------------------------------------------------------------------------------------------
matrices = st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**31 - 1)).map(
    lambda t: _rng(t[2]).standard_normal((t[0], t[1])) * _rng(t[2] + 1).choice([1e-3, 1.0, 1e3])
)


@settings(max_examples=40, deadline=None)
@given(G=matrices, X=matrices, seed=st.integers(0, 10**6))
def test_duality_triangle_optimality_hold_for_every_norm(G, X, seed):
    X = _rng(seed).standard_normal(G.shape) * np.abs(X).mean()  # same shape as G
    for nm in MATRIX_NORMS:
        d = nm.direction(G)
        dn = float(nm.dual_norm(G))
        assert float(nm.inner(G, d)) == pytest.approx(dn, rel=1e-9, abs=1e-12 * (1 + dn))  # <G, d*> = ||G||_*
        assert float(nm.norm(d)) == pytest.approx(1.0, rel=1e-9)
        # Hoelder: <G, X> <= ||G||_* ||X||; triangle inequality
        assert float(nm.inner(G, X)) <= dn * float(nm.norm(X)) * (1 + 1e-9) + 1e-12
        assert float(nm.norm(G + X)) <= (float(nm.norm(G)) + float(nm.norm(X))) * (1 + 1e-12) + 1e-12
        # optimality: no point of the unit ball beats d*
        R = _rng(seed).standard_normal((64, *G.shape))
        R = R / nm.norm(R)[:, None, None]
        assert np.all(nm.inner(np.broadcast_to(G, R.shape), R) <= dn * (1 + 1e-9) + 1e-12)
        # sharp: -sharp/lam minimizes <G, D> + lam/2 ||D||^2 (the value -||G||_*^2 / (2 lam), lam = 1)
        sh = nm.sharp(G)
        val = float(nm.inner(G, -sh)) + 0.5 * float(nm.norm(sh)) ** 2
        assert val == pytest.approx(-0.5 * dn**2, rel=1e-8, abs=1e-10 * (1 + dn**2))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.integers(1, 9))
def test_vector_norms_wrap_geometry(seed, d):
    from lptheory.geometry import lp_norm, steepest_step

    g = _rng(seed).standard_normal((3, d))
    for nm in VECTOR_NORMS:
        assert np.allclose(nm.norm(g), lp_norm(g, nm.p))
        assert np.allclose(nm.inner(g, nm.direction(g)), nm.dual_norm(g), rtol=1e-10)
        if nm.p > 1:  # geometry.steepest_step is the same map
            assert np.allclose(nm.steepest_step(g, 0.3), steepest_step(g, nm.p, 0.3), rtol=1e-10, atol=1e-14)


def test_schatten_closed_forms_and_planted_bug():
    G = _rng(1).standard_normal((4, 7, 5))
    s = np.linalg.svd(G, compute_uv=False)
    assert np.allclose(N.Schatten(1.0).norm(G), s.sum(-1))
    assert np.allclose(N.Schatten(2.0).norm(G), np.linalg.norm(G, axis=(-2, -1)))
    assert np.allclose(N.Schatten(math.inf).norm(G), s[..., 0])
    assert np.allclose(N.Schatten(3.0).dual_norm(G), (s**1.5).sum(-1) ** (1 / 1.5))
    assert np.allclose(N.Schatten(math.inf).direction(G), _svd_polar(G))
    assert np.allclose(N.Schatten(2.0).direction(G), G / np.linalg.norm(G, axis=(-2, -1), keepdims=True))
    assert np.allclose(N.SpectralRMS().norm(G), math.sqrt(5 / 7) * s[..., 0])
    assert np.allclose(N.ColNorm().norm(G), np.linalg.norm(G, axis=-2).max(-1))
    assert np.allclose(N.RowNorm().dual_norm(G), np.linalg.norm(G, axis=-1).sum(-1))

    # a planted bug (the Frobenius direction used for p = 3) is caught by the duality identity
    class Wrong(N.Schatten):
        def direction(self, g):
            return N.Schatten(2.0).direction(g)

    w = Wrong(3.0)
    assert not np.allclose(w.inner(G, w.direction(G)), w.dual_norm(G), rtol=1e-6)


def test_rank_deficient_and_zero_inputs():
    A = _rng(2).standard_normal((6, 2)) @ _rng(3).standard_normal((2, 5))
    P = N.polar(A)
    assert np.linalg.matrix_rank(P) == 2
    assert np.allclose(np.linalg.svd(P, compute_uv=False)[:2], 1.0)
    Z = np.zeros((3, 4))
    for nm in MATRIX_NORMS:
        assert np.all(nm.direction(Z) == 0.0) and float(nm.norm(Z)) == 0.0
    assert np.all(N.newton_schulz(Z) == 0.0)


def test_norm_errors_name_the_parameter():
    with pytest.raises(ValueError, match="p"):
        N.Schatten(0.5)
    with pytest.raises(ValueError, match="matrix"):
        N.Schatten(2.0).norm(np.ones(3))
    with pytest.raises(TypeError, match="floating"):
        N.Schatten(2.0).norm(np.ones((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="radius"):
        N.Schatten(2.0).lmo(np.ones((2, 2)), radius=-1.0)
    with pytest.raises(ValueError, match="norm must be one of"):
        N.make_norm("nope")
    with pytest.raises(ValueError, match="steps"):
        N.newton_schulz(np.ones((2, 2)), steps=-1)
    assert isinstance(N.make_norm("schatten:inf"), N.Schatten) and N.make_norm("lp:3").p == 3.0


@needs_torch
def test_numpy_torch_parity_of_norms_and_newton_schulz():
    G = _rng(4).standard_normal((3, 6, 4))
    T = torch.tensor(G)
    for nm in MATRIX_NORMS:
        assert np.allclose(nm.direction(T).numpy(), nm.direction(G), atol=1e-12)
        assert np.allclose(nm.dual_norm(T).numpy(), nm.dual_norm(G), rtol=1e-12)
    assert np.allclose(N.newton_schulz(T).numpy(), N.newton_schulz(G), atol=1e-12)  # addmm path
    assert np.allclose(N.newton_schulz(T[0]).numpy(), N.newton_schulz(G[0]), atol=1e-12)


def test_newton_schulz_scalar_polynomial_and_error():
    G = _rng(5).standard_normal((4, 8, 12))
    s0 = np.linalg.svd(G, compute_uv=False) / np.linalg.norm(G, axis=(-2, -1))[:, None]
    for k in (0, 1, 5):
        sv = np.linalg.svd(N.newton_schulz(G, k), compute_uv=False)
        assert np.allclose(np.sort(sv), np.sort(N.ns_scalar(s0, k)), atol=1e-12)
    err = N.ns_error(G, 5)
    assert np.allclose(err, np.max(np.abs(N.ns_scalar(s0, 5) - 1.0), axis=-1), atol=1e-12)
    assert N.ns_scalar(1.0, 1) == pytest.approx(sum(N.MUON_COEFFICIENTS))


# ------------------------------------------------------------------------------------------------
# optimizers: transcriptions of the pseudo-code
# ------------------------------------------------------------------------------------------------
def _ns_transcribed(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), 1e-7)
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * A @ A) @ x
    return x.T if g.shape[0] > g.shape[1] else x


@pytest.mark.parametrize("ortho", ["newton-schulz", "svd"])
@pytest.mark.parametrize("nesterov", [True, False])
def test_muon_transcribes_torch_optim_muon_pseudocode(ortho, nesterov):
    rng = _rng(6)
    W = rng.standard_normal((7, 4))
    opt = S.Muon(lr=0.05, momentum=0.9, nesterov=nesterov, weight_decay=0.1, orthogonalize=ortho)
    st_ = opt.init(W)
    w, B = W.copy(), np.zeros_like(W)
    for _ in range(4):
        g = rng.standard_normal(W.shape)
        W, st_ = opt.step(W, g, st_)
        B = 0.9 * B + g  # B_t = mu B_{t-1} + g_t
        Bt = g + 0.9 * B if nesterov else B
        O_ = _ns_transcribed(Bt) if ortho == "newton-schulz" else _svd_polar(Bt)
        w = w - 0.05 * 0.1 * w  # decoupled weight decay
        w = w - 0.05 * math.sqrt(max(1, 7 / 4)) * O_  # AdjustLR "original"
        np.testing.assert_allclose(W, w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(st_["buf"], B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("constrained", [False, True])
def test_scion_transcribes_uscg_and_scg(constrained):
    rng = _rng(7)
    W = rng.standard_normal((2, 5, 3))
    nm = N.SpectralRMS()
    opt = S.Scion(lr=0.2, alpha=0.3, radius=2.0, norm=nm, constrained=constrained)
    st_ = opt.init(W)
    w, d = W.copy(), np.zeros_like(W)
    for _ in range(3):
        g = rng.standard_normal(W.shape)
        W, st_ = opt.step(W, g, st_)
        d = 0.7 * d + 0.3 * g
        lmo = -2.0 * math.sqrt(5 / 3) * _svd_polar(d)  # argmin over the RMS->RMS ball of radius 2
        w = ((1 - 0.2) * w if constrained else w) + 0.2 * lmo
        np.testing.assert_allclose(W, w, rtol=1e-12, atol=1e-12)


def test_schatten_descent_transcribes_alg3_on_singular_values():
    rng = _rng(8)
    W, g = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    for p in (2.0, 3.0, 4.5, math.inf):
        opt = S.SchattenDescent(p=p, lr=0.1)
        new, _ = opt.step(W, g, opt.init(W))
        u, s, vh = np.linalg.svd(g, full_matrices=False)
        sp = np.ones_like(s) if math.isinf(p) else s ** (1 / (p - 1))
        np.testing.assert_allclose(new, W - 0.1 * (u * sp) @ vh, rtol=1e-12, atol=1e-13)
    # p = 2 is SGD
    new, _ = S.SchattenDescent(p=2.0, lr=0.1).step(W, g, {"step": 0})
    np.testing.assert_allclose(new, W - 0.1 * g, rtol=1e-13)


@pytest.mark.parametrize("mode", ["paper", "official"])
@pytest.mark.parametrize("pair", [(S.StaceyP2Schatten, O.StaceyP2), (S.StaceyPPSchatten, O.StaceyPP)])
def test_stacey_schatten_reduces_to_the_vector_algorithms_on_diagonal_matrices(pair, mode):
    mcls, vcls = pair
    kw = dict(p=3.0, lr=0.05, alpha=0.02, tau=0.3, eps=1e-3, weight_decay=0.01, eps_mode=mode)
    rng = _rng(9)
    x = rng.standard_normal(5)
    A, V = mcls(**kw), vcls(**kw)
    X, sa, sv = np.diag(x), None, None
    sa, sv = A.init(X), V.init(x)
    for _ in range(5):
        g = rng.standard_normal(5)
        X, sa = A.step(X, np.diag(g), sa)
        x, sv = V.step(x, g, sv)
    np.testing.assert_allclose(np.diag(X), x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(X - np.diag(np.diag(X)), 0.0, atol=1e-12)
    np.testing.assert_allclose(np.diag(sa["z"]), V.z_of(sv), rtol=1e-10, atol=1e-12)


def test_stacey_pp_schatten_transcribes_alg2_with_svds():
    rng = _rng(10)
    p, lr, al, tau, b1, b2, eps = 3.0, 0.05, 0.02, 0.3, 0.9, 0.99, 1e-3
    W = rng.standard_normal((4, 3))
    opt = S.StaceyPPSchatten(p=p, lr=lr, alpha=al, tau=tau, beta1=b1, beta2=b2, eps=eps)
    st_ = opt.init(W)
    th, z, m = W.copy(), W.copy(), np.zeros_like(W)

    def spec(x, f):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        return (u * f(s)) @ vh

    se = lambda s: s / (s ** ((p - 2) / (p - 1)) + eps)  # noqa: E731  (Alg. 2 line 4 on singular values)
    for _ in range(3):
        g = rng.standard_normal(W.shape)
        W, st_ = opt.step(W, g, st_)
        c = b1 * m + (1 - b1) * g
        y = th - lr * spec(c, se)
        w = spec(z, lambda s: s ** (p - 1)) - al * c
        z = spec(w, se)
        th = tau * z + (1 - tau) * y
        m = b2 * m + (1 - b2) * g
        np.testing.assert_allclose(W, th, rtol=1e-10, atol=1e-12)


def test_flat_layout_and_validation():
    opt = S.Muon(lr=0.1, shape=(3, 4))
    x = _rng(11).standard_normal((5, 12))
    new, st_ = opt.step(x, x, opt.init(x))
    ref = S.Muon(lr=0.1)
    new2, _ = ref.step(x.reshape(5, 3, 4), x.reshape(5, 3, 4), ref.init(x.reshape(5, 3, 4)))
    np.testing.assert_allclose(new, new2.reshape(5, 12))
    with pytest.raises(ValueError, match="momentum"):
        S.Muon(momentum=1.5)
    with pytest.raises(ValueError, match="orthogonalize"):
        S.Muon(orthogonalize="qr")
    with pytest.raises(ValueError, match="last axis"):
        opt.step(np.ones((2, 5)), np.ones((2, 5)), {"step": 0, "buf": np.ones((2, 5))})
    with pytest.raises(ValueError, match="lr"):
        S.Scion(lr=2.0, constrained=True)
    with pytest.raises(ValueError, match="p"):
        S.StaceyPPSchatten(p=math.inf)
    with pytest.raises(ValueError, match="matrix"):
        S.Muon().init(np.ones(3))
    assert "muon" in O.OPTIMIZERS and O.make("scion", lr=0.1).name == "scion"


def test_step_does_not_modify_inputs_unless_donated():
    W = _rng(12).standard_normal((4, 4))
    g = _rng(13).standard_normal((4, 4))
    for opt in (S.Muon(), S.Scion(), S.SchattenDescent(), S.StaceyP2Schatten(), S.StaceyPPSchatten()):
        st_ = opt.init(W)
        keep = (W.copy(), g.copy(), {k: v.copy() for k, v in st_.items() if k != "step"})
        a, sa = opt.step(W, g, st_)
        assert np.array_equal(W, keep[0]) and np.array_equal(g, keep[1])
        assert all(np.array_equal(st_[k], v) for k, v in keep[2].items())
        Wd, std = W.copy(), {k: (v.copy() if k != "step" else v) for k, v in st_.items()}
        b, sb = opt.step(Wd, g, std, donate=True)
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize(
    "opt",
    [
        S.Muon(lr=0.1),
        S.Muon(lr=0.1, orthogonalize="svd", nesterov=False),
        S.Scion(lr=0.1, norm="colnorm"),
        S.Scion(lr=0.1, norm="linf", constrained=True),
        S.SchattenDescent(p=3.0, lr=0.1),
        S.StaceyP2Schatten(p=3.0, lr=0.1),
        S.StaceyPPSchatten(p=4.0, lr=0.1, eps_mode="official"),
    ],
    ids=lambda o: o.name,
)
@needs_torch
def test_numpy_torch_parity_of_the_rules(opt):
    rng = _rng(14)
    W = rng.standard_normal((2, 5, 3))
    s1, s2 = opt.init(W), opt.init(torch.tensor(W))
    a, b = W, torch.tensor(W)
    for _ in range(3):
        g = rng.standard_normal(W.shape)
        a, s1 = opt.step(a, g, s1)
        b, s2 = opt.step(b, torch.tensor(g), s2)
    np.testing.assert_allclose(b.numpy(), a, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# torch.optim classes
# ------------------------------------------------------------------------------------------------
def _model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()


@needs_torch
def test_torch_optim_matches_the_core_rules_and_falls_back():
    from lptheory.torch import Muon, StaceyPPSchatten

    m = _model()
    x = torch.randn(16, 6, dtype=torch.float64)
    init = {n: p.detach().clone().numpy() for n, p in m.named_parameters()}
    opt = Muon(m.parameters(), lr=0.02, weight_decay=0.1, fallback_lr=0.01)
    core, fb = S.Muon(lr=0.02, weight_decay=0.1), O.AdamW(lr=0.01, weight_decay=0.0)
    states = {n: (core if v.ndim == 2 else fb).init(v) for n, v in init.items()}
    vals = dict(init)
    for _ in range(3):
        opt.zero_grad()
        m(x).square().mean().backward()
        grads = {n: p.grad.detach().numpy().copy() for n, p in m.named_parameters()}
        opt.step()
        for n in vals:
            o = core if vals[n].ndim == 2 else fb
            vals[n], states[n] = o.step(vals[n], grads[n], states[n])
    for n, p in m.named_parameters():
        np.testing.assert_allclose(p.detach().numpy(), vals[n], rtol=1e-10, atol=1e-12)
    # state_dict round trip continues identically
    m2 = copy.deepcopy(m)
    o2 = Muon(m2.parameters(), lr=0.02, weight_decay=0.1, fallback_lr=0.01)
    o2.load_state_dict(copy.deepcopy(opt.state_dict()))  # (load_state_dict keeps the tensors: no aliasing)
    for mm, oo in ((m, opt), (m2, o2)):
        oo.zero_grad()
        mm(x).square().mean().backward()
        oo.step()
    for p, q in zip(m.parameters(), m2.parameters()):
        assert torch.equal(p, q)
    with pytest.raises(ValueError, match="fallback"):
        o3 = Muon(m.parameters(), fallback=None)
        m(x).square().mean().backward()
        o3.step()
    o4 = StaceyPPSchatten(m.parameters(), lr=1e-3, p=3.0)
    m(x).square().mean().backward()
    o4.step()
    assert all(torch.isfinite(p).all() for p in m.parameters())


@needs_torch
def test_torch_scion_per_group_radius_and_conv_weights():
    from lptheory.torch import Scion

    torch.manual_seed(1)
    conv = torch.nn.Conv2d(2, 4, 3).double()
    lin = torch.nn.Linear(5, 3).double()
    w0 = lin.weight.detach().clone().numpy()
    opt = Scion(
        [{"params": [conv.weight], "radius": 3.0}, {"params": [lin.weight], "norm": "colnorm", "radius": 0.5},
         {"params": [conv.bias, lin.bias], "norm": "linf"}],
        lr=0.1, alpha=1.0, constrained=True,
    )  # fmt: skip
    x = torch.randn(2, 2, 5, 5, dtype=torch.float64)
    (conv(x).sum() + lin(torch.randn(4, 5, dtype=torch.float64)).sum()).backward()
    g = lin.weight.grad.detach().numpy().copy()
    opt.step()
    expect = 0.9 * w0 + 0.1 * (-0.5) * g / np.linalg.norm(g, axis=0, keepdims=True)
    np.testing.assert_allclose(lin.weight.detach().numpy(), expect, rtol=1e-12)
    assert conv.weight.shape == (4, 2, 3, 3)


@needs_torch
def test_torch_muon_close_to_torch_optim_muon_in_bfloat16():
    torch.manual_seed(2)
    a = torch.nn.Linear(16, 24, bias=False)
    b = copy.deepcopy(a)
    from lptheory.torch import Muon

    oa = Muon(a.parameters(), lr=0.02, weight_decay=0.1, ns_dtype="bfloat16")
    ob = torch.optim.Muon(b.parameters(), lr=0.02, weight_decay=0.1)
    x = torch.randn(32, 16)
    for _ in range(3):
        for mm, oo in ((a, oa), (b, ob)):
            oo.zero_grad()
            mm(x).square().mean().backward()
            oo.step()
    # bfloat16 Newton-Schulz: the two agree to bfloat16 rounding of an lr-sized step
    assert float((a.weight - b.weight).detach().abs().max()) < 0.02 * 3 * 0.05


# ------------------------------------------------------------------------------------------------
# matrix problems and noise
# ------------------------------------------------------------------------------------------------
def test_matrix_problem_certificates_audit_and_gradients():
    from synthetic.matrix import KroneckerQuadratic, SymmetricFactorization
    from synthetic.problems import PROBLEMS, make_problem

    assert {"kronecker-quadratic", "symmetric-factorization"} <= set(PROBLEMS)
    probs = [
        KroneckerQuadratic(3, 5, seed=1),
        KroneckerQuadratic(4, 4, profile="flat", scale=2.0),
        make_problem("symmetric-factorization", d=24),
    ]
    for pr in probs:
        for p in (2.0, 3.0, math.inf):
            ok, val, est = pr.certificate("L").audit_ok(p)
            assert ok, (pr.name, p, val, est)
        assert pr.certificate("f_star").audit_ok()[0]
        x = pr.x0(2)
        e = 1e-6 * _rng(3).standard_normal(x.shape)
        fd = pr.f(x + e) - pr.f(x - e)
        assert np.allclose(fd, 2 * np.sum(pr.grad(x) * e, axis=-1), rtol=1e-5, atol=1e-12)
        if torch is not None:
            assert np.allclose(pr.f(torch.tensor(x)).numpy(), pr.f(x), rtol=1e-12)
    # isotropic quadratic: the certificate is attained (a D orthogonal)
    iso = probs[1]
    assert iso.smoothness(3.0) == pytest.approx(2.0 * 4 ** (1 / 3))  # a b k^{1 - 2/p}, a = 2, b = 1, k = 4
    assert iso.certificate("L").audit(3.0, seed=0) == pytest.approx(iso.smoothness(3.0), rel=1e-9)
    assert SymmetricFactorization(6, 4).certificate("grad_sup").audit_ok(3.0)[0]


def test_rank_one_noise_exact_batch_law_and_sampler():
    from lptheory._random import TorchRandom
    from synthetic.matrix import RankOneNoise

    nz = RankOneNoise.random(3, 4, k=2, sigma=0.5, seed=1)
    law = nz.batch_outcomes(3)
    assert sum(pr for _, pr in law) == pytest.approx(1.0)
    assert np.allclose(sum(pr * v for v, pr in law), 0.0)
    assert sum(pr * np.sum(v**2) for v, pr in law) == pytest.approx(nz.frobenius_variance(3))
    assert np.allclose(sum(pr * v**2 for v, pr in law), nz.sigma**2 / 3)
    x = nz.sample_mean(np.random.default_rng(0), 3, size=(40000,))
    assert abs(np.mean(np.sum(x**2, axis=1)) - nz.frobenius_variance(3)) < 0.02 * nz.frobenius_variance(3)
    if torch is not None:
        xt = nz.sample_mean(TorchRandom(0), 3, size=(40000,)).numpy()
        assert abs(np.mean(np.sum(xt**2, axis=1)) - nz.frobenius_variance(3)) < 0.02 * nz.frobenius_variance(3)
    with pytest.raises(ValueError, match="weights"):
        RankOneNoise(np.ones((2, 2, 2)), [0.5, 0.6])


# ------------------------------------------------------------------------------------------------
# the claim pack
# ------------------------------------------------------------------------------------------------
def _records(check, quick=True, **opts):
    from proofs_checks.api import Context, load_pack

    pk = load_pack("proofs_checks.spectral:PACK")
    c = pk.checks[check]
    return c.run(Context(seed=0, quick=quick, options=c.resolve(opts)))


def _run(check, quick=True, **opts):
    return {
        r.id + str(r.params.get("p", "")) + str(r.params.get("norm", "")): r for r in _records(check, quick, **opts)
    }


def test_pack_identities_hold_and_their_controls_fail_as_they_must():
    """Each identity's false neighbour is found violated by the same check, with a witness re-checked at the
    toolkit's precision; its record follows the one convention of controls (inconclusive, "fails as it
    must", the witness, its re-check and the evidence level kept), and the identity holds only then."""
    from proofs_checks.recheck import DPS

    recs = _run("identities")
    mains = [r for r in recs.values() if ".control" not in r.id]
    controls = [r for r in recs.values() if ".control" in r.id]
    assert len(controls) == 4
    for r in controls:
        assert r.status == "inconclusive" and r.evidence == "exact", (r.id, r.status, r.evidence)
        assert r.witness["recheck"]["violated"] and r.witness["recheck"]["dps"] == DPS == 60
        assert r.reason.startswith(f"negative control '{r.id.rsplit('.control-', 1)[1]}' fails as it must.")
        assert "finds it violated" in r.reason and "re-checked from the witness alone (60 digits" in r.reason
    assert all(r.status == "holds" for r in mains), [(r.id, r.status, r.reason) for r in mains]
    assert all("fails as it must (found violated)" in r.reason for r in mains if r.id != "spectral.dual-norm")


def test_identity_holds_only_when_its_control_is_found_violated():
    """The gate reads the control's raw record: a control the check does not find violated (here: its
    failure not confirmed) withdraws the identity's holds, and its own record says it PASSES."""
    import dataclasses

    from proofs_checks.spectral.identities import _with_control

    recs = _records("identities")
    main = next(r for r in recs if r.id == "spectral.muon-svd-step")
    raw = next(r for r in recs if r.id == "spectral.muon-svd-step.control-ns5")
    raw = dataclasses.replace(raw, status="inconclusive", reason="0.2953 <= 1e-09: fails; rounding")
    m, c = _with_control(dataclasses.replace(main, reason="holds"), raw)
    assert m.status == "inconclusive" and "was not found violated" in m.reason
    assert c.status == "inconclusive" and "PASSES the rule it must fail" in c.reason and "withdrawn" in c.reason


def test_pack_newton_schulz_findings():
    recs = {r.id: r for r in _run("newton-schulz").values()}
    assert recs["ns.scalar-polynomial"].status == "holds"
    # no source states the description as a bound: not a finding; read as a bound it fails (witness kept)
    assert recs["ns.interval"].status == "not-applicable" and recs["ns.interval"].witness["kind"] == "ns-polynomial"
    assert recs["ns.interval.scoped"].status == "holds"
    assert recs["ns.interval.scoped"].evidence == "proved"  # with the certificate of its interval enclosure
    assert recs["ns.interval.scoped"].data["certificate"]["kind"] == "interval-enclosure"
    assert recs["ns.cubic-bound"].status == "holds"
    from proofs_checks.spectral.newton_schulz import prove_range, threshold

    s = threshold(5)
    assert 1.0e-3 < s < 1.1e-3
    assert prove_range(s * 0.999, 5, pieces=50)[0] is False  # below the threshold the proof must fail


def test_pack_rate_with_controls():
    recs = _run("rate-lmo", p=[math.inf], T=[8, 16, 32, 64])
    all_recs = _records("rate-lmo", p=[math.inf], T=[8, 16, 32, 64])
    main = recs["rate.lmoinf"]
    still, slow = recs["rate.lmo.control-stillinf"], recs["rate.lmo.control-slowinf"]
    for c in (still, slow):  # pinned: found violated by the rate rule, recorded by the one convention
        assert c.status == "inconclusive" and c.evidence == "fit" and c.witness["recheck"]["violated"]
        assert "fails as it must" in c.reason and "finds it violated" in c.reason
    assert main.status == "holds", main.reason
    assert "every negative control fails as it must" in main.reason
    bounds = [r for r in all_recs if r.id == "rate.lmo.bound"]
    assert len(bounds) == 4 and all(r.status == "holds" for r in bounds)


def test_recheck_witness_kinds_confirm_and_refute():
    from proofs_checks.spectral.recheck import recheck_identity, recheck_ns_polynomial

    G = _rng(15).standard_normal((3, 2))
    good = {"identity": "spectral-direction", "G": G.tolist(), "claimed": _svd_polar(G).tolist(), "tolerance": 1e-9}
    assert recheck_identity(good)["violated"] is False
    bad = {**good, "claimed": (G / np.linalg.norm(G)).tolist()}
    assert recheck_identity(bad)["violated"] is True
    w = {"coefficients": list(N.MUON_COEFFICIENTS), "steps": 5, "s": 0.5, "interval": [0.5, 1.5]}
    assert recheck_ns_polynomial(w)["violated"] is False
    assert recheck_ns_polynomial({**w, "s": 1e-4})["violated"] is True


def test_newton_schulz_lmo_option_for_the_spectral_norms():
    G = _rng(16).standard_normal((2, 6, 4))
    a = N.Schatten(math.inf, orthogonalize="newton-schulz", ns_steps=3)
    np.testing.assert_allclose(a.direction(G), N.newton_schulz(G, 3))
    b = N.SpectralRMS(orthogonalize="newton-schulz")
    np.testing.assert_allclose(b.lmo(G, 2.0), -2.0 * math.sqrt(6 / 4) * N.newton_schulz(G, 5))
    opt = S.Scion(lr=0.1, alpha=1.0, norm=b)
    W = np.zeros_like(G)
    np.testing.assert_allclose(opt.step(W, G, opt.init(W))[0], 0.1 * b.lmo(G))
    # the approximate direction misses the duality identity by about the Newton-Schulz error
    gap = np.abs(a.inner(G, a.direction(G)) - a.dual_norm(G)) / a.dual_norm(G)
    assert np.all(gap > 1e-6) and np.all(gap < 0.5)
    with pytest.raises(ValueError, match="spectral"):
        N.Schatten(3.0, orthogonalize="newton-schulz")


def test_pack_options_are_validated_before_any_work():
    from proofs_checks.api import load_pack

    c = load_pack("proofs_checks.spectral:PACK").checks["rate-lmo"]
    with pytest.raises(ValueError, match="--p"):
        c.resolve({"p": [1.5]})
    with pytest.raises(ValueError, match="T="):
        c.resolve({"T": [8, 16]})


@pytest.mark.gpu
@pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_rules_match_cpu():
    rng = _rng(17)
    W, g = rng.standard_normal((3, 32, 16)), rng.standard_normal((3, 32, 16))
    for opt in (S.Muon(lr=0.1), S.Muon(lr=0.1, orthogonalize="svd"), S.Scion(lr=0.1), S.StaceyPPSchatten(p=3.0)):
        a, _ = opt.step(W, g, opt.init(W))
        Wc, gc = torch.tensor(W, device="cuda"), torch.tensor(g, device="cuda")
        b, _ = opt.step(Wc, gc, opt.init(Wc))
        np.testing.assert_allclose(b.cpu().numpy(), a, rtol=1e-9, atol=1e-11)


def test_simulate_keeps_matrix_replicates_independent():
    """The simulator's iterates are (R, d) rows. A matrix optimizer without a layout would orthogonalize the
    R replicates together (replicate 0's run then depended on how many ran beside it): simulate refuses it,
    naming shape; with shape=(m, n) replicate 0 is the same alone and among three."""
    from lptheory.simulate import simulate
    from synthetic.noise import make_noise, sigma_profile
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    pr = make_problem("kronecker-quadratic", d=36, seed=0)
    orc = GradientOracle(pr, make_noise("rademacher", sigma_profile("flat", pr.d, 0.1)), 1)
    for opt in (S.Muon(), S.SchattenDescent(p=3.0), S.Scion()):
        with pytest.raises(ValueError, match=r"needs shape=\(m, n\) with m \* n = d = 36"):
            simulate(opt, pr, orc, 5, 2)
    one = simulate(S.Muon(shape=pr.shape), pr, orc, 12, 1, 0, record_every=4)
    three = simulate(S.Muon(shape=pr.shape), pr, orc, 12, 3, 0, record_every=4)
    assert np.array_equal(one.f[:, 0], three.f[:, 0])
    assert not np.array_equal(three.f[:, 0], three.f[:, 1])  # the replicates' noise streams differ


def test_cli_run_lays_matrix_optimizers_out(tmp_path, capsys):
    """``lptheory run`` gives each matrix optimizer the problem's own shape (else 1 x d, or --shape M N), and
    refuses a --shape whose M * N is not d or with no matrix optimizer selected (exit 2, naming the flag)."""
    import json

    from lptheory.app.cli import main

    out = tmp_path / "o"
    args = ["run", "--optimizer", "muon", "--steps", "4", "--replicates", "2", "--quiet", "--d", "36"]
    assert main([*args, "--problem", "kronecker-quadratic", "--out", str(out)]) == 0
    cfg = json.loads((out / "run.json").read_text())["configs"]["muon"]
    assert "shape=(6, 6)" in cfg["optimizer"] and cfg["problem"]["shape"] == [6, 6]
    assert main([*args, "--out", str(tmp_path / "v")]) == 0  # a vector problem: one row
    assert "shape=(1, 36)" in json.loads((tmp_path / "v" / "run.json").read_text())["configs"]["muon"]["optimizer"]
    assert main([*args, "--shape", "4", "9", "--out", str(tmp_path / "s")]) == 0
    assert "shape=(4, 9)" in json.loads((tmp_path / "s" / "run.json").read_text())["configs"]["muon"]["optimizer"]
    capsys.readouterr()
    assert main([*args, "--shape", "5", "5", "--out", str(tmp_path / "x")]) == 2
    assert "--shape 5 5: M * N must equal the problem's d = 36" in capsys.readouterr().err
    assert main(["run", "--optimizer", "sgd", "--shape", "6", "6", "--d", "36", "--out", str(tmp_path / "y")]) == 2
    assert "none of the selected optimizers is a matrix optimizer" in capsys.readouterr().err


def test_laid_out_gives_matrix_optimizers_a_layout_of_d():
    """``laid_out``: a 2-D matrix optimizer without shape gets the given shape, else the problem's own when it
    multiplies to d (a list too), else (1, d); a shape whose product is not d is refused; vector optimizers,
    Scion with a vector norm and optimizers that have a shape are returned as they are."""
    assert S.laid_out(S.Muon(), 12).shape == (1, 12)
    assert S.laid_out(S.Muon(), 12, own=[3, 4]).shape == (3, 4)
    assert S.laid_out(S.Muon(), 12, own=(5, 5)).shape == (1, 12)  # not the problem's d: one row
    assert S.laid_out(S.Muon(), 12, own=(3, 4), shape=(2, 6)).shape == (2, 6)
    with pytest.raises(ValueError, match=r"m \* n must equal d = 12"):
        S.laid_out(S.Muon(), 12, shape=(5, 5))
    with pytest.raises(ValueError, match=r"m \* n must equal d = 12"):
        S.laid_out(S.Muon(shape=(2, 2)), 12)
    sgd, vec = O.SGD(), S.Scion(norm="l2")
    assert S.laid_out(sgd, 12) is sgd and S.laid_out(vec, 12) is vec
    mine = S.Muon(shape=(3, 4))
    assert S.laid_out(mine, 12) is mine


def test_demo_steps_matrix_optimizers_per_replicate(capsys):
    """``lptheory demo --optimizer muon`` lays each replicate's iterate out as one row (it prints the optimizer
    it runs): without a layout its (R, d) iterates were one matrix whose rows, the replicates, were coupled."""
    from lptheory.app.cli import main

    assert main(["demo", "--optimizer", "muon", "--steps", "3", "--d", "8"]) == 0
    assert "shape=(1, 8)" in capsys.readouterr().out


def test_rate_gate_does_not_count_a_not_applicable_control_as_failing():
    """The spectral rate gate: a control outside the claim's assumptions (not-applicable, say a run that left
    the certified ball) does not show that the check can fail, even when its interval lies below the claim:
    the method's holds is withdrawn; the same control when applicable and below fails as it must."""
    import dataclasses

    from proofs_checks.records import Claim
    from proofs_checks.spectral import rates as R

    base = Claim(
        id="rate.x.control-still", statement="s", source="s", status="inconclusive", method="simulation", reason="r"
    )
    low = (R.THEORY - R.MARGIN - 0.3, R.THEORY - R.MARGIN - 0.1)
    ctrl = dataclasses.replace(base, ci=low)
    assert R._failed(ctrl)
    assert not R._failed(dataclasses.replace(ctrl, status="not-applicable"))
    main = dataclasses.replace(base, id="rate.x", status="holds", ci=(R.THEORY, R.THEORY + 0.01))
    assert R._strict(main, [ctrl]).status == "holds"
    assert R._strict(main, [dataclasses.replace(ctrl, status="not-applicable")]).status == "inconclusive"
    # with a control that fails, a not-applicable one counts neither way (as gate_on_controls; its record says
    # "It neither counts for nor against the method's holds"): it used to withdraw the holds
    na = dataclasses.replace(ctrl, id="rate.x.control-slow", status="not-applicable")
    mixed = R._strict(main, [ctrl, na])
    assert mixed.status == "holds", mixed.reason
    assert "(rate.x.control-still; not applicable here, so not counted: rate.x.control-slow)" in mixed.reason
    only_na = R._strict(main, [na])
    assert only_na.status == "inconclusive" and "not controlled" in only_na.reason
    passing = dataclasses.replace(ctrl, ci=(R.THEORY, R.THEORY + 0.1))
    assert R._strict(main, [passing, na]).status == "inconclusive"
    assert R._strict(main, [ctrl]).reason.endswith("every negative control fails as it must (rate.x.control-still)")
