"""Backward-compatible alias of :mod:`lptheory.app.testing` (claims as tests), which moved into the
application floor. ``from lptheory.testing import assert_claim_holds`` keeps working."""

from lptheory.app.testing import (  # noqa: F401
    __all__,
    assert_claim_holds,
    assert_violation_found,
    default_seed,
    run_claim,
)
