import os

import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    return np.random.default_rng(np.random.SeedSequence(20251121))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` need CUDA: skipped (with the reason) on machines without it, such as CI."""
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def stacey_quick_report(tmp_path_factory):
    """`lptheory report --quick` of the Stacey pack at seed 0, once per test session: (out_dir, result)."""
    from lptheory.app.cli import main

    out = tmp_path_factory.mktemp("stacey-quick-report")
    rc = main(["report", "--quick", "--quiet", "--out", str(out)])
    assert rc == 0
    import json

    return out, json.loads((out / "claims.json").read_text())
