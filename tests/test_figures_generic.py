"""The generic figures (figures.generic) depend only on what a report's claims.json keeps: records drawn as a check
returns them and the same records written and read back give the same pixels."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from figures.generic import _label, plot_rates, plot_ratios
from proofs_checks.records import clean


def _records() -> list[dict]:
    """Records as a check returns them: parameters in the check's order (not by name), numpy numbers, tuples."""
    return [
        {
            "id": "thm1.bias",
            "check": "coverage",
            "status": "holds",
            "relation": "<=",
            "params": {"p": 3.0, "law": "g~ in {-1, 3} with probability 1/2 each"},
            "ratio": np.float64(0.42),
            "empirical": 0.84,
            "bound": 2.0,
            "ci": (np.float64(0.8), np.float64(0.9)),  # a tuple: read back as a list
        },
        {
            "id": "alg2.uniform-convexity",
            "check": "coverage",
            "status": "violated",
            "relation": "<=",
            "params": {"s": 0.5, "p": 4.0, "box": "the boundary of [-1, 1]^2"},
            "ratio": 1.7,
            "empirical": 3.4,
            "bound": 2.0,
        },
        {
            "id": "cor1",
            "check": "coverage",
            "status": "holds",
            "relation": "==",
            "params": {"n": 1, "d": 3, "k": 3},
            "show": ("d", "k"),
            "empirical": 1.0,
            "bound": 1.0,
        },
        {
            "id": "thm1.rate",
            "check": "coverage",
            "status": "holds",
            "relation": "rate",
            "params": {"p": 3.0, "noise": "rademacher"},
            "data": {
                "rate": {
                    "x": (8, 16, 32, 64),
                    "y": np.array([1.0, 0.7, 0.5, 0.35]),
                    "theory": 0.5,
                    "fit": {"exponent": np.float64(0.49)},
                }
            },
        },
    ]


def _read_back(records) -> list[dict]:
    """The records as figures.report writes them to claims.json and a reader gets them back."""
    return json.loads(json.dumps(clean(records), sort_keys=True, allow_nan=False))


def _pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGBA"))


@pytest.mark.parametrize("plot", [plot_ratios, plot_rates])
def test_a_figure_from_records_and_from_their_json_read_back_is_the_same(tmp_path, plot):
    recs = _records()
    back = _read_back(recs)
    assert list(back[0]["params"]) == ["law", "p"]  # what claims.json changes: the order, the tuples
    ours = plot(recs, str(tmp_path / "direct"))
    theirs = plot(back, str(tmp_path / "read_back"))
    assert [p.replace("direct", "") for p in ours] == [p.replace("read_back", "") for p in theirs] and ours
    for a, b in zip(ours, theirs):
        if a.endswith(".png"):
            assert np.array_equal(_pixels(a), _pixels(b)), a
    assert _records()[0]["ci"] == (0.8, 0.9)  # the caller's records untouched


def test_row_labels_list_the_common_parameters_first_then_by_name():
    recs = _read_back(_records())
    assert _label(recs[0]).startswith("thm1.bias  p=3, law=")
    assert _label(recs[1], width=200) == "alg2.uniform-convexity  p=4, box=the boundary of [-1, 1]^2, s=0.5"
    assert _label(recs[2]) == "cor1  d=3, k=3"  # its show, in its order
