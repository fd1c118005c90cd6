"""What an optimizer definition is built from: hyper-parameter fields (:func:`hyper`) and the pieces of a
rule (EMA, the steepest l_p direction, the mirror map, sign, clip), public, for the built-in rules and yours.

A rule is ``rule(xp, h, b)`` (see :mod:`lptheory.optimizers`): it reads the step's scalars ``h`` and writes
its outputs into the named buffers ``b`` with ``out=`` calls of the array module ``xp``. The pieces below
are such calls, written once for numpy, torch and the toolkit's own namespaces (the fused engine's tracer
reproduces numpy's bits with them). Each writes into ``out`` (and may use ``tmp``), returns ``out``, and
states which arguments may be the same array.

Example: Nesterov-momentum l_p descent, one file (``examples``-style), no private name::

    from dataclasses import dataclass
    from typing import ClassVar

    from lptheory.optimizers import ElementwiseOptimizer
    from lptheory.rules import EXPONENT, NONNEG, UNIT, ema, hyper, steepest

    @dataclass(frozen=True)
    class NesterovLp(ElementwiseOptimizer):
        name: ClassVar[str] = "nesterov-lp"
        buffers: ClassVar[tuple] = ("m",)
        p: float = hyper(3.0, EXPONENT, help="l_p exponent")
        lr: float = hyper(1e-3, NONNEG, help="step size")
        momentum: float = hyper(0.9, UNIT, help="momentum")

        @staticmethod
        def rule(xp, h, b):
            m = ema(xp, b.m, h.momentum, b.grad, b.new_m, b.s1)   # m = mu m + (1 - mu) g
            look = ema(xp, m, h.momentum, b.grad, b.s2, b.s1)     # mu m + (1 - mu) g, the look-ahead
            s = steepest(xp, look, h.p, b.s1, b.s3)               # s_p(look), Alg. 3 line 2
            xp.multiply(s, h.lr, out=s)
            xp.subtract(b.theta, s, out=b.new_theta)

Defining it registers it (``lptheory.optimizers.OPTIMIZERS``): ``lptheory run --optimizer nesterov-lp``
(its fields marked as flags become ``lptheory run`` flags), the sweep's keys, ``lptheory.torch.NesterovLp``.
"""

from __future__ import annotations

import dataclasses

from . import _kernels
from ._state import Buffers, Hyper
from ._xp import combine as _combine
from ._xp import copy_into, fill, select_gt
from ._xp import ema as _ema

__all__ = [
    "hyper",
    "NONNEG",
    "UNIT",
    "EXPONENT",
    "Hyper",
    "Buffers",
    "ema",
    "combine",
    "steepest",
    "steepest_eps",
    "mirror",
    "sign",
    "clip",
    "copy_into",
]

NONNEG = {"lo": 0.0}
"""Range of a hyper-parameter >= 0 (a step size, a weight decay, an eps)."""
UNIT = {"lo": 0.0, "hi": 1.0, "hi_open": True}
"""Range [0, 1) (a momentum or EMA coefficient)."""
EXPONENT = {"exponent": True}
"""Range of an l_p exponent: p in (1, inf]."""


def hyper(default, limits: dict | None = None, *, help: str = "", choices=None, flag: bool | None = None):
    """A hyper-parameter field of an optimizer dataclass: its ``default``, allowed range ``limits`` (keys
    ``lo``, ``hi``, ``lo_open``, ``hi_open``, or ``exponent=True`` with ``lo``, ``lo_open``, ``allow_inf``;
    checked at construction, and at every step for a schedule; :data:`NONNEG`, :data:`UNIT`,
    :data:`EXPONENT`), the allowed values ``choices`` of a text field, and its ``help`` text.

    ``flag``: whether ``lptheory run`` has a flag for it (default: a number or a text with ``choices``).
    The optimizer class reads ``limits`` and ``choices`` from these fields (its ``limits`` class attribute),
    the CLI its flags, :mod:`lptheory.torch` its keyword arguments.
    """
    if limits is not None and not isinstance(limits, dict):
        raise TypeError(f"limits must be a dict (e.g. lptheory.rules.NONNEG), got {type(limits).__name__}")
    if choices is not None:
        choices = tuple(choices)
        if default not in choices:
            raise ValueError(f"default must be one of {choices}, got {default!r}")
    if flag is None:
        flag = choices is not None or (isinstance(default, (int, float)) and not isinstance(default, bool))
    meta = {"limits": limits, "help": help, "choices": choices, "flag": bool(flag)}
    return dataclasses.field(default=default, metadata={"lptheory": meta})


