"""(c) Rates of stochastic steepest descent under Schatten-p smoothness, checked along simulator runs,
with negative controls.

Two claims, each on the grid T in ``ctx.T`` with batch n_t = T (N = T^2 gradient queries), R replicates:

``rate.lmo`` (proved here; a bound and its rate). Normalized stochastic steepest descent (uSCG of
Pethick et al. 2025 with alpha = 1, i.e. Scion without momentum; Muon without momentum at p = inf),
theta_{t+1} = theta_t + eta lmo(g~_t), ||lmo|| = 1, on f L-smooth in ||.|| = ||.||_{S_p}::

    (1/T) sum_t E||grad f(theta_t)||_{S_p*} <= (f_0 - f*) / (eta T) + L eta / 2 + 2 sigma_* / sqrt(n)

with E||g~ - g||_{S_p*} <= sigma_* / sqrt(n). Derivation (the descent-lemma argument of Bernstein et al.
2018, Thm. 1, for signSGD, in a general norm): f(theta') <= f(theta) - eta <g, d~> + L eta^2 / 2 with d~
the unit steepest direction of g~; <g, d~> = <g~, d~> - <g~ - g, d~> >= ||g~||_* - ||g~ - g||_* >= ||g||_*
- 2 ||g~ - g||_*; sum over t and divide by eta T. With eta = eta_0 / sqrt(T) and n = T the right side is
C T^{-1/2} = C N^{-1/4}. sigma_* for i.i.d. N(0, s^2) entries: E||xi||_{S_q} <= k^{1/q - 1/2} E||xi||_F <=
k^{1/q - 1/2} s sqrt(m n) (Hoelder on the k = min(m, n) singular values, then Jensen).

``rate.thm1-schatten`` (conjectural). The matrix analogue of the paper's Theorem 1 (Stacey, ICML 2025,
Thm. 1, Algorithm 3): the unscaled Schatten-p step theta_{t+1} = theta_t - eta S_p(g~_t), S_p(G) = U
diag(s^{1/(p-1)}) V^T, with eta = 1 / (L^{1/2} G^{1/(p-1)} T^{1/2}) and n_t = T, gives
E[(1/T) sum_t ||g_t||_{S_p*}^{p*}] = O(N^{-1/4}). No published proof: the paper's Lemmas B.1/B.2 are
coordinate-wise; this pack checks the rate along runs on a nonconvex factorization whose constants
are certified on a ball (the runs must stay inside: else not-applicable).

Controls (the evidence rule: a rate ``holds`` only if the same check fails on them): ``.control-still``
(lr = 0: the method does not move, so the measure is constant: exponent exactly 0) and ``.control-slow``
(eta = eta_0 / T: the path length is at most eta_0 c, so on a strongly convex instance whose start is
farther than that from the minimizer the measure stays above a positive constant: exponent 0). Both pin
their exponent (0), so a fitted decay below the claimed one is a violation, re-checked from the witness
(on the nonconvex instance of ``rate.thm1-schatten`` the slow control's pinning is argued, not proved: it
is fitted unpinned, and fails when its whole interval lies below theory - margin). The claim's own record
holds only when its fitted interval lies above theory - margin (its lower end) and both controls fail.
The controls' records follow the one convention of every pack: ``inconclusive``, "negative control 'x'
fails as it must", with what the control is and what the rule said about it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from lptheory.geometry import dual_exponent
from lptheory.norms import Schatten
from lptheory.spectral import SchattenDescent, Scion
from proofs_checks.api import ClaimSpec, Observer, control_record, interval_claim, rate_claim, simulate
from synthetic.matrix import KroneckerQuadratic, RankOneNoise, SymmetricFactorization
from synthetic.noise import Gaussian
from synthetic.oracle import GradientOracle

MARGIN = 0.05
THEORY = 0.25  # decay exponent in N = T^2


class DualNormAverage(Observer):
    """(1/T) sum_t ||grad f(theta_t)||_{S_q}^power per replicate (theta_t: the point before step t)."""

    name = "dual-norm-average"
    needs_previous = True

    def __init__(self, problem, q, power=1.0):
        self.problem, self.norm, self.power = problem, Schatten(q), power
        self.total, self.count, self.left = 0.0, 0, None

    def on_step(self, view):
        g = self.problem.grad(view.theta)
        self.total = self.total + self.norm.norm(self.problem.mat(g)) ** self.power
        self.count += 1
        if hasattr(self.problem, "inside"):  # both ends of every step inside the certificate's region
            ok = self.problem.inside(view.new_theta) & self.problem.inside(view.theta)
            self.left = ~ok if self.left is None else (self.left | ~ok)

    def value(self):
        return self.total / self.count


def _run(opt, problem, noise, T, R, seed, q, power):
    obs = DualNormAverage(problem, q, power)
    oracle = GradientOracle(problem, noise, batch=T)
    simulate(opt, problem, oracle, T, R, seed, observers=[obs], default_metrics=False)
    left = bool(np.any(obs.left)) if obs.left is not None else False
    return obs.value(), left


def _failed(c) -> bool:
    """A control fails the claim: violated (pinned), or its whole fitted interval below theory - margin. A
    control outside the claim's assumptions (not-applicable) does not show that the check can fail."""
    if c.status == "not-applicable":
        return False
    return c.status == "violated" or (c.ci is not None and c.ci[1] < THEORY - MARGIN)


