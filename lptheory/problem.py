"""The problem protocol: objectives (possibly time-varying), domains and certificates.

A problem gives ``f(x, t=None)`` and ``grad(x, t=None)`` vectorized over leading replicate axes
(``x`` has shape ``(..., d)``; a numpy array, or a torch tensor evaluated on its device). ``t`` is
the 0-based step: online (time-varying) problems use it, static ones ignore it. Optional: a
``domain`` (:mod:`lptheory.domains`) and ``x0(R)``.

Certificates are first-class: :class:`Certificate` objects with a name, a value (a number, a vector,
or a function of parameters such as p), a direction (``upper``: the true constant is at most the
value; ``lower``: at least; ``exact``), the derivation as text, and an audit: a function returning an
empirical estimate of the same constant, which the test-suite holds against the value in the stated
direction. The theorems' checks read constants only through certificates (``problem.certificate("L")``).

Where to put a new problem: subclass :class:`Problem` (the one protocol: declare ``f_star``,
``grad_sup(p)``, ``smoothness(p)`` and they become certificates); the toolkit's families with certified
constants live in :mod:`synthetic.problems` and subclass it too. Write ``f`` and ``grad`` once for
numpy and torch against :func:`namespace` (``xp = namespace(x)``: the array module that owns ``x``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._xp import namespace

__all__ = ["Certificate", "Problem", "DIRECTIONS", "certified", "namespace"]

DIRECTIONS = ("upper", "lower", "exact")


@dataclass(frozen=True)
class Certificate:
    """A certified constant of a problem.

    Parameters
    ----------
    name : e.g. ``"L"`` (l_p smoothness), ``"f_star"``, ``"grad_sup"``
    value : a number, an array, or a callable of the constant's arguments (e.g. ``p``)
    direction : ``"upper"`` (value >= true constant), ``"lower"`` (value <= true constant), ``"exact"``
    derivation : how the value is obtained (text, with the inequalities used)
    audit : optional callable with the same arguments plus keyword ``seed``, returning an empirical
        estimate that bounds the true constant from the other side (e.g. a ratio actually evaluated
        for an upper certificate); :meth:`audit_ok` compares the two
    args : names of the arguments (documentation and error messages)
    """

    name: str
    value: Any
    direction: str
    derivation: str
    audit: Callable | None = None
    args: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(
                f"certificate {self.name!r}: direction must be one of {DIRECTIONS}, got {self.direction!r}"
            )
        if not self.derivation or not isinstance(self.derivation, str):
            raise ValueError(f"certificate {self.name!r}: a derivation (text) is required")

    def __call__(self, *args):
        v = self.value(*args) if callable(self.value) else self.value
        arr = np.asarray(v, dtype=np.float64)
        if np.any(np.isnan(arr)):
            raise ValueError(f"certificate {self.name!r} is NaN at {dict(zip(self.args, args))}")
        return float(arr) if arr.ndim == 0 else arr

    def audit_ok(self, *args, seed: int = 0, rtol: float = 1e-9) -> tuple[bool, float, float]:
        """(ok, value, estimate): whether the audit's estimate is on the permitted side of the value."""
        if self.audit is None:
            raise ValueError(f"certificate {self.name!r} has no audit")
        value = np.asarray(self(*args), dtype=np.float64)
        est = np.asarray(self.audit(*args, seed=seed), dtype=np.float64)
        scale = np.maximum(np.abs(value), np.abs(est)) * rtol + 1e-300
        if self.direction == "upper":
            ok = np.all(value >= est - scale)
        elif self.direction == "lower":
            ok = np.all(value <= est + scale)
        else:
            ok = np.all(np.abs(value - est) <= np.maximum(scale, 1e-9 * (1 + np.abs(value))))
        return bool(ok), float(np.max(value)), float(np.max(est))

    def describe(self) -> dict:
        return {"name": self.name, "direction": self.direction, "derivation": self.derivation}


