"""symbolic._spot's maj-eig step on stacked matrices: the loop's worst gap, environment and values, bit for bit."""

import math

import numpy as np
import pytest

from proofs_checks.stacey import symbolic as S


def _loop(envs):
    worst, arg = -math.inf, None
    for e in envs:
        Ms = e["H"] / np.sqrt(np.outer(e["L"], e["L"]))
        lv, rv = float(np.abs(np.linalg.eigvalsh(Ms)).max()), float(np.linalg.norm(Ms, 2))
        gap_ = abs(lv - rv) / (abs(lv) + abs(rv) + 1e-300)
        if gap_ > worst:
            worst, arg = gap_, (e, lv, rv)
    return worst, arg


def _maj_batch(rng, n):
    """maj's batch of n environments; a skip only where the batched route is off (no numba, the switch, or its
    first-use check): with the route on, no batch is a failure."""
    batch = S._batch("maj", rng, n)
    if batch is None:
        if S._draw_kernels() is not None:
            pytest.fail("the batched draws are on, yet maj's batch was not drawn")
        pytest.skip("the batched draws are off here (no numba, LPTHEORY_SYMBOLIC_BATCH=0 or the first-use check)")
    return batch


def _bits(v):
    return np.float64(v).tobytes()


@pytest.mark.parametrize("seed", [0, 1])
def test_stacked_is_the_loop(seed):
    rng = np.random.default_rng(seed)
    batch = _maj_batch(rng, 1000)
    envs = [batch.env(i) for i in range(len(batch.shapes))]
    worst, (env, lv, rv) = _loop(envs)
    got = S._maj_eig_stacked(batch)
    assert _bits(got[0]) == _bits(worst) and _bits(got[2]) == _bits(lv) and _bits(got[3]) == _bits(rv)
    assert S._same_env(got[1], env) and got[4] is None


def test_the_batch_draws_the_samplers_environments():
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    batch = _maj_batch(a, 300)
    envs = [S._maj_env(b) for _ in range(300)]
    assert all(S._same_env(batch.env(i), e) for i, e in enumerate(envs))
    assert a.bit_generator.state == b.bit_generator.state


def test_a_tie_takes_the_first_environment():
    rng = np.random.default_rng(2)
    batch = _maj_batch(rng, 50)
    two = [i for i, k in enumerate(batch.shapes) if k == 2][:2]
    assert len(two) == 2
    for i in two:  # the same far-from-symmetric matrix and L twice: the same largest gap, first one wins
        batch.f["H"][i], batch.f["L"][i] = np.array([[0.0, 5.0], [-1.0, 0.0]]), np.array([1.0, 2.0])
    worst, (env, _, _) = _loop([batch.env(i) for i in range(50)])
    got = S._maj_eig_stacked(batch)
    assert _bits(got[0]) == _bits(worst) and S._same_env(got[1], env)
    assert S._same_env(got[1], batch.env(two[0]))
