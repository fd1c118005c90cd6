"""Noise models for stochastic gradient oracles: g~ = grad f(theta) + xi, with the coordinates of xi
independent, zero mean, with exact per-coordinate standard deviations sigma_i. (One registered model has
dependent coordinates: ``rank-one``, :class:`synthetic.matrix.RankOneRows`, added to ``NOISES`` when
:mod:`synthetic.matrix` loads, which importing :mod:`synthetic` does; the paper's Assumptions 2 and 3 are
per coordinate and hold for it too.)

Batch size n: the oracle returns the mean of n independent draws, sampled exactly at O(1) cost per
coordinate where the family allows (Gaussian: scaling; Rademacher: a binomial count; finite support:
multinomial counts), and by summing draws in chunks otherwise (uniform, Student-t).

Paper assumptions (Section 4.1): Assumption 2 (unbiased: E g~ = grad f), Assumption 3 (bounded
variance: E|g~_i - g_i|^2 <= sigma_i^2, so sigma_i^2 / n for a batch mean, Corollary 2), Assumption 4
(bounded gradient: ||g~||_{p*} <= G). ``assumptions()`` reports which ones a model satisfies;
``bound()`` gives the per-coordinate sup |xi_i| for bounded families (used to certify G).
"""

from __future__ import annotations

import copy
import math
import sys
import threading

import numpy as np

from lptheory import validate

__all__ = [
    "Noise",
    "Gaussian",
    "Uniform",
    "Rademacher",
    "FiniteSupport",
    "StudentT",
    "NOISES",
    "make_noise",
    "has_layout",
    "sigma_profile",
]

_CHUNK_DRAWS = 64


def _const(rng, a):
    """A numpy constant in the random source's array kind: unchanged for a ``numpy.random.Generator``,
    moved (once, cached) to the device for a torch source (``lptheory._random.TorchRandom``)."""
    asarray = getattr(rng, "asarray", None)
    return a if asarray is None else asarray(a)


def sigma_profile(kind: str, d: int, sigma: float = 1.0, seed: int = 0) -> np.ndarray:
    """Per-coordinate standard deviations: ``flat`` (all sigma) or ``power`` (sigma i^{-1/2}, shuffled)."""
    d = validate.integer("d", d, lo=1)
    sigma = validate.real("sigma", sigma, lo=0.0)
    if kind == "flat":
        return np.full(d, sigma)
    if kind == "power":
        rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
        return sigma * rng.permutation(np.arange(1, d + 1, dtype=float) ** -0.5)
    raise ValueError(f"sigma profile must be one of ['flat', 'power'], got {kind!r}")


