"""Symbolic audit of the proofs: Theorem 1 (Appendix A.1), Lemma B1, Lemma B2 (both cases) and the
l2-majorization derivation of Appendix B, step by step.

The steps are data: ``proof_steps.toml`` (next to this module) holds one row per step: its id, the text
the paper writes, the claim ``LHS <= RHS`` or ``LHS == RHS`` (sympy expressions in the vocabulary of
:mod:`proofs_checks.expressions`, :data:`VOCABULARY`, written once and used by the spot checks, the
witnesses and their re-check), the rule the paper invokes, its conditions and its precondition.
:func:`load_steps` reads it into :class:`Step` objects; :data:`STEPS` are the paper's steps and
:func:`corrected_steps` the local repairs of the violated ones. Each step is checked by

* equalities of symbols: sympy simplification of ``lhs - rhs`` with the symbols' assumptions (p > 2
  written as p = 2 + q with q > 0), plus a numerical spot check at random points. sympy failing to
  simplify a true identity gives ``inconclusive``, never ``holds`` on a guess;
* steps about random quantities: the rule's precondition (Jensen: the curvature on the domain and
  the direction written; monotonicity: the sign of the derivative; Hoelder / Cauchy-Schwarz:
  conjugate exponents), checked with sympy, and the step itself spot-checked on random admissible
  environments: one coordinate's finite distribution (``dist``: unbiased by construction, sigma its
  exact standard deviation, G the smallest admissible), vectors (``vec``), a sequence (``seq``) or an
  l2-majorized quadratic (``maj``).

Verdicts (:func:`proofs_checks.verdict.decide_step`, :func:`~proofs_checks.verdict.decide_identity`):
``violated`` when a spot check finds a counterexample that re-checks at 60 digits (its environment is
the witness); ``inconclusive`` when a rule is misapplied but no counterexample was found, or sympy
cannot decide an identity; ``holds`` otherwise. Ids: ``sym.<proof>.<step>``.
"""

from __future__ import annotations

import ast
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import sympy as sp

from lptheory import config

from ..api import (
    Assumption,
    Claim,
    ClaimSpec,
    CoordSum,
    Distribution,
    Env,
    Expect1,
    Point,
    Sup1,
    Verdict,
    claim_record,
    decide_identity,
    decide_step,
    evaluate,
    g,
    sigma,
    x,
)
from . import formulas as F

# symbols: p = 2 + q with q > 0 (the paper's p > 2); a = 1/(p-1) in (0, 1)
q = sp.Symbol("q", positive=True)
P = 2 + q
xs, ys, zs, ts, ss, ns, Gs, Ls, etas, Ts, gaps, S1s = sp.symbols("x y z t sigma n G L eta T gap S1", positive=True)
rs = sp.Symbol("r", positive=True)  # rho = 1 + r > 1 (Appendix B's preconditions)

p, G = F.p, F.G
a = 1 / (p - 1)
n = F.n
gt = sp.Symbol("gt", real=True)
fd = sp.Symbol("fd", real=True)
f0, fstar, rho = sp.symbols("f0 fstar rho", real=True)

STEPS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "proof_steps.toml")
KINDS = ("dist", "vec", "seq", "maj", "maj-eig", "sym", "dep")


@dataclass
class Step:
    """One step of a proof. ``sides``: (lhs, rhs) expressions, or a function of the environment's
    shape returning them (``maj``); ``sym``: (lhs, rhs) in symbols for identities (``kind="sym"``);
    ``pre``: a callable returning (ok, explanation) for the rule's precondition."""

    proof: str
    label: str
    text: str
    relation: str
    rule: str
    conditions: str
    sides: tuple | Callable | None = None
    kind: str = "dist"  # dist | vec | seq | maj | sym | dep
    sym: tuple | None = None
    pre: Callable | None = None
    note: str = ""
    premise: bool = False


# ---------------------------------------------------------------------------------------------------
# preconditions (sympy): the functions a step's ``pre`` may call


def _sign(e) -> int | None:
    """+1, -1 or None: the sign of the (already simplified) expression ``e``."""
    if e.is_positive:
        return 1
    if e.is_negative:
        return -1
    return None


@functools.lru_cache(maxsize=64)
def _simplified_derivative(expr, var, order: int):
    """``simplify(diff(expr, var, order))``, made once per process for each (expression, variable, order): the
    proof table checks the same curvature or monotonicity at several steps (3 of its 9 preconditions repeat
    one); sympy's answer is the same expression each time."""
    return sp.simplify(sp.diff(expr, var, order))


def jensen(phi, var, claimed: str):
    """Jensen's inequality as the paper uses it (Appendix A.1, Lemmas B1 and B2): ``"E phi <= phi(E)"``
    needs phi concave, ``"E phi >= phi(E)"`` convex; the curvature is the sign of phi'' for p > 2.
    Returns (ok or None when undetermined, explanation)."""
    s2 = _simplified_derivative(phi, var, 2)  # the sign and the text read the same simplification
    sg = _sign(s2)
    shape = {1: "convex", -1: "concave", None: "of undetermined curvature"}[sg]
    need = "concave" if claimed == "E phi <= phi(E)" else "convex"
    ok = None if sg is None else (shape == need)
    return ok, f"phi({var}) = {phi} is {shape} for p > 2 (phi'' = {s2}); the step needs {need}"


def monotone(expr, var, claimed: str):
    """A monotonicity step (Lemma B2): ``claimed`` ("increasing" | "decreasing") against the sign of the
    derivative for p > 2. Returns (ok or None when undetermined, explanation)."""
    s1 = _simplified_derivative(expr, var, 1)  # the sign and the text read the same simplification
    sg = _sign(s1)
    shape = {1: "increasing", -1: "decreasing", None: "of undetermined monotonicity"}[sg]
    ok = None if sg is None else (shape == claimed)
    return ok, f"{expr} is {shape} in {var} for p > 2 (derivative {s1}); the step needs {claimed}"


