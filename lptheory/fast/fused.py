"""The fused CPU engine: each element-wise rule traced once and compiled with numba into kernels that
make one pass over memory, bit-identical to the reference numpy engine (:mod:`lptheory.fast.engine`).

How. The rule (written once, ``rule(xp, h, b)``) is called with a recording namespace
(:class:`TraceNS`): every ``xp.op(..., out=buf)`` becomes an operation on a per-element local
variable. The operations numba reproduces bit for bit (``+ - * /``, ``abs``, ``sqrt``, ``sign``,
``copysign``: IEEE operations, compiled without fast-math or contraction) are fused into loops;
those whose numpy implementation numba cannot reproduce (``power``, ``cbrt``, ``exp``, ``log``:
numpy's vectorized transcendental functions) stay numpy calls on cache-sized chunks between the
fused loops, with the values that cross them kept in per-chunk scratch arrays. Hyper-parameters that
fix the rule's control flow are constants of the kernel (one compilation per configuration and
dtype); ``lr``, schedules and per-step scalars (bias corrections) are kernel arguments, so a new
learning rate is not a new kernel. Comparisons the rule makes on such arguments are recorded as
guards and re-checked at every step (a different branch means a new trace).

Numbers: identical to the reference engine in float64 and float32 (tested for every optimizer, both
eps modes, p in {2, 2.5, 2.7, 3, 4, inf}): the same operations in the same order on the same values,
and the same numpy calls for powers (``numpy.power``: within 1 ulp of the correctly rounded result).

Threads: large arrays are split into ranges processed by ``threads()`` worker threads (numba kernels
and numpy release the GIL); every element is computed the same way whatever the split.

Generated kernels are written as modules to ``LPTHEORY_CACHE_DIR`` (default
``~/.cache/lptheory/fused``) and compiled with numba's cache, so a new process reuses them. The directory
keeps at most ``LPTHEORY_KERNEL_CACHE_MAX`` modules (default 1024, about 100 MB with numba's files): a
process that writes a new one first removes the least recently used beyond that ("used": loaded by a
process; each load renews the module's time), with their files in the directory's ``__pycache__``, so
upgrades and many configurations do not grow it without bound. numba's files are outside the bound when
``NUMBA_CACHE_DIR`` sends them elsewhere.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import importlib.util
import math
import os
import sys
import threading
import time
from functools import partialmethod

import numpy as np

from .. import config
from .._state import Buffers, Hyper
from . import numba_cache
from . import svml as _svml
from .cache import slot, static_copy

__all__ = ["available", "run", "run_direct", "rows_driver", "watch_new_theta", "TraceNS", "FusedUnsupported"]

_LOCK = threading.Lock()
_KERNELS: dict = {}
_LAST: dict = {}
_FIELDS: dict = {}
_NUMPY_OPS = ("power", "cbrt", "exp", "log")
USE_SVML = True  # powers through numpy's SVML routine inside one pass (benchmarks clear it to time the older path)
CHUNK = 65536  # elements per numpy call between fused loops (measured: 16384 cost 10-27% more at p = 2.7)


class FusedUnsupported(Exception):
    """The rule does something the tracer does not reproduce: run the reference engine instead."""


def available() -> bool:
    """numba is installed and the fused engine is not switched off (``LPTHEORY_ENGINE=numpy``)."""
    if config.numpy_engine():
        return False
    return _numba_installed()


@functools.lru_cache(maxsize=1)
def _numba_installed() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------
# tracing


class Sym(float):
    """A scalar argument of the kernel (or an expression of them): a float with its concrete value,
    the Python source that computes it from the kernel's scalar arguments, and the tracer's guards."""

    def __new__(cls, value, src, tracer):
        obj = float.__new__(cls, value)
        obj.src = src
        obj.tracer = tracer
        return obj

    def _bin(self, other, op, rev=False):
        if isinstance(other, TArr):
            return NotImplemented
        ov = float(other)
        osrc = other.src if isinstance(other, Sym) else repr(ov)
        a, b = (osrc, self.src) if rev else (self.src, osrc)
        x, y = (ov, float(self)) if rev else (float(self), ov)
        val = {"+": x + y, "-": x - y, "*": x * y, "/": x / y if y != 0 else math.copysign(math.inf, x), "**": x**y}[op]
        return Sym(val, f"({a} {op} {b})", self.tracer)

    __add__ = partialmethod(_bin, op="+")
    __radd__ = partialmethod(_bin, op="+", rev=True)
    __sub__ = partialmethod(_bin, op="-")
    __rsub__ = partialmethod(_bin, op="-", rev=True)
    __mul__ = partialmethod(_bin, op="*")
    __rmul__ = partialmethod(_bin, op="*", rev=True)
    __truediv__ = partialmethod(_bin, op="/")
    __rtruediv__ = partialmethod(_bin, op="/", rev=True)
    __pow__ = partialmethod(_bin, op="**")
    __rpow__ = partialmethod(_bin, op="**", rev=True)

    def __neg__(self):
        return Sym(-float(self), f"(-{self.src})", self.tracer)

    def _cmp(self, other, op):
        res = {
            "==": float.__eq__,
            "!=": float.__ne__,
            "<": float.__lt__,
            "<=": float.__le__,
            ">": float.__gt__,
            ">=": float.__ge__,
        }[op](float(self), float(other))
        self.tracer.guards.append((self.src, op, float(other), bool(res)))
        return res

    __eq__ = partialmethod(_cmp, op="==")
    __ne__ = partialmethod(_cmp, op="!=")
    __lt__ = partialmethod(_cmp, op="<")
    __le__ = partialmethod(_cmp, op="<=")
    __gt__ = partialmethod(_cmp, op=">")
    __ge__ = partialmethod(_cmp, op=">=")

    def __bool__(self):
        return self._cmp(0.0, "!=")

    __hash__ = float.__hash__


class TArr:
    """A traced buffer (a named array of the rule)."""

    __slots__ = ("name", "dtype", "tracer")

    def __init__(self, name, dtype, tracer):
        self.name, self.dtype, self.tracer = name, dtype, tracer

    def copy(self):
        raise FusedUnsupported("copy of a traced buffer")

    def __array__(self, *a, **k):
        raise FusedUnsupported("a traced buffer used as a numpy array")


_MISSING = object()


def _operation(op: str, arity: int):
    """The :class:`TraceNS` function ``f(*inputs, out)`` (numpy's order; ``out`` by position or keyword) that
    records the operation ``op`` of ``arity`` inputs into the buffer ``out``."""

    def record(self, *inputs, out=_MISSING):
        if out is _MISSING and len(inputs) == arity + 1:
            *inputs, out = inputs
        if out is _MISSING or len(inputs) != arity:
            raise TypeError(f"{op} takes {arity} input(s) and out")
        return self._emit(op, out, list(inputs))

    return record


class TraceNS:
    """The numpy-like namespace that records a rule's operations (``numpy_semantics``: the helpers of
    :mod:`lptheory._xp` take numpy's branches, so the trace computes numpy's bits)."""

    numpy_semantics = True
    __name__ = "lptheory.fast.fused.TraceNS"

    def __init__(self):
        self.ops: list = []
        self.guards: list = []

    def _emit(self, op, out, args):
        if not isinstance(out, TArr):
            raise FusedUnsupported(f"{op}: out must be a buffer")
        for a in args:
            if not isinstance(a, (TArr, Sym, float, int)) or isinstance(a, bool):
                raise FusedUnsupported(f"{op}: unsupported argument {a!r}")
        self.ops.append((op, out.name, [a.name if isinstance(a, TArr) else a for a in args]))
        return out

    multiply = _operation("mul", 2)
    add = _operation("add", 2)
    subtract = _operation("sub", 2)
    divide = _operation("div", 2)
    abs = _operation("abs", 1)
    sqrt = _operation("sqrt", 1)
    sign = _operation("sign", 1)
    copysign = _operation("copysign", 2)
    power = _operation("power", 2)

    def power_where(self, a, e, y, thr, out):
        """``a ** e`` needed only where ``y > thr`` (:func:`lptheory._xp.pow_abs_where`): a power that the
        one-pass kernel skips on blocks where no ``y`` exceeds ``thr``."""
        return self._emit("power", out, [a, e, y, thr])

    select_gt = _operation("select_gt", 4)
    reciprocal = _operation("reciprocal", 1)
    cbrt = _operation("cbrt", 1)
    exp = _operation("exp", 1)
    log = _operation("log", 1)

    def copyto(self, out, src):
        return self._emit("copy", out, [src])

    def fill(self, out, value):
        return self._emit("fill", out, [value])


# ---------------------------------------------------------------------------------------------------
# code generation


_NB_UNARY = {"abs": "abs({0})", "sqrt": "np.sqrt({0})", "sign": "np.sign({0})", "reciprocal": "{c}(1.0) / {0}"}
_NB_BINARY = {
    "mul": "{0} * {1}",
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "div": "{0} / {1}",
    "copysign": "np.copysign({0}, {1})",
}


WATCH_UNIT = 1 << 32  # the kernels' count of non-finite new_theta entries, in the high bits of their return


def _generate(ops, inputs, outputs, dyn_names, cast, alias=None, watch=False):
    """Python source of the kernels: fused loops (segments) separated by numpy operations.

    ``watch``: the loop that stores ``new_theta`` also counts its non-finite entries (``v - v`` is not 0) in
    a counter of its own (one accumulator shared with the gradient's count cost 15% at p = 3; a second one
    costs nothing measurable), returned in units of :data:`WATCH_UNIT` added to the count of non-finite
    gradient entries (the stored values are the same; :func:`run` watches arrays of fewer than 2^31 entries).

    Returns ``(source, plan, slots)``. ``plan`` lists ("kernel", name, input arrays read, slots read,
    slots written, outputs written) and ("numpy", op, slot in, slot out, exponent source) steps;
    ``slots`` names the per-chunk scratch arrays that carry values across the numpy operations.
    Outputs are written in the last segment only, so that an output that aliases an input (an
    in-place step) is never read after it is written."""
    segments, between, where, finals = _ssa(ops, inputs, outputs, cast)
    slot = _slot_names(segments, between, where, finals)
    lines = [
        "import numpy as np",
        "import numba",
        "",
        "float64, float32 = np.float64, np.float32",
        "_jit = numba.njit(nogil=True, error_model='numpy', cache=True)",
        "",
    ]
    one_pass = _one_pass(between, cast)
    if one_pass:
        sfx = "" if cast == "float64" else "_f32"
        if any(b[0] == "power" for b in between):
            lines[2:2] = [f"from lptheory.fast.svml import pow_block{sfx}_jit as pow_block"]
        if any(b[0] == "cbrt" for b in between):
            lines[2:2] = [f"from lptheory.fast.svml_cbrt import cbrt_block{sfx}_jit as cbrt_block"]
    alias = alias or {}
    plan, counted = _segment_sources(lines, segments, between, where, slot, finals, dyn_names, cast, alias, watch)
    if not counted:
        raise FusedUnsupported("no fused loop reads the gradient (its non-finite check)")
    blocked = None
    if one_pass:
        blocked = [b[3] for b in between if b[0] == "power"]  # the exponents of the powers, in order
        lines += _blocked_source(segments, between, where, slot, finals, inputs, outputs, dyn_names, alias, cast, watch)
        if not watch:
            n_arrays = len(inputs) + len([nm for nm in outputs if nm not in alias])
            lines += _rows_source("fused", n_arrays, len(dyn_names), len(blocked))
    elif len(plan) == 1 and not watch:
        _, name, loads, _, _, outs = plan[0]
        lines += _rows_source(name, len(loads) + len(outs), len(dyn_names), 0)
    return "\n".join(lines), plan, sorted(set(slot.values())), blocked


def _rows_source(name: str, n_arrays: int, n_dyn: int, n_expos: int) -> list:
    """Source of ``<name>_rows(nb, n, A0, ..., S, E)``: kernel ``name`` called on row b of each 2-D array
    ``A0, ...`` with the scalars of row b of ``S`` and the exponents ``E``, for b = 0..nb-1, in one compiled
    call (several optimizers of one configuration class stepping their own rows, :func:`rows_driver`): the
    calls a loop in Python would make, the same bits; returns the summed non-finite gradient counts."""
    arrays = [f"A{j}" for j in range(n_arrays)]
    args = ["n", *[f"{a}[b]" for a in arrays], *[f"S[b, {j}]" for j in range(n_dyn)]]
    args += [f"E[{j}]" for j in range(n_expos)]
    return [
        "@_jit",
        f"def {name}_rows({', '.join(['nb', 'n', *arrays, 'S', 'E'])}):",
        "    nf = 0",
        "    for b in range(nb):",
        f"        nf += {name}({', '.join(args)})",
        "    return nf",
        "",
    ]


def rows_driver(fn):
    """The ``<name>_rows`` driver generated beside kernel ``fn`` (a dispatcher of a generated module, as
    :func:`bind_direct` binds it), or None (a kernel without one: a plan of several parts, a watching
    variant, or not a generated kernel)."""
    py = getattr(fn, "py_func", None)
    if py is None:
        return None
    return py.__globals__.get(fn.__name__ + "_rows")


def _one_pass(between, cast) -> bool:
    """Whether the numpy steps ``between`` fused loops can run inside the one-pass kernel: each is a power
    (numpy's SVML power, :mod:`lptheory.fast.svml`) or a cube root (numpy's SVML cube root,
    :mod:`lptheory.fast.svml_cbrt`), each routine available with numpy's bits here."""
    if not between or any(b[0] not in ("power", "cbrt") for b in between):
        return False
    if any(b[0] == "power" for b in between) and not _svml.available(cast):
        return False
    if any(b[0] == "cbrt" for b in between):
        from . import svml_cbrt

        if not svml_cbrt.available(cast):
            return False
    return True