class Noise:
    """Base: per-coordinate std ``sigma`` (shape (d,)); ``sample_mean(rng, n, size)`` draws the mean of n
    independent noise vectors for ``size`` leading rows with the generator ``rng``: a
    ``numpy.random.Generator`` (numpy arrays) or an ``lptheory._random.TorchRandom`` (tensors drawn on
    its device). Each family's sampler is written once for both."""

    name = "noise"
    bounded = False
    # add_means_into draws row r from rngs[r] alone, with element-wise arithmetic: rows a..b of a call on
    # all rows equal a call on rows a..b (bit for bit). A subclass that couples replicates sets False.
    rows_independent = True
    # True for a model with a matrix layout: its constructor takes ``shape=(m, n)`` (the layout of the flat
    # noise vector, kept as ``self.shape``; its default when None); :func:`has_layout` reads it.
    takes_layout = False

    def __init__(self, sigma):
        sigma = np.asarray(sigma, dtype=np.float64)
        if sigma.ndim != 1 or sigma.size == 0:
            raise ValueError(f"sigma must be a non-empty 1-D vector of per-coordinate stds, got shape {sigma.shape}")
        if not np.all(np.isfinite(sigma)) or np.any(sigma < 0):
            raise ValueError("sigma must be finite and >= 0 in every coordinate")
        self.sigma = sigma
        self.d = sigma.size

    def sample_mean(self, rng: np.random.Generator, n: int, size: tuple = ()) -> np.ndarray:
        n = validate.integer("n (batch size)", n, lo=1)
        return self._sample_mean(rng, n, tuple(size) + (self.d,))

    def _sample_mean(self, rng, n, shape):  # default: average draws in chunks
        total = 0.0
        left = n
        while left > 0:
            k = min(left, _CHUNK_DRAWS)
            total = total + self._draw(rng, (k,) + shape).sum(axis=0)
            left -= k
        return total / n

    def _draw(self, rng, shape):
        """Single draws for the chunked default; families with an exact batch-mean sampler skip it."""
        raise TypeError(f"{type(self).__name__} must override _sample_mean or _draw")

    def add_means_into(self, rngs, n: int, out) -> None:
        """``out[r] += sample_mean(rngs[r], n)`` for every replicate r (numpy): one random stream per
        replicate, the same numbers as ``sample_mean``; families override it to vectorize the
        arithmetic over the replicates."""
        if self.__dict__.get("_ahead") is not None:
            X = self._drawn_ahead(rngs, n)
            if X is not None:
                np.add(out, self._ahead_mean(X, n), out=out)
                return
        for r, rng in enumerate(rngs):
            out[r] += self.sample_mean(rng, n)

    # -- drawing ahead --------------------------------------------------------------------------------
    def drawing_ahead(self, steps: int) -> Noise:
        """This noise for ONE run of ``steps`` oracle calls on the same replicate streams with one batch size
        n (numpy streams): a copy whose first :meth:`add_means_into` draws each stream's raw draws of all
        ``steps`` calls in one call of the family's sampler, in the order the calls would draw them (shape
        (steps, ...): numpy's samplers fill an array element by element from the stream), and whose calls
        then combine one step's draws of all replicates with the arithmetic of :meth:`sample_mean`: the
        same numbers and, after ``steps`` calls, the same stream states as the call-by-call draws.
        Families without a block sampler, and blocks above 2^24 values, take the usual path. Calls with
        other streams, another n or more than ``steps`` calls raise ValueError (the draws taken ahead would
        then be out of order). The copy is not split by rows (``rows_independent`` False)."""
        steps = validate.integer("steps", steps, lo=1)
        new = copy.copy(self)
        new.__dict__.pop("_buffers", None)
        new._ahead = [steps, None]  # [steps, (rngs, their identities, n, draws (steps, R, ...), next step)]
        new.rows_independent = False
        return new

    def _ahead_shape(self, n, steps):
        """The shape of one stream's raw draws for ``steps`` calls (:meth:`_ahead_draw`), or None when the
        family has no block sampler. Default (the chunked mean of :meth:`_draw`): the chunks of a call are
        consecutive draws of shape (k, d), so one call's draws are a (n, d) block."""
        if type(self)._sample_mean is not Noise._sample_mean:
            return None
        return (steps, n, self.d)

    def _ahead_draw(self, rng, n, steps):
        """The raw draws of ``steps`` calls of :meth:`sample_mean` (batch n) from ``rng`` in one call, of shape
        :meth:`_ahead_shape`."""
        return self._draw(rng, (steps, n, self.d))

    def _ahead_mean(self, X, n):
        """The means of one step from ``X``, that step's raw draws of every replicate (R, ...), with the
        operations of :meth:`_sample_mean` (default: the chunked sum, chunk by chunk)."""
        total, lo = 0.0, 0
        while lo < n:
            k = min(n - lo, _CHUNK_DRAWS)
            total = total + X[:, lo : lo + k].sum(axis=1)
            lo += k
        return total / n

    def _drawn_ahead(self, rngs, n):
        """This step's raw draws of every replicate (R, ...) from the block drawn ahead (:meth:`drawing_ahead`),
        or None when the family draws none (the usual path then runs for the whole run)."""
        ahead = self._ahead
        steps, run = ahead
        if run is False:
            return None
        if run is None:
            shape = self._ahead_shape(n, steps)
            if (
                shape is None
                or math.prod(shape) * len(rngs) > (1 << 24)
                or not all(isinstance(r, np.random.Generator) for r in rngs)
            ):
                ahead[1] = False  # the usual path for the whole run (nothing drawn ahead)
                return None
            draws = None
            for r, rng in enumerate(rngs):
                b = self._ahead_draw(rng, n, steps)
                if draws is None:
                    draws = np.empty((steps, len(rngs), *b.shape[1:]), dtype=b.dtype)
                draws[:, r] = b
            run = ahead[1] = [rngs, tuple(rngs), n, draws, 0]
        elif rngs is not run[0] and (len(rngs) != len(run[1]) or any(a is not b for a, b in zip(rngs, run[1]))):
            raise ValueError(f"a {self.name} noise drawing ahead serves one run: not the streams of its first call")
        if n != run[2]:
            raise ValueError(f"a {self.name} noise drawing ahead draws batch size n = {run[2]}, got n = {n}")
        t = run[4]
        if t >= steps:
            raise ValueError(f"a {self.name} noise drawing ahead serves {steps} calls (drawing_ahead(steps))")
        run[4] = t + 1
        return run[3][t]

    def bound(self) -> np.ndarray | None:
        """Per-coordinate sup |xi_i| (also bounds every batch mean), or None when unbounded."""
        return None

    def assumptions(self) -> dict:
        """Which of the paper's noise assumptions hold: unbiased (A2), bounded variance (A3) and bounded
        noise (needed for Assumption 4's ||g~||_{p*} <= G)."""
        return {"unbiased": True, "bounded_variance": True, "bounded": self.bounded}

    def describe(self) -> dict:
        return {"noise": self.name, "sigma_l1": float(self.sigma.sum()), "sigma_max": float(self.sigma.max())}


