"""Argument checks shared by every layer: a bad value raises ``ValueError`` (or ``TypeError``) naming the
parameter and its allowed range.

The public face of lptheory's validators, for the layers above it (``synthetic``, ``proofs_checks``) and
for user code: ``real(name, value, lo=, hi=, lo_open=, hi_open=, allow_inf=)``, ``integer(name, value,
lo=)``, ``choice(name, value, options)``, ``exponent(name, p, lo=, lo_open=, allow_inf=)``. Inside
lptheory the same functions are imported from its private ``_validate`` module.
"""

from __future__ import annotations

from ._validate import choice, exponent, integer, real

__all__ = ["real", "integer", "choice", "exponent"]