def _ssa(ops, inputs, outputs, cast):
    """The traced operations ``ops`` in SSA form, cut at the numpy operations: ``(segments, between, where,
    finals)``; ``segments[k]``: the (target, expression source, values read) of fused loop k; ``between[k]``:
    the numpy step after it, (op, input, target, exponent source, condition); ``where``: the segment (or
    "in") each value comes from; ``finals``: the value of each output."""
    env = {n: f"in_{n}" for n in inputs}  # buffer -> current SSA value
    count = [0]
    segments: list[list] = [[]]  # per segment: (target, expression source, [SSA values read])
    between: list = []  # numpy step after segment k: (op, x, target, exponent source)
    where: dict = {}  # SSA -> ("in" | segment index | k + 0.5 for a numpy output)
    for v in env.values():
        where[v] = "in"

    def new(buf):
        count[0] += 1
        return f"v{count[0]}_{buf}"

    def src_of(a):
        if isinstance(a, str):
            if a not in env:
                raise FusedUnsupported(f"reads {a} before it is written")
            return env[a], [env[a]]
        if isinstance(a, Sym):
            return f"{cast}({a.src})", []
        return f"{cast}({float(a)!r})", []

    for op, out, args in ops:
        if op in _NUMPY_OPS:
            x = env[args[0]]
            expo = None
            cond = None
            if op == "power":
                e = args[1]
                expo = e.src if isinstance(e, Sym) else repr(float(e))
                if len(args) == 4:  # needed only where args[2] > args[3] (power_where)
                    cond = (src_of(args[2])[0], src_of(args[3])[0])
            tgt = new(out)
            between.append((op, x, tgt, expo, cond))
            where[tgt] = len(segments) - 0.5
            segments.append([])
            env[out] = tgt
            continue
        parts = [src_of(a) for a in args]
        reads = [r for _, rs in parts for r in rs]
        srcs = [p for p, _ in parts]
        if op == "fill":
            expr = srcs[0]
        elif op == "copy":
            expr = srcs[0]
        elif op in _NB_UNARY:
            expr = _NB_UNARY[op].format(*srcs, c=cast)
        elif op == "select_gt":
            expr = f"({srcs[2]} if {srcs[0]} > {srcs[1]} else {srcs[3]})"
        elif op in _NB_BINARY:
            expr = _NB_BINARY[op].format(*srcs)
        else:
            raise FusedUnsupported(f"operation {op}")
        tgt = new(out)
        segments[-1].append((tgt, expr, reads))
        where[tgt] = len(segments) - 1
        env[out] = tgt
    return segments, between, where, {n: env[n] for n in outputs}