class Gaussian(Noise):
    """xi_i ~ N(0, sigma_i^2). Batch mean exact: N(0, sigma_i^2 / n). Unbounded (Assumption 4 fails)."""

    name = "gaussian"

    def _sample_mean(self, rng, n, shape):
        return rng.standard_normal(shape) * (_const(rng, self.sigma) / math.sqrt(n))

    def _ahead_shape(self, n, steps):
        return (steps, self.d)

    def _ahead_draw(self, rng, n, steps):
        return rng.standard_normal((steps, self.d))

    def _ahead_mean(self, X, n):
        return X * (self.sigma / math.sqrt(n))


class Uniform(Noise):
    """xi_i ~ U(-sqrt(3) sigma_i, sqrt(3) sigma_i). Bounded by sqrt(3) sigma_i. Batch mean by chunks."""

    name = "uniform"
    bounded = True

    def _draw(self, rng, shape):
        return (2.0 * rng.random(shape) - 1.0) * (math.sqrt(3.0) * _const(rng, self.sigma))

    def bound(self):
        return math.sqrt(3.0) * self.sigma


class Rademacher(Noise):
    """xi_i = +-sigma_i with probability 1/2 each. Bounded by sigma_i. Batch mean exact at O(1):
    sigma_i (2K - n)/n with K ~ Binomial(n, 1/2)."""

    name = "rademacher"
    bounded = True

    def _sample_mean(self, rng, n, shape):
        if n == 1:
            if isinstance(rng, np.random.Generator) and len(shape) == 1:
                bits = np.empty(shape, dtype=np.int8)
                _int8_bits(rng, shape[0], bits)
            else:
                bits = rng.integers(0, 2, size=shape, dtype=np.int8)
            return (2.0 * bits - 1.0) * _const(rng, self.sigma)
        k = rng.binomial(n, 0.5, size=shape)
        return (2.0 * k - n) / n * _const(rng, self.sigma)

    def _ahead_shape(self, n, steps):
        # n = 1 where numpy's int8 draws of a row take whole 32-bit words (d % 4 == 0: no byte left over per
        # call); d % 8 == 0 keeps the stream kernels (faster)
        if n == 1 and (self.d % 4 or not self.d % 8):
            return None
        return (steps, self.d)

    def _ahead_draw(self, rng, n, steps):
        if n == 1:  # the bits of _int8_bits, call by call
            return rng.integers(0, 2, size=(steps, self.d), dtype=np.int8)
        return rng.binomial(n, 0.5, size=(steps, self.d))

    def add_means_into(self, rngs, n, out):
        # the draws of sample_mean, one stream per replicate; the arithmetic once for all replicates, in
        # place: (2 bits - 1) sigma for n = 1, (2 k - n) / n sigma otherwise (the same operations, so the
        # same numbers)
        R = len(rngs)
        from . import _fast

        # drawn ahead (drawing_ahead): the counts (n > 1) or bits (n = 1) of this step of every replicate
        draws = self._drawn_ahead(rngs, n) if self.__dict__.get("_ahead") is not None else None
        if draws is not None:
            tmp = np.empty(draws.shape)
        else:
            if n == 1 and _fast.enabled() and out.dtype == np.float64 and out.ndim == 2 and out.flags.c_contiguous:
                if _fast.rademacher_add_streams(rngs, self.sigma, out):  # drawn and added in one pass, same bits
                    return
            # one pair of buffers per thread (parts of a step may run on several threads, and a part may run on
            # either thread from one step to the next): grown to the most rows that thread has needed, used
            # through views of the first R rows, so the buffers of a run total about one (R, d) pair
            cache = self.__dict__.setdefault("_buffers", {})
            tid, kind = threading.get_ident(), (self.d, n == 1)
            got = cache.get(tid)
            if got is None or got[0] != kind or got[1].shape[0] < R:
                if got is None and len(cache) >= 8:
                    cache.clear()
                draws_dtype = np.int8 if n == 1 else np.int64
                got = cache[tid] = (kind, np.empty((R, self.d), dtype=draws_dtype), np.empty((R, self.d)))
            draws, tmp = got[1][:R], got[2][:R]
            for r, rng in enumerate(rngs):
                if n == 1:
                    _int8_bits(rng, self.d, draws[r])
                else:
                    draws[r] = rng.binomial(n, 0.5, size=self.d)
        if n == 1 and _fast.enabled() and out.dtype == np.float64 and out.flags.c_contiguous:
            _fast.rademacher_add(draws, self.sigma, out)  # one pass, the same operations (same bits)
            return
        np.multiply(draws, 2.0, out=tmp)
        np.subtract(tmp, 1.0 if n == 1 else float(n), out=tmp)
        if n != 1:
            np.divide(tmp, n, out=tmp)
        np.multiply(tmp, self.sigma, out=tmp)
        np.add(out, tmp, out=out)

    def bound(self):
        return self.sigma.copy()


