"""Learning-rate schedules: callables of the 0-based step index ``t`` returning a float.

An optimizer's ``lr`` is a float or any such callable; these are the ones the paper uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import _validate

__all__ = ["Constant", "CosineWarmup", "theorem1_lr", "Theorem1"]


@dataclass(frozen=True)
class Constant:
    """eta_t = lr for every t."""

    lr: float

    def __post_init__(self):
        _validate.real("lr", self.lr, lo=0.0)

    def __call__(self, t: int) -> float:
        return float(self.lr)


@dataclass(frozen=True)
class CosineWarmup:
    """Linear warm-up to ``lr`` over ``warmup`` steps, then cosine decay to ``final_lr`` at ``total``.

    The paper's experiments use "cosine decay" (Appendix C, Tables 3-5), as in the AdamW and Lion
    papers. eta_t = lr (t + 1) / warmup for t < warmup; then
    final_lr + (lr - final_lr) (1 + cos(pi (t - warmup) / (total - warmup))) / 2, and final_lr for
    t >= total.
    """

    lr: float
    total: int
    warmup: int = 0
    final_lr: float = 0.0

    def __post_init__(self):
        _validate.real("lr", self.lr, lo=0.0)
        _validate.integer("total", self.total, lo=1)
        _validate.integer("warmup", self.warmup, lo=0)
        if self.warmup >= self.total:
            raise ValueError(f"warmup must be in [0, total - 1] = [0, {self.total - 1}], got {self.warmup}")
        _validate.real("final_lr", self.final_lr, lo=0.0, hi=self.lr)

    def __call__(self, t: int) -> float:
        if t < self.warmup:
            return self.lr * (t + 1) / self.warmup
        if t >= self.total:
            return float(self.final_lr)
        frac = (t - self.warmup) / (self.total - self.warmup)
        return self.final_lr + (self.lr - self.final_lr) * 0.5 * (1.0 + math.cos(math.pi * frac))


def theorem1_lr(L: float, G: float, T: int, p: float) -> float:
    """eta = 1 / (L^{1/2} G^{1/(p-1)} T^{1/2}), the step size of Theorem 1 (second display).

    Paper: Theorem 1, "With eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}) we have ...". For p = inf,
    G^{1/(p-1)} = 1.
    """
    L = _validate.real("L", L, lo=0.0, lo_open=True)
    G = _validate.real("G", G, lo=0.0, lo_open=True)
    T = _validate.integer("T", T, lo=1)
    p = _validate.exponent("p", p, lo=2.0, lo_open=False)
    gpow = 1.0 if math.isinf(p) else G ** (1.0 / (p - 1.0))
    return 1.0 / (math.sqrt(L) * gpow * math.sqrt(T))


@dataclass(frozen=True)
class Theorem1(Constant):
    """The constant schedule of Theorem 1: ``Theorem1.of(L, G, T, p)``."""

    @classmethod
    def of(cls, L: float, G: float, T: int, p: float) -> Theorem1:
        return cls(theorem1_lr(L, G, T, p))