def _slot_names(segments, between, where, finals) -> dict:
    """{SSA value: its per-chunk scratch array} for the values read after the segment that makes them (by a
    later segment or a numpy step)."""
    last = len(segments) - 1
    # who reads what: segment k reads its expressions' values, the numpy step after k reads its input
    readers: dict = {}
    for k, seg in enumerate(segments):
        for _, _, rs in seg:
            for r in rs:
                readers.setdefault(r, set()).add(k)
    for k, (_op, x, _tgt, _expo, cond) in enumerate(between):
        readers.setdefault(x, set()).add(k + 0.25)  # read right after segment k
        if cond is not None and cond[0] in where:
            readers.setdefault(cond[0], set()).add(k + 0.25)
    for v in finals.values():
        readers.setdefault(v, set()).add(last)
    slot = {}
    for v, ks in readers.items():
        w = where[v]
        if w == "in":
            continue
        if any(k > w for k in ks) and not all(k == w for k in ks):
            slot[v] = f"slot_{v}"
    return slot


def _segment_sources(lines, segments, between, where, slot, finals, dyn_names, cast, alias, watch):
    """The source of each fused loop appended to ``lines``; returns (the plan, whether a loop counts the
    gradient's non-finite entries). See :func:`_generate`."""
    last = len(segments) - 1
    plan = []
    counted = False  # the first segment that loads the gradient counts its non-finite entries
    for k, seg in enumerate(segments):
        defined = {t for t, _, _ in seg}
        reads = {r for _, _, rs in seg for r in rs}
        if k == last:
            reads |= set(finals.values())
        if k < len(between):
            reads.add(between[k][1])
        loads_in = sorted(r for r in reads if where.get(r) == "in")
        count = not counted and "in_grad" in loads_in
        counted = counted or count
        loads_slot = sorted(r for r in reads if r not in defined and where.get(r) != "in")
        stores = sorted(v for v in defined if v in slot)
        outs = finals if k == last else {}
        # an output that is the same memory as an input (an in-place step) is stored through the input's
        # parameter: one base pointer, so LLVM vectorizes the loop without a runtime overlap check
        target = {nm: (f"a_{alias[nm]}" if nm in alias else f"o_{nm}") for nm in outs}
        extra_in = sorted({alias[nm] for nm in outs if nm in alias} - {v[3:] for v in loads_in})
        name = f"seg{k}"
        arrays = (
            [f"a_{v[3:]}" for v in loads_in]
            + [f"a_{x}" for x in extra_in]
            + [slot[v] for v in loads_slot]
            + [slot[v] for v in stores]
            + [f"o_{nm}" for nm in outs if nm not in alias]
        )
        lines.append("@_jit")
        lines.append(f"def {name}({', '.join(['n', *arrays, *dyn_names])}):")
        lines.append("    nf = 0")
        watched = watch and "new_theta" in outs
        if watched:
            lines.append("    nt = 0")
        lines.append("    for i in range(n):")  # every array is the chunk's slice: one index, vectorizable
        lines += [f"        {v} = a_{v[3:]}[i]" for v in loads_in]
        if count:  # g - g is 0 for a finite g, NaN for inf or NaN
            lines.append(f"        nf += 0 if (in_grad - in_grad) == {cast}(0.0) else 1")
        lines += [f"        {v} = {slot[v]}[i]" for v in loads_slot]
        lines += [f"        {t} = {e}" for t, e, _ in seg]
        lines += [f"        {slot[v]}[i] = {v}" for v in stores]
        lines += [f"        {target[nm]}[i] = {v}" for nm, v in outs.items()]
        if watched:
            v = outs["new_theta"]
            lines.append(f"        nt += 0 if ({v} - {v}) == {cast}(0.0) else 1")
        lines.append(f"    return nf + nt * {WATCH_UNIT}" if watched else "    return nf")
        lines.append("")
        plan.append(
            (
                "kernel",
                name,
                [v[3:] for v in loads_in] + extra_in,
                [slot[v] for v in loads_slot],
                [slot[v] for v in stores],
                [nm for nm in outs if nm not in alias],
            )
        )
        if k < len(between):
            op, x, tgt, expo, _cond = between[k]
            plan.append(
                ("numpy", op, slot[x] if x in slot else None, slot[tgt], expo, x[3:] if x not in slot else None)
            )
    return plan, counted


