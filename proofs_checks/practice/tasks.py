"""The two small real tasks of the practice pack (data that ship inside installed packages, no download).

* ``digits``: scikit-learn's handwritten digits (``sklearn.datasets.load_digits``, 1,797 8x8 images, 10
  classes), a one-hidden-layer MLP; metrics: training NLL and test accuracy (as the paper's Tables 1-2).
* ``charlm``: character-level language modelling on the English text that ships with CPython
  (``pydoc_data.topics``, about 465k characters), a 2-layer pre-LayerNorm transformer; metrics: training
  and test loss (as the paper's Table 3).

Splits are fixed by the split seed (the check's ``--seed``): digits 60/20/20 of the images; charlm 80/10/10 of
100 contiguous blocks of the text (windows never straddle two blocks). Models are float32, as the paper's.
Everything here needs torch and scikit-learn (the ``practice`` extra).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["Scale", "SCALES", "Task", "make_task", "TASKS"]

TASKS = ("digits", "charlm")


@dataclass(frozen=True)
class Scale:
    """The size of one task's runs: ``steps`` (T), ``batch`` (n), ``width`` (hidden units / d_model),
    ``ctx`` (charlm context length), ``evals`` (points on the learning curve), ``eval_windows`` (charlm
    windows per evaluation), ``probe`` (samples per probe point)."""

    steps: int
    batch: int
    width: int
    ctx: int = 0
    evals: int = 12
    eval_windows: int = 0
    probe: int = 0


# name -> task -> Scale. quick: a smoke run (minutes on 2 cores); default: the check's default; cuda: larger
# models and longer schedules for a GPU (--set device=cuda)
SCALES = {
    "quick": {
        "digits": Scale(steps=200, batch=32, width=64, evals=8, probe=256),
        "charlm": Scale(steps=80, batch=16, width=32, ctx=24, evals=4, eval_windows=48, probe=32),
    },
    "default": {
        "digits": Scale(steps=600, batch=32, width=64, evals=10, probe=512),
        "charlm": Scale(steps=240, batch=16, width=32, ctx=32, evals=8, eval_windows=96, probe=48),
    },
    "cuda": {
        "digits": Scale(steps=4000, batch=64, width=256, evals=16, probe=1024),
        "charlm": Scale(steps=6000, batch=64, width=128, ctx=128, evals=16, eval_windows=1024, probe=128),
    },
}


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([int(k) for k in key]))


class MLP(nn.Module):
    """64 -> width -> 10, ReLU."""

    def __init__(self, width: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(64, width), nn.Linear(width, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        *lead, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (u.reshape(*lead, t, h, d // h).transpose(-2, -3) for u in (q, k, v))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // h)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(-2, -3).reshape(*lead, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    """A 2-layer pre-LayerNorm causal transformer (token and position embeddings, 2 heads)."""

    def __init__(self, vocab: int, d: int, ctx: int, layers: int = 2, heads: int = 2):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(_Block(d, heads) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        t = idx.shape[-1]
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


class Task:
    """One task at one scale: data splits, a model factory, batches, losses and metrics.

    ``batch(rng)`` -> (inputs, targets) of the training split; ``loss(model, x, y)`` (mean NLL);
    ``evaluate(model, split)`` -> {"loss", "acc" (digits)} on a fixed evaluation set of the split;
    ``probe_set()`` -> (inputs, targets) the probe's samples (fixed)."""

    def __init__(self, name: str, scale: Scale, split_seed: int, device: str = "cpu"):
        if name not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {name!r}")
        self.name, self.scale, self.split_seed, self.device = name, scale, int(split_seed), device
        (self._load_digits if name == "digits" else self._load_text)()

    # -- data ----------------------------------------------------------------------------------------
    def _load_digits(self):
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        perm = _rng(self.split_seed, 11).permutation(len(y))
        n_tr, n_va = int(0.6 * len(y)), int(0.2 * len(y))
        parts = {"train": perm[:n_tr], "val": perm[n_tr : n_tr + n_va], "test": perm[n_tr + n_va :]}
        Xt = torch.tensor(X / 16.0, dtype=torch.float32, device=self.device)
        yt = torch.tensor(y, dtype=torch.int64, device=self.device)
        self.data = {
            k: (Xt[torch.as_tensor(v, device=self.device)], yt[torch.as_tensor(v, device=self.device)])
            for k, v in parts.items()
        }
        self.classes = 10

    def _load_text(self):
        import pydoc_data.topics as topics

        text = "\n".join(topics.topics[k] for k in sorted(topics.topics))
        chars = sorted(set(text))
        self.vocab = len(chars)
        code = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        lut = {ord(c): i for i, c in enumerate(chars)}
        ids = np.array([lut[int(c)] for c in code], dtype=np.int64)
        blocks = np.array_split(ids, 100)
        order = _rng(self.split_seed, 12).permutation(100)
        parts = {"train": order[:80], "val": order[80:90], "test": order[90:]}
        self.blocks = {k: [torch.as_tensor(blocks[i], device=self.device) for i in sorted(v)] for k, v in parts.items()}
        self.classes = self.vocab
        # fixed evaluation windows per split (and for the training loss)
        self._eval = {
            k: self._windows(k, self.scale.eval_windows, _rng(self.split_seed, 13, i))
            for i, k in enumerate(("train", "val", "test"))
        }

    def _windows(self, split: str, count: int, rng: np.random.Generator):
        c = self.scale.ctx
        blocks = self.blocks[split]
        sizes = np.array([len(b) - c - 1 for b in blocks])
        which = rng.choice(len(blocks), size=count, p=sizes / sizes.sum())
        starts = (rng.random(count) * sizes[which]).astype(np.int64)
        x = torch.stack([blocks[w][s : s + c] for w, s in zip(which, starts)])
        y = torch.stack([blocks[w][s + 1 : s + c + 1] for w, s in zip(which, starts)])
        return x, y

    # -- the model -----------------------------------------------------------------------------------
    def model(self, seed: int) -> nn.Module:
        torch.manual_seed(int(seed))
        if self.name == "digits":
            m = MLP(self.scale.width)
        else:
            m = TinyGPT(self.vocab, self.scale.width, self.scale.ctx)
        return m.to(self.device)

    def batch(self, rng: np.random.Generator):
        n = self.scale.batch
        if self.name == "digits":
            X, y = self.data["train"]
            idx = torch.as_tensor(rng.choice(len(y), size=n, replace=False), device=self.device)
            return X[idx], y[idx]
        return self._windows("train", n, rng)

    @staticmethod
    def loss(model, x, y):
        out = model(x)
        return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    @torch.no_grad()
    def evaluate(self, model, split: str) -> dict:
        model.eval()
        x, y = self.data[split] if self.name == "digits" else self._eval[split]
        out = model(x)
        res = {"loss": float(F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)))}
        if self.name == "digits":
            res["acc"] = float((out.argmax(-1) == y).double().mean())
        model.train()
        return res

    def probe_set(self):
        """The probe's fixed samples: digits, the first ``probe`` training images (all of them when fewer);
        charlm, ``probe`` training windows drawn with the split seed."""
        if self.name == "digits":
            X, y = self.data["train"]
            k = min(self.scale.probe, len(y))
            return X[:k], y[:k]
        return self._windows("train", self.scale.probe, _rng(self.split_seed, 14))


def make_task(name: str, scale: str, split_seed: int, device: str = "cpu") -> Task:
    """The task ``name`` at scale ``scale`` (``quick``, ``default`` or ``cuda``)."""
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {sorted(SCALES)}, got {scale!r}")
    return Task(name, SCALES[scale][name], split_seed, device)
