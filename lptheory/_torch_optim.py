"""What the ``torch.optim`` classes of :mod:`lptheory.torch` (element-wise rules) and
:mod:`lptheory.torch_spectral` (matrix rules) share: the class made from an optimizer's definition
(:func:`derive`), the cache of core optimizers per param group's values, the closure call of ``step`` and a
parameter's lazy state."""

from __future__ import annotations

import dataclasses
import inspect

import torch


def check_betas(betas) -> tuple:
    """``betas`` as a pair of floats ``(beta1, beta2)``; ValueError naming ``betas`` otherwise."""
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        raise ValueError(f"betas must be a pair (beta1, beta2), got {betas!r}")
    return tuple(float(b) for b in betas)


def derive(base: type, core_cls: type, options: tuple, *, name: str, doc: str, module: str, leave_out=(),
           split_betas: bool = False) -> type:  # fmt: skip
    """The ``torch.optim.Optimizer`` subclass of ``base`` for the optimizer class ``core_cls``, derived from its
    definition: ``(params, lr=<its default>, *, <its other hyper-parameters>, <options>)``, the hyper-parameters
    in field order (``leave_out`` left out), ``beta1`` and ``beta2`` taken as torch's ``betas=(beta1, beta2)``,
    then ``options`` (pairs ``(name, default)``). The param groups' defaults keep that order, a value whose
    default is a tuple as a tuple, ``betas`` checked (:func:`check_betas`) and kept as ``betas``, or with
    ``split_betas`` as the two floats ``beta1``, ``beta2`` in its place. ``_core_fields``: the group keys
    that are ``core_cls``'s fields. ``base.__init__(self, params, defaults)`` does the rest."""
    fields = {f.name: f for f in dataclasses.fields(core_cls) if f.name not in leave_out}
    if "lr" not in fields:
        raise ValueError(f"core_cls must have an lr field (torch.optim's lr), {core_cls.__name__} has {sorted(fields)}")
    betas = "beta1" in fields and "beta2" in fields
    P = inspect.Parameter
    sig = [P("self", P.POSITIONAL_OR_KEYWORD), P("params", P.POSITIONAL_OR_KEYWORD)]
    sig.append(P("lr", P.POSITIONAL_OR_KEYWORD, default=fields["lr"].default))
    core_fields = ["lr"]
    for n, f in fields.items():
        if n == "lr" or (betas and n == "beta2"):
            continue
        if betas and n == "beta1":
            sig.append(P("betas", P.KEYWORD_ONLY, default=(f.default, fields["beta2"].default)))
            core_fields += ["beta1", "beta2"] if split_betas else []
            continue
        sig.append(P(n, P.KEYWORD_ONLY, default=f.default))
        core_fields.append(n)
    sig += [P(k, P.KEYWORD_ONLY, default=v) for k, v in options]
    signature = inspect.Signature(sig)
    tuples = {p.name for p in sig if isinstance(p.default, tuple)}

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        defaults = {}
        for k, v in bound.arguments.items():
            if k == "betas":
                v = check_betas(v)
                if split_betas:
                    defaults["beta1"], defaults["beta2"] = v
                    continue
            elif k in tuples:
                v = tuple(v)
            if k not in ("self", "params"):
                defaults[k] = v
        base.__init__(self, bound.arguments["params"], defaults)

    __init__.__signature__ = signature
    __init__.__qualname__ = f"{name}.__init__"
    attrs = {
        "__init__": __init__,
        "__doc__": doc,
        "__module__": module,
        "__qualname__": name,
        "_core_cls": core_cls,
        "_core_fields": tuple(core_fields),
    }
    return type(name, (base,), attrs)


def cached_core(opt, key, make):
    """The core optimizer of a param group's values ``key``, made by ``make()`` once and kept in ``opt``'s
    ``_cores`` (``torch.optim.Optimizer.__getstate__`` leaves it out); the cache is cleared past 64 entries
    (an LR schedule makes a new key each step)."""
    cache = opt.__dict__.setdefault("_cores", {})
    core = cache.get(key)
    if core is None:
        if len(cache) > 64:
            cache.clear()
        core = cache[key] = make()
    return core


def closure_loss(closure):
    """The loss of ``step(closure)``: ``closure()`` evaluated with grad enabled, or None without a closure."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


def init_state(core, state: dict, theta) -> None:
    """The lazy initial state of a parameter (``core.init``: the rule's buffers, ``step = 0``)."""
    init = core.init(theta)
    state["step"] = 0
    for k in core.buffers:
        state[k] = init[k]