def conjugate(e1, e2):
    """Hoelder / Cauchy-Schwarz (and the reverse Hoelder of Appendix B): 1/e1 + 1/e2 = 1."""
    v = sp.simplify(1 / e1 + 1 / e2 - 1)
    return v == 0, f"conjugate exponents: 1/({e1}) + 1/({e2}) - 1 simplifies to {v}"


def given(why: str):
    """A precondition that holds by the step's own statement (e.g. Markov on a nonnegative variable)."""
    return True, why


def refuted(why: str):
    """A precondition that fails as the step is written."""
    return False, why


# ---------------------------------------------------------------------------------------------------
# the vocabulary of the steps' expressions


def on(cond, e):
    """e where cond holds, 0 elsewhere (the other branch is never evaluated)."""
    return sp.Piecewise((e, cond), (0, True))


def E(e):
    """One coordinate's expectation over the distribution of g~ (:class:`~proofs_checks.expressions.Expect1`)."""
    return Expect1(e)


def norm2(v):
    """||v||_p^2 = (sum_i |v_i|^p)^{2/p} (Theorem 1's proof, Appendix A.1)."""
    return CoordSum(sp.Abs(v) ** p) ** (2 / p)


def _lp(vs, r):
    return sp.Add(*[sp.Abs(v) ** r for v in vs]) ** (1 / r)


def maj_symbols(d):
    """The symbols of Appendix B's majorized quadratic in dimension d: H (H_i_j), L (L_i), the
    displacement u (u_i) and H u (new lists, of the same sympy objects each call: made once per d)."""
    H, Lv, u, Hu = _maj_symbols(d)
    return [list(r) for r in H], list(Lv), list(u), list(Hu)


@functools.lru_cache(maxsize=32)
def _maj_symbols(d):
    """:func:`maj_symbols` as tuples, built once per d (symbols and sums are immutable: the same objects a
    fresh build gives, equal and with the same assumptions; it was rebuilt at every call)."""
    H = tuple(tuple(sp.Symbol(f"H_{i}_{j}", real=True) for j in range(d)) for i in range(d))
    Lv = tuple(sp.Symbol(f"L_{i}", positive=True) for i in range(d))
    u = tuple(sp.Symbol(f"u_{i}", real=True) for i in range(d))
    Hu = tuple(sp.Add(*[H[i][j] * u[j] for j in range(d)]) for i in range(d))
    return H, Lv, u, Hu


# Appendix B's chain, explicit in the dimension d (symbols H_i_j, L_i, u_i, rho): (lhs, rhs) per link; each
# pair built once per d (immutable expressions: the same objects for the audit's steps and the majorization
# check's 200 quadratics x 3 links per p, which rebuilt them at every draw)
@functools.lru_cache(maxsize=16)
def _rh_sides(d):
    _, Lv, u, Hu = maj_symbols(d)
    return (
        _lp(Hu, 2 * rho / (2 * rho - 1)) / _lp(Lv, rho / (rho - 1)) ** sp.Rational(1, 2),
        sp.sqrt(sp.Add(*[Hu[i] ** 2 / Lv[i] for i in range(d)])),
    )


@functools.lru_cache(maxsize=16)
def _rhi_sides(d):
    _, Lv, u, _ = maj_symbols(d)
    qq = (2 * rho - 1) / rho
    uu = [sp.Abs(v) + sp.Rational(1, 1000) for v in u]
    r1, r2 = 1 / qq, -1 / (qq - 1)
    return (
        sp.Add(*[v**r1 for v in uu]) ** (1 / r1) * sp.Add(*[v**r2 for v in Lv]) ** (1 / r2),
        sp.Add(*[uu[i] * Lv[i] for i in range(d)]),
    )


@functools.lru_cache(maxsize=16)
def _sm_sides(d):
    _, Lv, u, Hu = maj_symbols(d)
    return (
        sp.sqrt(sp.Add(*[Hu[i] ** 2 / Lv[i] for i in range(d)])),
        sp.sqrt(sp.Add(*[Lv[i] * u[i] ** 2 for i in range(d)])),
    )


@functools.lru_cache(maxsize=16)
def _ho_sides(d):
    _, Lv, u, _ = maj_symbols(d)
    return (
        sp.sqrt(sp.Add(*[Lv[i] * u[i] ** 2 for i in range(d)])),
        _lp(Lv, rho / (rho - 1)) ** sp.Rational(1, 2) * _lp(u, 2 * rho),
    )


@functools.lru_cache(maxsize=16)
def _re_sides(d):
    _, Lv, u, Hu = maj_symbols(d)
    return (_lp(Hu, 2 * rho / (2 * rho - 1)), _lp(Lv, rho / (rho - 1)) * _lp(u, 2 * rho))


MAJ_SIDES = {
    "reverse-hoelder": _rh_sides,
    "reverse-hoelder-inequality": _rhi_sides,
    "smoothness": _sm_sides,
    "hoelder": _ho_sides,
    "rearrange": _re_sides,
}

#: the names a step's expressions (``claim``, ``pre`` and ``[define]`` in proof_steps.toml) may use
VOCABULARY = {
    **{k: getattr(sp, k) for k in ("Abs", "sqrt", "sign", "Eq", "Not", "And", "Piecewise", "Matrix", "Integer")},
    "Rational": sp.Rational,
    "True": True,
    **{"g": g, "x": x, "gt": gt, "sigma": sigma, "n": n, "G": G, "p": p, "a": a, "pstar": F.pstar},
    **{"eta": F.eta, "L": F.L, "T": F.T, "m_inv": F.m_inv, "ETA_THEOREM": F.ETA_THEOREM},
    **{"THEOREM_RHS": F.THEOREM_RHS, "RATE_BOUND": F.RATE_BOUND},
    **{"fd": fd, "f0": f0, "fstar": fstar, "rho": rho, "r": rs, "q": q, "P": P},
    **{"xs": xs, "ys": ys, "zs": zs, "ts": ts, "ss": ss, "ns": ns},
    **{"E": E, "on": on, "CoordSum": CoordSum, "s": F.s, "norm2": norm2},
    **{"jensen": jensen, "monotone": monotone, "conjugate": conjugate, "given": given, "refuted": refuted},
}

_RELATIONS = {ast.LtE: "<=", ast.Eq: "="}
_FIELDS = {"id", "text", "claim", "relation", "rule", "conditions", "kind", "pre", "note", "premise"}


class StepTableError(ValueError):
    """proof_steps.toml is malformed: the message names the row and the field."""


#: the syntax a step's expression may use: names of VOCABULARY (and [define]), literals, arithmetic, comparisons,
#: calls, tuples/lists/dicts; an attribute only from _ATTRIBUTES (no ``__class__``, no other way out of the table)
_SYNTAX = (
    ast.Expression,
    ast.Name,
    ast.Load,
    ast.Constant,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.Call,
    ast.keyword,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Attribute,
    *(ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub, ast.UAdd, ast.Not),
    *(ast.LtE, ast.GtE, ast.Lt, ast.Gt, ast.Eq, ast.NotEq),
)
_ATTRIBUTES = {"subs"}


def _check_syntax(tree, where: str) -> None:
    """Refuse (StepTableError naming the row and field) any node outside :data:`_SYNTAX`, an attribute other
    than those of :data:`_ATTRIBUTES` and a name outside the table: the text is never run otherwise."""
    for node in ast.walk(tree):
        if not isinstance(node, _SYNTAX):
            raise StepTableError(f"{where}: {type(node).__name__} is not allowed in a step's expression")
        if isinstance(node, ast.Attribute) and node.attr not in _ATTRIBUTES:
            raise StepTableError(f"{where}: the attribute .{node.attr} is not allowed (only {sorted(_ATTRIBUTES)})")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise StepTableError(f"{where}: the name {node.id!r} is not allowed")


def _eval(node_or_text, names: dict, where: str):
    """A Python expression of the table evaluated in ``names`` only (no builtins), after
    :func:`_check_syntax` (no attribute access but ``.subs``, no name outside the table)."""
    if isinstance(node_or_text, str):
        node_or_text = _parse(node_or_text, where)
    tree = ast.Expression(node_or_text)
    _check_syntax(tree, where)
    try:
        code = compile(tree, where, "eval")
        return eval(code, {"__builtins__": {}}, names)  # the package's own table, its names only
    except Exception as exc:  # reported with the row and the field
        raise StepTableError(f"{where}: {type(exc).__name__}: {exc}") from exc


def _parse(text: str, where: str) -> ast.AST:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError as exc:
        raise StepTableError(f"{where}: not an expression: {text!r} ({exc.msg})") from exc


def _claim(text: str, names: dict, where: str):
    """``"LHS <= RHS"`` / ``"LHS == RHS"`` -> (relation "<=" | "=", lhs, rhs)."""
    node = _parse(text, where)
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _RELATIONS):
        raise StepTableError(f"{where}: a claim is 'LHS <= RHS' or 'LHS == RHS', got {text!r}")
    rel = _RELATIONS[type(node.ops[0])]
    return rel, _eval(node.left, names, where + " (lhs)"), _eval(node.comparators[0], names, where + " (rhs)")


def _row_step(row: dict, names: dict, where: str) -> Step:
    unknown = set(row) - _FIELDS
    if unknown:
        raise StepTableError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    for key in ("id", "text", "rule"):
        if not isinstance(row.get(key), str) or not row[key]:
            raise StepTableError(f"{where}: field {key!r} (a non-empty string) is required")
    proof, dot, label = row["id"].partition(".")
    if not dot or not label:
        raise StepTableError(f"{where}: id {row['id']!r} must be '<proof>.<label>'")
    kind = row.get("kind", "dist")
    if kind not in KINDS:
        raise StepTableError(f"{where}: kind {kind!r} is not one of {KINDS}")
    sides = sym = None
    if "claim" in row:
        if "relation" in row:
            raise StepTableError(f"{where}: give 'claim' or 'relation', not both")
        relation, lhs, rhs = _claim(row["claim"], names, where + ".claim")
        if kind == "sym":
            sym = (lhs, rhs)
        elif kind in ("dist", "vec", "seq"):
            sides = (lhs, rhs)
        else:
            raise StepTableError(f"{where}: a {kind!r} step takes 'relation', not 'claim'")
    else:
        relation = row.get("relation")
        if relation not in ("<=", "="):
            raise StepTableError(f"{where}: 'claim' is required, or 'relation' ('<=' or '=') for a {kind!r} step")
        if kind == "maj":
            if label not in MAJ_SIDES:
                raise StepTableError(f"{where}: no chain link {label!r} in MAJ_SIDES ({sorted(MAJ_SIDES)})")
            sides = MAJ_SIDES[label]
        elif kind in ("dist", "vec", "seq", "sym") and not row.get("premise"):
            raise StepTableError(f"{where}: a {kind!r} step needs a 'claim'")
    pre = None
    if "pre" in row:
        pre = partial(_eval, _parse(row["pre"], where + ".pre"), names, where + ".pre")
    return Step(
        proof,
        label,
        row["text"],
        relation,
        row["rule"],
        row.get("conditions", ""),
        sides,
        kind=kind,
        sym=sym,
        pre=pre,
        note=row.get("note", ""),
        premise=bool(row.get("premise", False)),
    )


