"""Shared plotting helpers: the Agg backend, verdict colours with their legend handles, saving as PNG
and SVG."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# constrained layout: axis labels, titles and outside legends are never clipped (tight_layout is not needed)
matplotlib.rcParams["figure.constrained_layout.use"] = True

__all__ = ["plt", "STATUS_COLOR", "status_handles", "save", "d"]

STATUS_COLOR = {
    "holds": "tab:green",
    "violated": "tab:red",
    "inconclusive": "tab:orange",
    "not-applicable": "tab:gray",
}


def status_handles(statuses) -> list:
    """Legend handles explaining the verdict colours that appear in a figure."""
    return [
        plt.Line2D([], [], marker="o", ls="", color=STATUS_COLOR[s], label=s) for s in STATUS_COLOR if s in statuses
    ]


def d(r):
    """A record as a dict (records may be Claim objects or dicts read from JSON)."""
    return r.to_dict() if hasattr(r, "to_dict") else r


def save(fig, stem) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        path = f"{stem}.{ext}"
        fig.savefig(path, dpi=130, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths
