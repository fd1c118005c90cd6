"""Identities decided by the toolkit: sympy's reduction to 0, a case split and spot checks (issue 44, item 4).

* :func:`prove_identity`: ``lhs == rhs`` (expressions, or lists of them pairwise) decided by sympy: the difference
  is simplified, then simplified again after ``expand_power_base``/``powsimp`` (``force=True``: the symbols' powers
  are combined as for positive symbols) and with its exponents brought to lowest terms; proved when each
  difference reduces to 0. A proof issues a certificate (:mod:`proofs_checks.certificates`, kind
  ``sympy-identity``) that names the identity.
* :func:`spot_gap`: the largest relative difference of the two sides at random points, at 30 digits.
* :func:`identity_claim`: the record of an identity over a case split (``cases``: each case a substitution, e.g.
  ``{x: u}`` and ``{x: -u}`` with ``u`` positive for the two signs of ``x``): every case reduced by sympy and spot
  checked, the verdict by :func:`proofs_checks.verdict.decide_identity` (``holds`` with evidence ``proved`` when
  every case reduces to 0 and the spot checks agree; ``violated`` when a spot check differs and its witness
  re-checks; else ``inconclusive``).
"""

from __future__ import annotations

import functools
import random

import sympy as sp

__all__ = ["prove_identity", "spot_gap", "identity_claim"]


def _pairs(lhs, rhs) -> list[tuple]:
    ls = list(lhs) if isinstance(lhs, (list, tuple)) else [lhs]
    rs = list(rhs) if isinstance(rhs, (list, tuple)) else [rhs]
    if len(ls) != len(rs):
        raise ValueError(f"lhs and rhs must have the same length, got {len(ls)} and {len(rs)}")
    if not ls:
        raise ValueError("an identity needs at least one pair of sides")
    out = []
    for a, b in zip(ls, rs):
        try:
            out.append((sp.sympify(a), sp.sympify(b)))
        except (sp.SympifyError, TypeError) as exc:
            raise TypeError(f"the sides of an identity must be sympy expressions, got {a!r} and {b!r}") from exc
    return out


def _lowest_terms(e):
    return e.replace(lambda z: z.is_Pow, lambda z: z.base ** sp.cancel(sp.together(z.exp)))


def _is_zero(d) -> bool:
    if isinstance(d, sp.MatrixBase):
        return all(_is_zero(v) for v in d)
    if d == 0:
        return True
    for form in (
        sp.simplify,
        lambda e: sp.simplify(sp.powsimp(e, force=True)),
        lambda e: sp.simplify(sp.powsimp(sp.expand_power_base(e, force=True), force=True)),
        lambda e: sp.simplify(
            _lowest_terms(sp.powsimp(sp.powdenest(sp.expand_power_base(e, force=True), force=True), force=True))
        ),
    ):
        try:
            if form(d) == 0:
                return True
        except (TypeError, ValueError, NotImplementedError, RecursionError):  # a form sympy cannot take
            continue
    return False


@functools.lru_cache(maxsize=512)
def _prove(pairs: tuple) -> bool:
    return all(_is_zero(a - b) for a, b in pairs)


def prove_identity(lhs, rhs, *, how: str = "") -> dict:
    """``lhs == rhs`` decided by sympy (module docstring): ``{"proved": bool, "certificate": dict | None}``; the
    certificate (kind ``sympy-identity``) only when every difference reduces to 0. ``lhs``/``rhs``: sympy
    expressions (or matrices), or equal-length lists of them (each pair an identity); ``how``: the assumptions in
    words, quoted in the certificate (e.g. "positive symbols")."""
    pairs = tuple(_pairs(lhs, rhs))
    proved = _prove(pairs)
    cert = None
    if proved:
        from .certificates import issue

        text = "; ".join(f"{a} = {b}" for a, b in pairs)
        cert = issue(
            "sympy-identity",
            f"{text[:2000]}: sympy reduces each difference to 0" + (f" ({how})" if how else ""),
            outcome="holds",
        )
    return {"proved": proved, "certificate": cert}


def _draw(sym, rng):
    if sym.is_positive:
        return sp.Float(rng.uniform(0.1, 5.0), 30)
    if sym.is_negative:
        return sp.Float(-rng.uniform(0.1, 5.0), 30)
    if sym.is_nonnegative:
        return sp.Float(rng.uniform(0.0, 5.0), 30)
    return sp.Float(rng.uniform(-5.0, 5.0), 30)


