"""``torch.optim`` optimizers for the paper's methods: :class:`LpDescent` (Alg. 3), :class:`StaceyP2`
(Alg. 1) and :class:`StaceyPP` (Alg. 2), plus the :class:`Lion` baseline.

The update rules are not copied: every step runs the element-wise rule of the matching
:mod:`lptheory.optimizers` class (``_rule``), in place on the parameters and the state, so numpy,
torch arrays and these ``torch.optim`` wrappers share one implementation of each formula.

torch conventions: ``params`` or param groups; defaults ``lr`` (the paper's eta), ``alpha``, ``tau``,
``betas=(beta1, beta2)``, ``eps``, ``weight_decay``, ``p``, ``eps_mode``, ``z_init``, ``maximize``,
``foreach``, ``compiled``, ``fused``. State lives in ``self.state[param]`` (``StaceyP2``: ``z``, ``m``,
``step``; ``StaceyPP``: ``w = |z|^{p-2} z``, ``m``, ``step``, its dual state), created lazily
at the first step, so ``state_dict()``/``load_state_dict()`` round-trip (a resumed run continues
bit-identically), and it survives ``copy.deepcopy`` and ``add_param_group``; LR schedulers work (they
edit ``group["lr"]``). Parameters whose ``grad`` is None are skipped. ``step(closure)`` re-evaluates
the closure with grad enabled and returns the loss. No host synchronization inside ``step`` (``step``
counts are Python ints; no data-dependent branches on tensors). float16/bfloat16 parameters: the
update is computed in float32 (state kept in float32) and rounded back to the parameter's dtype.

Four execution paths, one rule (same results; the compiled ones up to floating-point reassociation):

* single-tensor (``foreach=False``; the default on CPU): the rule per parameter. On CPU, for float32 and
  float64 contiguous tensors with numba installed, that is the numba kernel of :mod:`lptheory.fast.fused` on
  the tensors' memory (numpy views, no copy, no ATen call; the numpy engine's and the fused path's bits;
  a large tensor's ranges on torch's OpenMP team, as below);
  otherwise (other devices, other dtypes, non-contiguous tensors, ``LPTHEORY_ENGINE=numpy``) the rule's
  torch operations, with scratch tensors kept across steps (views of one buffer sized for the largest
  parameter: nothing is allocated per step);
* multi-tensor (``foreach=True``; the default when all of a group's parameters are on CUDA, as in
  ``torch.optim``): the rule runs once per (device, dtype) bucket through ``torch._foreach_*`` calls
  (:mod:`lptheory.fast.foreach`), a few multi-tensor kernel launches per primitive instead of one per
  parameter. On CPU, where torch's ``_foreach_*`` ops are loops over the tensors, ``foreach=True``
  runs the per-tensor primitives of the single-tensor path (the same bits, without the extra passes);
* fused (``fused=True``, as torch names it): the parameters of each (param group, device, dtype) bucket
  are moved into one flat buffer (each ``p.data`` becomes a view of it; likewise the state buffers),
  gradients are gathered into a flat gradient (``p.grad`` is left a view of it, so a backward that
  accumulates writes there directly; on CPU, new gradient tensors of later steps are read where they are,
  those under 16384 elements copied in), and one fused call per step updates the whole bucket: on CPU the
  numba kernel of :mod:`lptheory.fast.fused` on the buffers' memory (compiled in about a second, cached on
  disk; the numpy engine's bits; split over ``min(torch.get_num_threads(), LPTHEORY_THREADS or the
  cores)`` ranges run by torch's own OpenMP team, the calling thread among them, whose threads are still
  awake from the backward pass (:mod:`lptheory.fast.omp`; ``LPTHEORY_OMP=0``, off Linux, or when ATen's
  backend is not OpenMP: lptheory's thread pool, the first range on the calling thread; the same bits
  either way), elsewhere (or without numba) one ``torch.compile``
  call. On CPU a param group in one bucket then steps through a cached plan: identity and address checks
  (some tens of microseconds for 50 parameters) and the kernel call. New states are created directly in
  the flat buffers, one parameter at a time. The layout is rebuilt when the memory moves (``model.to``,
  ``load_state_dict``, a deepcopy); a step in which some parameters have no gradient, and
  float16/bfloat16 parameters, take the per-parameter compiled call instead (on CPU with numba: the
  per-parameter numba kernels of the single-tensor path, no compilation by torch). Code that keeps references
  to a parameter's old storage (``p.data`` taken before the first step) sees the old values: take them
  again after;
* compiled (``compiled=True``): the rule is traced by ``torch.compile`` (inductor) into one fused
  kernel per parameter (one pass over memory), compiled once per optimizer configuration and dtype and
  reused for every parameter shape (parameters are passed as flat views with dynamic sizes). The
  first step pays the compilation (about 5 s on CPU; see ``benchmarks/RESULTS.md``); needs a working
  C++ compiler on CPU (Triton on CUDA). The learning rate is passed as a tensor, so LR schedules do
  not trigger recompilation.

Example
-------
>>> import torch
>>> from lptheory.torch import StaceyPP
>>> model = torch.nn.Linear(4, 2)
>>> opt = StaceyPP(model.parameters(), lr=1e-3, p=3.0)
>>> loss = model(torch.randn(8, 4)).square().mean()
>>> loss.backward()
>>> opt.step()
"""