def _strict(main, raw_controls):
    """The evidence rule: a rate holds only with its interval's lower end above theory - margin, no applicable
    control that does not fail (:func:`_failed`, on the controls' records under the claim's own rule) and at
    least one that does. A control outside the claim's assumptions (not-applicable) counts neither way, as in
    :func:`proofs_checks.verdict.gate_on_controls` (its record says so)."""
    if main.status != "holds":
        return main
    lo = main.ci[0]
    why = []
    if lo < THEORY - MARGIN:
        why.append(f"the interval's lower end {lo:.3f} is below theory - margin {THEORY - MARGIN:.3f}")
    idle = [c.id for c in raw_controls if c.status == "not-applicable"]
    live = [c for c in raw_controls if c.status != "not-applicable"]
    bad = [c.id for c in live if not _failed(c)]
    if bad:
        why.append(f"negative controls that do not fail as they must: {bad}")
    if raw_controls and not live:
        why.append(
            f"no negative control shows that the check can fail (every one is not applicable here: {idle}), so this "
            "holds is not controlled"
        )
    if why:
        return dataclasses.replace(main, status="inconclusive", reason=main.reason + "; " + "; ".join(why))
    names = ", ".join(c.id for c in live)
    also = f"; not applicable here, so not counted: {', '.join(idle)}" if idle else ""
    return dataclasses.replace(
        main,
        reason=f"{main.reason}; lower end above theory - margin; every {'applicable ' if idle else ''}negative control "
        f"fails as it must ({names}{also})",
    )


def _as_controls(raw_controls, what):
    """The controls' records by the one convention of every pack (:func:`proofs_checks.api.control_record`):
    inconclusive, "negative control 'tag' fails as it must", what the control is (``what``: tag -> words) and
    what the rate rule said about it; failing means :func:`_failed` (the same test as :func:`_strict`)."""
    out = []
    for c in raw_controls:
        tag = c.id.rsplit(".control-", 1)[1]
        out.append(control_record(c, tag, what[tag], failed=_failed(c)))
    return out


_MUST = (
    f"; the claim's rate rule (the fitted exponent's interval on the claim's side: lower end >= {THEORY:g} - "
    f"{MARGIN:g}) must not give it holds, and the check counts it failed when it is found violated or its whole "
    f"interval lies below {THEORY:g} - {MARGIN:g}"
)


def _controls(spec, grid, ys, params, note):
    recs = []
    for tag, y in ys.items():
        cspec = ClaimSpec(
            id=f"{spec.id}.control-{tag}",
            statement=f"(control, must fail) {spec.statement}",
            source=f"control of {spec.id}: {note[tag]}",
            relation="rate",
            show=spec.show,
        )
        recs.append(rate_claim(cspec, [T * T for T in grid], y, {**params, "T": grid}, theory=THEORY, pinned=True))
    return recs