def load_steps(path: str = STEPS_FILE) -> tuple[list[Step], list[tuple[Step, str, str]]]:
    """The proof steps of ``path`` (``proof_steps.toml``): ``(steps, repairs)``, ``repairs`` as
    ``(corrected step, id of the step it repairs, what changed)``. A malformed row raises
    :class:`StepTableError` naming the row and the field."""
    try:
        import tomllib
    except ModuleNotFoundError:  # python < 3.11
        import tomli as tomllib
    with open(path, "rb") as fh:
        table = tomllib.load(fh)
    extra = set(table) - {"define", "step", "repair"}
    if extra:
        raise StepTableError(f"{path}: unknown section(s) {sorted(extra)}")
    names = dict(VOCABULARY)
    for key, text in table.get("define", {}).items():
        if key in VOCABULARY:
            raise StepTableError(f"{path} [define] {key}: shadows a vocabulary name")
        names[key] = _eval(_parse(text, f"[define] {key}"), names, f"{path} [define] {key}")
    steps, seen = [], set()
    for i, row in enumerate(table.get("step", [])):
        st = _row_step(row, names, f"{path} [[step]] #{i + 1} ({row.get('id', '?')})")
        if row["id"] in seen:
            raise StepTableError(f"{path}: duplicate step id {row['id']!r}")
        seen.add(row["id"])
        steps.append(st)
    repairs = []
    for i, row in enumerate(table.get("repair", [])):
        where = f"{path} [[repair]] #{i + 1} (of {row.get('of', '?')})"
        of, change = row.get("of"), row.get("change")
        if of not in seen:
            raise StepTableError(f"{where}: 'of' must name a step of the table, got {of!r}")
        if not isinstance(change, str) or not change:
            raise StepTableError(f"{where}: field 'change' (a non-empty string) is required")
        body = {k: v for k, v in row.items() if k not in ("of", "change")}
        repairs.append((_row_step({"id": of, **body}, names, where), f"sym.{of}", change))
    return steps, repairs


STEPS, _REPAIRS = load_steps()


def corrected_steps() -> list[tuple[Step, str, str]]:
    """The violated proof steps with a local repair (the ``[[repair]]`` rows of proof_steps.toml), each
    as ``(corrected step, id of the step it repairs, what changed)``, checked by :func:`check_step`
    exactly as the originals are:

    * ``lemma-B2.case1.step5``: the equality E_{|=}[Y] P[=] = E[Y] holds as <= (E[Y 1[=]] <= E[Y], Y >= 0),
      the direction the chain needs;
    * ``thm1.step2``: with the factor eta^2 on the last term (the next line of the proof has it);
    * ``thm1.C.step1``: with g~_t in place of g_t (the term C of the proof involves s(g~_t));
    * ``lemma-B2.case2.step5``: Jensen for the convex phi(t) = t^{(2-p)/(p-1)} gives >=, the reverse of what
      the chain needs: the step holds reversed, and case (2) cannot be closed this way (Lemma 2 holds only
      with the constant kappa(p): ``thm1.B2.corrected``).

    ``lemma-B2.combine`` has no local repair: its corrected statement is ``thm1.B2.corrected`` itself."""
    return list(_REPAIRS)


# ---------------------------------------------------------------------------------------------------
# random admissible environments (drawn one by one from the step's stream, evaluated by shape groups)


def _dirichlet_ones(rng, k: int) -> np.ndarray:
    """``rng.dirichlet(np.ones(k))`` bit for bit, with the generator left in the same state, at a third of
    its cost: numpy draws a Gamma(1) variate per coordinate as a standard exponential (the same ziggurat
    draws as ``standard_exponential``), sums them in order and multiplies by the reciprocal of the sum
    (tested against numpy.random.Generator.dirichlet)."""
    e = rng.standard_exponential(k)
    acc = 0.0
    for v in e.tolist():
        acc += v
    return e * (1.0 / acc)


def _dist_env(rng):
    """One coordinate: k support points (some tiny), weights, p in (2, 10); g the mean (Assumption 2),
    sigma the exact std (Assumption 3, n = 1), G = max |X| (Assumption 4). (No tiny point: the empty
    ``uniform(-8, -1, 0)`` draw is skipped, which draws nothing either; same stream, tested.)"""
    uniform = rng.uniform
    while True:
        pv = float(uniform(2.05, 10.0))
        k = int(rng.integers(2, 5))
        v = uniform(-1, 1, k)
        tiny = rng.random(k) < 0.3
        m = int(np.count_nonzero(tiny))
        if m:
            v[tiny] = np.sign(v[tiny]) * 10.0 ** uniform(-8, -1, m)
        w = _dirichlet_ones(rng, k)
        gv = float(np.dot(w, v))
        if abs(gv) > 1e-6 and v.all():
            break
    return {
        "shape": k,
        "p": pv,
        "values": v,
        "weights": w,
        "g": gv,
        "sigma": math.sqrt(float(np.dot(w, (v - gv) ** 2))),
        "G": float(np.abs(v).max()),
    }


def _lpn(v, r):
    v = np.abs(np.asarray(v, dtype=float))
    return float(v.max()) if math.isinf(r) else float(np.sum(v**r) ** (1 / r))


def _vec_env(rng):
    pv = float(rng.uniform(2.05, 10.0))
    d = int(rng.integers(1, 6))
    gv = rng.standard_normal(d) * 10.0 ** rng.uniform(-3, 1, d)
    gtv = gv + rng.standard_normal(d)
    Gv = _lpn(gtv, pv / (pv - 1)) * float(rng.uniform(1.0, 2.0))  # any G meeting Assumption 4
    fs = np.cumsum(rng.standard_normal(int(rng.integers(2, 20))))
    return {
        "shape": d,
        "p": pv,
        "g": gv,
        "gt": gtv,
        "G": Gv,
        "f": fs,
        "f_star": float(fs.min() - rng.random()),
        "eta": float(10.0 ** rng.uniform(-3, 0)),
        "L": float(rng.uniform(0.1, 10)),
    }


def _maj_env(rng):
    """A majorized quadratic: H = D^{1/2} M D^{1/2}, ||M||_2 <= 1, D = diag(L) (so -diag(L) <= H <= diag(L)),
    rho in (1, 6], and a random displacement u."""
    d = int(rng.integers(1, 6))
    Lv = 10.0 ** rng.uniform(-1, 1, d)
    M = rng.standard_normal((d, d))
    M = (M + M.T) / 2
    M /= max(1.0, np.abs(np.linalg.eigvalsh(M)).max())
    H = np.sqrt(Lv)[:, None] * M * np.sqrt(Lv)[None, :]
    return {"shape": d, "L": Lv, "H": H, "u": rng.standard_normal(d), "rho": float(rng.uniform(1.05, 6.0))}


def _seq_env(rng):
    e = _vec_env(rng)
    f = e["f"]
    return {"shape": f.size - 1, "fd": f[:-1] - f[1:], "f0": float(f[0]), "fstar": e["f_star"]}


