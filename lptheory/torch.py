"""``torch.optim`` optimizers for the paper's methods: :class:`LpDescent` (Alg. 3), :class:`StaceyP2`
(Alg. 1) and :class:`StaceyPP` (Alg. 2).

The update rules are not copied: every step calls the element-wise rule of the matching
:mod:`lptheory.optimizers` class (``step(..., donate=True)`` writes into the parameter and the state in
place), so numpy, torch arrays and these ``torch.optim`` wrappers share one implementation.

torch conventions: ``params`` or param groups; defaults ``lr`` (the paper's eta), ``alpha``, ``tau``,
``betas=(beta1, beta2)``, ``eps``, ``weight_decay``, ``p``, ``eps_mode``, ``z_init``, ``maximize``.
State lives in ``self.state[param]`` (``z``, ``m``, ``step``), created lazily at the first step, so
``state_dict()``/``load_state_dict()`` round-trip (a resumed run continues bit-identically), and it
survives ``copy.deepcopy`` and ``add_param_group``; LR schedulers work (they edit ``group["lr"]``).
Parameters whose ``grad`` is None are skipped. ``step(closure)`` re-evaluates the closure with grad
enabled and returns the loss. No host synchronization inside ``step`` (``step`` counts are Python
ints; no data-dependent branches on tensors). float16/bfloat16 parameters: the update is computed in
float32 (state kept in float32) and rounded back to the parameter's dtype.

This first version runs the single-tensor path (one fused-in-place rule per parameter); a multi-tensor
(``torch._foreach_*``) path and compiled kernels are planned (issue 8).

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

import torch

from . import optimizers as _core

__all__ = ["LpDescent", "StaceyP2", "StaceyPP", "Lion"]

_LOW = (torch.float16, torch.bfloat16)


def _check_betas(betas):
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    return tuple(float(b) for b in betas)


class _Base(torch.optim.Optimizer):
    """Runs the rule of ``_core_cls`` (an :mod:`lptheory.optimizers` class) on every parameter. A param
    group's values named in ``_core_fields`` (plus ``betas`` -> ``beta1``, ``beta2``) are the core
    optimizer's hyper-parameters; the core object is built once per distinct set of values."""

    _core_cls: type
    _core_fields: tuple

    def __init__(self, params, defaults):
        self._core_for(defaults)  # validate once through the core class (errors name the parameter)
        super().__init__(params, defaults)

    def _core_for(self, group) -> _core.Optimizer:
        kw = {k: group[k] for k in self._core_fields}
        if "betas" in group:
            kw["beta1"], kw["beta2"] = _check_betas(group["betas"])
        key = tuple(sorted(kw.items()))
        cache = self.__dict__.setdefault("_cores", {})  # torch.optim.Optimizer.__getstate__ leaves it out
        core = cache.get(key)
        if core is None:
            if len(cache) > 64:  # an LR schedule makes a new key each step
                cache.clear()
            core = cache[key] = self._core_cls(**kw)
        return core

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            core = self._core_for(group)
            keys = core.state_keys()
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                low = p.dtype in _LOW
                theta = p.detach().float() if low else p.detach()
                grad = p.grad.detach()
                grad = grad.float() if low else grad
                if group.get("maximize", False):
                    grad = -grad
                state = self.state[p]
                if len(state) == 0:
                    init = core.init(theta)
                    state["step"] = 0
                    for k in keys:
                        state[k] = init[k]
                cs = {"step": state["step"], **{k: state[k] for k in keys}}
                # donate=True: the rule writes into theta (p's storage unless p is low precision) and the state
                new, ns = core.step(theta, grad.contiguous(), cs, donate=True)
                if low:
                    p.copy_(new)
                state["step"] = ns["step"]
        return loss


class _StaceyTorch(_Base):
    _core_fields = ("lr", "p", "alpha", "tau", "eps", "weight_decay", "eps_mode", "z_init")

    def __init__(
        self,
        params,
        lr=1e-3,
        *,
        p=3.0,
        alpha=1e-3,
        tau=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0.0,
        eps_mode="paper",
        z_init="params",
        maximize=False,
    ):
        defaults = dict(
            lr=lr,
            p=p,
            alpha=alpha,
            tau=tau,
            betas=_check_betas(betas),
            eps=eps,
            weight_decay=weight_decay,
            eps_mode=eps_mode,
            z_init=z_init,
            maximize=maximize,
        )
        super().__init__(params, defaults)


class StaceyP2(_StaceyTorch):
    """Stacey(p,2), Algorithm 1, as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.optimizers.StaceyP2`)."""

    _core_cls = _core.StaceyP2


class StaceyPP(_StaceyTorch):
    """Stacey(p,p), Algorithm 2, as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.optimizers.StaceyPP`)."""

    _core_cls = _core.StaceyPP


class LpDescent(_Base):
    """Stochastic l_p descent, Algorithm 3: theta <- theta - lr s(g) (rule: :class:`lptheory.optimizers.LpDescent`)."""

    _core_cls = _core.LpDescent
    _core_fields = ("lr", "p")

    def __init__(self, params, lr=1e-3, *, p=3.0, maximize=False):
        super().__init__(params, dict(lr=lr, p=p, maximize=maximize))


class Lion(_Base):
    """Lion (Chen et al. 2023, the paper's baseline) as a ``torch.optim.Optimizer``
    (rule: :class:`lptheory.optimizers.Lion`)."""

    _core_cls = _core.Lion
    _core_fields = ("lr", "weight_decay")

    def __init__(self, params, lr=1e-4, *, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=_check_betas(betas), weight_decay=weight_decay, maximize=maximize))
