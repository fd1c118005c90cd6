"""The compiled linear-coupling step (lptheory.fast.coupling) against the numpy calls it replaces: the same bits
at every route of the power, and the fallbacks where SVML disagrees or the arrays do not fit."""

from __future__ import annotations

import numpy as np
import pytest

from lptheory.accelerated import coupling_update
from lptheory.fast import coupling, svml, svml_cbrt

pytestmark = pytest.mark.skipif(coupling.kernels() is None, reason="numba missing")


def _run(p, numpy_path, *, rows=4, column=True, steps=12, R=6, d=203, seed=0, monkeypatch=None):
    rng = np.random.default_rng(seed)
    theta, grad, z, y, v, x0 = (rng.standard_normal((R, d)) for _ in range(6))
    z[0, :6] = [0.0, -0.0, 1e-310, -1e-300, 1e300, -np.inf]  # zeros, subnormals, huge, infinite
    s, buf = np.empty((R, d)), np.empty((R, d))
    cs = rng.random(R)
    for k in range(1, steps + 1):
        grad[...] = rng.standard_normal((R, d))
        a = (cs * k)[:, None] if column else float(cs[0] * k)
        with np.errstate(invalid="ignore", over="ignore"):
            if numpy_path:
                with monkeypatch.context() as m:
                    m.setenv("LPTHEORY_ENGINE", "numpy")
                    assert not coupling.update(theta, grad, z, y, v, x0, s, buf, a, k, p, rows)
                    coupling_update(theta, grad, z, y, v, x0, s, buf, a, k, p, rows=rows)
            else:
                assert coupling.update(theta, grad, z, y, v, x0, s, buf, a, k, p, rows)
    return theta, z, y, v


def _same_bits(A, B):
    return all(np.array_equal(a.view(np.int64), b.view(np.int64)) for a, b in zip(A, B))


@pytest.mark.parametrize("p", [2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.3])
@pytest.mark.parametrize("column", [True, False])
def test_compiled_step_gives_the_bits_of_the_numpy_calls(p, column, monkeypatch):
    # every route (identity, sqrt, numpy's cbrt or power between two kernels, SVML's power or cube root inside
    # the kernel), rows
    # [0, 4) of 6 stepped (the last two must stay as they were), a per-row or a scalar a_k
    fast = _run(p, False, column=column)
    ref = _run(p, True, column=column, monkeypatch=monkeypatch)
    assert _same_bits(fast, ref)
    untouched = _run(p, False, column=column, steps=0)
    assert _same_bits([a[4:] for a in fast], [a[4:] for a in untouched])
    cbrt = "cbrt" if svml_cbrt.available() else "numpy"
    assert coupling.route(p) == {2.0: "identity", 3.0: "sqrt", 2.5: "numpy", 4.0: cbrt}.get(
        p, "svml" if svml.agrees(1.0 / (p - 1.0)) else "numpy"
    )


def test_a_planted_svml_disagreement_sends_the_power_back_to_numpy(monkeypatch):
    # numpy's SVML power wrapped with a one-ulp error: svml's probe must see it, and the step then computes
    # the power with numpy.power between two kernels, with numpy's bits
    real = svml._kernels()
    if real is None or "float64" not in real:
        pytest.skip("no SVML power here")

    def off_by_one_ulp(x, xo, y, out, m, pad):
        real["float64"](x, xo, y, out, m, pad)
        out[:m] = np.nextafter(out[:m], np.inf)

    monkeypatch.setattr(svml, "_kernels", lambda: {"float64": off_by_one_ulp})
    monkeypatch.setattr(svml, "_AGREES", {})
    monkeypatch.setattr(coupling, "_ROUTES", {})
    assert not svml.agrees(0.2)
    assert coupling.route(6.0) == "numpy"
    assert _same_bits(_run(6.0, False), _run(6.0, True, monkeypatch=monkeypatch))


def test_a_planted_cube_root_disagreement_sends_p4_back_to_numpy(monkeypatch):
    # numpy's SVML cube root wrapped with a one-ulp error: the probe must see it, and the step at p = 4 then
    # takes numpy.cbrt between two kernels, with numpy's bits
    real = svml_cbrt._blocks().get("float64")
    if real is None:
        pytest.skip("no SVML cube root here")

    def off_by_one_ulp(x, xo, out, m, pad):
        real(x, xo, out, m, pad)
        out[:m] = np.nextafter(out[:m], np.inf)

    monkeypatch.setattr(svml_cbrt, "_blocks", lambda: {"float64": off_by_one_ulp})
    monkeypatch.setattr(svml_cbrt, "_OK", {})
    monkeypatch.setattr(coupling, "_ROUTES", {})
    assert not svml_cbrt.available()
    assert coupling.route(4.0) == "numpy"
    assert _same_bits(_run(4.0, False), _run(4.0, True, monkeypatch=monkeypatch))


def test_arrays_that_do_not_fit_take_the_numpy_calls():
    rng = np.random.default_rng(1)
    theta, grad, z, y, v, x0, s, buf = (rng.standard_normal((3, 8)) for _ in range(8))
    # the same array twice (z is y), an overlapping view (x0 a view of theta): the numpy calls' in-place
    # pattern, not the kernels'
    assert not coupling.update(theta, grad, z, z, v, x0, s, buf, 0.5, 1, 3.0)
    assert not coupling.update(theta, grad, z, y, v, theta[:, :], s, buf, 0.5, 1, 3.0)
    # a Fortran-ordered array, float32, 1-D arrays, a read-only output, an infinite p
    assert not coupling.update(theta, grad, z, y, v, np.asfortranarray(np.ones((3, 8))), s, buf, 0.5, 1, 3.0)
    assert not coupling.update(theta, grad, z, y, v, x0.astype(np.float32), s, buf, 0.5, 1, 3.0)
    assert not coupling.update(theta[0], grad[0], z[0], y[0], v[0], x0[0], s[0], buf[0], 0.5, 1, 3.0)
    ro = y.copy()
    ro.flags.writeable = False
    assert not coupling.update(theta, grad, z, ro, v, x0, s, buf, 0.5, 1, 3.0)
    assert coupling.route(np.inf) is None
    assert coupling.update(theta, grad, z, y, v, x0, s, buf, 0.5, 1, 3.0)


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0, 6.0])
def test_steepest_in_place_gives_the_bits_of_the_general_step(p):
    from lptheory.accelerated import SteepestLp

    rng = np.random.default_rng(3)
    opt = SteepestLp(p=p, L=7.0)
    theta = rng.standard_normal((3, 257))
    theta[2] = 0.0
    a, sa, b, sb = theta.copy(), opt.init(theta), theta.copy(), opt.init(theta)
    for _ in range(5):
        g = rng.standard_normal((3, 257))
        g[1, :3] = [0.0, 1e-310, -1e300]
        g[2] = 0.0  # a zero gradient row (its norm 0: the safe divisor)
        a, sa = opt.step(a, g, sa, donate=True)
        b, sb = opt.step(b, g, sb)
        assert "_work" in sa and "_work" not in sb  # the in-place path ran
        assert np.array_equal(a.view(np.int64), b.view(np.int64))
