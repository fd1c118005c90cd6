"""The speed paths of the smaller checks (issue 46, item 3) give the results of the code they replace: ``claims``'
BFGS finite differences (proofs_checks/stacey/claims.py::forward_difference), theorem1's runs kept for the process
(proofs_checks/stacey/theorem1.py::trajectory), and the values kept per process by smoothness, symbolic and the
pages' formula conversion."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.optimize._numdiff import approx_derivative

from proofs_checks.stacey import claims as C
from synthetic.smoothness import steepest_step_objective


def test_forward_difference_has_scipys_bits():
    """Against scipy's own 2-point differences with BFGS's absolute step, the value at x reused, at points
    that take the relative-step fallback (|x_i| > 2^27), at 0 and at negative coordinates."""
    rng = np.random.default_rng(3)
    for k in range(40):
        d = int(rng.integers(1, 5))
        p, eta = float(rng.uniform(2.05, 8.0)), float(10 ** rng.uniform(-2, 0))
        obj = steepest_step_objective(rng.standard_normal(d), eta, p)
        x = rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 10, d)
        if k % 5 == 0:
            x[0] = 0.0
        want = approx_derivative(obj, x, method="2-point", abs_step=np.sqrt(np.finfo(float).eps), f0=obj(x))
        got = C.forward_difference(obj)(x.copy())
        assert got.tobytes() == np.asarray(want, dtype=np.float64).reshape(d).tobytes()


def test_steepest_cases_equal_with_scipys_own_differences():
    """The check's worst case, its minimizer and its gap: the same bits with scipy's own differences."""
    a = C._steepest(np.random.default_rng(11), 12, jac=True)
    b = C._steepest(np.random.default_rng(11), 12, jac=False)
    assert np.float64(a[0]).tobytes() == np.float64(b[0]).tobytes()
    for u, v in zip(a[1], b[1]):
        assert np.asarray(u, dtype=np.float64).tobytes() == np.asarray(v, dtype=np.float64).tobytes()


def test_probe_catches_a_planted_step(monkeypatch):
    """A step other than scipy's moves BFGS elsewhere: the once-per-process probe sees it and the check falls
    back to scipy's own differences."""
    monkeypatch.setattr(C, "_FD_OK", [])
    assert C._forward_difference_ok()
    monkeypatch.setattr(C, "_FD_OK", [])
    monkeypatch.setattr(C, "_FD_STEP", 1e-7)
    assert not C._forward_difference_ok()
    obj = steepest_step_objective(np.array([0.7, -1.3]), 0.1, 3.0)
    x0 = np.array([0.3, 0.5])
    planted = minimize(obj, x0, method="BFGS", jac=C.forward_difference(obj)).x
    assert planted.tobytes() != minimize(obj, x0, method="BFGS").x.tobytes()


def test_kept_trajectory_is_the_fresh_run(monkeypatch):
    """A run kept by trajectory() (drawing ahead, as thm1.bound runs it) serves a call with the plain noise (as
    corrections runs it): the bits of a fresh run; read-only arrays; another problem, noise, seed or number
    is another run; a noise drawing ahead for another length, a callable batch, are not kept."""
    from proofs_checks.stacey import theorem1 as T1
    from synthetic.oracle import GradientOracle

    monkeypatch.setattr(T1, "_RUNS", {})
    problem, noise = T1.make_setting("rademacher", 0.5, 20, 0)
    kw = dict(p=3.0, eta=0.05, T=24, replicates=4, seed=5, L=1.0)
    first = T1.trajectory(problem, GradientOracle(problem, noise.drawing_ahead(24), batch=1), **kw)
    assert len(T1._RUNS) == 1
    again = T1.trajectory(problem, GradientOracle(problem, noise, batch=1), **kw)
    assert len(T1._RUNS) == 1
    T1._RUNS.clear()
    fresh = T1.trajectory(problem, GradientOracle(problem, noise, batch=1), **kw)
    for k, v in fresh.items():
        if isinstance(v, np.ndarray):
            assert v.tobytes() == again[k].tobytes() == first[k].tobytes()
            assert not again[k].flags.writeable
        else:
            assert v == again[k]
    again["worst_step"]["t"] = -1  # the caller's copy
    assert T1.trajectory(problem, GradientOracle(problem, noise, batch=1), **kw)["worst_step"]["t"] != -1
    other, _ = T1.make_setting("rademacher", 0.5, 20, 1)
    _, loud = T1.make_setting("rademacher", 0.6, 20, 0)
    keys = {
        T1._run_key(problem, GradientOracle(problem, noise, batch=1), **kw),
        T1._run_key(other, GradientOracle(other, noise, batch=1), **kw),
        T1._run_key(problem, GradientOracle(problem, loud, batch=1), **kw),
        T1._run_key(problem, GradientOracle(problem, noise, batch=2), **kw),
        T1._run_key(problem, GradientOracle(problem, noise, batch=1), **{**kw, "seed": 6}),
        T1._run_key(problem, GradientOracle(problem, noise, batch=1), **{**kw, "eta": 0.05000000000000001}),
    }
    assert len(keys) == 6 and None not in keys
    assert T1._run_key(problem, GradientOracle(problem, noise.drawing_ahead(23), batch=1), **kw) is None
    assert T1._run_key(problem, GradientOracle(problem, noise, batch=lambda t: 1), **kw) is None