from __future__ import annotations

import os

import torch

from . import optimizers as _core
from ._state import Buffers, Hyper
from ._torch_optim import cached_core, check_betas, closure_loss, derive, init_state
from .fast import engine as _engine  # noqa: I001
from .fast import omp as _omp  # _omp now: its fork hook must be in place before any fork
from .fast import pool as _pool
from .fast.foreach import apply_foreach

__all__ = ["LpDescent", "StaceyP2", "StaceyPP", "Lion", "torch_optimizer"]

_LOW = (torch.float16, torch.bfloat16)


def _check_flag(name, value, allow_none=False):
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        allowed = "True, False or None" if allow_none else "True or False"
        raise TypeError(f"{name} must be {allowed}, got {value!r}")
    return value


_COMPILED: dict = {}


def _quiet_inductor_imports() -> None:
    """Import ``torch.utils.mkldnn`` once with torch's own DeprecationWarning silenced: the inductor
    backend imports it at the first compiled step, and at import it decorates 14 methods with
    ``torch.jit.script_method``, which torch 2.13 itself deprecates (not a call of ours)."""
    import sys
    import warnings

    if "torch.utils.mkldnn" in sys.modules:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*torch.jit.script_method.*", category=DeprecationWarning)
        try:
            import torch.utils.mkldnn  # noqa: F401
        except ImportError:  # pragma: no cover
            pass


def _compiled_rule(core: _core.Optimizer):
    """The compiled in-place step of ``core``'s rule, shared by every optimizer with the same
    hyper-parameters other than ``lr`` (cached per process)."""
    other = [f for f in core.dynamic_fields() if f != "lr"]
    if other:  # the compiled rule reads every field but lr from the static configuration (0.0 for these)
        raise ValueError(
            f"compiled=True / fused=True (the torch.compile path) take a schedule only for lr, got schedules for "
            f"{other}; use the default path"
        )
    static = core.static()
    fn = _COMPILED.get(static)
    if fn is None:
        rule, n_scratch = type(static).rule, static.n_scratch
        # the step's scalars as static.scalars(t, lr=lr) builds them, from values read here, before tracing:
        # the traced function reads no per-object cache (lptheory.fast keeps those), only these constants
        fixed = dict(static.hyper_at(0)) if type(static).plain_scalars else None

        def fused(lr, t, th, g, *state):
            if fixed is None:
                h = static.scalars(t, lr=lr)  # lr: a 0-d tensor, so a new lr value is not a new graph
            else:
                h = Hyper(fixed)
                h["lr"] = lr
                h["t"] = t
                for k, v in static.derived(h, t).items():  # item by item: dynamo (torch 2.11) cannot trace
                    h[k] = v  # the update method of a dict subclass (fullgraph=True failed on CUDA)
            scratch = {f"s{i + 1}": torch.empty_like(th) for i in range(n_scratch)}
            rule(torch, h, Buffers(**static.named(th, g, state, [th, *state]), **scratch))

        # a private code object per configuration: dynamo caches compiled graphs per code object, so the
        # configurations do not share (and exhaust) one recompilation budget
        fused.__code__ = fused.__code__.replace()
        _quiet_inductor_imports()
        compiled = torch.compile(fused, dynamic=True, fullgraph=True)

        def fn(lr, t, items):
            """items: (theta, grad, *state) flat views per parameter, updated in place."""
            lr_t = torch.tensor(lr, dtype=torch.float64)
            with torch._dynamo.config.patch(specialize_float=True):  # one patch (about 0.1 ms) per bucket
                for item in items:
                    compiled(lr_t, t, *item)

        _COMPILED[static] = fn
    return fn


def _numba_engine() -> bool:
    from .fast import fused as _fused

    return _fused.available()


_FOREACH_ON_CPU = False  # tests set it to run the multi-tensor namespace on CPU
_NUMBA_ON_CPU = True  # eager CPU updates through the numba engine (tests clear it to exercise torch's operations)


def _multi_tensor(device) -> bool:
    """Whether foreach=True runs the multi-tensor namespace on ``device``: not on CPU, where torch's
    ``_foreach_*`` ops are loops over the tensors (no multi-tensor kernels) and cost extra passes or
    allocations; there foreach=True runs the same per-tensor primitives as foreach=False (same bits)."""
    return device.type != "cpu" or _FOREACH_ON_CPU


def _views(flat, like):
    out, off = [], 0
    for x in like:
        n = x.numel()
        out.append(flat[off : off + n].view(x.shape))
        off += n
    return out


