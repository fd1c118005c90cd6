"""The paper's "Algorithmic efficiency" paragraph (Section 5.3): memory overhead from the optimizer state,
exactly, and the per-iteration cost against ``torch.optim.AdamW``, measured in one run.

Memory: after one step, every state tensor of the optimizer whose size equals its parameter's is a
per-coordinate buffer; their count per coordinate is the overhead in units of d (Adam: 2, its two moments;
Stacey: 2, the momentum and the dual vector). The bytes per parameter of the whole state are reported beside
(scalar state, such as torch's ``step`` tensors, included). Scratch buffers an implementation keeps outside
its state (``lptheory.torch`` keeps one the size of the largest parameter on its non-numba path) are not state.

Cost: a training step (forward, backward, optimizer) of the charlm transformer with ``lptheory.torch.StaceyPP``
at p = 3 against ``torch.optim.AdamW``, interleaved in blocks in one process on one thread; the ratio per block.
"""

from __future__ import annotations

import time

import numpy as np

from proofs_checks.api import ClaimSpec, control_record, interval_claim, value_claim

__all__ = ["MEMORY", "COST", "state_buffers", "step_times", "timed_blocks", "run_efficiency"]

_SRC = "Section 5.3 (Discussion), 'Algorithmic efficiency'"
MEMORY = ClaimSpec(
    id="practice.memory",
    statement="Stacey has a 2d memory overhead, as it needs to store both a "
    "momentum and a dual vector. This matches the memory overhead of Adam",
    source=_SRC,
    relation="==",
    show=("optimizer",),
)
COST = ClaimSpec(
    id="practice.step-cost",
    statement="the per-iteration cost [of Stacey], in terms of basic "
    "arithmetic operations, is also comparable to that of Adam",
    source=_SRC,
    relation="<=",
    show=("optimizer", "what"),
)
COMPARABLE = 1.2  # the reading of "comparable": at most 1.2 times AdamW's time


def state_buffers(opt, params) -> dict:
    """{"per_coordinate": buffers per coordinate, "bytes_per_param": state bytes per parameter} of ``opt``
    (after at least one step)."""
    import torch

    d = sum(p.numel() for p in params)
    coords = nbytes = 0
    for p in params:
        for v in opt.state.get(p, {}).values():
            if torch.is_tensor(v):
                nbytes += v.numel() * v.element_size()
                if v.numel() == p.numel():
                    coords += v.numel()
    return {"per_coordinate": coords / d, "bytes_per_param": nbytes / d}


def _model(seed=0):
    from torch import nn

    from .tasks import TinyGPT

    return TinyGPT(vocab=96, d=48, ctx=48), nn


def _build(name, model):
    import torch

    from lptheory import torch as lpt

    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-3)
    if name == "adam":
        return torch.optim.Adam(model.parameters(), lr=1e-3)
    if name == "sgd":
        return torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    if name == "lion":
        return lpt.Lion(model.parameters(), lr=1e-4)
    cls = lpt.StaceyPP if name == "stacey-pp" else lpt.StaceyP2
    return cls(model.parameters(), lr=1e-2, p=3.0, alpha=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01)


def step_times(
    blocks: int = 10, steps: int = 10, batch: int = 16, ctx: int = 48, names=("adamw", "stacey-pp"), seed: int = 0
) -> dict:
    """Per block, the seconds of ``steps`` training steps (forward, backward, step) and of the optimizer steps
    alone for each optimizer in ``names``, on copies of the same model and the same batches, interleaved (one
    thread). Returns ``{name: {"step": [...], "opt": [...]}}``."""
    import copy

    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        base, _ = _model(seed)
        models = {n: copy.deepcopy(base) for n in names}
        opts = {n: _build(n, models[n]) for n in names}
        g = torch.Generator().manual_seed(seed)
        data = torch.randint(0, 96, (steps, batch, ctx + 1), generator=g)
        return timed_blocks(models, opts, [(data[s, :, :-1], data[s, :, 1:]) for s in range(steps)], blocks)
    finally:
        torch.set_num_threads(before)