def test_grad_term_run_is_the_runs_gp(monkeypatch):
    """grad_term_run: without a kept run, a terms=False run with the gp bits of trajectory's run with the terms
    (nothing kept by it); with one kept, that run's gp (no new run: a planted kept gp is what comes back)."""
    from proofs_checks.stacey import theorem1 as T1
    from synthetic.oracle import GradientOracle

    monkeypatch.setattr(T1, "_RUNS", {})
    problem, noise = T1.make_setting("rademacher", 0.5, 20, 0)
    kw = dict(p=8.0, eta=0.05, T=24, replicates=4, seed=5, L=1.0)
    fast = T1.grad_term_run(problem, GradientOracle(problem, noise, batch=1), **kw)
    assert set(fast) == {"gp"} and not T1._RUNS
    full = T1.trajectory(problem, GradientOracle(problem, noise, batch=1), **kw)
    assert fast["gp"].tobytes() == full["gp"].tobytes() and len(T1._RUNS) == 1
    key = next(iter(T1._RUNS))
    T1._RUNS[key] = {**T1._RUNS[key], "gp": full["gp"] + 1.0}
    kept = T1.grad_term_run(problem, GradientOracle(problem, noise, batch=1), **kw)
    assert kept["gp"].tobytes() == (full["gp"] + 1.0).tobytes()


def test_lipschitz_start_rows_kept_give_the_fresh_bits():
    """smoothness' power iteration from the kept first rows: the value and pair of the rows drawn afresh."""
    from lptheory.geometry import lp_norm
    from proofs_checks.stacey import smoothness as S
    from synthetic.smoothness import bilinear_power_iteration, duality_map

    rng = np.random.default_rng(1)
    for k in range(30):
        d = 2 + k % 3
        M = rng.standard_normal((d, d))
        H, p, seed = (M + M.T) / 2, float(rng.choice([3.0, 4.0, 8.0])), int(k % 4)
        for _ in range(2):  # the first call keeps the rows, the second reads them
            val, u, v = S.lipschitz_constant(H, p, starts=6, iters=40, seed=seed)
        uu, vv = bilinear_power_iteration(H, p, duality_map(np.random.default_rng(seed).standard_normal((6, d)), p), 40)
        vals = np.einsum("ni,ij,nj->n", uu, H, vv) / (lp_norm(uu, p) * lp_norm(vv, p))
        i = int(np.argmax(vals))
        assert np.float64(val).tobytes() == vals[i].tobytes()
        assert u.tobytes() == uu[i].tobytes() and v.tobytes() == vv[i].tobytes()
    assert all(not r.flags.writeable for r in S._STARTS.values())


def test_chain_sides_kept_per_dimension_are_the_built_ones():
    """Appendix B's chain sides, kept per d: the same object on every call, equal to a fresh build."""
    from proofs_checks.stacey.symbolic import MAJ_SIDES

    for link, build in MAJ_SIDES.items():
        for d in (1, 3, 6):
            kept = build(d)
            assert build(d) is kept
            assert build.__wrapped__(d) == kept, (link, d)


def test_inline_math_kept_per_text_is_the_conversion():
    """The pages' formula conversion, kept per text: the conversion's own result, on repeat too."""
    from figures import mathtext

    texts = [
        "sum_{t=0}^{T-1} ||g_t||_{p*} <= L eta G^{2/(p-1)}",
        "Lemma 2: E[B2] <= eta G^{1/(p-1)} ||sigma||_1 / sqrt(n_t), then more words",
        "no formula here",
        "already $x^2$ marked",
        "a^b and c_{d} (twice)",
    ]
    for _ in range(2):
        for t in texts:
            plain = "$" in t or "\\" in t or ("^" not in t and "_{" not in t)
            want = t if plain else mathtext._inline_math.__wrapped__(t)
            assert mathtext.inline_math(t) == want
    assert mathtext.inline_math(texts[0]) != texts[0]


def test_simplified_derivative_kept_is_sympys():
    """The proof table's curvature and monotonicity preconditions, kept per (expression, variable, order):
    sympy's simplification of the derivative, the same object on repeat."""
    import sympy as sp

    from proofs_checks.stacey import symbolic as S

    ts, xs, P = S.VOCABULARY["ts"], S.VOCABULARY["xs"], S.VOCABULARY["P"]
    for e, v, k in ((sp.sqrt(ts), ts, 2), (ts ** ((2 - P) / (P - 1)), ts, 2), (xs ** ((2 - P) / (P - 1)), xs, 1)):
        got = S._simplified_derivative(e, v, k)
        assert got == sp.simplify(sp.diff(e, v) if k == 1 else sp.diff(e, v, k))
        assert S._simplified_derivative(e, v, k) is got