def _int8_bits(rng, d: int, out) -> None:
    """``out[:] = rng.integers(0, 2, size=d, dtype=np.int8)``, the same numbers from the same stream.

    numpy draws bounded uint8 by Lemire's method from a buffered stream of 32-bit words (low byte
    first; each 64-bit PCG64 output gives its low then its high half); for the range {0, 1} the
    sample is the top bit of each byte. So with d a multiple of 8 (whole 64-bit words, nothing left
    in the buffer) the samples are the top bits of the bytes of ``d / 8`` raw outputs, which costs a
    tenth of the sampler's time. Anything else takes numpy's own path."""
    bg = rng.bit_generator
    if d % 8 == 0 and sys.byteorder == "little" and type(bg).__name__ == "PCG64" and not bg.state["has_uint32"]:
        np.right_shift(bg.random_raw(d // 8).view(np.uint8), 7, out=out.view(np.uint8))
        return
    out[:] = rng.integers(0, 2, size=d, dtype=np.int8)


class FiniteSupport(Noise):
    """Arbitrary finite support per coordinate: ``values`` (d, k) and ``weights`` (d, k) (rows sum to 1).

    The mean of every row must be 0 (checked to 1e-12 relative); sigma_i^2 = sum_j w_ij v_ij^2 (exact).
    Batch mean exact: multinomial counts per coordinate, O(k) per coordinate. The building block of the
    adversarial searches of the Theorem 1 checks.
    """

    name = "finite"
    bounded = True

    def __init__(self, values, weights):
        v = np.asarray(values, dtype=np.float64)
        w = np.asarray(weights, dtype=np.float64)
        if v.ndim != 2 or v.shape != w.shape or v.shape[1] < 1:
            raise ValueError(f"values and weights must both have shape (d, k), got {v.shape} and {w.shape}")
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(w))):
            raise ValueError("values and weights must be finite")
        if np.any(w < 0) or np.any(np.abs(w.sum(axis=1) - 1.0) > 1e-12):
            raise ValueError("weights must be >= 0 and each row must sum to 1 (within 1e-12)")
        mean = np.sum(w * v, axis=1)
        scale = np.max(np.abs(v), axis=1) + 1e-300
        if np.any(np.abs(mean) > 1e-12 * scale):
            raise ValueError("each coordinate's noise must have mean 0: sum_j weights * values = 0 (within 1e-12)")
        self.values, self.weights = v, w
        super().__init__(np.sqrt(np.sum(w * v * v, axis=1)))

    def _sample_mean(self, rng, n, shape):
        if isinstance(rng, np.random.Generator):
            counts = rng.multinomial(n, np.broadcast_to(self.weights, shape[:-1] + self.weights.shape))
            return np.einsum("...dk,dk->...d", counts, self.values) / n
        counts = rng.multinomial(n, self.weights, size=shape)  # torch source: counts on the device
        return rng.torch.einsum("...dk,dk->...d", counts, _const(rng, self.values)) / n

    def _ahead_shape(self, n, steps):
        return (steps, *self.weights.shape)

    def _ahead_draw(self, rng, n, steps):
        return rng.multinomial(n, np.broadcast_to(self.weights, (steps, *self.weights.shape)))

    def _ahead_mean(self, X, n):
        return np.einsum("...dk,dk->...d", X, self.values) / n

    def bound(self):
        return np.max(np.abs(self.values), axis=1)

    @classmethod
    def two_point(cls, sigma, prob=0.5):
        """Two-point zero-mean noise with std sigma_i: value a w.p. q, -a q/(1-q) otherwise."""
        sigma = np.asarray(sigma, dtype=np.float64)
        q = validate.real("prob", prob, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
        a = sigma * math.sqrt((1 - q) / q)
        vals = np.stack([a, -a * q / (1 - q)], axis=1)
        wts = np.tile([q, 1 - q], (sigma.size, 1))
        return cls(vals, wts)


class StudentT(Noise):
    """Student-t noise with nu > 2 degrees of freedom, scaled to std sigma_i (heavy tails; unbounded, so
    Assumption 4 fails). Batch mean by chunks."""

    name = "student-t"

    def __init__(self, sigma, nu: float = 3.0):
        self.nu = validate.real("nu", nu, lo=2.0, lo_open=True)
        super().__init__(sigma)

    def _draw(self, rng, shape):
        return rng.standard_t(self.nu, size=shape) * (_const(rng, self.sigma) * math.sqrt((self.nu - 2.0) / self.nu))

    def describe(self):
        return {**super().describe(), "nu": self.nu}


NOISES = {
    "gaussian": Gaussian,
    "uniform": Uniform,
    "rademacher": Rademacher,
    "student-t": StudentT,
    "two-point": FiniteSupport.two_point,
    "none": None,
}


def make_noise(kind: str, sigma, shape=None) -> Noise | None:
    """Build a noise model by name (``gaussian``, ``uniform``, ``rademacher``, ``student-t``,
    ``two-point`` (finite support), ``rank-one`` (:class:`synthetic.matrix.RankOneRows`, registered by
    :mod:`synthetic.matrix`), or ``none``) with per-coordinate stds ``sigma``.

    ``shape``: the (m, n) matrix layout of the flat noise vector, for the models that have one (``rank-one``;
    its default: ``split_shape(d)``); the coordinate-wise models have none and ignore it."""
    if kind not in NOISES:
        raise ValueError(f"noise must be one of {sorted(NOISES)}, got {kind!r}")
    if kind == "none":
        return None
    factory = NOISES[kind]
    if shape is not None and has_layout(kind):
        return factory(sigma, shape=shape)
    return factory(sigma)


def has_layout(kind: str) -> bool:
    """Whether the registered noise ``kind`` has a matrix layout: its factory is a :class:`Noise` class that
    says so (``takes_layout``) and so takes ``shape=(m, n)``; a factory function (``two-point``) or ``none``
    has none. Unknown ``kind``: ValueError naming the registered ones."""
    if kind not in NOISES:
        raise ValueError(f"noise must be one of {sorted(NOISES)}, got {kind!r}")
    factory = NOISES[kind]
    return isinstance(factory, type) and issubclass(factory, Noise) and bool(factory.takes_layout)