BLOCK_BYTES = 512  # bytes per scratch slot of the one-pass kernel: its ~14 slots and the block's arrays stay in L1


def block(cast) -> int:
    """Elements per block of the one-pass kernel for dtype ``cast`` (``BLOCK_BYTES`` per slot: 64 float64,
    128 float32). Blocking changes no operation, only where the values wait between the power calls."""
    return BLOCK_BYTES // np.dtype(cast).itemsize


def _blocked_source(segments, between, where, slot, finals, inputs, outputs, dyn_names, alias, cast, watch=False):
    """Source of ``fused``: the whole rule in one pass over memory, block by block, with each power and
    each cube root computed by numpy's own SVML routine (:mod:`lptheory.fast.svml`,
    :mod:`lptheory.fast.svml_cbrt`) on the block's values in L1, instead of a numpy call between loops over
    larger chunks. Same operations, same order, same bits."""
    last = len(segments) - 1
    target = {nm: (f"a_{alias[nm]}" if nm in alias else f"o_{nm}") for nm in finals}
    arrays = [f"a_{n}" for n in inputs] + [f"o_{nm}" for nm in outputs if nm not in alias]
    # the powers' exponents (a cube root has none): e0, e1, ... in the order of the powers
    expo_of = {}
    for k, b in enumerate(between):
        if b[0] == "power":
            expo_of[k] = f"e{len(expo_of)}"
    expos = list(expo_of.values())
    lines = [
        "@_jit",
        f"def fused({', '.join(['n', *arrays, *dyn_names, *expos])}):",
        f"    BL = {block(cast)}",
    ]
    lines += [f"    {name} = np.empty(BL, dtype=np.{cast})" for name in sorted(set(slot.values()))]
    lines += [f"    pad = np.empty(32, dtype=np.{cast})", "    nf = 0"] + (["    nt = 0"] if watch else [])
    lines += ["    for b in range(0, n, BL):", "        m = min(BL, n - b)"]
    counted = False
    # per-block views, indexed from 0 by the inner loops' induction variable (vectorizable like seg*)
    lines += [f"        b_{a} = {a}[b:b + m]" for a in arrays]
    for k, seg in enumerate(segments):
        defined = {t for t, _, _ in seg}
        reads = {r for _, _, rs in seg for r in rs}
        if k == last:
            reads |= set(finals.values())
        loads_in = sorted(r for r in reads if where.get(r) == "in")
        loads_slot = sorted(r for r in reads if r not in defined and where.get(r) != "in")
        stores = sorted(v for v in defined if v in slot)
        outs = finals if k == last else {}
        body = [f"            {v} = b_a_{v[3:]}[l]" for v in loads_in]
        if not counted and "in_grad" in loads_in:  # the gradient's non-finite entries (g - g is not 0)
            body.append(f"            nf += 0 if (in_grad - in_grad) == {cast}(0.0) else 1")
            counted = True
        body += [f"            {v} = {slot[v]}[l]" for v in loads_slot]
        body += [f"            {t} = {e}" for t, e, _ in seg]
        body += [f"            {slot[v]}[l] = {v}" for v in stores]
        body += [f"            b_{target[nm]}[l] = {v}" for nm, v in outs.items()]
        if watch and "new_theta" in outs:  # as in _generate
            v = outs["new_theta"]
            body.append(f"            nt += 0 if ({v} - {v}) == {cast}(0.0) else 1")
        if body:
            lines += ["        for l in range(m):", *body]
        if k < len(between):
            _op, x, tgt, _expo, cond = between[k]
            src = f"{slot[x]}, 0" if x in slot else f"b_a_{x[3:]}, 0"
            if _op == "cbrt":
                call = f"cbrt_block({src}, {slot[tgt]}, m, pad)"
            else:
                call = f"pow_block({src}, {expo_of[k]}, {slot[tgt]}, m, pad)"
            if cond is None:
                lines.append(f"        {call}")
            else:  # a power used only where cond[0] > cond[1]: skipped on blocks where no element needs it
                y, thr = cond
                ys = f"{slot[y]}[l]" if y in slot else f"b_a_{y[3:]}[l]"
                lines += [
                    "        need = 0",
                    "        for l in range(m):",
                    f"            need += 1 if {ys} > {thr} else 0",
                    "        if need > 0:",
                    f"            {call}",
                ]
    lines.append(f"    return nf + nt * {WATCH_UNIT}" if watch else "    return nf")
    lines.append("")
    return lines