def run_lmo(ctx):
    grid = list(ctx.T)
    R = 8 if ctx.quick else 16
    out = []
    for p in ctx.p:
        p = float(p)
        q = dual_exponent(p)
        pr = KroneckerQuadratic(4, 6, seed=ctx.seed, profile="spread", cond=4.0, start=2.0)
        s = 0.5
        noise = Gaussian(np.full(pr.d, s))
        L = pr.smoothness(p)
        delta = float(pr.f(pr.x0())) - pr.f_star
        k = min(pr.shape)
        sigma_star = k ** (1.0 / q - 0.5) * s * math.sqrt(pr.d)
        eta0 = math.sqrt(2.0 * delta / L)
        params = {"p": p, "problem": pr.name, "shape": list(pr.shape), "noise_std": s, "R": R}
        bound_spec = ClaimSpec(
            id="rate.lmo.bound",
            statement="(1/T) sum_t E||grad f(theta_t)||_{S_p*} <= (f_0 - f*)/(eta T) + L eta/2 + 2 sigma_*/sqrt(n) "
            "for normalized stochastic steepest descent in ||.||_{S_p} (eta = eta_0/sqrt(T), n = T)",
            source="derived in proofs_checks/spectral/rates.py (Bernstein et al. 2018, Thm. 1's argument in a "
            "general norm); method: Pethick et al. 2025 (Scion) uSCG with alpha = 1",
            show=("p", "T"),
        )
        means, still, slow = [], [], []
        for T in grid:
            eta = eta0 / math.sqrt(T)
            opt = Scion(lr=eta, alpha=1.0, radius=1.0, norm=Schatten(p), shape=pr.shape)
            v, _ = _run(opt, pr, noise, T, R, ctx.seed, q, 1.0)
            bound = delta / (eta * T) + L * eta / 2.0 + 2.0 * sigma_star / math.sqrt(T)
            out.append(interval_claim(bound_spec, v, bound, {**params, "T": T}, tests=len(grid)))
            means.append(float(np.mean(v)))
            v0, _ = _run(Scion(lr=0.0, alpha=1.0, norm=Schatten(p), shape=pr.shape), pr, noise, T, R, ctx.seed, q, 1.0)
            still.append(float(np.mean(v0)))
            v1, _ = _run(Scion(lr=eta0 / T, alpha=1.0, norm=Schatten(p), shape=pr.shape), pr, noise, T, R, ctx.seed,
                         q, 1.0)  # fmt: skip
            slow.append(float(np.mean(v1)))
        spec = ClaimSpec(
            id="rate.lmo",
            statement="normalized stochastic steepest descent in ||.||_{S_p} with eta = eta_0/sqrt(T), n_t = T: "
            "(1/T) sum_t E||grad f(theta_t)||_{S_p*} = O(N^{-1/4}), N = T^2",
            source=bound_spec.source,
            relation="rate",
            show=("p",),
        )
        # pinning of the slow control: the path stays within eta_0 of theta_0 (unit steps), and
        # ||grad f(W)||_{S_q} >= lmin(A) lmin(B) ||W - W*||_{S_p} (q <= p) on the quadratic
        dist0 = float(Schatten(p).norm(pr.mat(pr.x0() - pr.w_star)))
        floor = float(np.min(pr.a) * np.min(pr.b)) * max(dist0 - eta0, 0.0)
        notes = {
            "still": "lr = 0, the measure is constant (exponent 0)",
            "slow": f"eta = eta_0/T: path length <= eta_0 = {eta0:.3g} < ||theta_0 - theta*||_{{S_p}} = {dist0:.3g}, "
            f"so the measure stays >= {floor:.3g} > 0 (exponent 0)",
        }
        controls = _controls(spec, grid, {"still": still, "slow": slow}, params, notes)
        main = rate_claim(spec, [T * T for T in grid], means, {**params, "T": grid}, theory=THEORY, pinned=False)
        what = {
            "still": "Scion with lr = 0, which does not move, so its measure is constant (decay exponent exactly 0)"
            + _MUST,
            "slow": "Scion with " + notes["slow"] + _MUST,
        }
        out += [_strict(main, controls), *_as_controls(controls, what)]
    return out