class _Flat:
    """One (param group, device, dtype) bucket in flat buffers: each parameter's data and each state
    buffer is a view of a flat tensor (``theta``, ``state[k]``), and gradients are gathered into
    ``grad``, so that one compiled call updates the whole bucket (``fused=True``)."""

    def __init__(self, params, states, keys, init):
        self.params = list(params)
        self.keys = tuple(keys)
        ref = params[0]
        n = sum(p.numel() for p in params)
        kw = dict(device=ref.device, dtype=ref.dtype)
        self.theta = torch.empty(n, **kw)
        self.grad = torch.empty(n, **kw)  # every element is written by load_grads before it is read
        self.state = {k: torch.empty(n, **kw) for k in keys}
        self.theta_views = _views(self.theta, params)
        self.grad_views = _views(self.grad, params)
        state_views = {k: _views(self.state[k], params) for k in keys}
        with torch.no_grad():
            for i, (p, v, st) in enumerate(zip(params, self.theta_views, states)):
                v.copy_(p.detach())
                p.data = v  # the parameter now lives in the flat buffer
                if len(st) == 0:  # a new state (first step): ``init(st, theta)`` fills it, copied below; one
                    init(st, v)  # parameter at a time, so no second copy of the whole state is ever alive
                for k in keys:
                    state_views[k][i].copy_(st[k])
                    st[k] = state_views[k][i]

    def holds(self, params, states, keys) -> bool:
        """The parameters and their state still live in these buffers (same objects, same memory)."""
        if tuple(keys) != self.keys or len(params) != len(self.params):
            return False
        for p, q, v in zip(params, self.params, self.theta_views):
            if p is not q or p.data_ptr() != v.data_ptr() or p.shape != v.shape or not p.is_contiguous():
                return False
        for k in keys:
            base = self.state[k]
            for st, v in zip(states, self.theta_views):
                x = st.get(k)
                off = v.data_ptr() - self.theta.data_ptr()
                if x is None or x.data_ptr() != base.data_ptr() + off or x.shape != v.shape or not x.is_contiguous():
                    return False
        return True

    def load_grads(self, grads, set_grads: bool) -> None:
        """Gather the gradients into ``grad`` (one multi-tensor copy of those that are not already its
        views) and, with ``set_grads``, make each ``p.grad`` a view of it: a backward that accumulates
        (``zero_grad(set_to_none=False)``) then writes there directly."""
        todo = [(v, g) for v, g in zip(self.grad_views, grads) if g.data_ptr() != v.data_ptr()]
        if todo:
            torch._foreach_copy_([v for v, _ in todo], [g for _, g in todo])
        if set_grads:
            for p, v in zip(self.params, self.grad_views):
                if p.grad is not v:
                    p.grad = v


_SPLIT_MIN = 1 << 17  # buckets of at least this many elements are split over threads (as lptheory.fast.fused does)


