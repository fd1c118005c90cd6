"""The practice pack's figures (proofs_checks.practice.figures), drawn from synthetic records of the experiments'
schema: what each figure shows (read back from the matplotlib figure before it is saved), that non-finite values
and missing data never break one, and that they are registered for every task."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from proofs_checks.practice import PACK  # noqa: E402
from proofs_checks.practice import figures as F  # noqa: E402
from proofs_checks.practice.tasks import BUILTIN  # noqa: E402

KINDS = ("tuning", "forest", "curves", "p")


def tuning_entry(lr_centre: float, *, alpha: bool = False, scores=None, edge=()) -> dict:
    rng = np.random.default_rng(int(lr_centre * 1000) % 97)
    pts = []
    for k in range(6):
        p = {"lr": lr_centre * 10 ** (k / 2 - 1.25), "weight_decay": 10 ** (-5 + k * 0.6), "warmup": 0.04 * k}
        if alpha:
            p["alpha"] = 10 ** (-2 + 0.3 * k)
        pts.append(p)
    sc = scores if scores is not None else [0.3 + abs(k - 2) * 0.2 + rng.uniform(0, 0.01) for k in range(6)]
    space = {"lr": [lr_centre / 30, lr_centre * 30], "weight_decay": [1e-6, 0.1], "warmup": [0.0, 0.25]}
    if alpha:
        space["alpha"] = [1e-3, 1.0]
    chosen = pts[int(np.nanargmin([float(s) for s in sc]))] if any(math.isfinite(float(s)) for s in sc) else pts[0]
    return {
        "space": space,
        "log": ["lr", "weight_decay"] + (["alpha"] if alpha else []),
        "trials": 6,
        "chosen": dict(chosen),
        "at_edge": list(edge),
        "points": pts,
        "scores": sc,
        "pilot": {
            "lr": [lr_centre * 10**k for k in range(-3, 4)],
            "val_loss": [2.3, 2.0, 1.0, 0.4, 0.35, "inf", 0.0],
            "chosen": 4,
        },
    }


def band(mean):
    m = np.array(mean, dtype=float)
    return {"step": [0, 10, 20, 30], "mean": list(m), "lo": list(m - 0.05), "hi": list(m + 0.05)}


def records(task: str = "toy", *, diverged: bool = False) -> list[dict]:
    """A task's records: headline (curves, per-seed curves, tuning), a primary and a secondary outperforms record
    per baseline, the slowed-AdamW control and two best-p readings; ``diverged``: Lion's runs blow up."""
    common = {"task": task, "scale": "quick", "model": "MLP 4-4-2", "seeds": 3}
    labels = ["SGD w/ momentum", "Adam", "AdamW", "Lion", "Stacey(p,p) p=3", "Stacey(p,2) p=3"]
    curves = {}
    for i, lab in enumerate(labels):
        loss = [2.0, 1.0 - 0.1 * i, 0.5 - 0.05 * i, 0.3 - 0.03 * i]
        acc = [0.1, 0.6 + 0.02 * i, 0.8 + 0.01 * i, 0.9 + 0.01 * i]
        if diverged and lab == "Lion":
            loss, acc = [2.0, "inf", "inf", "inf"], [0.1, 0.0, 0.0, 0.0]
        curves[lab] = {"train_loss": band(F._arr(loss)), "test_metric": band(F._arr(acc))}
    tuning = {lab: tuning_entry(10.0 ** (i - 3), alpha=lab.startswith("Stacey")) for i, lab in enumerate(labels)}
    if diverged:
        tuning["Lion"]["scores"] = ["inf"] * 6
    head = {
        "id": "practice.outperforms.headline",
        "check": task,
        "status": "inconclusive",
        "params": {**common, "variant": "Stacey(p,p)", "p": 3.0, "metric": "test accuracy"},
        "data": {
            "curves": curves,
            "curves_by_seed": {
                lab: {"step": [0, 10, 20, 30], "values": [[float(v) for v in F._arr(c["test_metric"]["mean"])]] * 3}
                for lab, c in curves.items()
            },
            "maximize": True,
            "headline": "test_metric",
            "checkpoints": [10, 20, 30],
            "tuning": tuning,
        },
    }
    out = [head]
    for role, cp in (("primary", "step 30 of 30"), ("secondary", "step 10 of 30")):
        for metric in ("training loss", "test accuracy"):
            for k, base in enumerate(labels[:4]):
                diff = [0.02 * (k - 1.5) + 0.001 * s for s in range(3)]
                data = {
                    "difference": diff,
                    "test": {"kind": "paired t", "correction": "holm", "family": 16, "alpha": 0.05},
                    "mean": float(np.mean(diff)),
                    "ci95": [float(np.mean(diff)) - 0.01, float(np.mean(diff)) + 0.01],
                    "holm_better": 0.01 if k == 0 else 0.5,
                    "holm_worse": 0.02 if k == 3 else 0.5,
                }
                if diverged and base == "Lion":
                    data = {"difference": [float("nan"), "inf", 0.1], "test": data["test"]}
                out.append(
                    {
                        "id": "practice.outperforms",
                        "check": task,
                        "status": "holds" if k == 0 else "inconclusive",
                        "params": {
                            **common,
                            "variant": "Stacey(p,p)",
                            "p": 3.0,
                            "baseline": base,
                            "metric": metric,
                            "checkpoint": cp,
                            "role": role,
                        },
                        "data": data,
                    }
                )
    out.append(
        {
            "id": "practice.outperforms.control",
            "check": task,
            "status": "inconclusive",
            "params": {
                **common,
                "variant": "AdamW at 1/100",
                "baseline": "AdamW (tuned)",
                "metric": "test accuracy",
                "control": "slowed-adamw",
            },
            "data": {"difference": [0.3, 0.25, 0.35]},
            "witness": {"kind": "practice-paired-holm", "recheck": {"violated": True}},
        }
    )
    vals = [[0.9, 0.91, 0.92], [0.93, 0.94, "inf" if diverged else 0.95], [0.91, 0.9, 0.92]]
    for reading in ("literal argmin", "within 0.5"):
        out.append(
            {
                "id": "practice.best-p",
                "check": task,
                "status": "inconclusive",
                "params": {**common, "variant": "Stacey(p,p)", "claimed_p": 3.0, "reading": reading},
                "data": {"p": [2.0, 3.0, 4.0], "values": vals, "freq": [0.1, 0.8, 0.1]},
            }
        )
    return out


