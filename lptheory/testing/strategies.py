"""Alias of :mod:`lptheory.app.testing.strategies`."""

from lptheory.app.testing.strategies import *  # noqa: F401,F403
