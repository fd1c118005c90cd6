"""``torch.optim`` versions of the matrix optimizers of :mod:`lptheory.spectral`: :class:`Muon`,
:class:`Scion`, :class:`SchattenDescent`, :class:`StaceyP2Schatten`, :class:`StaceyPPSchatten`.

The rules are not copied: every step runs the ``rule`` of the matching :mod:`lptheory.spectral` class
on each parameter, in place on the parameter and its state (the same code numpy arrays go through).

Parameters. A parameter with two or more dimensions is a matrix (d_out, d_in): tensors with more than
two dimensions (convolutions) are viewed as (shape[0], prod(shape[1:])), as Jordan et al.'s Muon
does. Other parameters (biases, norms' gains, embeddings' vectors) take the declared ``fallback``, as
the libraries that ship Muon do: ``"adamw"`` (default: :class:`lptheory.optimizers.AdamW` with
``fallback_lr`` (default: ``lr``), ``fallback_betas``, ``fallback_eps``, ``fallback_weight_decay``),
``"sgd"`` (plain ``theta -= fallback_lr g``) or ``None`` (such a parameter raises ``ValueError``, as
``torch.optim.Muon``). :class:`Scion` with a vector norm (``norm="linf"``, the sign LMO) treats
one-dimensional parameters with its own rule instead of the fallback.

State lives in ``self.state[param]`` (the rule's buffers, ``step``), created lazily, so
``state_dict()``/``load_state_dict()`` round-trip; LR schedulers work (they edit ``group["lr"]``);
each param group may carry its own hyper-parameters (e.g. Scion's ``radius`` per group).
"""

from __future__ import annotations

import torch

from . import optimizers as _core
from . import spectral as _sp
from ._torch_optim import cached_core, closure_loss, derive, init_state

__all__ = ["Muon", "Scion", "SchattenDescent", "StaceyP2Schatten", "StaceyPPSchatten"]

_FALLBACKS = (None, "adamw", "sgd")


class _MatrixTorch(torch.optim.Optimizer):
    _core_cls: type
    _core_fields: tuple

    def __init__(self, params, defaults):
        fb = defaults.get("fallback")
        if fb not in _FALLBACKS:
            raise ValueError(f"fallback must be one of {list(_FALLBACKS)}, got {fb!r}")
        if defaults.get("fallback_lr") is not None:
            _core.AdamW(lr=defaults["fallback_lr"])  # validates (the error names lr)
        self._core_for(defaults)  # validate through the core class (errors name the parameter)
        super().__init__(params, defaults)

    def _core_for(self, group):
        kw = {k: group[k] for k in self._core_fields}
        if torch.is_tensor(kw.get("lr")):
            kw["lr"] = float(kw["lr"].item())
        key = tuple(sorted((k, v if not isinstance(v, list) else tuple(v)) for k, v in kw.items()))
        return cached_core(self, key, lambda: self._core_cls(**kw))

    def _fallback_for(self, group):
        fb = group.get("fallback", "adamw")
        if fb is None:
            return None
        lr = group.get("fallback_lr")
        lr = group["lr"] if lr is None else lr
        lr = float(lr.item()) if torch.is_tensor(lr) else lr
        if fb == "sgd":
            return _core.SGD(lr=lr, momentum=0.0)
        b1, b2 = group.get("fallback_betas", (0.9, 0.999))
        return _core.AdamW(
            lr=lr,
            beta1=float(b1),
            beta2=float(b2),
            eps=group.get("fallback_eps", 1e-8),
            weight_decay=group.get("fallback_weight_decay", 0.0),
        )

    def _is_matrix(self, core, p) -> bool:
        return p.ndim >= 2 if core.ndim == 2 else True

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            core = self._core_for(group)
            rule = type(core).rule
            fallback = None
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError(f"{type(self).__name__} does not support sparse gradients")
                g = p.grad
                if group.get("maximize", False):
                    g = -g
                state = self.state[p]
                if not self._is_matrix(core, p):
                    fallback = fallback or self._fallback_for(group)
                    if fallback is None:
                        raise ValueError(
                            f"{type(self).__name__} got a parameter of shape {tuple(p.shape)} and fallback=None: "
                            "pass fallback='adamw' or 'sgd', or give it to another optimizer"
                        )
                    if len(state) == 0:
                        state.update(fallback.init(p.detach()))
                    st = {k: state[k] for k in (*fallback.buffers, "step")}
                    _, new = fallback.step(p.detach(), g, st, donate=True)  # in place on p and the buffers
                    state["step"] = new["step"]
                    continue
                theta = p.detach()
                if core.ndim == 2 and p.ndim > 2:
                    theta = theta.view(p.shape[0], -1)
                    g = g.reshape(theta.shape)
                if len(state) == 0:
                    init_state(core, state, theta)
                bufs = {
                    k: (state[k].view(theta.shape) if state[k].shape != theta.shape else state[k]) for k in core.buffers
                }
                h = core.hyper_at(state["step"])
                _core.note_nonfinite(self, torch, g)  # one warning, a count (lptheory.optimizers.nonfinite_steps)
                rule(torch, h, theta, g.contiguous(), bufs, {"theta": theta, **bufs})
                state["step"] += 1
        return loss