def cache_max() -> int:
    """``LPTHEORY_KERNEL_CACHE_MAX``: the most generated kernel modules kept on disk (default 1024, at least 1)."""
    env = config.kernel_cache_max()
    if not env:
        return 1024
    try:
        n = int(env)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"LPTHEORY_KERNEL_CACHE_MAX must be a positive integer, got {env!r}")
    return n


def prune_kernel_cache(root: str, keep: int) -> int:
    """Remove the least recently used generated kernel modules of ``root`` (by modification time, renewed at
    each load) beyond the ``keep`` newest, with their files in ``__pycache__`` (bytecode and numba's index and
    code): the number of modules removed. Files another process removes first, or cannot be removed, are
    skipped (a process importing a module just removed compiles it again)."""
    if not os.access(root, os.W_OK):
        return 0
    try:
        listing = os.listdir(root)
    except OSError:
        return 0
    stale = time.time() - 3600.0  # a writer's temporary file older than an hour: its process died
    for f in listing:
        if f.startswith("lptheory_fused_") and f.endswith(".tmp"):
            with contextlib.suppress(OSError):
                if os.stat(os.path.join(root, f)).st_mtime < stale:
                    os.remove(os.path.join(root, f))
    names = [f for f in listing if f.startswith("lptheory_fused_") and f.endswith(".py")]
    if len(names) <= keep:
        return 0
    aged = []
    for f in names:
        with contextlib.suppress(OSError):
            aged.append((os.stat(os.path.join(root, f)).st_mtime, f))
    aged.sort()
    gone = [f[:-3] for _, f in aged[: max(0, len(aged) - keep)]]
    cache = os.path.join(root, "__pycache__")
    try:
        compiled = os.listdir(cache)
    except OSError:
        compiled = []
    stems = set(gone)
    alive = {f[:-3] for f in names} - stems
    for f in compiled:  # "<module>.cpython-311.pyc", "<module>.<function>-<line>.py311.nbi" / ".nbc"
        stem = f.split(".", 1)[0]
        # removed now, or orphaned (numba files a process wrote for a module removed while it held it)
        if stem in stems or (stem.startswith("lptheory_fused_") and stem not in alive):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(cache, f))
    removed = 0
    for stem in gone:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(root, stem + ".py"))
            removed += 1
    return removed


def private_cache_dir(root: str) -> str:
    """``root``, created with mode 0700 where missing, when it is this user's alone: owned by the user and
    not writable by the group or others (else ``OSError``: nothing is imported from a directory that someone
    else could write into, and the kernels are compiled in memory instead)."""
    os.makedirs(root, mode=0o700, exist_ok=True)
    st = os.stat(root)
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        raise OSError(f"kernel cache {root} is not private to this user (owner or group/other write bits)")
    return root


def _cached_source(path: str, source: str) -> bool:
    """Whether the file at ``path`` is exactly ``source`` (our own output) and owned by this user."""
    try:
        with open(path, encoding="utf-8") as fh:
            same = fh.read() == source
        return same and (not hasattr(os, "getuid") or os.stat(path).st_uid == os.getuid())
    except (OSError, UnicodeDecodeError):
        return False


def _module(source: str):
    """Import generated source from the cache directory (so that numba's cache can persist it).

    Only this installation's own output is imported: the directory must be private to the user
    (:func:`private_cache_dir`), and a cached file is imported only when its text is the source just
    generated (a file that differs, planted or stale, is rewritten first)."""
    limit = cache_max()  # checked on every load (a bad value fails on a warm cache too, not only a cold one)
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    root = config.cache_dir()
    name = f"lptheory_fused_{digest}"
    try:
        private_cache_dir(root)
        path = os.path.join(root, name + ".py")
        if not _cached_source(path, source):
            if not os.path.exists(path):
                prune_kernel_cache(root, keep=limit - 1)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(source)
            os.replace(tmp, path)
        else:
            with contextlib.suppress(OSError):
                os.utime(path)  # recently used: the last to be pruned
        numba_cache.install(path, callee=False)  # cached on disk: a stale entry is recompiled, not a crash
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[name] = mod
        return mod
    except (OSError, RuntimeError):
        # a read-only home, or the file removed by another process's pruning between our write and numba's
        # cache locator (RuntimeError "no locator available"): compile in memory without numba's disk cache
        src = source.replace("cache=True", "cache=False")
        ns: dict = {}
        exec(compile(src, f"<{name}>", "exec"), ns)  # noqa: S102  (our own generated code)

        class _M:
            pass

        m = _M()
        m.__dict__.update(ns)
        return m


@dataclasses.dataclass
class _Kernel:
    module: object
    plan: list
    slots: list
    dyn_names: list
    guards: list
    inputs: list
    outputs: list
    exps: dict
    blocked: list | None = None  # exponent sources of the one-pass kernel ``fused`` (None: no such kernel)
    blocked_arrays: list | None = None  # its array arguments: inputs, then the outputs that are not inputs
    expos: dict = dataclasses.field(default_factory=dict)  # memo of the one-pass kernel's exponents by scalars

    def guards_hold(self, values: dict) -> bool:
        for src, op, other, res in self.guards:
            v = _eval(src, values)
            ok = {
                "==": v == other,
                "!=": v != other,
                "<": v < other,
                "<=": v <= other,
                ">": v > other,
                ">=": v >= other,
            }[op]
            if ok != res:
                return False
        return True


