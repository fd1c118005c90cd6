"""The built-in practice tasks, each one :class:`~proofs_checks.practice.task.PracticeTask` value (data that ship
inside installed packages, no download). A task's name appears once, in its value; :data:`BUILTIN` lists them.

* ``digits``: scikit-learn's handwritten digits (1,797 8x8 images, 10 classes), an MLP 64-64-10; training NLL
  and test accuracy (the analogue of the paper's CIFAR Table 1; claimed p = 2);
* ``charlm``: character-level language modelling on CPython's ``pydoc_data.topics`` (about 465k characters), a
  2-layer pre-LayerNorm transformer; training and test loss (the analogue of Table 3; claimed p = 3);
* ``digits-cnn``: the digits as 1x8x8 images, a small CNN (two 3x3 convolutions): the closest claim is Table 1's
  (image classification, p = 2);
* ``cancer``: scikit-learn's breast-cancer table (569 x 30, two classes), an MLP 30-32-2: no claim of the paper
  (only the comparison).

Models are float32, as the paper's. Everything here needs torch and scikit-learn (the ``practice`` extra).
"""

from __future__ import annotations

import math

import numpy as np

from .task import PracticeTask, split_arrays

__all__ = ["installed", "BUILTIN", "DIGITS", "CHARLM", "DIGITS_CNN", "CANCER", "MLP", "TinyGPT", "SmallCNN", "builtin"]


def _torch():
    import torch
    from torch import nn
    from torch.nn import functional as F

    return torch, nn, F


def MLP(inp: int = 64, width: int = 64, classes: int = 10):
    """inp -> width -> classes, ReLU."""
    torch, nn, F = _torch()
    return nn.Sequential(nn.Linear(inp, width), nn.ReLU(), nn.Linear(width, classes))


def SmallCNN(classes: int = 10, ch: int = 8):
    """1x8x8 -> conv3x3(ch) -> ReLU -> conv3x3(2ch, stride 2) -> ReLU -> linear(classes)."""
    torch, nn, F = _torch()
    return nn.Sequential(
        nn.Unflatten(-1, (1, 8, 8)),
        nn.Conv2d(1, ch, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(ch, 2 * ch, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Flatten(-3),
        nn.Linear(2 * ch * 16, classes),
    )


_CLASSES: dict = {}


def _block_cls():
    if "gpt" in _CLASSES:
        return _CLASSES["gpt"]
    torch, nn, F = _torch()

    class Block(nn.Module):
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

    class GPT(nn.Module):
        """A 2-layer pre-LayerNorm causal transformer (token and position embeddings, 2 heads)."""

        def __init__(self, vocab: int, d: int, ctx: int, layers: int = 2, heads: int = 2):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

        def forward(self, idx):
            t = idx.shape[-1]
            x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln(x))

    _CLASSES["gpt"] = GPT
    return GPT


def TinyGPT(vocab: int, d: int, ctx: int, layers: int = 2, heads: int = 2):
    """A 2-layer pre-LayerNorm causal transformer (token and position embeddings, 2 heads)."""
    return _block_cls()(vocab, d, ctx, layers, heads)


# -- data ---------------------------------------------------------------------------------------------------------
def _digits(seed):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return split_arrays(X / 16.0, y, seed)


def _cancer(seed):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    sp = split_arrays(X, y, seed)
    mu, sd = sp["train"][0].mean(0), sp["train"][0].std(0) + 1e-8  # standardized on the training split
    return {k: ((X_ - mu) / sd, y_) for k, (X_, y_) in sp.items()}


_TEXT: dict = {}


def _text_ids():
    if "ids" not in _TEXT:
        import pydoc_data.topics as topics

        text = "\n".join(topics.topics[k] for k in sorted(topics.topics))
        chars = sorted(set(text))
        lut = np.zeros(max(map(ord, chars)) + 1, dtype=np.int64)
        lut[[ord(c) for c in chars]] = np.arange(len(chars))
        code = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        _TEXT["ids"], _TEXT["vocab"] = lut[code], len(chars)
    return _TEXT["ids"], _TEXT["vocab"]


CTX = 32


def _charlm(seed, ctx: int = CTX, stride: int = 8):
    """80/10/10 of 100 contiguous blocks of the text (from the seed); windows of ``ctx`` + 1 characters at
    ``stride`` inside each block (never straddling two), shuffled from the seed."""
    import torch

    ids, _ = _text_ids()
    blocks = np.array_split(ids, 100)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 12]))
    order = rng.permutation(100)
    parts = {"train": order[:80], "val": order[80:90], "test": order[90:]}
    out = {}
    for k, which in parts.items():
        wins = [np.lib.stride_tricks.sliding_window_view(blocks[i], ctx + 1)[::stride] for i in sorted(which)]
        W = np.concatenate(wins)
        W = W[rng.permutation(len(W))]
        t = torch.as_tensor(W)
        out[k] = (t[:, :-1].contiguous(), t[:, 1:].contiguous())
    return out


def _gpt(seed):
    _, vocab = _text_ids()
    return TinyGPT(vocab, 32, CTX)