def run_thm1(ctx):
    grid = list(ctx.T)
    R = 8 if ctx.quick else 16
    out = []
    for p in ctx.p:
        p = float(p)
        if math.isinf(p):
            continue  # the unscaled map at p = inf is the LMO step (rate.lmo); Theorem 1 needs p < inf here
        q = dual_exponent(p)
        pr = SymmetricFactorization(6, 4, rank=2, seed=ctx.seed, start=1.0, R=1.6)
        noise = RankOneNoise.random(6, 4, k=3, sigma=0.3, seed=ctx.seed)
        L = pr.smoothness(p)
        G = pr.grad_sup(p) + 0.3  # ||atom||_{S_q} = 0.3 for unit rank-one atoms; a batch mean is in their hull
        params = {"p": p, "problem": pr.name, "shape": list(pr.shape), "R_ball": pr.R, "R": R}
        delta = float(pr.f(pr.x0())) - pr.f_star
        sig1 = float(np.sum(noise.sigma))
        bound_spec = ClaimSpec(
            id="rate.thm1-schatten.bound",
            statement="Theorem 1's bound in Schatten-p geometry: E[(1/T) sum_t ||g_t||_{S_p*}^{p*}] <= "
            "(f_0 - f*)/(eta T) + L eta G^{2/(p-1)}/2 + (2p-1)/(p-1) G^{1/(p-1)} ||sigma||_1 / sqrt(n) "
            "(||sigma||_1: the sum of the entries' standard deviations)",
            source="Stacey (ICML 2025), Theorem 1, transplanted to Schatten-p by this pack (no published proof)",
            show=("p", "T"),
        )
        means, still, slow, left_any = [], [], [], False
        for T in grid:
            eta = 1.0 / (math.sqrt(L) * G ** (1.0 / (p - 1.0)) * math.sqrt(T))
            v, left = _run(SchattenDescent(p=p, lr=eta, shape=pr.shape), pr, noise, T, R, ctx.seed, q, q)
            left_any |= left
            means.append(float(np.mean(v)))
            bound = delta / (eta * T) + L * eta * G ** (2.0 / (p - 1.0)) / 2.0
            bound += (2.0 * p - 1.0) / (p - 1.0) * G ** (1.0 / (p - 1.0)) * sig1 / math.sqrt(T)
            out.append(
                interval_claim(
                    bound_spec,
                    v,
                    bound,
                    {**params, "T": T},
                    tests=len(grid),
                    applicable=not left,
                    why="an iterate left the ball on which L and G are certified" if left else None,
                )
            )
            v0, _ = _run(SchattenDescent(p=p, lr=0.0, shape=pr.shape), pr, noise, T, R, ctx.seed, q, q)
            still.append(float(np.mean(v0)))
            eta_s = 1.0 / (math.sqrt(L) * G ** (1.0 / (p - 1.0)) * T)
            v1, _ = _run(SchattenDescent(p=p, lr=eta_s, shape=pr.shape), pr, noise, T, R, ctx.seed, q, q)
            slow.append(float(np.mean(v1)))
        spec = ClaimSpec(
            id="rate.thm1-schatten",
            statement="Theorem 1 in Schatten-p geometry: theta_{t+1} = theta_t - eta S_p(g~_t) with "
            "eta = 1/(L^{1/2} G^{1/(p-1)} T^{1/2}), n_t = T: E[(1/T) sum_t ||g_t||_{S_p*}^{p*}] = O(N^{-1/4})",
            source="Stacey (ICML 2025), Theorem 1, transplanted to Schatten-p by this pack (no published proof; "
            "the paper's Lemmas B.1/B.2 are coordinate-wise)",
            relation="rate",
            show=("p",),
        )
        notes = {
            "still": "lr = 0, the measure is constant (exponent 0)",
            "slow": "eta = 1/(L^{1/2} G^{1/(p-1)} T): the path length is bounded independently of T, the start's "
            "distance to the critical set is not (exponent 0 on this instance)",
        }
        controls = _controls(spec, grid, {"still": still}, params, notes)
        # the slow control's pinning is argued, not proved, on this nonconvex instance: reported unpinned
        cs = ClaimSpec(id=f"{spec.id}.control-slow", statement=f"(control, must fail) {spec.statement}",
                       source=f"control of {spec.id}: {notes['slow']}", relation="rate", show=spec.show)  # fmt: skip
        controls.append(rate_claim(cs, [T * T for T in grid], slow, {**params, "T": grid}, theory=THEORY, pinned=False))
        main = rate_claim(
            spec,
            [T * T for T in grid],
            means,
            {**params, "T": grid},
            theory=THEORY,
            pinned=False,
            applicable=not left_any,
            why="an iterate left the ball ||X||_2 <= R on which L and G are certified" if left_any else None,
        )
        what = {
            "still": "SchattenDescent with lr = 0, which does not move, so its measure is constant (decay exponent "
            "exactly 0)" + _MUST,
            "slow": "SchattenDescent with steps shrinking like 1/T, "
            + notes["slow"]
            + "; that exponent is argued, not "
            "proved, on this nonconvex instance, so the rule fits it as not pinned and, for a slower decay, can say "
            "no more than inconclusive" + _MUST,
        }
        out += [_strict(main, controls), *_as_controls(controls, what)]
    return out