# the options after a matrix optimizer's hyper-parameters (module docstring)
_OPTIONS = (
    ("maximize", False),
    ("fallback", "adamw"),
    ("fallback_lr", None),
    ("fallback_betas", (0.9, 0.999)),
    ("fallback_eps", 1e-8),
    ("fallback_weight_decay", 0.0),
)


def _derive(core_cls: type, doc: str) -> type:
    """The ``torch.optim`` class of the matrix optimizer class ``core_cls``: ``(params, lr=<its default>, *,
    <its other hyper-parameters but shape>, maximize=False, fallback="adamw", fallback_lr=None,
    fallback_betas=(0.9, 0.999), fallback_eps=1e-8, fallback_weight_decay=0.0)`` (Stacey's ``beta1``, ``beta2``
    as ``betas``, kept in the param groups as ``beta1`` and ``beta2``)."""
    return derive(_MatrixTorch, core_cls, _OPTIONS, name=core_cls.__name__, doc=doc, module=__name__,
                  leave_out=("shape",), split_betas=True)  # fmt: skip


Muon = _derive(
    _sp.Muon,
    """Muon as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.spectral.Muon`, the update of
    ``torch.optim.Muon``'s pseudo-code). ``orthogonalize="svd"`` takes the exact polar factor;
    ``ns_dtype="bfloat16"`` runs Newton-Schulz in bfloat16 as ``torch.optim.Muon`` does (default: the
    parameter's dtype). Non-matrix parameters: ``fallback`` (module docstring).""",
)
Scion = _derive(
    _sp.Scion,
    """Scion (Pethick et al. 2025) as a ``torch.optim.Optimizer`` (rule: :class:`lptheory.spectral.Scion`).
    ``radius`` (rho), ``norm`` and ``constrained`` may differ per param group (e.g. ``norm="colnorm"`` for
    the input layer, ``"rms->rms"`` for hidden layers, ``"linf"`` (sign) for biases and the output layer,
    as in their Table 2 and Section 5).""",
)
SchattenDescent = _derive(
    _sp.SchattenDescent, "Stochastic Schatten-p descent (rule: :class:`lptheory.spectral.SchattenDescent`)."
)
StaceyP2Schatten = _derive(
    _sp.StaceyP2Schatten, "Stacey(p,2) in Schatten-p geometry (rule: :class:`lptheory.spectral.StaceyP2Schatten`)."
)
StaceyPPSchatten = _derive(
    _sp.StaceyPPSchatten, "Stacey(p,p) in Schatten-p geometry (rule: :class:`lptheory.spectral.StaceyPPSchatten`)."
)
