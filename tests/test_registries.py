"""Every registered optimizer and every check of the built-in pack, parametrized from their registries (a new
one is covered without editing a list); problems and noise models: tests/test_problem_protocol.py."""

from __future__ import annotations

import numpy as np
import pytest

from lptheory.optimizers import OPTIMIZERS
from lptheory.spectral import MatrixOptimizer
from proofs_checks.packs import DEFAULT_PACK, load

PACK = load(DEFAULT_PACK)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_registered_optimizer_is_pure_batched_and_per_replicate(name):
    opt = OPTIMIZERS[name]()
    assert opt.name == name
    rng = np.random.default_rng(sum(map(ord, name)))
    shape = (3, 4, 5) if isinstance(opt, MatrixOptimizer) else (3, 7)  # matrices (..., m, n): Muon, Scion, ...
    theta, g = rng.standard_normal(shape), rng.standard_normal(shape)
    state = opt.init(theta)
    before = (theta.copy(), g.copy(), {k: np.array(state[k], copy=True) for k in opt.buffers})
    new, new_state = opt.step(theta, g, state)
    np.testing.assert_array_equal(theta, before[0])  # inputs untouched
    np.testing.assert_array_equal(g, before[1])
    for k in opt.buffers:
        np.testing.assert_array_equal(state[k], before[2][k])
        assert new_state[k].shape == theta.shape
    assert new.shape == theta.shape and np.all(np.isfinite(new)) and not np.array_equal(new, theta)
    one, _ = opt.step(theta[2], g[2], opt.init(theta[2]))  # replicates are independent
    np.testing.assert_array_equal(one, new[2])
    again, _ = opt.step(theta, g, opt.init(theta))  # same inputs, same bits
    np.testing.assert_array_equal(again, new)


@pytest.mark.parametrize("name", list(PACK.checks))
def test_every_check_of_the_pack_is_registered_whole(name):
    c = PACK.checks[name]
    assert c.title and c.description and callable(c.fn)
    assert set(c.defaults) == set(c.options)  # every option has a default the report can use
    for key, default in c.defaults.items():  # --set KEY=<the default's text> gives the default back
        text = ",".join(str(v) for v in default) if isinstance(default, list) else str(default)
        assert c.coerce_option(key, text) == default
    if "p" in c.options:
        with pytest.raises(ValueError, match="--p must be in"):
            c.resolve({"p": [1.0]})
    assert PACK.section(name)