@functools.lru_cache(maxsize=1024)
def _code(src: str):
    return compile(src, "<lptheory-fused-scalar>", "eval")


def _eval(src: str, values: dict) -> float:
    return float(eval(_code(src), {"__builtins__": {}}, values))  # noqa: S307  (our own generated expressions)


def _aliases(arrays: dict) -> tuple:
    """((output name, input name), ...) for outputs that are the same memory as an input (in-place steps)."""
    ins = [(n, a) for n, a in arrays.items() if n[:4] != "new_"]
    out = []
    for n, a in arrays.items():
        if n[:4] != "new_":
            continue
        for m, b in ins:
            if a is not b and a.base is None and b.base is None:
                continue  # two arrays that own their memory: distinct
            if a is b or (
                np.may_share_memory(a, b)
                and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
                and a.shape == b.shape
                and a.strides == b.strides
            ):
                out.append((n, m))
                break
    return tuple(out)


def _static_key(opt, ks: tuple):
    """``opt.static()`` with the fields ``ks`` (the class's ``kernel_scalars``: runtime scalars of the kernels)
    also replaced by 0.0: the configuration that fixes the generated code (cached in ``opt``'s slot)."""
    static = opt.static()
    if not ks:
        return static
    s = slot(opt)
    got = s.kernel_static
    if got is None:
        got = s.kernel_static = static_copy(opt, ks, static)
    return got


def _kernel(opt, h: Hyper, arrays: dict, dtype, alias=None, watch=False):
    """The compiled kernel for ``opt``'s configuration, ``dtype`` and in-place pattern (traced on first use);
    ``watch``: the variant that also counts non-finite ``new_theta`` entries (see :func:`_generate`)."""
    if alias is None:
        alias = _aliases(arrays)
    fast = (id(opt), np.dtype(dtype).str, tuple(arrays), tuple(h), alias, watch)
    cache = _LAST.get(fast)  # (optimizer, kernels): the per-step lookup without re-deriving the key
    if cache is not None and cache[0] is opt:
        _, cands, dyn_names = cache
    else:
        fields = _FIELDS.get(type(opt))
        if fields is None:
            fields = _FIELDS[type(opt)] = frozenset(f.name for f in dataclasses.fields(opt))
        ks = getattr(type(opt), "kernel_scalars", ())
        dyn = set(opt.dynamic_fields()) | (set(h) - fields) | set(ks)
        dyn_names = sorted(k for k in dyn if isinstance(h[k], (int, float)) and not isinstance(h[k], bool))
        key = (_static_key(opt, ks), np.dtype(dtype).str, tuple(arrays), tuple(dyn_names), alias, watch)
        cands = _KERNELS.setdefault(key, [])
        if len(_LAST) > 256:
            _LAST.clear()
        _LAST[fast] = (opt, cands, dyn_names)
    values = {k: float(h[k]) for k in dyn_names}
    for k in cands:
        if k.guards_hold(values):
            return k
    with _LOCK:
        tracer = TraceNS()
        hh = Hyper({k: (Sym(float(v), k, tracer) if k in dyn_names else v) for k, v in h.items()})
        names = list(arrays)
        bufs = {n: TArr(n, dtype, tracer) for n in names}
        scratch = {f"s{i + 1}": TArr(f"s{i + 1}", dtype, tracer) for i in range(opt.n_scratch)}
        try:
            type(opt).rule(tracer, hh, Buffers(**bufs, **scratch))
        except FusedUnsupported:
            raise
        except (TypeError, AttributeError, ValueError) as exc:
            raise FusedUnsupported(str(exc)) from exc
        inputs = [n for n in names if not n.startswith("new_")]
        outputs = [n for n in names if n.startswith("new_")]
        cast = "float32" if np.dtype(dtype) == np.float32 else "float64"
        source, plan, slots, blocked = _generate(tracer.ops, inputs, outputs, dyn_names, cast, dict(alias), watch)
        mod = _module(source)
        fused_arrays = inputs + [nm for nm in outputs if nm not in dict(alias)]
        k = _Kernel(mod, plan, slots, dyn_names, tracer.guards, inputs, outputs, {}, blocked, fused_arrays)
        cands.append(k)
        return k


# ---------------------------------------------------------------------------------------------------
# execution

_tls = threading.local()


def _slots(names, n, dtype):
    cache = getattr(_tls, "slots", None)
    if cache is None:
        cache = _tls.slots = {}
    key = (tuple(names), n, np.dtype(dtype).str)
    got = cache.get(key)
    if got is None:
        got = cache[key] = {s: np.empty(n, dtype=dtype) for s in names}
    return got


_NP = {"power": np.power, "cbrt": np.cbrt, "exp": np.exp, "log": np.log}