_SAMPLERS = {"dist": _dist_env, "vec": _vec_env, "maj": _maj_env, "seq": _seq_env, "maj-eig": _maj_env}


# ---------------------------------------------------------------------------------------------------
# the same environments drawn for a whole step at once (numba draws the step's stream, numpy does the
# arithmetic batched): bit for bit those of the samplers above, with the generator left in the same state


class _Batch:
    """The environments of one step as arrays (rows = environments in drawing order, padded columns):
    ``shapes`` (list), :meth:`env` (the sampler's dict of one), :meth:`arrays` (the Env of a group)."""

    def __init__(self, kind, shapes, fields):
        self.kind, self.shapes, self.f = kind, shapes, fields

    def env(self, i):
        f, k = self.f, self.shapes[i]
        if self.kind == "dist":
            return {
                "shape": k,
                "p": float(f["p"][i]),
                "values": f["values"][i, :k].copy(),
                "weights": f["weights"][i, :k].copy(),
                "g": float(f["g"][i]),
                "sigma": float(f["sigma"][i]),
                "G": float(f["G"][i]),
            }
        if self.kind == "vec":
            d, m = int(f["d"][i]), int(f["m"][i])
            return {
                "shape": d,
                "p": float(f["p"][i]),
                "g": f["g"][i, :d].copy(),
                "gt": f["gt"][i, :d].copy(),
                "G": f["G"][i],
                "f": f["f"][i, :m].copy(),
                "f_star": f["f_star"][i],
                "eta": f["eta"][i],
                "L": float(f["L"][i]),
            }
        if self.kind == "seq":
            m = int(f["m"][i])
            return {
                "shape": m - 1,
                "fd": f["fd"][i, : m - 1].copy(),
                "f0": float(f["f"][i, 0]),
                "fstar": f["f_star"][i],
            }
        return {
            "shape": k,
            "L": f["L"][i].copy(),
            "H": f["H"][i].copy(),
            "u": f["u"][i].copy(),
            "rho": float(f["rho"][i]),
        }

    def arrays(self, idx):
        """``_env_arrays(kind, [env(i) for i in idx])``, from the arrays."""
        f, k = self.f, self.shapes[idx[0]]
        ix = np.asarray(idx)

        def block(name, width):
            return np.ascontiguousarray(f[name][ix, :width])

        if self.kind == "dist":
            return Env(
                scalars={"p": f["p"][ix].tolist(), "G": f["G"][ix].tolist(), "n": 1.0},
                coords={"g": f["g"][ix].reshape(-1, 1), "sigma": f["sigma"][ix].reshape(-1, 1)},
                dist=Distribution(block("values", k)[:, None, :], block("weights", k)[:, None, :], 1),
            )
        if self.kind == "vec":
            return Env(
                scalars={
                    "p": f["p"][ix].tolist(),
                    "G": [f["G"][i] for i in idx],
                    "eta": [f["eta"][i] for i in idx],
                    "L": f["L"][ix].tolist(),
                },
                coords={"g": block("g", k), "gt": block("gt", k)},
                S=len(idx),
            )
        if self.kind == "seq":
            return Env(
                scalars={"f0": f["f"][ix, 0].tolist(), "fstar": [f["f_star"][i] for i in idx]},
                coords={"fd": block("fd", k)},
                S=len(idx),
            )
        L, H, u = f["L"], f["H"], f["u"]
        sc = {"rho": f["rho"][ix].tolist()}
        Lg, ug, Hg = np.stack([L[i] for i in idx]), np.stack([u[i] for i in idx]), np.stack([H[i] for i in idx])
        for i in range(k):
            sc[f"L_{i}"] = Lg[:, i].tolist()
            sc[f"u_{i}"] = ug[:, i].tolist()
            for j in range(k):
                sc[f"H_{i}_{j}"] = Hg[:, i, j].tolist()
        return Env(scalars=sc, S=len(idx))


def _dist_batch(K_, rng, n):
    P, Kk, V, T, EX, W, A = K_.dist_draws(rng, n)
    V = V.copy()
    V[T] = np.sign(V[T]) * 10.0 ** EX[T]  # numpy's power, as _dist_env applies it
    g_, sig, G_, ok = K_.dist_finish(Kk, V, W)
    if not np.array_equal(ok, A):  # an attempt accepted with libm's power and not numpy's (or back)
        return None
    ix = np.flatnonzero(A)
    fields = {"p": P[ix], "values": V[ix], "weights": W[ix], "g": g_[ix], "sigma": sig[ix], "G": G_[ix]}
    return _Batch("dist", Kk[ix].tolist(), fields)


def _vec_batch(K_, rng, n, kind="vec"):
    P, D, A, B, N2, C, M, F, RR, UE, UL = K_.vec_draws(rng, n)
    on = np.arange(A.shape[1]) < D[:, None]
    g_ = np.zeros_like(A)
    g_[on] = A[on] * 10.0 ** B[on]
    gt = g_ + N2
    R = P / (P - 1)  # p* (Assumption 4's norm), as _vec_env's pv / (pv - 1)
    S = K_.row_sums(np.abs(gt) ** R[:, None], D)
    Gs = [float(s ** (1 / r)) * c for s, r, c in zip(S.tolist(), R.tolist(), C.tolist())]
    fstar = [float(F[i, :m].min() - rr) for i, (m, rr) in enumerate(zip(M.tolist(), RR.tolist()))]
    fields = {
        "p": P,
        "d": D,
        "m": M,
        "g": g_,
        "gt": gt,
        "G": Gs,
        "f": F,
        "f_star": fstar,
        "eta": [float(10.0**u) for u in UE.tolist()],
        "L": UL,
    }
    if kind == "seq":
        fields["fd"] = F[:, :-1] - F[:, 1:]
        return _Batch("seq", (M - 1).tolist(), fields)
    return _Batch("vec", D.tolist(), fields)


