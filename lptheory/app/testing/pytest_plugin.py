"""The lptheory pytest plugin (registered through the ``pytest11`` entry point when the package is
installed): claims as tests in a user's suite.

* ``--lptheory-seed N``: the seed of every claim assertion (default 0); the ``lptheory_seed`` fixture;
* ``@pytest.mark.lptheory_slow``: a slow claim check, skipped unless ``--lptheory-slow`` is given;
* the ``lptheory`` fixture: the assertions (``lptheory.assert_claim_holds(...)``,
  ``lptheory.assert_violation_found(...)``, ``lptheory.run_claim(...)``), also importable from
  :mod:`lptheory.app.testing`.

Importing this module is cheap: the claim machinery loads when an assertion runs.
"""

from __future__ import annotations

import pytest

from . import SEED


def pytest_addoption(parser):
    from ..cli import seed_arg  # an integer in [0, 2**63 - 1], as every --seed (a usage error otherwise)

    group = parser.getgroup("lptheory", "claims as tests (lptheory)")
    group.addoption(
        "--lptheory-seed", type=seed_arg, default=None, help="seed of the lptheory claim assertions (default 0)"
    )
    group.addoption("--lptheory-slow", action="store_true", default=False, help="run the tests marked lptheory_slow")


def pytest_configure(config):
    config.addinivalue_line("markers", "lptheory_slow: a slow claim check (run with --lptheory-slow)")
    seed = config.getoption("--lptheory-seed", default=None)
    if seed is not None:
        SEED["value"] = int(seed)


def pytest_collection_modifyitems(config, items):
    if config.getoption("--lptheory-slow", default=False):
        return
    skip = pytest.mark.skip(reason="a slow claim check: run with --lptheory-slow")
    for item in items:
        if "lptheory_slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def lptheory_seed(request) -> int:
    """The seed of the claim assertions (``--lptheory-seed``, default 0)."""
    return SEED["value"]


class _Assertions:
    def __init__(self, seed):
        self.seed = seed

    def assert_claim_holds(self, claim, setting=None, **kw):
        from . import assert_claim_holds

        kw.setdefault("seed", self.seed)
        return assert_claim_holds(claim, setting, **kw)

    def assert_violation_found(self, claim, setting=None, **kw):
        from . import assert_violation_found

        kw.setdefault("seed", self.seed)
        return assert_violation_found(claim, setting, **kw)

    def run_claim(self, claim, setting=None, **kw):
        from . import run_claim

        kw.setdefault("seed", self.seed)
        return run_claim(claim, setting, **kw)


@pytest.fixture
def lptheory(lptheory_seed):
    """The claim assertions, seeded with ``--lptheory-seed``."""
    return _Assertions(lptheory_seed)