class Problem(ABC):
    """The problem protocol (module docstring): the one base of every problem, the toolkit's and a user's.

    Subclasses set ``d`` and ``name`` and implement ``f`` and ``grad``. Certified constants come from
    :meth:`certificates`; the default builds them from what the subclass declares:

    * ``f_star`` (attribute; ``f_star_exact = False`` when it is only a lower bound): audited by f at
      :meth:`argmin` when known, else by the smallest f at random points;
    * ``grad_sup(p)``: an upper bound on sup_x ||grad f(x)||_{p*} (``inf`` when unbounded), audited by the
      largest dual norm at random points;
    * ``smoothness(p)``: an upper bound on the l_p smoothness constant ``L``, audited by
      ``audit_smoothness(p, seed=...)`` when the subclass gives one.

    Readers (the oracle, the simulator, the checks) go through :meth:`certificate` /
    :func:`certified` only. Optional: :meth:`start` (the default starting point), :meth:`argmin`,
    :meth:`best_fixed_point` (the comparator of :class:`lptheory.simulate.Regret`), :meth:`grad_into`.
    """

    name = "problem"
    d: int
    domain = None
    time_varying = False
    stateful = False  # True for query-based oracles whose answers depend on earlier queries
    hessian_constant = None  # a (d, d) or (d,) array when the Hessian does not depend on x
    f_star_exact = True

    @abstractmethod
    def f(self, x, t=None):
        """Objective value(s) at ``x`` (shape ``(..., d)`` -> ``(...)``), at step ``t``."""

    @abstractmethod
    def grad(self, x, t=None):
        """Gradient(s) at ``x``, same shape as ``x``, at step ``t``."""

    def certificates(self) -> dict[str, Certificate]:
        """The problem's certified constants by name, from what the subclass declares (class docstring):
        ``f_star``, ``grad_sup`` and ``L`` (from ``smoothness``) when present."""
        doc = type(self).__doc__ or ""
        out = {}
        if getattr(self, "f_star", None) is not None:
            kind = "exact" if self.f_star_exact else "lower"
            out["f_star"] = Certificate("f_star", self.f_star, kind, doc, audit=self._audit_f_star)
        if callable(getattr(self, "grad_sup", None)):
            out["grad_sup"] = Certificate(
                "grad_sup", self.grad_sup, "upper", doc, audit=self._audit_grad_sup, args=("p",)
            )
        if callable(getattr(self, "smoothness", None)):
            audit = getattr(self, "audit_smoothness", None)
            out["L"] = Certificate("L", self.smoothness, "upper", doc, audit=audit, args=("p",))
        return out

    def certificate(self, name: str) -> Certificate:
        certs = self.certificates()
        if name not in certs:
            raise ValueError(f"problem {self.name!r} has no certificate {name!r} (it has {sorted(certs)})")
        return certs[name]

    def start(self) -> np.ndarray:
        """The default starting point, shape ``(d,)`` (2.0 in every coordinate; override it)."""
        return np.full(self.d, 2.0)

    def x0(self, replicates: int | None = None, seed: int = 0) -> np.ndarray:
        """The default starting point :meth:`start`, broadcast to ``(replicates, d)`` when ``replicates``
        is given (``seed`` is for problems whose start is random)."""
        legacy = getattr(self, "_x0", None)  # the hook's former name, still honoured
        x = legacy() if legacy is not None else self.start()
        if replicates is None:
            return x
        return np.broadcast_to(x, (replicates, self.d)).copy()

    def argmin(self) -> np.ndarray | None:
        """A minimizer when known in closed form (it audits an exact f*), else None."""
        return None

    def best_fixed_point(self, T: int) -> np.ndarray:
        """The best fixed point over the first ``T`` steps, argmin_u sum_{t<T} f_t(u): the default
        comparator of :class:`lptheory.simulate.Regret`. For a static problem, its :meth:`argmin`; an
        online problem overrides it."""
        xm = None if self.time_varying else self.argmin()
        if xm is None:
            raise ValueError(
                f"problem {self.name!r} gives no best fixed point (override best_fixed_point(T)); pass Regret a "
                "comparator"
            )
        return np.asarray(xm, dtype=np.float64)

    def grad_into(self, x, t, out):
        """grad f_t(x) written into ``out`` (the simulator's reused buffer): ``grad(x, t, out=out)`` for
        problems whose ``grad`` takes ``out``, else a copy."""
        try:
            return self.grad(x, t, out=out)
        except TypeError:
            g = self.grad(x, t)
            if isinstance(out, np.ndarray):
                np.copyto(out, g)
            else:
                out.copy_(g)
            return out

    def sample_points(self, seed: int, n: int = 2048) -> np.ndarray:
        """``n`` points around the start at scales 0.1 to 10 (the audits' random points)."""
        rng = np.random.default_rng(np.random.SeedSequence([seed, 909]))
        x0 = np.asarray(self.x0(), dtype=np.float64)
        return x0 + rng.standard_normal((n, self.d)) * rng.choice([0.1, 1.0, 3.0, 10.0], size=(n, 1))

    def _audit_f_star(self, seed=0):
        xm = self.argmin()
        if self.f_star_exact and xm is not None:
            return float(self.f(np.asarray(xm, dtype=np.float64)))
        return float(np.min(self.f(self.sample_points(seed))))

    def _audit_grad_sup(self, p, seed=0):
        from .geometry import dual_exponent, lp_norm

        return float(np.max(lp_norm(self.grad(self.sample_points(seed)), dual_exponent(p))))

    def describe(self) -> dict:
        out = {"name": self.name, "d": self.d}
        if self.domain is not None and hasattr(self.domain, "describe"):
            out["domain"] = self.domain.describe()
        if getattr(self, "f_star", None) is not None:
            out.update(f_star=self.f_star, f_star_exact=self.f_star_exact)
        return out

    def check_point(self, x):
        """Validate a point (or a batch of points) before evaluating ``f`` or ``grad`` at it.

        Parameters
        ----------
        x : array_like or torch.Tensor
            A point of shape ``(..., d)``; an array-like without ``shape`` becomes a float64 numpy array,
            an array or tensor is returned as it is (its kind and dtype kept).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            ``x``.

        Raises
        ------
        ValueError
            Naming ``x`` and ``d`` when the last axis of ``x`` does not have length ``d``.
        """
        x = np.asarray(x, dtype=np.float64) if not hasattr(x, "shape") else x
        if x.shape[-1] != self.d:
            raise ValueError(f"x must have last axis of length d={self.d}, got shape {tuple(x.shape)}")
        return x

    def to_backend(self, x, name):
        """The constant array attribute ``name`` in ``x``'s kind, for ``f`` and ``grad`` written once for
        numpy and torch.

        Parameters
        ----------
        x : numpy.ndarray or torch.Tensor
            The point being evaluated (after :meth:`check_point`).
        name : str
            The name of an attribute of the problem holding a numpy array (e.g. ``"A"``).

        Returns
        -------
        numpy.ndarray or torch.Tensor
            The attribute itself for numpy; for torch, a tensor on ``x``'s device in ``x``'s dtype (converted
            once per device and dtype, then cached, and converted again if the attribute is replaced).
        """
        a = getattr(self, name)
        if isinstance(x, np.ndarray):
            return a
        cache = self.__dict__.setdefault("_device_constants", {})
        key = (name, str(x.device), x.dtype)
        hit = cache.get(key)
        if hit is None or hit[0] is not a:
            import torch

            hit = cache[key] = (a, torch.as_tensor(np.asarray(a), dtype=x.dtype, device=x.device))
        return hit[1]

    # the former private names, kept so code written against them goes on working
    _check = check_point
    _k = to_backend


def certified(problem, name: str, *args, default=None):
    """The value of ``problem``'s certificate ``name`` at ``args`` (e.g. ``certified(pr, "grad_sup", p)``),
    or ``default`` when the problem has no such certificate: how the oracle, the simulator and the checks
    read certified constants of any problem (a :class:`Problem`, or an object with ``certificates()``)."""
    certs = getattr(problem, "certificates", None)
    cert = certs().get(name) if callable(certs) else None
    if cert is None:
        return default
    return cert(*args)