def field_info(f: dataclasses.Field) -> dict | None:
    """The :func:`hyper` metadata of a dataclass field (``limits``, ``help``, ``choices``, ``flag``), or None."""
    return f.metadata.get("lptheory") if f.metadata else None


# ------------------------------------------------------------------------------------------------------
# the pieces of a rule
# ------------------------------------------------------------------------------------------------------
def ema(xp, m, beta: float, g, out, tmp, *, lerp: bool = True):
    """``out = beta m + (1 - beta) g``: the exponential moving average of Algorithms 1-2 lines 3 and 8
    (``c_{t+1} = beta1 m_t + (1 - beta1) g~_t``, ``m_{t+1} = beta2 m_t + (1 - beta2) g~_t``), Adam's moments,
    Lion's interpolation, signSGD's momentum. numpy: two products and a sum (the tracer's bits); torch: one
    ``lerp`` pass, or with ``lerp=False`` the two products and the sum there too (the baselines' form: their
    torch bits are those of their reference code). ``out`` may alias ``m``, not ``g``; ``tmp`` must alias
    neither ``m`` nor ``out``."""
    if not lerp:
        xp.multiply(m, beta, out=out)
        xp.multiply(g, 1.0 - beta, out=tmp)
        return xp.add(out, tmp, out=out)
    return _ema(xp, m, beta, g, out, tmp)


def combine(xp, x, a, y, b: float, out, tmp, *, sub: bool = False):
    """``out = a x + b y`` (``a x - b y`` with ``sub=True``; ``a=None``: ``x`` itself), e.g. the mirror
    step of Algorithm 1 line 6, ``z_{t+1} = z_t - alpha c_{t+1}``, and the coupling of line 7.
    ``out`` may alias ``x``, not ``y``; ``tmp`` must alias neither ``x`` nor ``out``."""
    return _combine(xp, x, a, y, b, out, tmp, sub=sub)


def steepest(xp, x, p: float, out, tmp):
    """The steepest l_p direction ``s_p(x) = sgn(x) |x|^{1/(p-1)}`` (Algorithm 3 line 2,
    ``s_i(x) = x_i / |x_i|^{(p-2)/(p-1)}``, in the form of Section 4.1 so that ``s_p(0) = 0``); ``s_2`` is the
    identity, ``s_inf`` the sign. ``out`` may alias ``tmp`` or ``x``; ``tmp`` must not alias ``x``."""
    return _kernels.steepest(xp, x, p, out, tmp)


def steepest_eps(xp, x, p: float, eps: float, mode: str, out, tmp):
    """The eps-regularized steepest map of Algorithms 1-2 line 4: ``mode="paper"``:
    ``x / (|x|^{(p-2)/(p-1)} + eps)``; ``mode="official"`` (the authors' code): ``x / (|x| + eps)^{(p-2)/(p-1)}``;
    :func:`steepest` when eps vanishes. ``out`` may alias ``x`` or ``tmp``; ``tmp`` must not alias ``x``."""
    return _kernels.steepest_eps(xp, x, p, eps, mode, out, tmp)


def mirror(xp, x, p: float, out, tmp):
    """The mirror map of ``psi = (1/p) ||.||_p^p``: ``grad psi(x) = |x|^{p-2} x`` (Algorithm 2 line 6, its
    first term ``|z_t|^{p-2} z_t``); the inverse of :func:`steepest`. ``out`` may alias ``tmp`` or ``x``;
    ``tmp`` must not alias ``x``."""
    return _kernels.mirror(xp, x, p, out, tmp)


def sign(xp, x, out):
    """``sgn(x)`` with ``sgn(0) = 0``: the steepest l_inf direction (:func:`steepest` at p = inf; signSGD,
    Lion). ``out`` may alias ``x``."""
    return xp.sign(x, out=out)


def clip(xp, x, c: float, out, tmp):
    """``x`` clipped to ``[-c, c]`` coordinate by coordinate (``c >= 0``; NaN stays NaN), written as two
    ``min`` selections around a negation (exact operations). ``out`` may alias ``x``; ``tmp`` must alias
    neither."""
    lim = fill(xp, tmp, c)
    out = select_gt(xp, x, c, lim, x, out)  # min(x, c)
    out = xp.multiply(out, -1.0, out=out)
    out = select_gt(xp, out, c, lim, out, out)  # min(-min(x, c), c)
    return xp.multiply(out, -1.0, out=out)  # max(min(x, c), -c)
