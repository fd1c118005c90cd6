"""Alias of :mod:`lptheory.app.testing.pytest_plugin`, for installs whose ``pytest11`` entry point
still names this module (an editable install made before the move; re-install to update it)."""

from lptheory.app.testing.pytest_plugin import (  # noqa: F401
    lptheory,
    lptheory_seed,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
)
