"""(a) Exact identities of steepest descent in matrix norms, checked through the public API.

Each identity is evaluated on random matrices (batched, several shapes, a fixed seed stream) in
float64; its record compares the largest relative Frobenius gap with a rounding tolerance. Each has a
negative control: a nearby statement that is false (a method that is *not* the identity), which the same
check must find violated with a re-checked witness; an identity ``holds`` only when its control fails so.
The control's record follows the one convention of every pack: ``inconclusive``, "negative control 'x'
fails as it must" (a control's failure is the check's evidence that it can fail, not a finding).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from lptheory import norms as N
from lptheory.optimizers import Adam
from lptheory.spectral import Muon, SchattenDescent, Scion
from proofs_checks.api import ClaimSpec, control_record, value_claim

TOL = 1e-9  # relative Frobenius gap allowed for float64 rounding (SVDs of matrices up to 16 x 24)
SHAPES = ((3, 5), (6, 4), (8, 8), (16, 24))
BB = "Bernstein & Newhouse 2024, 'Old Optimizer, New Norm: An Anthology' (arXiv:2409.20325)"


def _matrices(seed, quick):
    rng = np.random.default_rng(np.random.SeedSequence([seed, 2601]))
    reps = 4 if quick else 16
    out = [rng.standard_normal((reps, *s)) for s in SHAPES]
    # rank-deficient and ill-conditioned cases
    lo = rng.standard_normal((reps, 6, 2)) @ rng.standard_normal((reps, 2, 5))
    out.append(lo)
    return out


def _gap(a, b):
    a, b = np.asarray(a), np.asarray(b)
    den = np.linalg.norm(b.reshape(len(b), -1), axis=1)
    num = np.linalg.norm((a - b).reshape(len(b), -1), axis=1)
    return num / np.where(den > 0, den, 1.0)


def _worst(pairs):
    """(largest gap, G, claimed) over [(claimed batch, reference batch, G batch)]."""
    best = (-1.0, None, None)
    for claimed, ref, G in pairs:
        g = _gap(claimed, ref)
        i = int(np.argmax(g))
        if g[i] > best[0]:
            best = (float(g[i]), G[i], claimed[i])
    return best


def _witness(identity, G, claimed):
    return {
        "kind": "spectral-identity",
        "identity": identity,
        "G": np.asarray(G).tolist(),
        "claimed": np.asarray(claimed).tolist(),
        "tolerance": TOL,
    }


def _identity_record(spec, identity, pairs, params):
    gap, G, claimed = _worst(pairs)
    return value_claim(spec, gap, TOL, params, method="exact", witness=_witness(identity, G, claimed))


def _with_control(main, raw):
    """``[main, control]``: the identity's record and its negative control's. The control (``raw``: the same
    check's record on a false neighbour, whose spec says "(control, false) ...") must be found violated, with
    a re-checked witness; ``main`` holds only then. The control's own record follows the one convention of
    every pack (:func:`proofs_checks.api.control_record`): inconclusive, "fails as it must", its witness,
    re-check and evidence kept."""
    failed = raw.status == "violated"
    false = raw.statement.removeprefix("(control, false) ")
    what = (
        f"a false neighbour of {main.id}, the statement that {false}; the same check (largest relative Frobenius "
        f"gap <= {TOL:g}, a failure re-checked from its witness at high precision) must find it violated"
    )
    ctrl = control_record(raw, raw.id.rsplit(".control-", 1)[1], what, failed=failed)
    if main.status == "holds" and not failed:
        main = dataclasses.replace(
            main,
            status="inconclusive",
            reason=main.reason + f"; but its negative control {raw.id} was not found violated ({raw.status}): "
            "the check did not show it can fail",
        )
    elif main.status == "holds":
        main = dataclasses.replace(
            main, reason=main.reason + f"; its negative control {raw.id} fails as it must (found violated)"
        )
    return [main, ctrl]


def _polar_eigh(G):
    """(G G^T)^{-1/4} G (G^T G)^{-1/4} via eigendecompositions: Shampoo's preconditioned step without
    accumulation (Bernstein & Newhouse, Sec. 3.3), computed without any SVD."""
    out = []
    for g in G:
        wl, ql = np.linalg.eigh(g @ g.T)
        wr, qr = np.linalg.eigh(g.T @ g)
        tl = wl.max() * 1e-12
        tr = wr.max() * 1e-12
        il = (ql * np.where(wl > tl, np.abs(wl) ** -0.25, 0.0)) @ ql.T
        ir = (qr * np.where(wr > tr, np.abs(wr) ** -0.25, 0.0)) @ qr.T
        out.append(il @ g @ ir)
    return np.asarray(out)


def _identity_with_control(claim_id, statement, source, control, kind, pairs, control_pairs, params):
    """The records of the identity claim ``claim_id`` (steepest directions of ``kind`` over the shapes) and of
    its negative control: ``control`` = (id suffix, statement), a false variant checked on ``control_pairs``."""
    suffix, control_statement = control
    main = ClaimSpec(id=claim_id, statement=statement, source=source, show=("shapes",))
    ctrl = ClaimSpec(
        id=f"{claim_id}.{suffix}", statement=control_statement, source=f"control of {claim_id}", show=("shapes",)
    )
    return _with_control(
        _identity_record(main, kind, pairs, params), _identity_record(ctrl, kind, control_pairs, params)
    )


def _step_direction(opt, W, G, lr):
    """The direction of one step of ``opt`` from ``W`` with gradient ``G`` (from a fresh state): (W - W') / lr."""
    return (W - opt.step(W, G, opt.init(W))[0]) / lr


def _muon_records(mats, params, lr):
    """1. Muon's exact-SVD step is the spectral-norm steepest direction (control: its Newton-Schulz step)."""
    spec_inf = N.Schatten(math.inf)
    muon = Muon(lr=lr, momentum=0.0, nesterov=False, orthogonalize="svd", adjust_lr=None)
    muon_ns = Muon(lr=lr, momentum=0.0, nesterov=False, orthogonalize="newton-schulz", adjust_lr=None)
    pairs, pairs_ns = [], []
    for G in mats:
        W = np.zeros_like(G)
        d = spec_inf.direction(G)
        pairs.append((_step_direction(muon, W, G, lr), d, G))
        pairs_ns.append((_step_direction(muon_ns, W, G, lr), d, G))
    return _identity_with_control(
        "spectral.muon-svd-step",
        "Muon with exact orthogonalization (no momentum, no weight decay) steps along "
        "-U V^T = -argmax_{||D||_{S_inf} <= 1} <G, D>, the spectral-norm steepest direction",
        f"Jordan et al. 2024 (Muon); {BB}, Sec. 3.2",
        (
            "control-ns5",
            "(control, false) Muon's Newton-Schulz step (5 quintic steps) equals the spectral steepest direction U V^T",
        ),
        "spectral-direction",
        pairs,
        pairs_ns,
        params,
    )


def _schatten_records(mats, params, lr):
    """2. Schatten-p steepest descent at p = 2 is normalized SGD, at p = inf the orthogonalized update."""
    scion2 = Scion(lr=lr, alpha=1.0, radius=1.0, norm=N.Schatten(2.0))
    pairs, pairs_c = [], []
    for G in mats:
        W = np.zeros_like(G)
        step = _step_direction(scion2, W, G, lr)  # = direction of the Frobenius LMO
        pairs.append((step, G / np.linalg.norm(G, axis=(-2, -1), keepdims=True), G))
        pairs_c.append((N.Schatten(2.5).direction(G), G / np.linalg.norm(G, axis=(-2, -1), keepdims=True), G))
    out = _identity_with_control(
        "spectral.schatten2-normalized-sgd",
        "the Schatten-2 (Frobenius) LMO step is normalized SGD: -lr G / ||G||_F",
        f"{BB}, Sec. 2; Pethick et al. 2025 (Scion), Table 2",
        ("control-p2.5", "(control, false) the Schatten-2.5 steepest direction is G / ||G||_F"),
        "frobenius-direction",
        pairs,
        pairs_c,
        params,
    )
    sd_inf = SchattenDescent(p=math.inf, lr=lr)
    pairs, pairs_c = [], []
    for G in mats:
        W = np.zeros_like(G)
        pairs.append((_step_direction(sd_inf, W, G, lr), _polar_eigh(G), G))
        pairs_c.append((N.Schatten(8.0).steepest_map(G), _polar_eigh(G), G))
    return out + _identity_with_control(
        "spectral.schatten-inf-orthogonalized",
        "Schatten-p descent at p = inf steps along the orthogonalized gradient U V^T, which is "
        "Shampoo's step without accumulation, (G G^T)^{-1/4} G (G^T G)^{-1/4}",
        f"{BB}, Sec. 3.2-3.3 (Shampoo without accumulation is spectral steepest descent)",
        ("control-p8", "(control, false) the unscaled Schatten-8 map U diag(s^{1/7}) V^T is U V^T"),
        "spectral-direction",
        pairs,
        pairs_c,
        params,
    )


_DUAL_NORMS = (
    (N.Lp, (1.0, 1.5, 2.0, 3.0, math.inf)),
    (N.Schatten, (1.0, 1.5, 2.0, 3.0, math.inf)),
)


def _dual_norm_records(mats):
    """3. Dual-norm identities per norm: <G, d*> = ||G||_*, ||d*|| = 1, and the dual of the dual."""
    norms = [cls(p) for cls, ps in _DUAL_NORMS for p in ps]
    norms += [N.ColNorm(), N.RowNorm(), N.ColNorm(rms=True), N.RowNorm(rms=True), N.SpectralRMS()]
    spec = ClaimSpec(
        id="spectral.dual-norm",
        statement="<G, d*> = ||G||_* and ||d*|| = 1 for the steepest direction d* of each norm; for "
        "l_p and Schatten-p, the dual of the dual is the norm (||.||_{**} = ||.||)",
        source=f"{BB}, Sec. 2 (duality map); Pethick et al. 2025, Table 2 (LMOs of the operator norms)",
        show=("norm",),
    )
    out = []
    for nm in norms:
        worst = 0.0
        for G in mats:
            d = nm.direction(G)
            dn = nm.dual_norm(G)
            worst = max(worst, float(np.max(np.abs(nm.inner(G, d) - dn) / np.maximum(dn, 1e-300))))
            worst = max(worst, float(np.max(np.abs(nm.norm(d) - 1.0))))
            if isinstance(nm, (N.Lp, N.Schatten)):
                x = G[..., 0, :] if nm.ndim == 1 else G
                worst = max(worst, float(np.max(np.abs(nm.dual().dual_norm(x) - nm.norm(x)) / nm.norm(x))))
        out.append(value_claim(spec, worst, TOL, {"norm": repr(nm)}, method="exact"))
    return out


def _adam_records(mats, params, lr):
    """4. Adam without moving averages is sign descent (control: with its moving averages, second step)."""
    adam = Adam(lr=lr, beta1=0.0, beta2=0.0, eps=0.0, bias_correction=False)
    adam_ema = Adam(lr=lr, beta1=0.9, beta2=0.999, eps=0.0, bias_correction=False)
    pairs, pairs_c = [], []
    for G in mats:
        g = G.reshape(len(G), -1)
        w = np.zeros_like(g)
        pairs.append((_step_direction(adam, w, g, lr), N.Lp(math.inf).direction(g), g))
        st = adam_ema.init(w)
        w1, st = adam_ema.step(w, g, st)
        w2, st = adam_ema.step(w1, -0.5 * g, st)  # a second step, so the averages matter
        pairs_c.append(((w1 - w2) / lr, np.sign(-0.5 * g), -0.5 * g))
    return _identity_with_control(
        "spectral.adam-no-ema-is-sign-descent",
        "Adam with beta1 = beta2 = 0 and eps = 0 (no moving averages) steps along -sign(g), the "
        "l_inf steepest direction (for g with no zero entry)",
        f"{BB}, Sec. 3.1",
        (
            "control-ema",
            "(control, false) Adam with beta1 = 0.9, beta2 = 0.999 steps along -sign(g) at its second step",
        ),
        "sign",
        pairs,
        pairs_c,
        params,
    )


def run_identities(ctx):
    """The spectral pack's identities, each with its negative control: Muon, Schatten-p descent, the dual
    norms, Adam without moving averages."""
    mats = _matrices(ctx.seed, ctx.quick)
    params = {"shapes": [list(m.shape[1:]) for m in mats], "seed": ctx.seed}
    lr = 0.1
    return (
        _muon_records(mats, params, lr)
        + _schatten_records(mats, params, lr)
        + _dual_norm_records(mats)
        + _adam_records(mats, params, lr)
    )