def _run_range(k: _Kernel, flats: dict, scalars: list, lo: int, hi: int, chunk: int):
    mod = k.module
    if k.blocked is not None and USE_SVML:
        dt = next(iter(flats.values())).dtype.name
        memo = k.expos  # (dtype, scalars) -> exponents, or None where numpy.power is not SVML's there
        key = (dt, *scalars)
        expos = memo.get(key, False)
        if expos is False:
            values = dict(zip(k.dyn_names, scalars))
            expos = [_eval(src, values) for src in k.blocked]
            if not all(_svml.agrees(e, dt) for e in expos):  # numpy's power at these exponents is not SVML's
                expos = None
            if len(memo) > 256:
                memo.clear()
            memo[key] = expos
        if expos is not None:
            return mod.fused(hi - lo, *[flats[x][lo:hi] for x in k.blocked_arrays], *scalars, *expos)
    if len(k.plan) == 1:  # one fused loop: the whole range in one call
        _, name, loads, _, _, outs = k.plan[0]
        fn = getattr(mod, name)
        if lo == 0:  # the kernel reads indices [0, hi): the whole flat arrays, without slicing
            return fn(hi, *[flats[x] for x in loads], *[flats[o] for o in outs], *scalars)
        return fn(hi - lo, *[flats[x][lo:hi] for x in loads], *[flats[o][lo:hi] for o in outs], *scalars)
    slot_arrays = _slots(k.slots, chunk, next(iter(flats.values())).dtype)
    values = dict(zip(k.dyn_names, scalars))
    steps = []  # resolved once per call: (kernel, arrays) or (numpy function, input, output, exponent)
    for st in k.plan:
        if st[0] == "kernel":
            _, name, loads, lslots, sslots, outs = st
            big = [flats[x] for x in loads]
            small = [slot_arrays[x] for x in lslots] + [slot_arrays[x] for x in sslots]
            steps.append((getattr(mod, name), big, small, [flats[o] for o in outs]))
        else:
            _, op, xin, xout, src, xarr = st
            expo = _eval(src, values) if src is not None else None
            steps.append((op, xin, xarr, slot_arrays[xout], expo))
    nf = 0
    with np.errstate(all="ignore"):
        for s in range(lo, hi, chunk):
            m = min(hi, s + chunk) - s
            for st in steps:
                if len(st) == 4:
                    fn, big, small, outs = st
                    if m != chunk:
                        small = [a[:m] for a in small]
                    nf += fn(m, *[a[s : s + m] for a in big], *small, *[a[s : s + m] for a in outs], *scalars)
                    continue
                op, xin, xarr, out, expo = st
                a = slot_arrays[xin] if xin is not None else flats[xarr][s : s + m]
                if m != chunk:
                    a, out = a[:m], out[:m]
                if op == "power":
                    np.power(a, expo, out=out)
                else:
                    _NP[op](a, out=out)
    return nf


# a one-element list while a caller watches the new parameters written in this context (watch_new_theta)
_WATCH: contextvars.ContextVar = contextvars.ContextVar("lptheory_fused_watch", default=None)


@contextlib.contextmanager
def watch_new_theta():
    """Within the block (the current context), :func:`run` with ``count_nonfinite`` uses the kernel variant
    that also counts the non-finite entries of the ``new_theta`` it writes (in the loop that stores them:
    no pass of its own) and adds them to the yielded list's one entry, which stays None when no such
    kernel ran (the reference engine, the small-array direct path): the caller then checks the new
    parameters itself. The simulator's row parts use it for their divergence check."""
    box = [None]
    token = _WATCH.set(box)
    try:
        yield box
    finally:
        _WATCH.reset(token)


