"""The verdict rules, in one place: every check supplies numbers (an estimate, an interval, a bound, a
witness, a fitted exponent) and these functions turn them into a status and its reason. No check
writes its own holds / violated / inconclusive ladder.

Statuses (records' ``status``):

* ``not-applicable``: an assumption of the claim is broken in the setting (named in the reason); the
  measurement is kept and the reason says whether the bound survives anyway;
* ``holds``: the relation holds exactly (``exact``, ``symbolic``), or the whole confidence interval is
  on the right side (``monte-carlo``, ``simulation``), or a search found no violation within its stated
  budget (``adversarial-search``), or a fitted rate is at least the claimed one (``rate``);
* ``violated``: the relation fails *and* a witness re-checks independently
  (:func:`proofs_checks.recheck.recheck`): without a re-checked witness a failure is ``inconclusive``;
* ``inconclusive``: anything else, with the reason (an interval that contains the bound, a float64
  failure the high-precision re-check does not confirm, a pre-asymptotic rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "Verdict",
    "decide",
    "decide_rate",
    "decide_identity",
    "decide_step",
    "combine",
    "relation_holds",
    "RATE_MARGIN",
]

EXACT_METHODS = ("exact", "symbolic", "adversarial-search")
INTERVAL_METHODS = ("monte-carlo", "simulation")
RATE_MARGIN = 0.05


@dataclass
class Verdict:
    status: str
    reason: str
    witness: dict | None = None
    recheck: dict | None = field(default=None, repr=False)


def relation_holds(relation: str, lhs: float, rhs: float, tolerance: float = 0.0) -> bool:
    """Whether ``lhs <relation> rhs`` holds, with a relative ``tolerance`` (for rounding)."""
    scale = tolerance * (abs(lhs) + abs(rhs))
    if relation == "<=":
        return lhs <= rhs + scale
    if relation == ">=":
        return lhs >= rhs - scale
    if relation == "==":
        return abs(lhs - rhs) <= scale
    raise ValueError(f"relation must be <=, >= or ==, got {relation!r}")


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _interval_side(relation: str, ci, bound) -> str:
    """'good' when the whole interval satisfies the relation, 'bad' when the whole interval fails it,
    else 'straddles'."""
    lo, hi = ci
    if relation == "<=":
        return "good" if hi <= bound else ("bad" if lo > bound else "straddles")
    if relation == ">=":
        return "good" if lo >= bound else ("bad" if hi < bound else "straddles")
    raise ValueError(f"an interval verdict needs <= or >=, got {relation!r}")


def _confirm(witness, fails_txt: str) -> Verdict:
    """A failure turns into ``violated`` only when the witness re-checks."""
    from .recheck import recheck

    if not witness:
        return Verdict("inconclusive", fails_txt + "; no witness to re-check, so no violation is claimed")
    chk = recheck({k: v for k, v in witness.items() if k != "recheck"})
    w = {**witness, "recheck": chk}
    if chk["violated"]:
        dps = chk.get("dps")
        return Verdict(
            "violated",
            fails_txt + f"; re-checked from the witness alone ({dps} digits, assumptions re-derived)",
            w,
            chk,
        )
    if not chk["assumptions_ok"]:
        return Verdict("inconclusive", fails_txt + "; the witness breaks an assumption when re-derived", None, chk)
    return Verdict(
        "inconclusive",
        fails_txt + f"; the high-precision re-check does not confirm it (re-checked value {_fmt(chk['empirical'])} "
        f"against {_fmt(chk['bound'])}): rounding",
        None,
        chk,
    )


def decide(
    relation: str,
    empirical,
    bound,
    *,
    method: str,
    ci=None,
    tolerance: float = 0.0,
    witness: dict | None = None,
    applicable: bool = True,
    why: str | None = None,
    budget: str | None = None,
    note: str = "",
) -> Verdict:
    """The verdict on ``empirical <relation> bound`` measured by ``method`` (module docstring).

    ``ci``: the interval of an estimate (interval methods); ``witness``: re-checked before any
    ``violated``; ``applicable``/``why``: the setting's assumptions; ``budget``: a search's budget,
    quoted when nothing is found; ``note``: appended to the reason.
    """
    extra = f"; {note}" if note else ""
    for name, v in (("empirical", empirical), ("bound", bound)):
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(f"the {name} value is {v!r}: a verdict needs finite numbers")
    if method in INTERVAL_METHODS:
        if ci is None:
            raise ValueError(f"method {method!r} needs a confidence interval")
        side = _interval_side(relation, ci, bound)
        txt = f"estimate {_fmt(empirical)}, 95% interval [{_fmt(ci[0])}, {_fmt(ci[1])}], bound {_fmt(bound)}"
    else:
        ok = relation_holds(relation, empirical, bound, tolerance)
        side = "good" if ok else "bad"
        txt = f"{_fmt(empirical)} {relation} {_fmt(bound)}: " + ("holds" if ok else "fails")
    if not applicable:
        survives = {"good": "survives", "bad": "does not survive", "straddles": "may or may not survive"}[side]
        return Verdict("not-applicable", f"{why}; measured anyway, the bound {survives} ({txt}){extra}")
    if side == "good":
        if method == "adversarial-search":
            return Verdict("holds", f"no violation within the search budget ({budget}); worst case {txt}{extra}")
        return Verdict("holds", txt + extra)
    if side == "straddles":
        return Verdict("inconclusive", f"the interval contains the bound ({txt}); more samples needed{extra}")
    v = _confirm(witness, txt)
    v.reason += extra
    return v


def decide_rate(
    exponent: float,
    ci,
    theory: float,
    *,
    pinned: bool,
    reference: float | None = None,
    witness: dict | None = None,
    applicable: bool = True,
    why: str | None = None,
    margin: float = RATE_MARGIN,
) -> Verdict:
    """The verdict on a fitted decay exponent against a claimed rate O(N^-theory) (an upper bound on
    the decay: faster decay is consistent).

    The same data get the same verdict whatever the method is called: the interval's upper end ``hi``
    is compared with ``theory - margin``. Below it, the claim is ``violated`` only when the instance
    pins the exponent (``pinned``: a lower-bound instance, where the gap cannot decay faster than the
    rate) or when another method in the same claimed class, measured on the same instance, decays
    faster (``reference``: its exponent, which ``hi`` is also below by the margin); otherwise it is
    ``inconclusive``: a slower pre-asymptotic decay below an explicit bound does not contradict an O(.)
    rate. Violations need a ``rate-fit`` witness that re-checks.
    """
    lo, hi = ci
    txt = f"fitted decay exponent {exponent:.3f} [{lo:.3f}, {hi:.3f}] against the claimed {theory:.3f}"
    if not applicable:
        return Verdict("not-applicable", f"{why}: {txt}")
    if hi >= theory - margin:
        return Verdict("holds", txt + " (an upper-bound rate: faster decay is consistent)")
    if pinned:
        return _confirm(witness, txt + " on an instance that pins the exponent (a lower-bound instance)")
    if reference is not None and hi < reference - margin:
        return _confirm(
            witness,
            txt + f"; also slower than another method of the same claimed class on this instance ({reference:.3f})",
        )
    return Verdict(
        "inconclusive",
        txt + "; slower on this grid, but an O(N^-e) bound is not contradicted by a slower pre-asymptotic decay "
        "below the explicit bound; only an instance that pins the exponent can settle it",
    )


_ORDER = {"holds": 0, "not-applicable": 1, "inconclusive": 2, "violated": 3}


def combine(parts: list[Verdict]) -> Verdict:
    """One verdict for a claim checked in several parts (every part must hold): the worst part decides
    (violated > inconclusive > not-applicable > holds); its witness is kept, the reasons are joined."""
    if not parts:
        raise ValueError("combine needs at least one verdict")
    worst = max(parts, key=lambda v: _ORDER[v.status])
    reason = (
        "; ".join(v.reason for v in parts if v.status == worst.status)
        if worst.status != "holds"
        else "; ".join(v.reason for v in parts)
    )
    return Verdict(worst.status, reason, worst.witness, worst.recheck)


def decide_identity(proved: bool, gap: float, *, witness: dict | None = None, how: str = "") -> Verdict:
    """An equality of a proof: ``holds`` when sympy reduces lhs - rhs to 0 and the numerical spot checks
    agree (``gap``, relative, <= 1e-20); ``violated`` when sympy does not and a witness point re-checks;
    else ``inconclusive`` (sympy failing to simplify a true identity is no proof either way)."""
    if proved and gap <= 1e-20:
        return Verdict("holds", f"sympy reduces lhs - rhs to 0 ({how}); random points agree to {gap:.1e} at 30 digits")
    if not proved and gap > 1e-20:
        return _confirm(witness, f"sympy does not reduce lhs - rhs to 0 and random points differ (relative {gap:.2e})")
    return Verdict(
        "inconclusive", f"sympy {'reduces' if proved else 'does not reduce'} lhs - rhs to 0; numerical gap {gap:.1e}"
    )


def decide_step(
    relation: str,
    worst_gap: float,
    *,
    samples: int,
    rule_ok,
    rule_text: str = "",
    witness: dict | None = None,
    lhs=None,
    rhs=None,
    tolerance: float = 1e-9,
) -> Verdict:
    """A step of a proof checked by the rule's precondition and by spot checks on random admissible
    cases (``worst_gap``: the largest relative excess of lhs over rhs, or relative difference for =):
    a counterexample beyond ``tolerance`` is ``violated`` once its witness re-checks; a misapplied rule
    without a counterexample is ``inconclusive``; otherwise ``holds``."""
    rule = f"; rule check: {rule_text}" if rule_text else ""
    if worst_gap > tolerance:
        rel = "=" if relation == "==" else "<="
        return _confirm(witness, f"counterexample: lhs {_fmt(lhs)} vs rhs {_fmt(rhs)} (the step claims {rel}){rule}")
    if rule_ok is False:
        return Verdict(
            "inconclusive",
            f"the rule is misapplied ({rule_text}) but {samples} random admissible cases found no counterexample",
        )
    return Verdict(
        "holds",
        (f"rule check: {rule_text}; " if rule_text else "") + f"no counterexample in {samples} "
        f"random admissible cases (largest relative excess {worst_gap:.1e})",
    )
