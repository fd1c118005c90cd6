"""A practice task is one public value: :class:`PracticeTask` (data, model, loss, budget, the paper's claim).

A user's file defining ``TASK = PracticeTask(...)`` (or ``TASKS = [...]``) runs with ``lptheory check FILE.py``
under the whole protocol of the practice check (:mod:`proofs_checks.practice.protocol`): tuning with the same
budget for every optimizer, fresh seeds, paired statistics with Holm's correction, controls, figures and the
report section. The built-in tasks (:mod:`proofs_checks.practice.tasks`) are values of this same class.

Example (the README's wine task)::

    import torch
    from sklearn.datasets import load_wine
    from proofs_checks.api import PracticeTask, split_arrays

    def data(seed):
        X, y = load_wine(return_X_y=True)
        X = (X - X.mean(0)) / X.std(0)
        return split_arrays(X, y, seed)          # 60/20/20 train/val/test, tensors

    def model(seed):
        return torch.nn.Sequential(torch.nn.Linear(13, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))

    TASK = PracticeTask("wine", data, model, steps=150, batch_size=16,
                        metric=("accuracy", "accuracy", "max"))
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["PracticeTask", "split_arrays", "accuracy", "cross_entropy", "HP_TABLES", "NO_CLAIM", "tasks_of_file"]

NO_CLAIM = "no claim of the paper"

# The paper's hyper-parameters (Appendix C): CIFAR (Table 4) and LLM pretraining (Table 6). The protocol tunes
# lr, weight decay, warm-up and Stacey's alpha (the paper's grid search tuned p, eta, alpha and lambda); the
# fixed ones (betas, eps, tau, momentum) come from here, and lr is the centre of the pilot's grid.
_CIFAR = {
    "sgd": dict(lr=0.02, momentum=0.9, weight_decay=2e-4),
    "adam": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=5e-4),
    "adamw": dict(lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=5e-4),
    "lion": dict(lr=1e-3, betas=(0.9, 0.99), weight_decay=0.01),
    "stacey-pp": dict(lr=0.1, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-12),
    "stacey-p2": dict(lr=0.1, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-12),
}
_LLM = {
    "sgd": dict(lr=0.01, momentum=0.9, weight_decay=5e-4),
    "adam": dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    "adamw": dict(lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.05),
    "lion": dict(lr=0.05, betas=(0.9, 0.999), weight_decay=0.01),
    "stacey-pp": dict(lr=0.01, alpha=0.1, betas=(0.9, 0.99), weight_decay=0.01, tau=1e-3, eps=1e-8),
    "stacey-p2": dict(lr=0.01, alpha=0.1, betas=(0.9, 0.99), weight_decay=5e-4, tau=1e-3, eps=1e-8),
}
HP_TABLES = {"cifar": _CIFAR, "llm": _LLM}


def cross_entropy(output, target):
    """Mean cross-entropy over every position: ``output`` (..., classes) logits, ``target`` (...) class ids."""
    from torch.nn import functional as F

    return F.cross_entropy(output.reshape(-1, output.shape[-1]), target.reshape(-1))


def accuracy(output, target):
    """The fraction of positions whose arg-max logit is the target."""
    return (output.argmax(-1) == target).to(output.dtype).mean()


def split_arrays(X, y, seed: int, fractions=(0.6, 0.2), dtype=None) -> dict:
    """``{"train", "val", "test"}`` of ``(X, y)`` tensors: a permutation of the rows from ``seed``, then
    ``fractions`` (train, val) of them and the rest for test. ``X`` float32, ``y`` int64 when integral."""
    import torch

    X, y = np.asarray(X), np.asarray(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X and y must have as many rows, got {X.shape[0]} and {y.shape[0]}")
    perm = np.random.default_rng(np.random.SeedSequence([int(seed), 11])).permutation(len(y))
    n_tr, n_va = int(fractions[0] * len(y)), int(fractions[1] * len(y))
    parts = {"train": perm[:n_tr], "val": perm[n_tr : n_tr + n_va], "test": perm[n_tr + n_va :]}
    ydt = torch.int64 if np.issubdtype(y.dtype, np.integer) else torch.float32
    return {
        k: (torch.as_tensor(X[v], dtype=dtype or torch.float32), torch.as_tensor(y[v], dtype=ydt))
        for k, v in parts.items()
    }


def _check_callable(name, f):
    if not callable(f):
        raise TypeError(f"PracticeTask.{name} must be callable, got {type(f).__name__}")


@dataclass(frozen=True)
class PracticeTask:
    """One task for the practice protocol.

    Parameters
    ----------
    name : str
        Short name (letters, digits, ``-``, ``_``): the check's name and the records' ``task``.
    data : callable
        ``data(seed) -> {"train": (X, y), "val": (X, y), "test": (X, y)}`` of tensors (the split fixed by
        ``seed``, the check's ``--seed``).
    model : callable
        ``model(seed) -> torch.nn.Module`` (``torch.manual_seed(seed)`` is called first, so the initialization
        is a function of the run seed). Parameters only: modules with running buffers (batch norm) are refused.
    loss : callable, optional
        ``loss(output, target) -> scalar tensor``; default :func:`cross_entropy`.
    steps, batch_size : int
        The schedule: T steps of mini-batches of ``batch_size`` (cosine decay with a tuned warm-up).
    metric : tuple, optional
        ``(name, fn, "max" | "min")``; ``fn`` may be ``"accuracy"``. Reported beside the loss; the headline test
        quantity when given.
    claimed_p : float, optional
        The p the paper's sentence names for this kind of task (None: no best-p claim, only the comparison).
    claim : str, optional
        The paper's sentence (or table) this task speaks to, quoted; None reads "no claim of the paper", and the
        records then compare the optimizers with no verdict on a sentence of the paper.
    paper : dict, optional
        The paper's own cells the records quote: ``{"source": ..., "cells": {optimizer: {column: value}},
        "columns": [...], "lower_is_better": {column: bool}}``.
    hyper : {"cifar", "llm"} or dict
        The paper's table that gives the fixed hyper-parameters (betas, eps, tau) and the pilot's centre.
    quick_steps : int, optional
        T under ``--quick`` (default: a third of ``steps``).
    evals : int
        Points on the learning curve (plus T/4, T/2, T).
    eval_size : int or None
        At most this many examples of each split evaluated per point.
    scale : str
        A few words on the model and data, quoted by every record.
    requires : tuple of str
        The modules the task imports (checked before it runs: a missing one is exit 2 naming the extra).
    """

    name: str
    data: Callable
    model: Callable
    loss: Callable | None = None
    steps: int = 200
    batch_size: int = 32
    metric: tuple | None = None
    claimed_p: float | None = None
    claim: str | None = None
    paper: dict | None = None
    hyper: object = "cifar"
    quick_steps: int | None = None
    evals: int = 8
    eval_size: int | None = 2048
    scale: str = ""
    requires: tuple = ("torch",)
    _cache: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self):
        import re

        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}", self.name):
            raise ValueError(f"PracticeTask.name must be 1-40 letters, digits, '-' or '_', got {self.name!r}")
        for nm in ("data", "model"):
            _check_callable(nm, getattr(self, nm))
        if self.loss is not None:
            _check_callable("loss", self.loss)
        for nm, lo, hi in (("steps", 4, 10**7), ("batch_size", 1, 10**6), ("evals", 1, 200)):
            v = getattr(self, nm)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise ValueError(f"PracticeTask.{nm} must be an integer in [{lo}, {hi}], got {v!r}")
        if self.quick_steps is not None and (not isinstance(self.quick_steps, int) or self.quick_steps < 4):
            raise ValueError(f"PracticeTask.quick_steps must be an integer >= 4, got {self.quick_steps!r}")
        if self.metric is not None:
            m = self.metric
            if not (isinstance(m, tuple) and len(m) == 3 and isinstance(m[0], str) and m[2] in ("max", "min")):
                raise ValueError(f"PracticeTask.metric must be (name, fn, 'max' | 'min'), got {m!r}")
            if m[1] != "accuracy":
                _check_callable("metric[1]", m[1])
        if self.claimed_p is not None:
            p = self.claimed_p
            if not isinstance(p, (int, float)) or not (2.0 <= float(p) and math.isfinite(p)):
                raise ValueError(f"PracticeTask.claimed_p must be a finite number >= 2 or None, got {p!r}")
        if isinstance(self.hyper, str):
            if self.hyper not in HP_TABLES:
                raise ValueError(f"PracticeTask.hyper must be one of {sorted(HP_TABLES)} or a dict, got {self.hyper!r}")
        elif not isinstance(self.hyper, dict):
            raise TypeError(f"PracticeTask.hyper must be a table name or a dict, got {type(self.hyper).__name__}")
        if self.eval_size is not None and (not isinstance(self.eval_size, int) or self.eval_size < 1):
            raise ValueError(f"PracticeTask.eval_size must be a positive integer or None, got {self.eval_size!r}")

    @staticmethod
    def __lptheory_pack__(tasks, name: str, where: str):
        """The pack of a user's file defining ``TASK``/``TASKS`` (:func:`proofs_checks.packs.load`)."""
        from . import task_pack

        return task_pack(list(tasks), name, where)

    # -- what the protocol reads -------------------------------------------------------------------------
    @property
    def hp_table(self) -> dict:
        return HP_TABLES[self.hyper] if isinstance(self.hyper, str) else self.hyper

    def fixed_hp(self, optimizer: str) -> dict:
        """The hyper-parameters of ``optimizer`` that the protocol does not tune (betas, eps, tau, momentum)."""
        t = self.hp_table.get(optimizer) or HP_TABLES["cifar"][optimizer]
        return {k: v for k, v in t.items() if k not in ("lr", "weight_decay", "alpha")}

    def paper_lr(self, optimizer: str) -> float:
        t = self.hp_table.get(optimizer) or HP_TABLES["cifar"][optimizer]
        return float(t["lr"])

    def checkpoint_steps(self, T: int) -> list[int]:
        """The checkpoints of a run of T steps: the paper's own fractions of its schedule when ``paper`` gives
        them (Table 1: epochs 50, 100, 200 of 200; Table 3: steps 5k, 10k, 20k, 30k of 30k), else T/4, T/2, T."""
        fr = (self.paper or {}).get("checkpoints") or (0.25, 0.5, 1.0)
        return sorted({max(1, int(round(f * T))) for f in fr})

    def steps_for(self, quick: bool) -> int:
        return self.quick_steps or max(4, self.steps // 3) if quick else self.steps

    @property
    def metric_name(self) -> str | None:
        return None if self.metric is None else self.metric[0]

    @property
    def maximize(self) -> bool:
        return self.metric is not None and self.metric[2] == "max"

    @property
    def metric_fn(self):
        return accuracy if self.metric[1] == "accuracy" else self.metric[1]

    @property
    def metric_worst(self) -> float:
        """The metric given to a diverged run: chance level for accuracy (1/classes is not known here: 0),
        else +inf (minimized) or -inf (maximized)."""
        if self.metric is not None and self.metric[1] == "accuracy":
            return 0.0
        return -math.inf if self.maximize else math.inf

    def build_model(self, seed: int):
        import torch

        torch.manual_seed(int(seed))
        m = self.model(int(seed))
        if not isinstance(m, torch.nn.Module):
            raise TypeError(f"PracticeTask.model({seed}) must return a torch.nn.Module, got {type(m).__name__}")
        return m

    @property
    def loss_fn(self):
        return self.loss or cross_entropy

    def splits(self, seed: int, device: str = "cpu") -> dict:
        """``data(seed)`` checked (three splits, matching rows) and moved to ``device``; cached per seed."""
        key = (int(seed), str(device))
        if key not in self._cache:
            self._cache[key] = self._checked(self.data(int(seed)), device)
        return self._cache[key]

    def _checked(self, d, device) -> dict:
        import torch

        if not isinstance(d, dict):
            raise TypeError(f"task {self.name!r}: data(seed) must return a dict, got {type(d).__name__}")
        missing = [k for k in ("train", "val", "test") if k not in d]
        if missing:
            raise ValueError(
                f"task {self.name!r}: data(seed) has no {', '.join(repr(m) for m in missing)} split "
                "(it must return {'train': (X, y), 'val': (X, y), 'test': (X, y)})"
            )
        out = {}
        for k in ("train", "val", "test"):
            v = d[k]
            if not (isinstance(v, (tuple, list)) and len(v) == 2):
                raise ValueError(f"task {self.name!r}: data(seed)[{k!r}] must be a pair (X, y)")
            X, y = (torch.as_tensor(a) for a in v)
            if X.shape[0] != y.shape[0] or X.shape[0] == 0:
                raise ValueError(
                    f"task {self.name!r}: data(seed)[{k!r}] has {X.shape[0]} inputs and {y.shape[0]} targets "
                    "(they must match and be non-empty)"
                )
            if X.is_floating_point():
                X = X.to(torch.float32)
            out[k] = (X.to(device), y.to(device))
        if out["train"][0].shape[0] < self.batch_size:
            raise ValueError(
                f"task {self.name!r}: batch_size {self.batch_size} exceeds the training split "
                f"({out['train'][0].shape[0]} examples)"
            )
        return out

    def validate(self, seed: int = 0, device: str = "cpu") -> dict:
        """Check the task end to end on one mini-batch (clear errors naming the field); returns the splits."""
        import torch

        sp = self.splits(seed, device)
        m = self.build_model(seed).to(device)
        n_par = sum(p.numel() for p in m.parameters())
        if n_par == 0:
            raise ValueError(f"task {self.name!r}: model(seed) has no parameters")
        if any(b.numel() for b in m.buffers()):
            raise ValueError(
                f"task {self.name!r}: model(seed) has buffers ({', '.join(n for n, _ in m.named_buffers())}); "
                "the stacked training needs a model of parameters only (no batch norm running statistics)"
            )
        X, y = sp["train"]
        xb, yb = X[: self.batch_size], y[: self.batch_size]
        try:
            out = m(xb)
        except Exception as e:  # the user's model on the user's data
            raise ValueError(f"task {self.name!r}: model(seed) fails on a batch of data's train X: {e}") from e
        try:
            val = self.loss_fn(out, yb)
        except Exception as e:
            raise ValueError(
                f"task {self.name!r}: loss(output, target) fails (shapes {tuple(out.shape)}, {tuple(yb.shape)}): {e}"
            ) from e
        if not torch.is_tensor(val) or val.numel() != 1:
            shape = tuple(val.shape) if torch.is_tensor(val) else type(val).__name__
            raise ValueError(f"task {self.name!r}: loss(output, target) must return a scalar tensor, got {shape}")
        if self.metric is not None:
            mv = self.metric_fn(out, yb)
            if not torch.is_tensor(mv) or mv.numel() != 1:
                raise ValueError(f"task {self.name!r}: metric {self.metric[0]!r} must return a scalar tensor")
        return sp

    def parameters(self, seed: int = 0) -> int:
        return sum(p.numel() for p in self.build_model(seed).parameters())


def tasks_of_file(path: str) -> list:
    """The tasks a user's file defines (``TASK`` and/or ``TASKS``), imported by the loader of
    ``lptheory check FILE.py`` (errors name the file and line)."""
    from lptheory.plugins import PluginError, load
    from proofs_checks.packs import PackError

    try:
        ns = vars(load(path))
    except PluginError as exc:
        raise PackError(str(exc)) from None
    vals = ([ns["TASK"]] if "TASK" in ns else []) + list(ns.get("TASKS", []))
    if not vals or not all(isinstance(v, PracticeTask) for v in vals):
        raise PackError(f"{path}: defines no PracticeTask as TASK or TASKS")
    return vals