def _maj_batch(K_, rng, n):
    D, LE, M, U, R = K_.maj_draws(rng, n)
    shapes = D.tolist()
    Ls, Hs, us = [None] * n, [None] * n, [None] * n
    for d in sorted(set(shapes)):
        ix = np.flatnonzero(D == d)
        Mg = np.ascontiguousarray(M[ix, :d, :d])
        Mg = (Mg + Mg.transpose(0, 2, 1)) / 2
        den = np.maximum(1.0, np.abs(np.linalg.eigvalsh(Mg)).max(axis=1))
        Mg /= den[:, None, None]
        Lg = 10.0 ** np.ascontiguousarray(LE[ix, :d])
        r = np.sqrt(Lg)
        Hg = r[:, :, None] * Mg * r[:, None, :]
        for q, i in enumerate(ix.tolist()):
            Ls[i], Hs[i], us[i] = Lg[q], Hg[q], U[i, :d].copy()
    return _Batch("maj", shapes, {"L": Ls, "H": Hs, "u": us, "rho": R})


_BATCHERS = {"dist": _dist_batch, "vec": _vec_batch, "seq": partial(_vec_batch, kind="seq"), "maj": _maj_batch}


def _batch(kind, rng, n):
    """The step's ``n`` environments drawn at once (:class:`_Batch`), or None (then the samplers run, from
    the same state): no numba, the first-use check failed, or a rare attempt the batch cannot settle."""
    K_ = _draw_kernels()
    if K_ is None or kind not in _BATCHERS:
        return None
    state = rng.bit_generator.state
    try:
        with np.errstate(all="ignore"):
            got = _BATCHERS[kind](K_, rng, n)
    except Exception:  # noqa: BLE001  (the samplers, from the same state)
        got = None
    if got is None:
        rng.bit_generator.state = state
    return got


def _same_env(a, b) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        w = b[k]
        if type(v) is not type(w):
            return False
        if isinstance(v, np.ndarray):
            if v.dtype != w.dtype or v.shape != w.shape or v.tobytes() != w.tobytes():
                return False
        elif not (v == w and np.signbit(v) == np.signbit(w)):
            return False
    return True


_DRAWS: list = []


def _draw_kernels():
    """:mod:`._symbolic_draws` where numba is installed and the batches give the samplers' environments
    bit for bit here (checked once per process on 400 environments of each kind, and the generators'
    states after them); None otherwise. ``LPTHEORY_SYMBOLIC_BATCH=0`` switches the batches off."""
    if _DRAWS:
        return _DRAWS[0]
    K_ = None
    if config.raw("LPTHEORY_SYMBOLIC_BATCH") != "0":
        try:
            from . import _symbolic_draws as K_
        except Exception:  # noqa: BLE001  (no numba, or it cannot compile here)
            K_ = None
    if K_ is not None:
        _DRAWS.append(K_)  # the check below runs the batchers, which look here
        try:
            ok = _batches_agree(K_)
        except Exception:  # noqa: BLE001
            ok = False
        _DRAWS.clear()
        if not ok:
            K_ = None
    _DRAWS.append(K_)
    return K_


def _batches_agree(K_, n: int = 400, seed: int = 20251124) -> bool:
    for kind, batcher in _BATCHERS.items():
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        with np.errstate(all="ignore"):
            got = batcher(K_, a, n)
        want = [_SAMPLERS[kind](b) for _ in range(n)]
        if got is None or a.bit_generator.state != b.bit_generator.state:
            return False
        if got.shapes != [e["shape"] for e in want]:
            return False
        if not all(_same_env(got.env(i), e) for i, e in enumerate(want)):
            return False
    w = np.random.default_rng(seed).random((512, 4))
    v = np.random.default_rng(seed + 1).uniform(-1, 1, (512, 4))
    k = np.random.default_rng(seed + 2).integers(1, 5, 512)
    ref = np.array([np.dot(w[i, : k[i]], v[i, : k[i]]) for i in range(512)])
    return bool(np.array_equal(K_.fma_dots(w, v, k).view(np.int64), ref.view(np.int64)))


def _env_arrays(kind, envs):
    """The numpy Env of a group of environments with the same shape."""
    if kind == "dist":
        vals = np.stack([e["values"] for e in envs])[:, None, :]
        wts = np.stack([e["weights"] for e in envs])[:, None, :]
        dist = Distribution(vals, wts, 1)
        return Env(
            scalars={"p": [e["p"] for e in envs], "G": [e["G"] for e in envs], "n": 1.0},
            coords={"g": np.array([[e["g"]] for e in envs]), "sigma": np.array([[e["sigma"]] for e in envs])},
            dist=dist,
        )
    if kind == "vec":
        return Env(
            scalars={k: [e[k] for e in envs] for k in ("p", "G", "eta", "L")},
            coords={"g": np.stack([e["g"] for e in envs]), "gt": np.stack([e["gt"] for e in envs])},
            S=len(envs),
        )
    if kind == "seq":
        return Env(
            scalars={"f0": [e["f0"] for e in envs], "fstar": [e["fstar"] for e in envs]},
            coords={"fd": np.stack([e["fd"] for e in envs])},
            S=len(envs),
        )
    if kind == "maj":
        d = envs[0]["shape"]
        sc = {"rho": [e["rho"] for e in envs]}
        for i in range(d):
            sc[f"L_{i}"] = [e["L"][i] for e in envs]
            sc[f"u_{i}"] = [e["u"][i] for e in envs]
            for j in range(d):
                sc[f"H_{i}_{j}"] = [e["H"][i, j] for e in envs]
        return Env(scalars=sc, S=len(envs))
    raise ValueError(kind)


# the assumptions a spot check's environment meets, carried by its witness (re-derived by the re-check)
DIST_CONDITIONS = (
    Assumption("Assumption 2: g = E g~", g, "==", Expect1(x), per_coordinate=True),
    Assumption("sigma = the exact std", sigma, "==", sp.sqrt(Expect1((x - g) ** 2)), per_coordinate=True),
    Assumption("G = max |g~| (Assumption 4, tightest)", G, "==", Sup1(sp.Abs(x))),
)
VEC_CONDITIONS = (("Assumption 4: ||g~||_{p*} <= G", G, ">=", CoordSum(sp.Abs(gt) ** F.pstar) ** (1 / F.pstar)),)