@pytest.fixture
def grab(monkeypatch):
    """The figures as drawn (before saving): ``F.save`` replaced by a recorder that closes the figure."""
    got = []

    def fake_save(fig, stem):
        got.append(fig)
        F.plt.close(fig)
        return [stem + ".png", stem + ".svg"]

    monkeypatch.setattr(F, "save", fake_save)
    return got


def test_every_builtin_task_and_a_user_task_get_the_four_figures():
    figs = PACK.figure_functions()
    for name in BUILTIN:
        assert [stem for stem, _ in figs[name]] == [f"practice_{name}_{k}" for k in KINDS]
    assert [s for s, _ in figs["probe-controls"]] == ["practice_probe_controls"]
    from proofs_checks.api import Pack

    user = Pack("mine", title="user tasks")
    made = F.register_task_figures(user, "wine")
    assert [s for s, _ in made] == [f"practice_wine_{k}" for k in KINDS]
    assert [s for s, _ in user.figure_functions()["wine"]] == [s for s, _ in made]
    with pytest.raises(ValueError, match="task_name"):
        F.register_task_figures(user, "")


def test_a_users_task_pack_gets_its_figures_from_for_pack():
    from proofs_checks.api import Pack
    from proofs_checks.practice import task_check

    user = Pack("mine", title="user tasks")
    task_check(user, BUILTIN["cancer"])  # registration only: nothing runs
    got = F.for_pack(user)
    assert list(got) == ["cancer"] and [s for s, _ in got["cancer"]] == [f"practice_cancer_{k}" for k in KINDS]
    assert "efficiency" not in F.for_pack(PACK) and set(BUILTIN) <= set(F.for_pack(PACK))


def test_a_task_figure_draws_only_its_own_task(grab, tmp_path):
    fns = dict(F.figures_for_task("wine"))
    assert fns["practice_wine_curves"](records("digits"), str(tmp_path / "x")) == []
    assert fns["practice_wine_curves"](records("digits") + records("wine"), str(tmp_path / "x"))
    assert "wine" in grab[-1].get_suptitle() and "digits" not in grab[-1].get_suptitle()


def test_tuning_figure_marks_the_chosen_point_the_edges_and_log_axes(grab, tmp_path):
    recs = records()
    recs[0]["data"]["tuning"]["Adam"]["at_edge"] = ["lr"]
    assert F.plot_tuning(recs, str(tmp_path / "t"))
    fig = grab[-1]
    axes = np.array(fig.axes[: 6 * 4]).reshape(6, 4)  # 6 optimizers x (lr, weight decay, warm-up, alpha)
    adam = recs[0]["data"]["tuning"]["Adam"]
    lr_ax = axes[1][0]
    assert lr_ax.get_xscale() == "log" and axes[1][2].get_xscale() == "linear"
    edges = sorted(ln.get_xdata()[0] for ln in lr_ax.get_lines() if ln.get_linestyle() == "--")
    assert edges == pytest.approx(adam["space"]["lr"])
    stars = [c for c in lr_ax.collections if c.get_offsets().shape[0] == 1 and c.get_sizes()[0] == 150]
    assert len(stars) == 1 and stars[0].get_offsets()[0][0] == pytest.approx(adam["chosen"]["lr"])
    assert "at the edge" in lr_ax.get_xlabel()
    assert axes[1][3].texts and "not tuned" in axes[1][3].texts[0].get_text()  # Adam has no alpha
    assert axes[4][3].get_xscale() == "log"  # Stacey's alpha