def spot_gap(lhs, rhs, *, n: int = 20, seed: int = 0) -> tuple[float, dict | None]:
    """(the largest relative difference |a - b| / (|a| + |b|) of each pair of sides at ``n`` random points at 30
    digits, the point where it is largest): positive symbols drawn in (0.1, 5), negative ones in (-5, -0.1), other
    real symbols in (-5, 5)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    rng = random.Random(seed)
    worst, where = 0.0, None
    for a, b in _pairs(lhs, rhs):
        syms = sorted((a - b).free_symbols, key=lambda z: z.name)
        for _ in range(n):
            vals = {z: _draw(z, rng) for z in syms}
            av, bv = sp.N(a.subs(vals), 30), sp.N(b.subs(vals), 30)
            if not (av.is_number and bv.is_number):
                continue
            den = abs(av) + abs(bv)
            gap = float(abs(av - bv) / den) if den != 0 else 0.0
            if gap > worst or where is None:
                worst, where = max(worst, gap), {z.name: float(v) for z, v in vals.items()}
    return worst, where


def identity_claim(
    lhs,
    rhs,
    cases=None,
    *,
    id: str,
    statement: str,
    source: str,
    params: dict | None = None,
    scope: str | None = None,
    samples: int = 20,
    seed: int = 0,
    how: str = "",
):
    """The record of the identity ``lhs == rhs`` (a :class:`~proofs_checks.records.Claim`, method ``symbolic``),
    decided by the toolkit: for each case of ``cases`` (``{name: {symbol: replacement}}``, e.g. ``{"x >= 0": {x: u},
    "x < 0": {x: -u}}`` with ``u = Symbol("u", positive=True)``; default one case, the sides as given) sympy
    reduces the difference to 0 (:func:`prove_identity`) and ``samples`` random points at 30 digits spot check it
    (:func:`spot_gap`). ``holds`` with evidence ``proved`` (the certificates of every case in ``data``) when every
    case reduces and the spot checks agree; ``violated`` when a spot check differs (its witness, the case's sides
    at the point, re-checked at 60 digits); ``inconclusive`` otherwise. ``scope`` (default: the cases, in words)
    and ``params`` as every engine's.

    Examples
    --------
    >>> import sympy as sp
    >>> x, u = sp.Symbol("x", real=True), sp.Symbol("u", positive=True)
    >>> rec = identity_claim(sp.Abs(x) ** 2, x**2, {"x >= 0": {x: u}, "x < 0": {x: -u}}, id="abs.sq",
    ...                      statement="|x|^2 = x^2", source="example")
    >>> rec.status, rec.evidence
    ('holds', 'proved')
    """
    from .records import Claim
    from .verdict import decide_identity

    if cases is None:
        cases = {"as given": {}}
    if not isinstance(cases, dict) or not cases:
        raise TypeError("cases must be a non-empty dict {name: {symbol: replacement}}")
    certs, worst, where, failed, all_proved = [], 0.0, None, None, True
    for name, subs in cases.items():
        if not isinstance(subs, dict):
            raise TypeError(f"cases[{name!r}] must be a dict {{symbol: replacement}}, got {type(subs).__name__}")
        pairs = [(a.subs(subs), b.subs(subs)) for a, b in _pairs(lhs, rhs)]
        pr = prove_identity(
            [a for a, _ in pairs], [b for _, b in pairs], how=f"case {name}" + (f"; {how}" if how else "")
        )
        all_proved &= pr["proved"]
        if pr["certificate"]:
            certs.append(pr["certificate"])
        gap, pt = spot_gap([a for a, _ in pairs], [b for _, b in pairs], n=samples, seed=seed)
        if gap >= worst:
            worst, where = gap, pt
            failed = (name, pairs)
    witness = None
    if failed is not None and worst > 1e-20 and where is not None:
        name, pairs = failed

        def at_point(e):
            return e.subs({z: where[z.name] for z in e.free_symbols if z.name in where})

        a, b = max(pairs, key=lambda ab: float(abs(sp.N(at_point(ab[0] - ab[1]), 30))))
        from .witnesses import srepr_text

        witness = {
            "kind": "expression",
            "claim": id,
            "relation": "==",
            "lhs": srepr_text(a),
            "rhs": srepr_text(b),
            "scalars": where,
            "tolerance": 1e-20,
            "case": name,
        }
    v = decide_identity(
        all_proved, worst, witness=witness, how=f"cases: {', '.join(cases)}" + (f"; {how}" if how else "")
    )
    proved_holds = v.status == "holds" and len(certs) == len(cases)
    return Claim(
        id=id,
        statement=statement,
        source=source,
        params=dict(params or {}),
        status=v.status,
        method="symbolic",
        relation="==",
        reason=v.reason,
        witness=v.witness,
        data={
            "cases": list(cases),
            "spot_gap": worst,
            "samples": samples,
            **({"certificate": certs} if proved_holds else {}),
        },
        evidence="proved" if proved_holds else ("searched" if v.status == "holds" else None),
        scope=scope
        or (
            f"every value of the symbols in the cases {', '.join(cases)} (sympy), spot checked at {samples} random "
            "points per case"
            if proved_holds
            else None
        ),
    )