def _maj_conditions(d):
    Hm = sp.Matrix(d, d, lambda i, j: sp.Symbol(f"H_{i}_{j}", real=True))
    Lm = sp.diag(*[sp.Symbol(f"L_{i}", positive=True) for i in range(d)])
    min_eig = sp.Function("MinEig")
    return (
        ("l2 majorization: diag(L) - H >= 0", min_eig(sp.ImmutableMatrix(Lm - Hm)), ">=", sp.Integer(0)),
        ("l2 majorization: diag(L) + H >= 0", min_eig(sp.ImmutableMatrix(Lm + Hm)), ">=", sp.Integer(0)),
    )


def _point(kind, env, lhs, rhs) -> Point:
    """The environment of a counterexample, where the step's sides are re-checked (its witness)."""
    if kind == "dist":
        return Point(
            {"p": env["p"], "G": env["G"], "n": 1.0},
            {"g": [env["g"]], "sigma": [env["sigma"]]},
            dist={"values": [env["values"].tolist()], "weights": [env["weights"].tolist()], "n": 1},
            lhs=lhs,
            rhs=rhs,
            conditions=DIST_CONDITIONS,
        )
    if kind == "vec":
        return Point(
            {k: env[k] for k in ("p", "G", "eta", "L")},
            {"g": env["g"], "gt": env["gt"]},
            lhs=lhs,
            rhs=rhs,
            conditions=VEC_CONDITIONS,
        )
    if kind == "seq":
        return Point({"f0": env["f0"], "fstar": env["fstar"]}, {"fd": env["fd"]}, lhs=lhs, rhs=rhs)
    d = env["shape"]  # maj
    sc = {"rho": env["rho"]}
    for i in range(d):
        sc[f"L_{i}"] = float(env["L"][i])
        sc[f"u_{i}"] = float(env["u"][i])
        for j in range(d):
            sc[f"H_{i}_{j}"] = float(env["H"][i, j])
    return Point(sc, lhs=lhs, rhs=rhs, conditions=_maj_conditions(d))


def step_spec(step: Step) -> ClaimSpec:
    """The claim a proof step makes (id ``sym.<proof>.<step>``), its sides when they are expressions."""
    sides = step.sym if step.kind == "sym" else step.sides
    lhs, rhs = sides if isinstance(sides, tuple) else (None, None)
    return ClaimSpec(
        id=f"sym.{step.proof}.{step.label}",
        statement=f"{step.text}   [{step.relation}; {step.rule}]",
        source="Appendix A.1" if step.proof != "appendix-B" else "Appendix B",
        assumptions=(step.conditions,) if step.conditions else (),
        term=lhs if isinstance(lhs, sp.Basic) else None,
        bound=rhs if isinstance(rhs, sp.Basic) else None,
        relation="==" if step.relation == "=" else "<=",
        show=("proof", "step", "rule"),
    )


def _spot(step: Step, rng, samples: int):
    """The largest relative excess of lhs over rhs (for <=) or relative gap (for =) over random
    environments; returns (worst, env, lhs, rhs, sides)."""
    sampler = _SAMPLERS[step.kind]
    batch = _batch("maj" if step.kind == "maj-eig" else step.kind, rng, samples)  # (maj-eig draws maj's envs)
    if batch is None:
        envs = [sampler(rng) for _ in range(samples)]
        shapes, env_of = [e["shape"] for e in envs], envs.__getitem__
    else:
        shapes, env_of = batch.shapes, batch.env
    if step.kind == "maj-eig" and batch is not None:
        got = _maj_eig_stacked(batch)
        if got is not None:
            return got
        envs = [batch.env(i) for i in range(len(shapes))]
    if step.kind == "maj-eig":  # spectral radius = operator norm for symmetric matrices (numpy only)
        worst, arg = -math.inf, None
        for e in envs:
            Ms = e["H"] / np.sqrt(np.outer(e["L"], e["L"]))
            lv, rv = float(np.abs(np.linalg.eigvalsh(Ms)).max()), float(np.linalg.norm(Ms, 2))
            gap_ = abs(lv - rv) / (abs(lv) + abs(rv) + 1e-300)
            if gap_ > worst:
                worst, arg = gap_, (e, lv, rv)
        return worst, arg[0], arg[1], arg[2], None
    groups: dict = {}
    for i, s in enumerate(shapes):
        groups.setdefault(s, []).append(i)
    worst, best = -math.inf, None
    for shape, idx in groups.items():
        lhs_e, rhs_e = step.sides(shape) if callable(step.sides) else step.sides
        if batch is None:
            env = _env_arrays("maj" if step.kind == "maj" else step.kind, [envs[i] for i in idx])
        else:
            env = batch.arrays(idx)
        with np.errstate(all="ignore"):
            lv = evaluate(lhs_e, env)
            rv = evaluate(rhs_e, env)
            scale = np.abs(lv) + np.abs(rv) + 1e-300
            gap_ = (lv - rv) / scale if step.relation == "<=" else np.abs(lv - rv) / scale
        ok = np.isfinite(lv) & np.isfinite(rv)
        gap_ = np.where(ok, gap_, -np.inf)
        j = int(np.argmax(gap_))
        if gap_[j] > worst or (best is None and np.isfinite(gap_[j])):
            worst, best = float(gap_[j]), (env_of(idx[j]), float(lv[j]), float(rv[j]), (lhs_e, rhs_e))
    if best is None:
        return -math.inf, None, None, None, None
    return worst, *best