def run(opt, h: Hyper, arrays: dict, threads: int, *, count_nonfinite: bool = False, alias=None):
    """Run ``opt``'s rule fused over the numpy ``arrays``; False when the rule cannot be fused (the
    caller then runs the reference engine), else True, or with ``count_nonfinite`` the number of
    non-finite (NaN or inf) entries of ``arrays["grad"]`` (counted by the kernels while they read it: no
    extra pass). ``alias``: the in-place pattern when the caller knows it (see :func:`_aliases`). Inside
    :func:`watch_new_theta`, the non-finite entries of ``arrays["new_theta"]`` are counted too."""
    first = next(iter(arrays.values()))
    dtype = first.dtype
    if dtype not in (np.float64, np.float32):
        return False
    n = first.size
    box = _WATCH.get()
    watch = box is not None and count_nonfinite and "new_theta" in arrays and 0 < n < (1 << 31)
    try:
        k = _kernel(opt, h, arrays, dtype, alias, watch)
    except FusedUnsupported:
        return False
    flats = arrays if first.ndim == 1 else {nm: a.reshape(-1) for nm, a in arrays.items()}
    scalars = [float(h[nm]) for nm in k.dyn_names]
    if n == 0:
        return 0 if count_nonfinite else True
    if threads <= 1 or n < (1 << 17):
        nf = _run_range(k, flats, scalars, 0, n, CHUNK)
    else:
        from .pool import split

        per = -(-n // (threads * CHUNK)) * CHUNK
        bounds = [(lo, min(n, lo + per)) for lo in range(0, n, per)]
        nf = sum(split(lambda i: _run_range(k, flats, scalars, *bounds[i], CHUNK), len(bounds), threads))
    if watch:
        nf, bad = nf % WATCH_UNIT, nf // WATCH_UNIT
        box[0] = bad + (box[0] or 0)
    return nf if count_nonfinite else True


def _direct_spec(opt, h, arrays: dict, alias):
    """The spec of :func:`run_direct` for ``opt`` (cached on ``opt`` per in-place pattern ``alias`` and dtype):
    ``(fn, names, dyn names, exponents)``, or None when the short path does not apply."""
    first = arrays["theta"]
    s = slot(opt)
    cache = s.direct
    if cache is None or cache[0] != alias or cache[1] is not first.dtype:
        if not available():
            return None
        try:
            k = _kernel(opt, h, arrays, first.dtype, alias)
        except FusedUnsupported:
            return None
        spec = None
        if not k.guards and k.blocked is not None:  # the one-pass kernel with SVML powers
            expos = []
            for src in k.blocked:  # exponents that do not change between steps, numpy.power's bits there
                if any(name in src for name in k.dyn_names):
                    break
                e = _eval(src, {})
                if not _svml.agrees(e, first.dtype.name):
                    break
                expos.append(e)
            else:
                spec = (k.module.fused, tuple(k.blocked_arrays), k.dyn_names, tuple(expos))
        elif not k.guards and len(k.plan) == 1:
            _, name, loads, _, _, outs = k.plan[0]
            spec = (getattr(k.module, name), tuple(loads) + tuple(outs), k.dyn_names, None)
        elif not k.guards and k.blocked is None:
            spec = _direct_plan(k)
        cache = (alias, first.dtype, spec)
        s.direct = cache
    return cache[2]


def run_direct(opt, h, arrays: dict, alias):
    """The fused kernel of ``opt`` called directly on ``arrays`` (the short path of
    :meth:`lptheory.optimizers.ElementwiseOptimizer.step` for small arrays: one thread, a kernel without
    guards to re-check, which is one fused loop or the one-pass SVML kernel with exponents fixed across
    steps; cached on ``opt`` per in-place pattern ``alias`` and dtype): the number of non-finite
    gradient entries, or None when the caller should take :func:`lptheory.fast.engine.run`."""
    first = arrays["theta"]
    if first.size >= (1 << 15):
        return None
    spec = _direct_spec(opt, h, arrays, alias)
    if spec is None or config.numpy_engine():
        return None
    fn, names, dyn, expos = spec
    if fn is None:  # a plan of several parts (see _direct_plan)
        return _run_plan(names, arrays, h, first)
    if expos is not None:
        if not USE_SVML:
            return None
        flat = [arrays[x] if first.ndim == 1 else arrays[x].reshape(-1) for x in names]
        return fn(first.size, *flat, *[float(h[x]) for x in dyn], *expos)
    if first.ndim == 1:
        return fn(first.size, *[arrays[x] for x in names], *[float(h[x]) for x in dyn])
    return fn(first.size, *[arrays[x].reshape(-1) for x in names], *[float(h[x]) for x in dyn])


def bind_direct(opt, h, arrays: dict, alias):
    """:func:`run_direct` bound to ``arrays`` (the same array objects at every step, updated in place: a
    simulator's loop): ``(bound, dyn names)``, ``bound`` for :func:`run_bound` with the flat views and
    arguments resolved once, not per step; None where :func:`run_direct` would not run the kernel."""
    first = arrays["theta"]
    if first.size >= (1 << 15):
        return None
    spec = _direct_spec(opt, h, arrays, alias)
    if spec is None:
        return None
    fn, names, dyn, expos = spec
    flats = {x: a.reshape(-1) for x, a in arrays.items()}
    if fn is None:  # a plan of several parts (see _direct_plan)
        return (None, names, flats, first.size, first.dtype), tuple(names[1])
    return (fn, (first.size, *[flats[x] for x in names]), expos), tuple(dyn)


def run_bound(bound, scalars):
    """A step of a kernel bound by :func:`bind_direct`, ``scalars`` the values of its dyn names (floats, in
    their order): what :func:`run_direct` returns on those arrays, the same calls on the same elements."""
    if config.numpy_engine():
        return None
    fn = bound[0]
    if fn is None:
        _, spec, flats, n, dtype = bound
        return _run_plan_flat(spec, flats, scalars, n, dtype)
    _, args, expos = bound
    if expos is not None:
        if not USE_SVML:
            return None
        return fn(*args, *scalars, *expos)
    return fn(*args, *scalars)


def _direct_plan(k: _Kernel):
    """:func:`run_direct`'s spec for kernel ``k`` made of several parts (fused loops and numpy calls between
    them, e.g. the two cube roots of p = 4): ``(None, (slot names, dyn names, steps), None, None)`` with
    :func:`_run_range`'s plan resolved once (functions, array names, constant exponents); None when an
    exponent changes between steps (it depends on a dynamic scalar)."""
    steps = []
    for st in k.plan:
        if st[0] == "kernel":
            _, name, loads, lslots, sslots, outs = st
            steps.append((True, getattr(k.module, name), tuple(loads), tuple(lslots) + tuple(sslots), tuple(outs)))
        else:
            _, op, xin, xout, src, xarr = st
            if src is not None and any(name in src for name in k.dyn_names):
                return None
            expo = _eval(src, {}) if src is not None else None
            steps.append((False, op, xin, xarr, xout, expo))
    return (None, (tuple(k.slots), tuple(k.dyn_names), tuple(steps)), None, None)


def _run_plan(spec, arrays: dict, h, first):
    """:func:`_run_range` over the whole of ``arrays`` (fewer than :data:`CHUNK` elements: one chunk) with the
    plan resolved by :func:`_direct_plan`: the same calls on the same elements, the same bits."""
    flats = arrays if first.ndim == 1 else {x: a.reshape(-1) for x, a in arrays.items()}
    return _run_plan_flat(spec, flats, [float(h[x]) for x in spec[1]], first.size, first.dtype)


def _run_plan_flat(spec, flats: dict, scalars, n: int, dtype):
    """:func:`_run_plan` on flat arrays ``flats`` of ``n`` elements and the plan's scalars ``scalars``."""
    slot_names, _, steps = spec
    slot = _slots(slot_names, n, dtype)  # this thread's scratch of exactly n elements
    nf = 0
    with np.errstate(all="ignore"):
        for st in steps:
            if st[0]:  # a fused loop
                _, fn, loads, sl, outs = st
                nf += fn(n, *[flats[x] for x in loads], *[slot[x] for x in sl], *[flats[o] for o in outs], *scalars)
                continue
            _, op, xin, xarr, xout, expo = st
            a = slot[xin] if xin is not None else flats[xarr]
            if op == "power":
                np.power(a, expo, out=slot[xout])
            else:
                _NP[op](a, out=slot[xout])
    return nf


# ---------------------------------------------------------------------------------------------------
# for callers that split the work themselves (lptheory.torch's fused buckets: ranges of flat buffers and
# gradients read in place, the first range on the calling thread)


def aliases(arrays: dict) -> tuple:
    """The in-place pattern of ``arrays`` (the kernel key's part; see :func:`_aliases`)."""
    return _aliases(arrays)


def kernel(opt, h: Hyper, arrays: dict, dtype, alias: tuple):
    """The compiled kernel of ``opt``'s rule for ``dtype``, the names of ``arrays`` and the in-place pattern
    ``alias`` (traced and compiled on first use); raises :class:`FusedUnsupported`."""
    return _kernel(opt, h, arrays, dtype, alias)


def run_range(k, arrays: dict, h: Hyper, lo: int, hi: int) -> int:
    """Kernel ``k`` (from :func:`kernel`) on elements ``[lo, hi)`` of the flat ``arrays`` with the step's
    scalars ``h``, on this thread: the number of non-finite gradient entries counted."""
    return _run_range(k, arrays, [float(h[x]) for x in k.dyn_names], lo, hi, CHUNK)