def timed_blocks(models: dict, opts: dict, batches: list, blocks: int) -> dict:
    """``blocks`` blocks (after one block of warm-up: numba compilation, allocations) of one training step per
    batch ``(x, y)`` of ``batches`` (forward, next-token cross-entropy, backward, ``step``) for each model
    ``models[n]`` with its optimizer ``opts[n]``, the order reversed every other block. Returns ``{n: {"step":
    [...], "opt": [...]}}``: per block, the seconds of the steps and of the optimizer steps alone."""
    from torch.nn import functional as F

    names = list(models)
    out = {n: {"step": [], "opt": []} for n in names}
    for b in range(blocks + 1):
        for n in names if b % 2 else tuple(reversed(names)):
            m, o = models[n], opts[n]
            t_opt = 0.0
            t0 = time.perf_counter()
            for x, y in batches:
                o.zero_grad(set_to_none=True)
                out_ = m(x)
                F.cross_entropy(out_.reshape(-1, out_.shape[-1]), y.reshape(-1)).backward()
                t1 = time.perf_counter()
                o.step()
                t_opt += time.perf_counter() - t1
            total = time.perf_counter() - t0
            if b:
                out[n]["step"].append(total)
                out[n]["opt"].append(t_opt)
    return out


def run_efficiency(ctx) -> list:
    import torch

    recs = []
    adam = None
    for name in ("adam", "stacey-pp", "stacey-p2", "sgd"):
        model, _ = _model()
        opt = _build(name, model)
        x = torch.randint(0, 96, (2, 49))
        from torch.nn import functional as F

        out = model(x[:, :-1])
        F.cross_entropy(out.reshape(-1, 96), x[:, 1:].reshape(-1)).backward()
        opt.step()
        st = state_buffers(opt, list(model.parameters()))
        if name == "adam":
            adam = st
            continue
        k = int(round(st["per_coordinate"]))
        params = {
            "optimizer": name,
            "model": "2-layer transformer, d_model 48",
            "buffers": st["per_coordinate"],
            "bytes_per_param": st["bytes_per_param"],
            "adam_buffers": adam["per_coordinate"],
            "adam_bytes_per_param": adam["bytes_per_param"],
            "dtype": "float32",
        }
        witness = {"kind": "practice-state", "buffers": k, "claimed": 2, "optimizer": name}
        if name == "sgd":
            params["control"] = "one-momentum"
            rec = value_claim(_ctl(MEMORY), float(k), 2.0, params, relation="==", witness=witness)
            recs.append(control_record(rec, "one-momentum", "SGD with momentum (one buffer) under the same rule"))
        else:
            note = (
                f"exact count of the state after one step: {st['bytes_per_param']:g} bytes per parameter "
                f"(Adam: {adam['bytes_per_param']:g}, with its scalar step tensors)"
            )
            recs.append(value_claim(MEMORY, float(k), 2.0, params, relation="==", witness=witness, note=note))
    blocks = 6 if ctx.quick else 20
    t = step_times(blocks=blocks, steps=5 if ctx.quick else 10)
    for what in ("step", "opt"):
        r = np.array(t["stacey-pp"][what]) / np.array(t["adamw"][what])
        params = {
            "optimizer": "stacey-pp",
            "p": 3.0,
            "what": "training step" if what == "step" else "optimizer step",
            "reference": "torch.optim.AdamW",
            "blocks": blocks,
            "threads": 1,
            "model": "2-layer transformer, d_model 48, context 48, batch 16",
        }
        note = (
            f"ratio to AdamW per interleaved block, measured in one run on one thread (this machine, shared); "
            f"'comparable' read as <= {COMPARABLE:g}x; wall-clock, not arithmetic operations"
        )
        recs.append(
            interval_claim(
                COST,
                r,
                COMPARABLE,
                params,
                method="simulation",
                note=note,
                data={"stacey": t["stacey-pp"][what], "adamw": t["adamw"][what]},
            )
        )
    return recs


def _ctl(spec):
    import dataclasses

    return dataclasses.replace(spec, id=spec.id + ".control")
