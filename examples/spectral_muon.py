"""Matrix geometry in a few lines: norms, Muon/Scion/Schatten-p descent on a certified matrix problem, the
Newton-Schulz error, and the spectral claim pack.

    python examples/spectral_muon.py          (about 10 s)
    lptheory check spectral --quick           (the pack from the command line, once installed)
"""

import math

import numpy as np

from lptheory.norms import Schatten, SpectralRMS, ns_error, polar
from lptheory.simulate import simulate
from lptheory.spectral import Muon, SchattenDescent, Scion, StaceyPPSchatten
from proofs_checks.api import Context, load_pack
from synthetic.matrix import KroneckerQuadratic
from synthetic.noise import Gaussian
from synthetic.oracle import GradientOracle

rng = np.random.default_rng(0)
G = rng.standard_normal((8, 5))

# 1. norms: dual norm, steepest direction, LMO; Newton-Schulz against the exact polar factor
spec = Schatten(math.inf)
print("||G||_2 =", float(spec.norm(G)), " dual (nuclear) =", float(spec.dual_norm(G)))
print("<G, U V^T> = ||G||_* :", float(spec.inner(G, spec.direction(G))))
print("RMS->RMS LMO radius 1, its norm:", float(SpectralRMS().norm(SpectralRMS().lmo(G))))
print("Newton-Schulz error after k = 1..6 steps:", [round(float(ns_error(G, k)), 4) for k in range(1, 7)])
print("  (the quintic does not converge: phi(1) = a + b + c =", round(sum((3.4445, -4.7750, 2.0315)), 4), ")")
print("exact polar factor is orthogonal:", np.allclose(polar(G).T @ polar(G), np.eye(5)))

# 2. the matrix optimizers on a matrix quadratic with certified Schatten-p constants (flat layout + shape)
pr = KroneckerQuadratic(6, 8, seed=0, cond=4.0, start=2.0)
print(f"\n{pr.name} {pr.shape}: L_p (p = 3) <= {pr.smoothness(3.0):.3f}, f* = {pr.f_star}")
oracle = GradientOracle(pr, Gaussian(np.full(pr.d, 0.1)), batch=4)
for opt in (
    Muon(lr=0.05, momentum=0.9, shape=pr.shape),
    Muon(lr=0.05, momentum=0.9, orthogonalize="svd", shape=pr.shape),
    Scion(lr=0.05, alpha=0.5, norm="spectral", shape=pr.shape),
    SchattenDescent(p=3.0, lr=0.05, shape=pr.shape),
    StaceyPPSchatten(p=3.0, lr=0.05, alpha=1e-3, tau=1e-3, shape=pr.shape),
):
    tr = simulate(opt, pr, oracle, 200, replicates=4, seed=1, p_measure=2.0)
    print(f"  {opt.name:<20} {getattr(opt, 'orthogonalize', ''):<15} f - f* after 200 steps: {tr.gap[-1].mean():.4f}")

# 3. the claim pack, programmatically (the same records as `lptheory check spectral`)
pack = load_pack("proofs_checks.spectral:PACK")
for name in ("identities", "newton-schulz"):
    c = pack.checks[name]
    for r in c.run(Context(seed=0, quick=True, options=c.resolve({}))):
        if r.id != "spectral.dual-norm":
            print(f"  {r.id:<50} {r.status}")