def _maj_eig_stacked(batch):
    """:func:`_spot`'s maj-eig loop (per environment in drawing order: M = H / sqrt(outer(L, L)), the largest
    |eigenvalue| by ``eigvalsh`` against ``norm(M, 2)``, their relative gap, the first environment of the largest
    gap) on the batch's environments stacked by dimension: numpy's ``eigvalsh`` and ``svd`` (``norm``'s largest
    singular value) run their LAPACK call on each matrix of a stack as on the matrix alone, ``outer`` is the
    product of the column and the row, and the gaps are the same IEEE operations as the loop's Python floats.
    Returns (worst, env, lv, rv, None), or None where a gap is not finite (the loop then decides as it does).
    The batch's draws replace the sampler's (maj's: the same environments and generator state, checked once per
    process by :func:`_draw_kernels`): 1000 environments measured 0.045 -> 0.005 s of CPU (the report's 3000 ~0.13 s)."""
    shapes = np.asarray(batch.shapes)
    n = shapes.size
    lv, rv = np.empty(n), np.empty(n)
    Ls, Hs = batch.f["L"], batch.f["H"]
    for d in sorted(set(batch.shapes)):
        ix = np.flatnonzero(shapes == d)
        L = np.stack([Ls[i] for i in ix])
        Ms = np.stack([Hs[i] for i in ix]) / np.sqrt(L[:, :, None] * L[:, None, :])
        lv[ix] = np.abs(np.linalg.eigvalsh(Ms)).max(axis=-1)
        rv[ix] = np.linalg.svd(Ms, compute_uv=False).max(axis=-1)
    gap = np.abs(lv - rv) / (np.abs(lv) + np.abs(rv) + 1e-300)
    if not np.all(np.isfinite(gap)):
        return None
    i = int(np.argmax(gap))  # the first of the largest, as the loop's strict >
    return float(gap[i]), batch.env(i), float(lv[i]), float(rv[i]), None


def _sym_identity(lhs, rhs, nums: int = 50, seed: int = 0):
    """(simplifies_to_zero, numeric_max_rel_gap, worst_point) for an identity in positive symbols."""
    import mpmath

    diff = sp.simplify(sp.powsimp(sp.expand_power_base(lhs - rhs, force=True), force=True))
    zero = diff == 0 or (isinstance(diff, sp.MatrixBase) and all(sp.simplify(v) == 0 for v in diff))
    syms = sorted((lhs - rhs).free_symbols, key=lambda v: v.name)
    f_l, f_r = sp.lambdify(syms, lhs, "mpmath"), sp.lambdify(syms, rhs, "mpmath")
    rng = np.random.default_rng(seed)
    worst, point = 0.0, None
    with mpmath.workdps(30):
        for _ in range(nums):
            raw = [float(rng.uniform(0.1, 5.0)) for _ in syms]
            vals = [mpmath.mpf(v) for v in raw]
            lv, rv = f_l(*vals), f_r(*vals)
            if isinstance(lv, mpmath.matrix) or hasattr(lv, "tolist"):
                lv, rv = list(lv), list(rv)
            else:
                lv, rv = [lv], [rv]
            for a_, b_ in zip(lv, rv):
                gap_ = float(abs(a_ - b_) / (abs(a_) + abs(b_) + mpmath.mpf(10) ** -30))
                if gap_ > worst or point is None:
                    worst, point = max(worst, gap_), dict(zip([s.name for s in syms], raw))
    return zero, worst, point


def check_step(step: Step, *, samples: int = 1000, seed: int = 0) -> Claim:
    """The verdict on one proof step (module docstring)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, sum(map(ord, step.proof + step.label))]))
    spec = step_spec(step)
    params = {
        "proof": step.proof,
        "step": step.label,
        "relation": step.relation,
        "rule": step.rule,
        "conditions": step.conditions,
    }
    note = f" Note: {step.note}" if step.note else ""
    empirical = bound = None
    if step.premise:
        v = Verdict("holds", "the step is the assumption itself (" + step.conditions + ")")
    elif step.kind == "dep":
        v = Verdict("inconclusive", "depends on earlier results: " + step.note)
        note = ""
    elif step.kind == "sym":
        zero, num, point = _sym_identity(*step.sym, seed=seed)
        params["numeric_max_rel_gap"] = num
        w = None
        if point is not None and not isinstance(step.sym[0], sp.MatrixBase):
            at = Point(point, lhs=step.sym[0], rhs=step.sym[1], relation="==", extra={"note": "p = 2 + q"})
            w = at.witness(spec)
        v = decide_identity(
            bool(zero), num, witness=w, how="positive symbols, p = 2 + q, q > 0", lhs=step.sym[0], rhs=step.sym[1]
        )
        empirical, bound = num, 0.0
    else:
        pre_ok, pre_txt = step.pre() if step.pre else (None, "")
        worst, env, lv, rv, sides = _spot(step, rng, samples)
        params["samples"] = samples
        w = _point(step.kind, env, *sides).witness(spec) if sides is not None and env is not None else None
        v = decide_step(
            "==" if step.relation == "=" else "<=",
            worst,
            samples=samples,
            rule_ok=pre_ok,
            rule_text=pre_txt,
            witness=w,
            lhs=lv,
            rhs=rv,
        )
        if worst > 1e-9:
            empirical, bound = lv, rv
    v.reason += note
    return claim_record(spec, v, params=params, method="symbolic", empirical=empirical, bound=bound)


def run_symbolic(ctx):
    """``lptheory check symbolic``: every step of the proofs of Theorem 1, Lemmas B1 and B2 and Appendix B
    (for all p > 2 symbolically and on random p in (2, 10))."""
    samples = 400 if ctx.quick else 3000
    out = [check_step(stp, samples=samples, seed=ctx.seed) for stp in STEPS]
    ctx.say(f"{len(out)} proof steps checked")
    return out


def format_proof(claims) -> str:
    """The symbolic records as an annotated proof: step, rule, verdict, reason (the proof, step and rule
    are the records' parameters)."""
    lines = []
    cur = None
    for c in claims:
        d = c.to_dict() if hasattr(c, "to_dict") else c
        pr = d["params"]
        if pr.get("proof") != cur:
            cur = pr.get("proof")
            lines.append(f"\n== proof: {cur} ==")
        verdict = d["status"].upper() if d["status"] == "violated" else d["status"]
        lines.append(f"  [{pr['step']}] ({pr['rule']}) {verdict}")
        lines.append(f"      {d['statement']}")
        if d.get("reason"):
            lines.append(f"      -> {d['reason']}")
    return "\n".join(lines)
