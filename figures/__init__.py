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


def figures_for(pack, check: str, records, out_dir: str, on_error=None) -> list[str]:
    """Draw ``check``'s figures from ``records`` into ``out_dir``; returns the paths (PNG and SVG, and the phone
    layout ``.narrow.png`` of a wide one: :func:`figures.style.save`).

    ``on_error(what, exc)``, when given, is called for a figure that raises while it is drawn (``what`` names
    the figure and the check; its partial files are removed) and the other figures are still drawn; without it
    the exception propagates."""
    from .generic import plot_rates, plot_ratios
    from .style import old_objects_left_alone

    os.makedirs(out_dir, exist_ok=True)
    try:
        reg = registered(pack).get(check)
    except Exception as exc:  # noqa: BLE001 -- the pack's figures module itself cannot be imported
        if on_error is None:
            raise
        on_error(f"the figures of check {check} (its pack's figures module)", exc)
        return []
    if reg:
        todo = [(stem, fn) for stem, fn in reg]
    else:
        title = f"{pack.section(check)}: every record, measured / claimed" if check in pack.checks else None
        todo = [
            (f"{check}_ratios", lambda recs, stem: plot_ratios(recs, stem, title=title)),
            (f"{check}_rates", plot_rates),
        ]
    paths = []
    with old_objects_left_alone():  # the collector leaves the process's older objects alone meanwhile
        for stem, fn in todo:
            base = os.path.join(out_dir, stem)
            try:
                paths += fn(records, base)
            except Exception as exc:  # noqa: BLE001 -- a figure is never worth the data: skipped, named
                if on_error is None:
                    raise
                for ext in (".png", ".svg", ".narrow.png"):  # what the figure wrote before it failed
                    if os.path.exists(base + ext):
                        os.remove(base + ext)
                on_error(f"figure {stem} of check {check}", exc)
    return paths
