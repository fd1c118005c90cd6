"""An optimizer the toolkit does not ship, on a user-defined online problem: ``lptheory check THIS_FILE``.

Diagonal AdaGrad (Duchi, Hazan & Singer 2011) projected on the box [-1, 1]^d, written once with the
public rule API, on online quadratics f_t(x) = |x - c_t|^2 / 2 (time-varying). Claim (their Thm. 5):
with eta = D_inf / sqrt(2), D_inf = 2, Regret_T <= sqrt(2) D_inf sum_i ||g_{1:T,i}||_2, and the
average regret decays like T^{-1/2}.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from lptheory.domains import Box
from lptheory.optimizers import ElementwiseOptimizer, Projected
from lptheory.problem import Problem
from proofs_checks.api import ClaimSpec, Observer, Pack, Regret, exact_oracle, rate_claim, simulate, value_claim

PACK = Pack("online-regret", title="Example: AdaGrad's regret on online quadratics")


@dataclass(frozen=True)
class AdaGrad(ElementwiseOptimizer):
    name: ClassVar[str] = "adagrad"
    buffers: ClassVar[tuple] = ("v",)
    limits: ClassVar[dict] = {"lr": dict(lo=0.0)}
    lr: float = 1.0

    @staticmethod
    def rule(xp, h, b):  # v_t = v_{t-1} + g_t^2;  x_{t+1} = x_t - eta g_t / sqrt(v_t)
        xp.add(b.v, xp.multiply(b.grad, b.grad, out=b.s1), out=b.new_v)
        xp.add(xp.sqrt(b.new_v, out=b.s1), 1e-300, out=b.s1)
        xp.multiply(xp.divide(b.grad, b.s1, out=b.s2), h.lr, out=b.s2)
        xp.subtract(b.theta, b.s2, out=b.new_theta)


class OnlineQuadratics(Problem):
    name, time_varying = "online-quadratics", True

    def __init__(self, d, T, seed):
        self.d, self.c = d, np.random.default_rng(seed).uniform(-1, 1, (T + 1, d))  # f_0 .. f_T

    def f(self, x, t=None):
        return 0.5 * np.sum((x - self.c[t]) ** 2, axis=-1)

    def grad(self, x, t=None):
        return x - self.c[t]

    def best_fixed_point(self, T):  # argmin over the box of sum_t f_t: the clipped mean
        return np.clip(self.c[:T].mean(axis=0), -1, 1)


class GradSquares(Observer):  # sum_t g_{t,i}^2, for the bound
    name, total = "grad-squares", 0.0

    def on_step(self, view):
        self.total = self.total + view.grad_tilde**2


REGRET = ClaimSpec(id="adagrad.regret", source="Duchi, Hazan & Singer (2011), Theorem 5", show=("T", "seed"),
                   statement="Regret_T <= sqrt(2) D_inf sum_i ||g_{1:T,i}||_2 with eta = D_inf/sqrt(2)")
RATE = ClaimSpec(id="adagrad.rate", source="Duchi, Hazan & Singer (2011), Corollary 6", relation="rate",
                 statement="Regret_T / T = O(T^{-1/2}) on bounded gradients", show=("T",))


@PACK.check(title="AdaGrad regret on online quadratics")
def regret(ctx):
    grid, d, D = ([64, 128, 256, 512] if ctx.quick else [64, 128, 256, 512, 1024, 2048]), 10, 2.0
    out, avg = [], []
    for T in grid:
        pr = OnlineQuadratics(d, T, seed=[ctx.seed, T])
        obs, gsq = Regret(pr.best_fixed_point(T)), GradSquares()
        opt = Projected(AdaGrad(lr=D / np.sqrt(2)), Box(-1.0, 1.0))
        simulate(opt, pr, exact_oracle(pr), T, 1, ctx.seed, theta0=np.zeros(d), observers=[obs, gsq])
        reg, bound = float(obs.total[0]), float(np.sqrt(2) * D * np.sum(np.sqrt(gsq.total)))
        out.append(value_claim(REGRET, reg, bound, {"T": T, "seed": ctx.seed}))
        avg.append(reg / T)
    out.append(rate_claim(RATE, grid, avg, {"T": grid}, theory=0.5, pinned=False))
    return out