def test_forest_plot_colours_by_holm_and_keeps_the_control_apart(grab, tmp_path):
    assert F.plot_forest(records(), str(tmp_path / "f"))
    fig = grab[-1]
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("training loss") and titles[1].startswith("test accuracy (higher is better)")
    assert titles[2].startswith("control")
    ax = fig.axes[1]
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ticks) == 4 and ticks[0] == "Stacey(p,p), p = 3 vs SGD w/ momentum"  # primary family only
    means = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    colours = [ln.get_color() for ln in means]
    assert colours[0] == "tab:green" and colours[3] == "tab:red" and colours[1] == "0.45"
    assert any(ln.get_xdata()[0] == 0.0 and ln.get_color() == "k" for ln in ax.get_lines())  # the zero line
    ctl = fig.axes[2]
    assert [t.get_text() for t in ctl.texts] == ["found losing, as it must"]


def test_figures_survive_divergence_and_nonfinite_values(grab, tmp_path):
    recs = records(diverged=True)
    for kind in KINDS:
        assert getattr(F, f"plot_{kind}")(recs, str(tmp_path / kind)), kind
    forest = grab[1]
    assert any("no test" in t.get_text() for t in forest.legends[0].get_texts())
    curves = grab[2]
    assert any("Lion (diverged)" == t.get_text() for t in curves.legends[0].get_texts())
    tuning = grab[0]
    lion = np.array(tuning.axes[:24]).reshape(6, 4)[3][0]
    assert lion.texts and "every tuning point diverged" in lion.texts[0].get_text()
    p_ax = grab[3].axes[0]
    assert "final test accuracy" in p_ax.get_ylabel()
    assert [t.get_text() for t in p_ax.get_xticklabels()] == ["2", "3", "4"]
    assert any("1 diverged" in t.get_text() for t in p_ax.texts)


def test_probe_control_figure_reads_its_lists_and_survives_a_zero_certificate(grab, tmp_path):
    rec = {
        "id": "practice.probe.sigma",
        "data": {
            "sigma": [0.1, 2.0, 0.1],
            "sigma_est": [0.11, 1.9, "nan"],
            "p": [2.0, 3.0],
            "G": [1.0, 2.0],
            "G_cert": [2.0, 0.0],
            "L": [1.0, 1.0],
            "L_cert": [4.0, 2.0],
        },
    }
    assert F.plot_controls([rec], str(tmp_path / "c"))
    ratios = [ln.get_ydata().tolist() for ln in grab[-1].axes[1].get_lines()[:2]]
    assert ratios[0][0] == 0.5 and math.isinf(ratios[0][1]) and ratios[1] == [0.25, 0.5]


def test_missing_data_draws_nothing(tmp_path):
    stem = str(tmp_path / "none")
    for kind in KINDS:
        assert getattr(F, f"plot_{kind}")([], stem) == []
        assert getattr(F, f"plot_{kind}")([{"id": "practice.outperforms.headline", "data": None}], stem) == []
    assert F.plot_controls([], stem) == [] and F.plot_profile(records("a"), stem) == []
    assert not os.listdir(tmp_path)


def test_the_curves_are_written_as_png_and_svg(tmp_path):
    paths = F.plot_curves(records("a") + records("b"), str(tmp_path / "curves"), task="a")
    assert [os.path.splitext(p)[1] for p in paths if ".narrow." not in p] == [".png", ".svg"]  # (+ a phone layout)
    assert all(os.path.getsize(p) > 1000 for p in paths)


@pytest.mark.slow
def test_every_figure_is_written_from_records_with_divergence(tmp_path):
    recs = records("a", diverged=True) + records("b")
    for kind in KINDS:
        paths = getattr(F, f"plot_{kind}")(recs, str(tmp_path / kind), task="a")
        assert [os.path.splitext(p)[1] for p in paths if ".narrow." not in p] == [".png", ".svg"]
        assert os.path.getsize(paths[0]) > 1000
    paths = F.plot_profile(recs, str(tmp_path / "profile"), draws=50)
    assert len([p for p in paths if ".narrow." not in p]) == 2 and os.path.getsize(paths[0]) > 1000
