"""A multi-tensor (``torch._foreach_*``) array namespace, so the optimizers' rules run on lists of tensors.

The update rules of :mod:`lptheory.optimizers` are written once against an array module's ``out=``
functions (``xp.multiply(a, b, out=c)`` and so on). :class:`ForeachNamespace` is such a module whose
"arrays" are :class:`TensorList` values (one tensor per parameter, all on one device with one dtype):
every call becomes one ``torch._foreach_*`` call over the whole list, which on CUDA launches a few
fused multi-tensor kernels instead of one kernel per parameter. No formula is repeated here; this is
only the dispatch of the element-wise primitives.

Semantics of ``out=``. When ``out`` is the first input, the in-place ``torch._foreach_*_`` form is
used. Otherwise the result is a fresh list and ``out`` is *rebound* to it: every later read of
``out`` sees the new values, exactly as if they had been written into it, but nothing else that held
the old tensors changes (copies are real copies). :func:`apply_foreach` finally copies any rebound
output back into the caller's tensors, so the caller sees in-place writes as with the single-tensor
engine.
"""

from __future__ import annotations

from functools import partialmethod

import torch

from .._state import Buffers

__all__ = ["TensorList", "ForeachNamespace", "apply_foreach"]


class TensorList:
    """A list of tensors treated as one array by :class:`ForeachNamespace` (same device and dtype)."""

    __slots__ = ("t", "dtype", "like")

    def __init__(self, tensors, like=None):
        self.t = list(tensors) if tensors is not None else None
        ref = self.t if self.t is not None else like
        self.like = ref
        self.dtype = ref[0].dtype

    # the two helpers of lptheory._xp that use tensor methods
    def fill_(self, value):
        if self.t is None:
            self.t = [torch.full_like(x, value) for x in self.like]
        else:
            for x in self.t:
                x.fill_(value)
        return self

    def copy_(self, src):
        if self.t is None:
            self.t = [x.clone() for x in src.t]
        else:
            torch._foreach_copy_(self.t, src.t)
        return self


def _val(b):
    return b.t if isinstance(b, TensorList) else b


class ForeachNamespace:
    """The subset of the numpy/torch ``out=`` API used by the rules, over :class:`TensorList` values."""

    __name__ = "lptheory.fast.foreach"

    @staticmethod
    def _binary(name, a, b, out, commutative):
        inplace = getattr(torch, f"_foreach_{name}_")
        if out is a:
            inplace(a.t, _val(b))
        elif commutative and out is b:
            inplace(b.t, a.t)
        elif name == "sub" and out is b:  # a - b into b: -(b - a), exactly
            inplace(b.t, a.t)
            torch._foreach_neg_(b.t)
        elif out.t is not None and out is not b:  # persistent output tensors: written in place
            torch._foreach_copy_(out.t, a.t)
            inplace(out.t, _val(b))
        else:
            out.t = getattr(torch, f"_foreach_{name}")(a.t, _val(b))
        return out

    @staticmethod
    def _unary(name, a, out):
        if out is a:
            getattr(torch, f"_foreach_{name}_")(a.t)
        elif out.t is not None:
            torch._foreach_copy_(out.t, a.t)
            getattr(torch, f"_foreach_{name}_")(out.t)
        else:
            out.t = getattr(torch, f"_foreach_{name}")(a.t)
        return out

    multiply = partialmethod(_binary, "mul", commutative=True)
    add = partialmethod(_binary, "add", commutative=True)
    subtract = partialmethod(_binary, "sub", commutative=False)
    divide = partialmethod(_binary, "div", commutative=False)
    pow = partialmethod(_binary, "pow", commutative=False)
    abs = partialmethod(_unary, "abs")
    sqrt = partialmethod(_unary, "sqrt")
    exp = partialmethod(_unary, "exp")
    log = partialmethod(_unary, "log")
    sign = partialmethod(_unary, "sign")
    reciprocal = partialmethod(_unary, "reciprocal")

    def select_gt(self, y, thr, a, b, out):
        """out = a where y > thr, else b (lptheory._xp.select_gt): torch.where per tensor (no multi-tensor
        form exists), then one multi-tensor copy."""
        res = [torch.where(yy > thr, aa, bb) for yy, aa, bb in zip(y.t, a.t, b.t)]
        if out.t is not None:
            torch._foreach_copy_(out.t, res)
        else:
            out.t = res
        return out

    def combine(self, x, a, y, b, out, sub):
        """out = a x + b y (a x - b y with sub; a None means x itself): see lptheory._xp.combine."""
        alpha = -b if sub else b
        if a is None:
            if out is x:
                torch._foreach_add_(x.t, y.t, alpha=alpha)
            elif out.t is not None:
                torch._foreach_copy_(out.t, x.t)
                torch._foreach_add_(out.t, y.t, alpha=alpha)
            else:
                out.t = torch._foreach_add(x.t, y.t, alpha=alpha)
            return out
        self.multiply(x, a, out)
        torch._foreach_add_(out.t, y.t, alpha=alpha)
        return out

    def addcdiv_scaled(self, theta, k, x, den, value, out):
        """out = k theta + value x / den (lptheory._kernels.steepest_eps_step on one tensor)."""
        self.multiply(theta, k, out)
        torch._foreach_addcdiv_(out.t, x.t, den.t, value)
        return out

    def ema(self, m, beta, g, out):
        """out = beta m + (1 - beta) g by lerp, as lptheory._xp.ema does on one tensor."""
        if out is m:
            torch._foreach_lerp_(m.t, g.t, 1.0 - beta)
            return out
        self.multiply(m, beta, out)  # as the single-tensor helper: mul, then add with alpha
        torch._foreach_add_(out.t, g.t, alpha=1.0 - beta)
        return out

    def copysign(self, r, x, out):
        """copysign(r, x) for r >= 0 (the rules' only use): sign(x) r, equal to copysign except that a
        zero r gives +-0 by the sign of the product (both compare equal to 0)."""
        s = torch._foreach_sign(x.t)
        if out is r:
            torch._foreach_mul_(r.t, s)
        else:
            torch._foreach_mul_(s, r.t)
            out.t = s
        return out


FOREACH = ForeachNamespace()


def apply_foreach(rule, h, arrays: dict, n_scratch: int, scratch=None) -> None:
    """Run ``rule(FOREACH, h, Buffers(**arrays, s1=..., ...))`` where ``arrays`` maps the rule's
    buffer names to lists of tensors (``new_*`` names are outputs; an output may be the same list
    object as an input to update it in place). Outputs are written into the caller's tensors.
    ``scratch``: ``n_scratch`` lists of tensors shaped like the arrays, kept by the caller across steps
    (every primitive then writes in place: no allocation); without it, primitives allocate."""
    holders: dict[int, TensorList] = {}
    named = {}
    for name, lst in arrays.items():
        hl = holders.get(id(lst))
        if hl is None:
            hl = holders[id(lst)] = TensorList(lst)
        named[name] = hl
    like = next(iter(arrays.values()))
    if scratch is None:
        sc = {f"s{i + 1}": TensorList(None, like=like) for i in range(n_scratch)}
    else:
        sc = {f"s{i + 1}": TensorList(lst) for i, lst in enumerate(scratch)}
    rule(FOREACH, h, Buffers(**named, **sc))
    for name, lst in arrays.items():
        if not name.startswith("new_"):
            continue
        hl = named[name]
        if any(a is not b for a, b in zip(hl.t, lst)):
            torch._foreach_copy_(lst, hl.t)
