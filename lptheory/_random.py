"""Random numbers drawn on a torch device, behind the few ``numpy.random.Generator`` methods the noise
models use, so that every noise family is written once (``synthetic.noise``) and runs on both backends.

:class:`TorchRandom` wraps one ``torch.Generator`` on the simulation's device: draws never leave the
device. ``asarray`` moves a (cached) numpy constant, such as a noise model's sigma, to the device once.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["TorchRandom", "torch_seed"]


def torch_seed(seed: int, offset: int = 0) -> int:
    """A 63-bit seed for ``torch.Generator.manual_seed`` from ``SeedSequence(seed, spawn_key=(offset,))``."""
    state = np.random.SeedSequence(seed, spawn_key=(offset,)).generate_state(1, np.uint64)[0]
    return int(state) >> 1


class TorchRandom:
    """numpy-Generator-like draws (``standard_normal``, ``random``, ``integers``, ``binomial``,
    ``multinomial``, ``standard_t``) as tensors of ``dtype`` on ``device``, from one seeded generator."""

    def __init__(self, seed: int, device="cpu", dtype=None):
        import torch

        self.torch = torch
        self.device = torch.device(device)
        self.dtype = dtype if dtype is not None else torch.float64
        self.gen = torch.Generator(device=self.device)
        self.gen.manual_seed(seed)
        self._consts: dict[int, tuple] = {}

    def asarray(self, a):
        """``a`` (a numpy array or a number) as a tensor on the device, converted once and cached."""
        if not isinstance(a, np.ndarray):
            return a
        hit = self._consts.get(id(a))
        if hit is None or hit[0] is not a:
            hit = self._consts[id(a)] = (a, self.torch.as_tensor(a, dtype=self.dtype, device=self.device))
        return hit[1]

    def _shape(self, size):
        return (size,) if isinstance(size, int) else tuple(size)

    def standard_normal(self, size):
        return self.torch.randn(self._shape(size), generator=self.gen, dtype=self.dtype, device=self.device)

    def random(self, size):
        return self.torch.rand(self._shape(size), generator=self.gen, dtype=self.dtype, device=self.device)

    def integers(self, low, high, size, dtype=None):
        return self.torch.randint(
            low, high, self._shape(size), generator=self.gen, device=self.device, dtype=self.dtype
        )

    def binomial(self, n, p, size):
        shape = self._shape(size)
        count = self.torch.full(shape, float(n), dtype=self.dtype, device=self.device)
        prob = self.torch.full(shape, float(p), dtype=self.dtype, device=self.device)
        return self.torch.binomial(count, prob, generator=self.gen)

    def multinomial(self, n, pvals, size):
        """Counts of ``n`` draws for every index of ``size`` over the categories of ``pvals`` (shape
        (k,) or (size[-1], k), broadcast to ``size + (k,)``): exact, by the chain of conditional binomials
        k_j ~ Bin(n - k_1 - ... - k_{j-1}, p_j / (1 - p_1 - ... - p_{j-1}))."""
        torch = self.torch
        shape = self._shape(size)
        pv = self.asarray(pvals)
        k = pv.shape[-1]
        left = torch.full(shape, float(n), dtype=self.dtype, device=self.device)
        mass = torch.ones((), dtype=self.dtype, device=self.device)
        counts = []
        for j in range(k - 1):
            pj = pv[..., j]
            # 0/0 or p/0 once the mass is spent: probability 0 (nan_to_num), rounding kept inside [0, 1]
            prob = (pj / mass).nan_to_num(0.0, 0.0, 0.0).clamp(0.0, 1.0).expand(shape).contiguous()
            c = torch.binomial(left, prob, generator=self.gen)
            counts.append(c)
            left = left - c
            mass = mass - pj
        counts.append(left)
        return torch.stack(counts, dim=-1)

    def standard_t(self, df, size):
        """Student-t: Z / sqrt(chi2_df / df), chi2_df a sum of df squared normals (integer df only: the
        torch generators have no seeded gamma sampler)."""
        if df != math.floor(df) or df > 1000:
            raise ValueError(
                f"nu must be an integer in [3, 1000] on the torch backend (exact chi-square draws), got {df}"
            )
        shape = self._shape(size)
        z = self.standard_normal(shape)
        chi2 = self.standard_normal((int(df), *shape)).square().sum(dim=0)
        return z / (chi2 / df).sqrt()