class _Plan:
    """The cached step of one ``fused=True`` param group on CPU through the numba engine: its parameters
    live in one :class:`_Flat` bucket, so a step is one kernel call on the bucket's memory. Built after a
    step that laid the group out (one device and dtype, every parameter with a gradient, not ``maximize``);
    :meth:`holds` re-checks per step, by identity and address comparisons (some tens of microseconds for
    50 parameters), that nothing moved: the same parameter objects in the group at the same addresses, the
    same state dicts and state tensors (a ``load_state_dict``, ``model.to``, a new state entry or a deepcopy
    fails it) and every gradient either the flat gradient's view or a dense contiguous tensor of the
    parameter's shape, dtype and device (a training loop's new gradients, ``zero_grad(set_to_none=True)``).
    Such gradients are not copied into the flat gradient: the kernel reads them where they are, one call per
    such parameter (those of fewer than ``_OWN_MIN`` elements are copied in: one call covers them)."""

    def __init__(self, group, state_map, flat: _Flat, states: list, t: int):
        self.group, self.state_map, self.flat, self.t = group, state_map, flat, t
        self.params = list(flat.params)
        self.states = states
        self.keys = flat.keys
        self.ptrs = [v.data_ptr() for v in flat.theta_views]
        self.views = {k: [st[k] for st in states] for k in flat.keys}
        self.dtype, self.device = flat.theta.dtype, flat.theta.device
        th, g = flat.theta.numpy(), flat.grad.numpy()
        self.arrays = (th, g, [flat.state[k].numpy() for k in flat.keys])
        self.sizes = [v.numel() for v in flat.theta_views]
        self.offsets = [0]
        for m in self.sizes:
            self.offsets.append(self.offsets[-1] + m)
        self.named: tuple = (None, None, None, None)
        self.layouts: dict = {}

    def holds(self, group, state_map):
        """None when the plan no longer holds, else the parameters' gradients."""
        from operator import is_

        params = group["params"]
        if (
            group is not self.group
            or state_map is not self.state_map
            or group.get("maximize")
            or len(params) != len(self.params)
        ):
            return None
        if not all(map(is_, params, self.params)) or [p.data_ptr() for p in params] != self.ptrs:
            return None
        if not all(map(is_, map(state_map.get, params), self.states)):
            return None
        for k in self.keys:
            if not all(map(is_, [st.get(k) for st in self.states], self.views[k])):
                return None
        if any(st.get("step") != self.t for st in self.states):
            return None
        grads = [p.grad for p in params]
        if not all(map(is_, grads, self.flat.grad_views)):  # new gradient tensors (zero_grad(set_to_none=True))
            dtype, device = self.dtype, self.device
            for g, v in zip(grads, self.flat.grad_views):
                if g is not v and (
                    g is None
                    or g.is_sparse
                    or g.shape != v.shape
                    or g.dtype != dtype
                    or g.device != device
                    or not g.is_contiguous()
                    or g.is_neg()
                ):
                    return None
        return grads

    def _layout(self, nt: int) -> list:
        """Per thread, the pieces ``(parameter index, lo, hi)`` of its range of the bucket (``nt`` ranges of
        nearly equal size, on 16 KiB boundaries of float32 buffers)."""
        got = self.layouts.get(nt)
        if got is None:
            n = self.offsets[-1]
            per = -(-n // (nt * 4096)) * 4096 if nt > 1 else n
            got = []
            for lo in range(0, n, per):
                hi = min(n, lo + per)
                parts = []
                for i, m in enumerate(self.sizes):
                    a, b = max(lo, self.offsets[i]), min(hi, self.offsets[i] + m)
                    if a < b:
                        parts.append((i, a - self.offsets[i], b - self.offsets[i]))
                got.append(parts)
            self.layouts[nt] = got
        return got

    def run(self, core, h, grads=None) -> int:
        """The kernel on the bucket: the number of non-finite gradient entries it counted. Large buckets
        are split into ``min(torch.get_num_threads(), lptheory's fused threads)`` contiguous ranges of
        nearly equal size, run by torch's OpenMP team (:func:`_omp_team`; else the first processed on this
        thread while the pool's workers take the others);
        ``grads`` (from :meth:`holds`) that are not the flat gradient's views are read where they are
        (every element is computed the same way whatever the split or the calls: the same bits)."""
        from operator import is_

        from .fast import fused as _fused
        from .fast.pool import get_pool, threads

        named = self.named
        if named[0] is not core:  # the arrays by the rule's names, per core optimizer (a new one per lr value)
            th, g, st = self.arrays
            arrays = core.named(th, g, st, [th, *st])
            pieces = [{nm: a[o : o + m] for nm, a in arrays.items()} for o, m in zip(self.offsets, self.sizes)]
            named = self.named = (core, arrays, _fused.aliases(arrays), pieces)
        arrays, alias, pieces = named[1], named[2], named[3]
        flat = self.flat
        own = []  # parameters whose gradient the kernel reads in place
        if grads is not None and not all(map(is_, grads, flat.grad_views)):
            small = []
            for i, (g, v) in enumerate(zip(grads, flat.grad_views)):
                if g is not v:
                    (small if self.sizes[i] < _OWN_MIN else own).append(i)
            if small:
                torch._foreach_copy_([flat.grad_views[i] for i in small], [grads[i] for i in small])
        n = self.offsets[-1]
        nt = min(threads(fused=True), torch.get_num_threads()) if n >= _SPLIT_MIN else 1
        k = None
        if _fused.available():
            try:
                k = _fused.kernel(core, h, arrays, self.arrays[0].dtype, alias)
            except _fused.FusedUnsupported:
                pass
        if k is None:  # LPTHEORY_ENGINE=numpy, or a rule the fused engine declines: the reference engine
            if own:
                torch._foreach_copy_([flat.grad_views[i] for i in own], [grads[i] for i in own])
            return _engine.run(core, h, arrays, count_nonfinite=True, alias=alias)
        if own:  # per thread: runs of flat ranges, and the pieces of parameters with their own gradient
            mine = set(own)
            works = []
            for parts in self._layout(nt):
                work, start, stop = [], None, None
                for i, lo, hi in parts:
                    o = self.offsets[i]
                    if i in mine:
                        if start is not None:
                            work.append((arrays, start, stop))
                            start = None
                        d = dict(pieces[i])
                        d["grad"] = grads[i].detach().numpy().reshape(-1)
                        work.append((d, lo, hi))
                    elif start is None:
                        start, stop = o + lo, o + hi
                    else:
                        stop = o + hi
                if start is not None:
                    work.append((arrays, start, stop))
                works.append(work)
        else:
            per = -(-n // (nt * 4096)) * 4096 if nt > 1 else n
            works = [[(arrays, lo, min(n, lo + per))] for lo in range(0, n, per)] if n else [[]]
        if len(works) == 1:
            return _run_work(k, works[0], h)
        team = _omp_team()
        if team is not None:  # the ranges on torch's own OpenMP team (lptheory.fast.omp: its threads are awake)
            return sum(team.run(lambda i: _run_work(k, works[i], h), len(works), nt))
        pool = get_pool(nt)
        futures = [pool.submit(_run_work, k, w, h) for w in works[1:]]
        nf = _run_work(k, works[0], h)
        return nf + sum(f.result() for f in futures)


_ATEN_OPENMP: list = []  # [bool]: whether ATen's parallel backend is OpenMP (asked once)
_TORCH_LIB = os.path.join(os.path.dirname(torch.__file__), "lib")  # where torch's OpenMP runtime is loaded from


def _omp_team():
    """The OpenMP team torch's CPU operations run on (:func:`lptheory.fast.omp.team`), or None: ATen's parallel
    backend is not OpenMP, the runtime cannot be identified, ``LPTHEORY_OMP=0``, or a forked child."""
    if not _ATEN_OPENMP:
        _ATEN_OPENMP.append("parallel backend: OpenMP" in torch.__config__.parallel_info())
    if not _ATEN_OPENMP[0]:
        return None
    return _omp.team(_TORCH_LIB)


class _TorchTeam:
    """torch's OpenMP team for :func:`lptheory.fast.pool.on_team`, never asked for more threads than torch uses
    (``torch.get_num_threads()``: no OpenMP thread that torch does not have; one thread runs inline)."""

    def __init__(self, team):
        self.team = team

    def run(self, fn, n: int, threads: int) -> list:
        return self.team.run(fn, n, min(threads, torch.get_num_threads()))


def _run_work(k, work, h) -> int:
    """The kernel ``k`` of :mod:`lptheory.fast.fused` on each ``(arrays, lo, hi)`` of ``work`` with the step's
    scalars ``h``: the number of non-finite gradient entries counted."""
    from .fast import fused as _fused

    nf = 0
    for arrays, lo, hi in work:
        nf += _fused.run_range(k, arrays, h, lo, hi)
    return nf


_OWN_MIN = 1 << 14  # a new gradient tensor of fewer elements is copied into the flat gradient instead


class _Base(torch.optim.Optimizer):
    """Runs the rule of ``_core_cls`` (an :mod:`lptheory.optimizers` class) on every parameter. A param
    group's values named in ``_core_fields`` (plus ``betas`` -> ``beta1``, ``beta2``) are the core
    optimizer's hyper-parameters; the core object is built once per distinct set of values."""

    _core_cls: type
    _core_fields: tuple

    def __init__(self, params, defaults):
        _check_flag("maximize", defaults["maximize"])
        _check_flag("foreach", defaults["foreach"], allow_none=True)
        _check_flag("compiled", defaults["compiled"])
        _check_flag("fused", defaults["fused"])
        chosen = [k for k in ("foreach", "compiled", "fused") if defaults[k]]
        if len(chosen) > 1:
            raise ValueError(f"{'=True and '.join(chosen)}=True are exclusive: pick one execution path")
        self._core_for(defaults)  # validate once through the core class (errors name the parameter)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:  # optimizers pickled before these options existed
            group.setdefault("foreach", None)
            group.setdefault("compiled", False)
            group.setdefault("fused", False)

    def load_state_dict(self, state_dict):
        """As ``torch.optim.Optimizer.load_state_dict``, after checking that ``state_dict`` belongs to an
        optimizer of this kind: its param groups carry this optimizer's hyper-parameters and its
        per-parameter state has this rule's buffers (a clear error now, instead of a KeyError at the
        next step). State dicts saved before the ``foreach``/``compiled`` options existed load as is; those
        of an earlier state layout (StaceyPP's primal ``z`` state, layout 1, with or without the marker) are
        converted (``w = |z|^{p-2} z`` with each group's ``p``), so a resumed run continues the same
        iterates (within rounding)."""
        name = type(self).__name__
        groups = state_dict.get("param_groups") if isinstance(state_dict, dict) else None
        if not isinstance(groups, list):
            raise ValueError(f"{name}.load_state_dict: expected a dict with 'state' and 'param_groups'")
        marker = state_dict.get("lptheory")
        saved_by = marker.get("optimizer") if isinstance(marker, dict) else None
        if saved_by is not None and saved_by != name:
            raise ValueError(
                f"{name}.load_state_dict: this state dict was saved by {saved_by} (same keys, another update rule)"
            )
        state_dict = {k: v for k, v in state_dict.items() if k != "lptheory"}
        need = set(self._core_fields) | ({"betas"} if "betas" in self.defaults else set())
        for i, g in enumerate(groups):
            missing = sorted(need - set(g))
            if missing:
                raise ValueError(
                    f"{name}.load_state_dict: param group {i} lacks {missing}: this state dict was saved by another "
                    f"optimizer (its group keys: {sorted(k for k in g if k != 'params')})"
                )
        buffers = set(self._core_cls.buffers) | {"step"}
        legacy = set(getattr(self._core_cls, "legacy_buffers", ())) | {"step"}
        layout = marker.get("state_layout", 1) if isinstance(marker, dict) else 1
        old_layout = False
        for pid, st in state_dict.get("state", {}).items():
            if st and set(st) == legacy and legacy != {"step"} and layout < self._layout():
                old_layout = True
            elif st and set(st) != buffers:
                raise ValueError(
                    f"{name}.load_state_dict: the state of parameter {pid} has {sorted(st)}, expected "
                    f"{sorted(buffers)} (a state dict of another optimizer)"
                )
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group.setdefault("foreach", None)
            group.setdefault("compiled", False)
            group.setdefault("fused", False)
        for st in self.state.values():  # torch.optim stores a tensor step in some versions: ours is an int
            if "step" in st and torch.is_tensor(st["step"]):
                st["step"] = int(st["step"].item())
        if old_layout:
            self._upgrade_loaded_state()

    def _layout(self) -> int:
        return getattr(self._core_cls, "state_layout", 1)

    def _upgrade_loaded_state(self) -> None:
        """Convert per-parameter states of an earlier layout (loaded from an older state dict) with the core
        optimizer's ``upgrade_state`` (StaceyPP: ``z`` -> ``w = |z|^{p-2} z``), each with its group's
        hyper-parameters, in the state's dtype and on its device."""
        legacy = set(self._core_cls.legacy_buffers) | {"step"}
        for group in self.param_groups:
            core = self._core_for(group)
            for p in group["params"]:
                st = self.state.get(p)
                if not st or set(st) != legacy:
                    continue
                up = core.upgrade_state(dict(st))
                st.clear()
                st.update(up)

    def _core_for(self, group) -> _core.Optimizer:
        kw = {k: group[k] for k in self._core_fields}
        if torch.is_tensor(kw.get("lr")):  # torch.optim accepts a tensor lr (a host read, once per step)
            kw["lr"] = float(kw["lr"].item())
        if "betas" in group:
            kw["beta1"], kw["beta2"] = check_betas(group["betas"])
        return cached_core(self, tuple(sorted(kw.items())), lambda: self._core_cls(**kw))

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            if not (group.get("fused") and self._step_planned(group)):
                self._step_group(group)
        return loss

    def _step_group(self, group):
        core = self._core_for(group)
        keys = core.buffers
        maximize = group.get("maximize", False)
        fused = group.get("fused", False)
        # buckets: (device, compute dtype, step) -> parameters, their float views, grads, states
        buckets: dict = {}
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
            low = p.dtype in _LOW
            theta = p.detach().float() if low else p.detach()
            grad = p.grad.detach()
            grad = grad.float() if low else grad
            if maximize:
                grad = -grad
            state = self.state[p]
            # a new state is created lazily; in a fused bucket directly in its flat buffers (see _Flat)
            if len(state) == 0 and not (fused and not low):
                self._init_state(core, state, theta)
            b = buckets.setdefault((theta.device, theta.dtype, state.get("step", 0)), ([], [], [], [], []))
            b[0].append(p)
            b[1].append(theta)
            b[2].append(grad.contiguous())
            b[3].append(state)
            b[4].append(low)
        plans = self.__dict__.setdefault("_plans", {})
        plans.pop(id(group), None)
        unchecked = []  # gradients whose non-finite entries no kernel counted (checked at the end)
        bad = 0  # non-finite entries counted by the numba kernels while they read the gradients
        foreach = group.get("foreach")
        compiled = group.get("compiled", False)
        for (device, dtype, t), (params, thetas, grads, state_dicts, lows) in buckets.items():
            lr = core.lr_at(t)
            h = core.scalars(t)
            if fused and not any(lows):
                flat = self._flat_bucket(group, device, dtype, params, keys, core)
                if flat is not None:  # the whole bucket in one fused call
                    flat.load_grads(grads, set_grads=not maximize)
                    if device.type == "cpu" and _numba_engine():
                        # CPU: the numba engine of lptheory.fast.fused on the flat buffers' memory (numpy views,
                        # no copy): compiled in about a second, cached on disk, numpy's reference bits
                        plan = _Plan(group, self.state, flat, [self.state[p] for p in params], t + 1)
                        bad += plan.run(core, h)
                        if len(buckets) == 1 and not maximize:  # later steps of this group: the cached plan
                            plans[id(group)] = plan
                    else:
                        unchecked += grads
                        _compiled_rule(core)(lr, t, [(flat.theta, flat.grad, *[flat.state[k] for k in keys])])
                    for p in params:
                        self.state[p]["step"] = t + 1
                    continue
            for st, th in zip(state_dicts, thetas):
                if len(st) == 0:  # a fused bucket that cannot be flat this step: its new states here
                    self._init_state(core, st, th)
            states = [[st[k] for k in keys] for st in state_dicts]
            numba_eager = (
                _NUMBA_ON_CPU and device.type == "cpu" and dtype in (torch.float32, torch.float64) and _numba_engine()
            )
            # compiled (and fused buckets that cannot be flat this step, except on CPU with numba, where they
            # take the same numba kernels per parameter below, without torch.compile): one compiled call per
            # parameter; flat views need contiguous tensors, a non-contiguous one (rare) takes the eager rule
            per_param = compiled or (fused and not numba_eager)
            fused_p = [
                per_param and all(a.is_contiguous() for a in (th, g, *st)) for th, g, st in zip(thetas, grads, states)
            ]
            if any(fused_p):
                unchecked += [g for g, f in zip(grads, fused_p) if f]
                items = [
                    (th.view(-1), g.view(-1), *[s.view(-1) for s in st])
                    for th, g, st, f in zip(thetas, grads, states, fused_p)
                    if f
                ]
                _compiled_rule(core)(lr, t, items)
            if not per_param and (foreach if foreach is not None else device.type == "cuda") and _multi_tensor(device):
                state_lists = [list(col) for col in zip(*states)] if keys else []
                scratch = self._foreach_scratch(thetas, core.n_scratch) if device.type == "cpu" else None
                unchecked += grads
                apply_foreach(
                    type(core).rule,
                    h,
                    core.named(thetas, grads, state_lists, [thetas, *state_lists]),
                    core.n_scratch,
                    scratch,
                )
            else:
                rule, n_scratch = type(core).rule, core.n_scratch
                # CPU, float32/float64, numba installed: each parameter's update is the numba kernel of
                # lptheory.fast.fused on the tensors' memory (one pass, no ATen call, numpy's reference bits);
                # otherwise (other devices or dtypes, non-contiguous tensors, LPTHEORY_ENGINE=numpy) the
                # rule's torch operations with reusable scratch tensors
                # large tensors' kernels split over torch's own OpenMP team (lptheory.fast.omp), else lptheory's pool
                team = _omp_team() if numba_eager else None
                with _pool.on_team(_TorchTeam(team) if team is not None else None):
                    for th, g, st, f in zip(thetas, grads, states, fused_p):
                        if f:
                            continue
                        if numba_eager and all(a.is_contiguous() for a in (th, g, *st)):
                            a_th, a_g, a_st = th.numpy(), g.numpy(), [s.numpy() for s in st]
                            named = core.named(a_th, a_g, a_st, [a_th, *a_st])
                            bad += _engine.run(core, h, named, count_nonfinite=True)
                            continue
                        unchecked.append(g)
                        _engine.apply(
                            rule, torch, h, core.named(th, g, st, [th, *st]), n_scratch, self._scratch(th, n_scratch)
                        )
            for p, th, low in zip(params, thetas, lows):
                if low:
                    p.copy_(th)
                self.state[p]["step"] = t + 1
        self._check_grads(unchecked, counted=bad > 0)

    _init_state = staticmethod(init_state)

    def _step_planned(self, group) -> bool:
        """One ``fused=True`` step of ``group`` through its cached :class:`_Plan` (CPU, numba): False, without
        touching anything, when there is no plan or it no longer holds (the caller then takes
        :meth:`_step_group`, which rebuilds it)."""
        plans = self.__dict__.get("_plans")
        plan = plans.get(id(group)) if plans else None
        grads = plan.holds(group, self.state) if plan is not None else None
        if grads is None:
            return False
        core = self._core_for(group)
        t = plan.t
        bad = plan.run(core, core.scalars(t), grads)
        plan.t = t + 1
        for st in plan.states:
            st["step"] = t + 1
        if bad:
            _core.count_nonfinite(self, 1)
        return True

    def _check_grads(self, grads, counted: bool = False) -> None:
        """Count a step whose gradients hold NaN or inf, warning once (:class:`NonFiniteGradientWarning`;
        :func:`lptheory.optimizers.nonfinite_steps` reads the count). ``counted``: the numba kernels
        already found some in the gradients they read (counted while reading them: no extra pass);
        ``grads`` are the others. On the cpu one sum per parameter; on other devices the flag stays on
        the device (no host synchronization in ``step``)."""
        if counted:
            _core.count_nonfinite(self, 1)
            grads = [g for g in grads if g.device.type != "cpu"]
        by_device: dict = {}
        for g in grads:
            by_device.setdefault(g.device, []).append(g)
        for device, gs in by_device.items():
            sums = torch.stack([g.sum(dtype=torch.float64 if device.type == "cpu" else torch.float32) for g in gs])
            if device.type != "cpu":
                _core.note_nonfinite(self, torch, sums)
            elif not bool(torch.isfinite(sums).all()) and not all(bool(torch.isfinite(g).all()) for g in gs):
                _core.count_nonfinite(self, 1)

    def state_dict(self):
        """``torch.optim.Optimizer.state_dict`` plus ``{"lptheory": {"optimizer": class name, "state_layout":
        n}}``, so that a state dict of another lptheory optimizer with the same keys (StaceyP2 and an older
        StaceyPP) is refused by :meth:`load_state_dict`, and a state dict of an earlier state layout of
        this optimizer (StaceyPP before its dual state: layout 1, buffer ``z``) is converted on loading."""
        sd = super().state_dict()
        sd["lptheory"] = {"optimizer": type(self).__name__, "state_layout": self._layout()}
        return sd

    # -- reusable memory (kept out of state_dict; rebuilt after deepcopy or pickling) ---------------------
    def _scratch(self, like, n: int):
        """``n`` scratch tensors shaped like ``like``: views of per-(device, dtype) buffers that grow to the
        largest parameter, so the single-tensor path allocates nothing per step."""
        pool = self.__dict__.setdefault("_scratch_bufs", {})
        key = (like.device, like.dtype)
        got = pool.get(key)
        m = like.numel()
        if got is None or len(got[0]) < n or got[0][0].numel() < m:
            size = max(m, got[0][0].numel() if got else 0)
            got = pool[key] = ([torch.empty(size, device=like.device, dtype=like.dtype) for _ in range(n)], {})
        bufs, views = got
        v = views.get((like.shape, n))
        if v is None:
            v = views[(like.shape, n)] = [b[:m].view(like.shape) for b in bufs[:n]]
        return v

    def _foreach_scratch(self, like: list, n: int):
        """``n`` persistent scratch lists for the multi-tensor path on CPU (fresh tensors per primitive cost
        page faults there; on CUDA the caching allocator makes them cheap and the memory is not held)."""
        pool = self.__dict__.setdefault("_foreach_bufs", {})
        key = tuple((x.device, x.dtype, tuple(x.shape)) for x in like)
        got = pool.get(key)
        if got is None or len(got) < n:
            if len(pool) > 8:
                pool.clear()
            total = sum(x.numel() for x in like)
            flats = [torch.empty(total, device=like[0].device, dtype=like[0].dtype) for _ in range(n)]
            got = pool[key] = [_views(f, like) for f in flats]
        return got[:n]

    def _flat_bucket(self, group, device, dtype, params, keys, core):
        """The flat layout of this (group, device, dtype) bucket, built (or rebuilt: parameters moved,
        state loaded, a deepcopy) when the parameters' memory is not its views; None when this step's
        parameters are not the layout's (some had no grad), so the caller updates them one by one."""
        layouts = self.__dict__.setdefault("_flat", {})
        gid = next(i for i, g in enumerate(self.param_groups) if g is group)
        key = (gid, device, dtype)
        flat = layouts.get(key)
        states = [self.state[p] for p in params]
        if flat is not None and flat.holds(params, states, keys):
            return flat
        members = [p for p in group["params"] if p.grad is not None and p.device == device and p.dtype == dtype]
        if [id(p) for p in members] != [id(p) for p in params]:
            return None
        layouts[key] = flat = _Flat(params, states, keys, lambda st, th: self._init_state(core, st, th))
        return flat


_OPTIONS = (("maximize", False), ("foreach", None), ("compiled", False), ("fused", False))


def torch_optimizer(core_cls: type, *, name: str | None = None, doc: str | None = None) -> type:
    """The ``torch.optim.Optimizer`` class of the element-wise optimizer class ``core_cls``, derived from its
    definition: ``(params, lr=<its default>, *, <its other hyper-parameters>, maximize=False, foreach=None,
    compiled=False, fused=False)``, in field order, with ``beta1`` and ``beta2`` taken as torch's
    ``betas=(beta1, beta2)``; every step runs ``core_cls``'s rule (the four execution paths of this module).
    :class:`LpDescent`, :class:`StaceyP2`, :class:`StaceyPP` and :class:`Lion` are made by it; the classes of
    other registered optimizers (yours included) are made on first access, ``lptheory.torch.<ClassName>``."""
    if not (isinstance(core_cls, type) and issubclass(core_cls, _core.ElementwiseOptimizer)):
        raise TypeError(f"core_cls must be an ElementwiseOptimizer subclass, got {core_cls!r}")
    name = name or core_cls.__name__
    rule = f"{core_cls.__module__}.{core_cls.__qualname__}"
    doc = doc or f"{core_cls.__name__} as a ``torch.optim.Optimizer`` (rule: :class:`{rule}`)."
    return derive(_Base, core_cls, _OPTIONS, name=name, doc=doc, module=__name__)


StaceyP2 = torch_optimizer(
    _core.StaceyP2,
    doc="Stacey(p,2), Algorithm 1, as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.optimizers.StaceyP2`).",
)
StaceyPP = torch_optimizer(
    _core.StaceyPP,
    doc="Stacey(p,p), Algorithm 2, as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.optimizers.StaceyPP`).",
)
LpDescent = torch_optimizer(
    _core.LpDescent,
    doc="Stochastic l_p descent, Algorithm 3: theta <- theta - lr s(g) (rule: :class:`lptheory.optimizers.LpDescent`).",
)
Lion = torch_optimizer(
    _core.Lion,
    doc="Lion (Chen et al. 2023, the paper's baseline) as a ``torch.optim.Optimizer``\n    "
    "(rule: :class:`lptheory.optimizers.Lion`).",
)


def __getattr__(name: str):
    """``lptheory.torch.<ClassName>`` for a registered element-wise optimizer class without a class here (a
    user's, defined in an imported module; ``SGD``, ``Adam``, ...): made by :func:`torch_optimizer` once."""
    for cls in list(_core.OPTIMIZERS.values()):
        if cls.__name__ == name and issubclass(cls, _core.ElementwiseOptimizer):
            made = globals()[name] = torch_optimizer(cls)
            return made
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# the matrix optimizers (issue 26: Muon, Scion, Schatten-p descent, Stacey in Schatten-p), re-exported
from .torch_spectral import Muon, SchattenDescent, Scion, StaceyP2Schatten, StaceyPPSchatten  # noqa: E402

__all__ += ["Muon", "Scion", "SchattenDescent", "StaceyP2Schatten", "StaceyPPSchatten"]
