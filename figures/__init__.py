"""Figures drawn from claim records, never recomputing them (top layer), and the report.

:func:`figures_for` draws a check's figures: the functions its pack registers
(:meth:`proofs_checks.packs.Pack.figure`, :meth:`~proofs_checks.packs.Pack.figure_functions`) or the
generic ratio figure."""

from __future__ import annotations

import os

__all__ = ["figures_for", "registered"]


def registered(pack) -> dict:
    """The figure functions a pack registers: ``{check: [(stem, fn), ...]}``."""
    return pack.figure_functions()


def figures_for(pack, check: str, records, out_dir: str) -> list[str]:
    """Draw ``check``'s figures from ``records`` into ``out_dir``; returns the paths (PNG and SVG)."""
    from .generic import plot_rates, plot_ratios

    os.makedirs(out_dir, exist_ok=True)
    reg = registered(pack).get(check)
    paths = []
    if reg:
        for stem, fn in reg:
            paths += fn(records, os.path.join(out_dir, stem))
    else:
        title = f"{pack.section(check)}: every record, measured / claimed" if check in pack.checks else None
        paths += plot_ratios(records, os.path.join(out_dir, f"{check}_ratios"), title=title)
        paths += plot_rates(records, os.path.join(out_dir, f"{check}_rates"))
    return paths