_TABLE1 = {
    "source": "Table 1 (CIFAR, ResNet-18; mean +- std over the paper's runs)",
    "columns": ["train_nll@50", "train_nll@100", "train_nll@200", "test_acc@50", "test_acc@100", "test_acc@200"],
    "lower_is_better": {"train_nll": True, "test_acc": False},
    "checkpoints": (0.25, 0.5, 1.0),
    "keys": {"train_loss": "train_nll", "test_metric": "test_acc"},
    "cells": {
        "sgd": [0.0567, 0.0441, 0.0352, 91.15, 92.02, 92.76],
        "adam": [0.0401, 0.0182, 0.0083, 91.69, 92.13, 92.66],
        "adamw": [0.0590, 0.0278, 0.0195, 90.59, 91.47, 92.12],
        "lion": [0.1006, 0.2226, 0.0245, 89.38, 89.19, 92.15],
        "stacey-pp": [0.0423, 0.0118, 0.0021, 91.88, 92.79, 93.79],
        "stacey-p2": [0.0614, 0.0131, 0.0014, 90.83, 92.70, 93.54],
    },
    "sentence": "The proposed Stacey optimizer consistently outperforms all compared optimizers (Section 5.1, "
    "Table 1); a p-norm of 2 yields the best performance for the CIFAR dataset",
}
_TABLE3 = {
    "source": "Table 3 (LLM pretraining, llama-100m on C4; mean +- std)",
    "columns": ["train@5k", "train@10k", "train@20k", "train@30k", "test@5k", "test@10k", "test@20k", "test@30k"],
    "lower_is_better": {"train": True, "test": True},
    "checkpoints": (1 / 6, 1 / 3, 2 / 3, 1.0),
    "keys": {"train_loss": "train", "test_loss": "test"},
    "cells": {
        "sgd": [6.6704, 6.5205, 6.4206, 6.3920, 6.6558, 6.5150, 6.4173, 6.3909],
        "adam": [6.4548, 6.3647, 6.2851, 6.2485, 6.4493, 6.3646, 6.2820, 6.2480],
        "adamw": [5.6655, 5.5172, 5.4401, 5.4268, 5.6510, 5.5171, 5.4350, 5.4240],
        "lion": [6.8722, 6.8190, 6.8021, 6.7794, 6.8624, 6.8220, 6.7954, 6.7733],
        "stacey-pp": [5.4016, 4.9938, 4.6492, 4.4962, 5.3616, 4.9655, 4.6372, 4.4879],
        "stacey-p2": [6.2492, 6.0038, 5.7210, 5.5841, 6.2312, 5.9867, 5.7062, 5.5755],
    },
    "sentence": "The proposed Stacey optimizer consistently achieves lower loss than baselines at all steps "
    "(Table 3's caption); we observe the best performance when p = 3 (Section 5.2)",
}

DIGITS = PracticeTask(
    "digits",
    _digits,
    lambda seed: MLP(64, 64, 10),
    steps=600,
    quick_steps=200,
    batch_size=32,
    metric=("test accuracy", "accuracy", "max"),
    claimed_p=2.0,
    claim="Stacey consistently outperforms all compared optimizers (Table 1); for the CIFAR dataset a p-norm of 2 "
    "yields the best performance (Section 5.1)",
    paper=_TABLE1,
    hyper="cifar",
    evals=10,
    scale="MLP 64-64-10 on 1,078 training images",
    requires=("torch", "sklearn"),
)
CHARLM = PracticeTask(
    "charlm",
    _charlm,
    _gpt,
    steps=240,
    quick_steps=80,
    batch_size=16,
    metric=None,
    claimed_p=3.0,
    claim="Stacey consistently achieves lower loss than baselines at all steps (Table 3); the best performance "
    "when p = 3 in LLM pretraining (Section 5.2)",
    paper=_TABLE3,
    hyper="llm",
    evals=8,
    eval_size=96,
    scale="2-layer transformer, d_model 32, context 32, on CPython's pydoc text",
)
DIGITS_CNN = PracticeTask(
    "digits-cnn",
    _digits,
    lambda seed: SmallCNN(10, 8),
    steps=400,
    quick_steps=120,
    batch_size=32,
    metric=("test accuracy", "accuracy", "max"),
    claimed_p=2.0,
    claim="closest claim: Table 1 (image classification with a convolutional network; p = 2 best on CIFAR)",
    hyper="cifar",
    evals=8,
    scale="CNN conv3x3(8)-conv3x3(16, stride 2)-linear on 8x8 digits",
    requires=("torch", "sklearn"),
)
CANCER = PracticeTask(
    "cancer",
    _cancer,
    lambda seed: MLP(30, 32, 2),
    steps=300,
    quick_steps=100,
    batch_size=32,
    metric=("test accuracy", "accuracy", "max"),
    claimed_p=None,
    claim=None,
    hyper="cifar",
    evals=8,
    scale="MLP 30-32-2 on 341 training rows",
    requires=("torch", "sklearn"),
)

BUILTIN = {t.name: t for t in (DIGITS, CHARLM, DIGITS_CNN, CANCER)}


def installed() -> dict:
    """The built-in tasks and those of installed packages (entry-point group ``lptheory.tasks``, each a
    :class:`PracticeTask` or a list of them), by name; a name clash is a ValueError naming both."""
    from lptheory.plugins import entry_point_objects

    out = dict(BUILTIN)
    for ep, t in entry_point_objects("lptheory.tasks"):
        if not isinstance(t, PracticeTask):
            raise ValueError(f"entry point {ep} (lptheory.tasks) must give PracticeTask values, got {type(t).__name__}")
        if t.name in out:
            raise ValueError(f"entry point {ep} (lptheory.tasks): a task named {t.name!r} exists already")
        out[t.name] = t
    return out


def builtin(name: str) -> PracticeTask:
    """The built-in task ``name`` (:data:`BUILTIN`)."""
    if name not in BUILTIN:
        raise ValueError(f"task must be one of {sorted(BUILTIN)}, got {name!r}")
    return BUILTIN[name]
