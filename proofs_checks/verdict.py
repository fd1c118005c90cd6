"""The verdict rules, in one place: every check supplies numbers (an estimate, an interval, a bound, a
witness, a fitted exponent) and these functions turn them into a status and its reason. No check
writes its own holds / violated / inconclusive ladder.

Statuses (records' ``status``):

* ``not-applicable``: an assumption of the claim is broken in the setting (named in the reason); the
  measurement is kept and the reason says whether the bound survives anyway;
* ``holds``: the relation holds exactly (``exact``, ``symbolic``), or the whole confidence interval is
  on the right side (``monte-carlo``, ``simulation``), or a search found no violation within its stated
  budget (``adversarial-search``), or a fitted rate's interval is on the claim's side of the margin
  (``rate``: lower end >= claim - margin; for a tight rate, the whole interval within claim +- margin);
* ``violated``: the relation fails *and* a witness re-checks independently
  (:func:`proofs_checks.recheck.recheck`): without a re-checked witness a failure is ``inconclusive``;
* ``inconclusive``: anything else, with the reason (an interval that contains the bound, a float64
  failure the high-precision re-check does not confirm, a pre-asymptotic rate, a rate interval too wide
  to decide).

Evidence (records' ``evidence``, :data:`EVIDENCE_TEXT`, strongest first): ``proved`` (rigorous
enclosures that separate, or an exact symbolic identity or counterexample), ``exact`` (an exact finite
computation in floating point), ``measured`` (a statistical interval), ``searched`` (no counterexample
found by a search of stated budget), ``fit`` (a rate fit), ``instance`` (a claim over a class looked at on
chosen instances: :func:`scope_to_instances`). A ``violated`` verdict is ``proved`` when the
standalone re-check's ball-arithmetic enclosures of the two sides separate (:func:`_confirm`).

Negative controls (:func:`gate_on_controls`): a ``holds`` of a check that also runs controls (a method
that does not move, a method with a known slower exponent) stands only when no control gets ``holds`` under
the same rule and at least one control actually fails it (a control outside the claim's assumptions,
``not-applicable``, shows nothing either way); control records are never ``holds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "Verdict",
    "EVIDENCE_TEXT",
    "evidence_for",
    "gate_on_controls",
    "scope_to_instances",
    "INSTANCE_ONLY",
    "control_verdict",
    "decide",
    "decide_rate",
    "decide_identity",
    "decide_step",
    "certified_recheck",
    "combine",
    "relation_holds",
    "RATE_MARGIN",
]

EXACT_METHODS = ("exact", "symbolic", "adversarial-search")
INTERVAL_METHODS = ("monte-carlo", "simulation")
RATE_MARGIN = 0.05


EVIDENCE_TEXT = {
    "proved": "rigorous: ball-arithmetic (arb) or interval enclosures of both sides that separate, or an exact "
    "symbolic identity or counterexample",
    "exact": "an exact finite computation (sums over a finite law, closed forms) in floating point, re-checked at "
    "high precision but without rigorous error bounds",
    "measured": "a statistical confidence interval (Monte Carlo or simulation replicates)",
    "searched": "no counterexample found by a search of the stated budget (the search may miss one)",
    "fit": "a decay exponent fitted on log-log axes, with a jackknife interval",
    "instance": "a claim over a class (a worst-case rate, a bound for every f) looked at on the chosen instances and "
    "grid named in the scope of the record only: it can refute the claim there, never establish it (never holds)",
}


def evidence_for(
    method: str, status: str, relation: str = "<=", witness=None, reason=None, *, certified: bool = True
) -> str:
    """The evidence level of a record decided by ``method`` (the default when the engine does not say):
    a witness whose re-check proved the violation is ``proved``; a rate is a ``fit``; interval methods
    are ``measured``; a search that found nothing is ``searched`` (``exact`` when its worst point
    violates); a symbolic step is ``proved`` only when sympy reduced the identity (:func:`decide_identity`),
    ``searched`` when it rests on random spot checks; everything else is ``exact``. ``certified=False``: the
    level without the proof (the record carries no certificate of a toolkit decision:
    :mod:`proofs_checks.certificates`)."""
    chk = witness.get("recheck") if isinstance(witness, dict) else None
    if certified and isinstance(chk, dict) and chk.get("proved") and status == "violated":
        return "proved"
    if relation == "rate":
        return "fit"
    if method in INTERVAL_METHODS:
        return "measured"
    if method == "adversarial-search":
        return "exact" if status == "violated" else "searched"
    if method == "symbolic":
        if certified and status == "holds" and isinstance(reason, str) and reason.startswith(_IDENTITY_PROVED):
            return "proved"
        return "exact" if status == "violated" else "searched"
    return "exact"


_IDENTITY_PROVED = "sympy reduces lhs - rhs to 0"


@dataclass
class Verdict:
    status: str
    reason: str
    witness: dict | None = None
    recheck: dict | None = field(default=None, repr=False)
    evidence: str | None = None
    certificate: dict | None = field(default=None, repr=False)  # a toolkit decision's (proofs_checks.certificates)


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


def certified_recheck(witness: dict, dps: int | None = None, *, allow_modules=()) -> dict:
    """:func:`proofs_checks.recheck.recheck` of ``witness`` (its ``recheck`` entry ignored), with the certificate
    (:mod:`proofs_checks.certificates`, kind ``ball-recheck``) of the violation under ``"certificate"`` when the
    re-check proved it in ball arithmetic: the decision behind a ``violated`` record's evidence ``proved``. The
    claim API's ``recheck`` (``proofs_checks.api.recheck``) is this function; the standalone module's is not."""
    from .certificates import issue
    from .recheck import recheck

    chk = recheck({k: v for k, v in witness.items() if k != "recheck"}, dps, allow_modules=allow_modules)
    if chk.get("violated") and chk.get("proved"):
        chk["certificate"] = issue(
            "ball-recheck",
            f"{witness.get('kind')} witness of {witness.get('claim', 'the claim')}: {chk.get('proof')}",
            outcome="violated",
            dps=chk.get("dps"),
        )
    return chk


def _confirm(witness, fails_txt: str) -> Verdict:
    """A failure turns into ``violated`` only when the witness re-checks."""
    if not witness:
        return Verdict("inconclusive", fails_txt + "; no witness to re-check, so no violation is claimed")
    chk = certified_recheck(witness)
    w = {**witness, "recheck": chk}
    if chk["violated"]:
        dps = chk.get("dps")
        if chk.get("proved"):
            proof = f"; proved: {chk.get('proof')}"
        elif "proved" in chk:
            proof = f"; not proved rigorously ({chk.get('proof')})"
        else:
            proof = ""
        return Verdict(
            "violated",
            fails_txt + f"; re-checked from the witness alone ({dps} digits, assumptions re-derived){proof}",
            w,
            chk,
            "proved" if chk.get("proved") else None,
        )
    if not chk["assumptions_ok"]:
        bad = [c.get("assumption") or c.get("precondition") for c in chk.get("checks", []) if c.get("holds") is False]
        named = f" ({', '.join(str(b) for b in bad)})" if bad else ""
        return Verdict(
            "inconclusive", fails_txt + f"; the witness breaks an assumption when re-derived{named}", None, chk
        )
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
    float64: str | None = None,
) -> Verdict:
    """The verdict on ``empirical <relation> bound`` measured by ``method`` (module docstring).

    ``ci``: the interval of an estimate (interval methods); ``witness``: re-checked before any
    ``violated``; ``applicable``/``why``: the setting's assumptions; ``budget``: a search's budget,
    quoted when nothing is found; ``note``: appended to the reason; ``float64``: why the float64 values
    compared do not stand for the quantities (one underflows to 0 or overflows, as the high-precision
    re-check says): a relation that then holds is ``inconclusive`` (``0 <= 0`` from underflow is no evidence),
    one that fails goes to the witness's re-check as any other.

    A value that is None, inf or NaN raises :class:`~proofs_checks.spec.ClaimError` (a claim that cannot be
    evaluated as written: exit 2 naming it on the command line).
    """
    from .spec import ClaimError

    extra = f"; {note}" if note else ""
    for name, v in (("empirical", empirical), ("bound", bound)):
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            raise ClaimError(
                f"the {name} value is {v!r}: a verdict needs finite numbers (an evaluation that overflows or "
                "divides by zero is not evidence)"
            )
    if method in INTERVAL_METHODS:
        if ci is None:
            raise ValueError(f"method {method!r} needs a confidence interval")
        side = _interval_side(relation, ci, bound)
        txt = f"estimate {_fmt(empirical)}, 95% interval [{_fmt(ci[0])}, {_fmt(ci[1])}], bound {_fmt(bound)}"
    else:
        ok = relation_holds(relation, empirical, bound, tolerance)
        side = "good" if ok else "bad"
        txt = f"{_fmt(empirical)} {relation} {_fmt(bound)}: " + ("holds" if ok else "fails")
        if ok and not relation_holds(relation, empirical, bound):  # a ratio a few ulps past 1: say why it holds
            exact = f"{empirical!r} {relation} {bound!r}"
            txt += f" within the relative rounding tolerance {tolerance:g} (exactly: {exact})"
    if not applicable:
        survives = {"good": "survives", "bad": "does not survive", "straddles": "may or may not survive"}[side]
        return Verdict("not-applicable", f"{why}; measured anyway, the bound {survives} ({txt}){extra}")
    if side == "good" and float64:
        return Verdict("inconclusive", f"{txt} in float64, but {float64}: not evidence{extra}")
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
    pinned: bool = False,
    tight: bool = False,
    reference: float | None = None,
    witness: dict | None = None,
    applicable: bool = True,
    why: str | None = None,
    margin: float = RATE_MARGIN,
) -> Verdict:
    """The verdict on a fitted decay exponent (interval ``ci``) against a claimed rate, decided by the
    interval's precision (the same data get the same verdict whatever the method is called):

    * an upper-bound rate O(N^-theory) (``tight=False``: faster decay is consistent) ``holds`` only
      when the interval's lower end is at least ``theory - margin``;
    * a rate claimed tight (exactly ``theory``, e.g. on a hard instance; ``tight=True``) ``holds`` only
      when the whole interval lies within ``theory +- margin`` (an equivalence test);
    * below: the interval's upper end under ``theory - margin`` is ``violated`` only when the instance
      pins the exponent (``pinned``: a lower-bound instance, where the gap cannot decay faster) or
      another method of the same claimed class decays faster on the same instance (``reference``, its
      exponent, also above ``hi`` by the margin), and only after the ``rate-fit`` witness re-checks;
      otherwise ``inconclusive`` (a slower pre-asymptotic decay below an explicit bound does not
      contradict an O(.) rate);
    * anything else (an interval too wide to decide) is ``inconclusive``: "interval [l, u] does not
      decide against a = ... (margin m)". A wider interval never makes ``holds`` more likely.
    """
    lo, hi = (float(v) for v in ci)
    for name, v in (("exponent", exponent), ("theory", theory), ("margin", margin)):
        if v is None or not math.isfinite(float(v)):
            raise ValueError(f"the {name} is {v!r}: a rate verdict needs finite numbers")
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin!r}")
    kind = "tight rate" if tight else "upper-bound rate (faster decay is consistent)"
    txt = f"fitted decay exponent {exponent:.3f} [{lo:.3f}, {hi:.3f}] against the claimed {theory:.3f}"
    if not applicable:
        return Verdict("not-applicable", f"{why}: {txt}", evidence="fit")
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return Verdict(
            "inconclusive", f"{txt}: the interval is unbounded (too few points to fit a rate)", evidence="fit"
        )
    inside = lo >= theory - margin and (not tight or hi <= theory + margin)
    if inside:
        side = f"within +-{margin:g}" if tight else f"lower end >= claim - {margin:g}"
        return Verdict("holds", f"{txt} ({kind}: {side})", evidence="fit")
    if hi < theory - margin:
        if pinned:
            v = _confirm(witness, txt + " on an instance that pins the exponent (a lower-bound instance)")
            v.evidence = "fit"
            return v
        if reference is not None and hi < reference - margin:
            v = _confirm(
                witness,
                txt + f"; also slower than another method of the same claimed class on this instance ({reference:.3f})",
            )
            v.evidence = "fit"
            return v
        return Verdict(
            "inconclusive",
            txt + "; slower on this grid, but an O(N^-e) bound is not contradicted by a slower pre-asymptotic decay "
            "below the explicit bound; only an instance that pins the exponent can settle it",
            evidence="fit",
        )
    if tight and lo > theory + margin:
        return Verdict(
            "inconclusive",
            f"{txt}: faster than the claimed tight rate (interval above {theory:.3f} + {margin:g}); the claimed "
            "exponent is not attained on this grid",
            evidence="fit",
        )
    return Verdict(
        "inconclusive",
        f"{txt}: interval [{lo:.3f}, {hi:.3f}] does not decide against a = {theory:.3f} (margin {margin:g}; {kind})",
        evidence="fit",
    )


def control_verdict(control: str, v: Verdict, what: str | None = None, failed: bool | None = None) -> Verdict:
    """A negative control's own record, the one convention of every pack: never ``holds`` and never
    ``violated`` (a control's failure is the check's evidence that it can fail, not a finding about the
    paper), so ``inconclusive``, its reason starting "negative control 'x' fails as it must" or "negative
    control 'x' PASSES the rule it must fail"; the method's ``holds`` is withdrawn (:func:`gate_on_controls`)
    when a control does not fail. A control whose rule gives ``not-applicable`` (the control's setting breaks
    an assumption of the claim) keeps that status and says "negative control 'x' is not applicable here: it
    does not show that the check can fail" whatever ``failed`` says: a rule that does not apply has not
    shown that it can fail (:func:`gate_on_controls` does not count it as failing). The evidence level of the
    control's own verdict is kept (``v.evidence``; a witness, with its re-check, is the caller's to keep:
    :func:`proofs_checks.engines.control_record`). Records are told apart by
    :func:`proofs_checks.records.is_control` (a ``.control`` part in the id, or a ``control`` parameter).

    ``v``: the control's raw verdict under the claim's rule. ``what``: what the control is (a method that
    must fail the rule, a false neighbour of the claim), in words; given, the reason says in plain words
    what the control is, what the rule said about it and that this is the expected failure (or, when it
    does not fail, that the method's ``holds`` is withdrawn). ``failed``: whether the control fails as the
    check requires (default: the rule does not give it ``holds``; a check with a stricter gate, e.g. "the
    control must be found violated", passes its own answer so the record and the gate agree)."""
    if v.status == "not-applicable":
        return _control_not_applicable(control, v, what)
    if failed is None:
        failed = v.status != "holds"
    if what is not None:
        return _control_plain(control, v, what, failed)
    if not failed:
        return Verdict(
            "inconclusive",
            f"negative control {control!r} PASSES the rule it must fail: {v.reason}",
            evidence=v.evidence,
            certificate=v.certificate,
        )
    if v.status == "violated":  # a control's failure is the expected outcome, not a finding about the paper
        return Verdict(
            "inconclusive",
            f"negative control {control!r} fails as it must: {v.reason}",
            evidence=v.evidence,
            certificate=v.certificate,
        )
    return Verdict(
        "inconclusive",
        f"negative control {control!r} fails as it must (the rule does not give it holds): {v.reason}",
        evidence=v.evidence,
        certificate=v.certificate,
    )


CONTROL_NOT_APPLICABLE = "is not applicable here: it does not show that the check can fail"


def _control_not_applicable(control: str, v: Verdict, what: str | None) -> Verdict:
    """:func:`control_verdict` for a control outside the claim's assumptions: ``not-applicable``, and not a
    failure (the rule did not apply, so the control has not shown that the check can fail)."""
    head = f"negative control {control!r} {CONTROL_NOT_APPLICABLE}"
    if what is None:
        return Verdict("not-applicable", f"{head}: {v.reason}", evidence=v.evidence, certificate=v.certificate)
    return Verdict(
        "not-applicable",
        f"{head}. The control: {what}. The claim's rule, applied to the control, {_RULE_SAID[v.status]}: "
        f"\u201c{v.reason}\u201d. It neither counts for nor against the method's holds.",
        evidence=v.evidence,
        certificate=v.certificate,
    )


_RULE_SAID = {
    "holds": "gives it holds",
    "violated": "finds it violated",
    "inconclusive": "does not give it holds (it gives inconclusive)",
    "not-applicable": "does not apply (it gives not-applicable)",
}


def _control_plain(control: str, v: Verdict, what: str, failed: bool) -> Verdict:
    """:func:`control_verdict`'s reason in three sentences: what the control is, what the claim's rule
    (applied to the control) said, and what that means for the check."""
    said = f"The claim's rule, applied to the control, {_RULE_SAID[v.status]}: \u201c{v.reason}\u201d."
    if not failed:
        return Verdict(
            "inconclusive",
            f"negative control {control!r} PASSES the rule it must fail (it is not shown to fail). The control: "
            f"{what}. {said} The check cannot tell the method from this control, so the method's holds is "
            "withdrawn.",
            evidence=v.evidence,
            certificate=v.certificate,
        )
    return Verdict(
        "inconclusive",
        f"negative control {control!r} fails as it must. The control: {what}. {said} This failure is the "
        "expected outcome (the check's evidence that it can fail), not a finding about the paper.",
        evidence=v.evidence,
        certificate=v.certificate,
    )


def gate_on_controls(method: str, v: Verdict, controls: dict) -> Verdict:
    """``v`` (the method's verdict) unless it is ``holds`` and the controls do not back it (``controls``:
    name -> that control's raw verdict under the same rule):

    * some control also gets ``holds``: ``inconclusive``, "the check cannot tell <method> from <control>";
    * there are controls but none actually fails (every one ``not-applicable``: outside the claim's
      assumptions, it shows nothing): ``inconclusive``, the holds is not controlled;
    * otherwise ``holds``, naming the controls that fail as they must (and those not applicable here).

    A check that runs no control at all keeps its ``holds`` (its reason says "none")."""
    if v.status != "holds":
        return v
    passing = [name for name, cv in controls.items() if cv.status == "holds"]
    if passing:
        return Verdict(
            "inconclusive",
            f"the check cannot tell {method} from {', '.join(passing)} (a negative control that must fail gets holds "
            f"too): {v.reason}",
            v.witness,
            v.recheck,
            v.evidence,
            v.certificate,
        )
    failing = [name for name, cv in controls.items() if cv.status != "not-applicable"]
    idle = [name for name, cv in controls.items() if cv.status == "not-applicable"]
    if controls and not failing:
        return Verdict(
            "inconclusive",
            f"{v.reason}; but no negative control shows that the check can fail (every one is not applicable "
            f"here: {', '.join(idle)}), so this holds is not controlled",
            v.witness,
            v.recheck,
            v.evidence,
            v.certificate,
        )
    names = ", ".join(failing) if failing else "none"
    also = f"; not applicable here, so not counted: {', '.join(idle)}" if idle else ""
    return Verdict(
        "holds",
        f"{v.reason}; every {'applicable ' if idle else ''}negative control fails as it must ({names}{also})",
        v.witness,
        v.recheck,
        v.evidence,
        v.certificate,
    )


INSTANCE_ONLY = "consistent with the claim on these instances only"
"""The words that open the reason of an instance-scoped record whose instances did not refute the claim."""


def scope_to_instances(v: Verdict, scope: str, class_wide: str) -> Verdict:
    """A verdict reached on chosen instances for a claim over a class (a worst-case rate, "for every f"),
    said as such (evidence ``instance``): an instance can refute such a claim, never establish it, so a
    ``holds`` becomes ``inconclusive`` whose reason opens with :data:`INSTANCE_ONLY` and names ``scope``
    (what was tested) and ``class_wide`` (where the class-wide evidence is, or that there is none); every
    other status is kept (a ``violated`` is a refutation on the instance, its witness re-checked as
    before), its reason naming the scope.

    Examples
    --------
    >>> v = scope_to_instances(Verdict("holds", "fit 1.8 >= 1.667"), "instance A, T = 8..128", "see acc.upper")
    >>> v.status, v.evidence, v.reason.startswith(INSTANCE_ONLY)
    ('inconclusive', 'instance', True)
    """
    if not scope or not class_wide:
        raise ValueError("scope_to_instances: scope and class_wide must name what was tested and where the class is")
    if v.status == "holds":
        reason = (
            f"{INSTANCE_ONLY} ({scope}): {v.reason}. Instance evidence: a claim over a class is refuted by an "
            f"instance, never established by one; {class_wide}"
        )
        return Verdict("inconclusive", reason, v.witness, v.recheck, "instance")
    return Verdict(v.status, f"{v.reason} [instance evidence: {scope}]", v.witness, v.recheck, "instance")


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


def decide_identity(
    proved: bool,
    gap: float,
    *,
    witness: dict | None = None,
    how: str = "",
    lhs=None,
    rhs=None,
    certificate: dict | None = None,
) -> Verdict:
    """An equality of a proof: ``holds`` when sympy reduces lhs - rhs to 0 and the numerical spot checks
    agree (``gap``, relative, <= 1e-20); ``violated`` when sympy does not and a witness point re-checks;
    else ``inconclusive`` (sympy failing to simplify a true identity is no proof either way).

    The ``holds`` carries a certificate (its record's evidence ``proved``: :mod:`proofs_checks.certificates`) only
    when the toolkit made the decision: ``lhs`` and ``rhs`` given (expressions or equal-length lists), which
    :func:`proofs_checks.identity.prove_identity` reduces itself, or ``certificate`` from such a decision. Without
    them (``proved`` is the caller's word) the record's evidence is ``searched``."""
    if proved and gap <= 1e-20:
        from .certificates import is_issued

        cert = certificate if is_issued(certificate) and certificate.get("kind") == "sympy-identity" else None
        if cert is None and lhs is not None and rhs is not None:
            from .identity import prove_identity

            cert = prove_identity(lhs, rhs, how=how)["certificate"]
        return Verdict(
            "holds",
            f"sympy reduces lhs - rhs to 0 ({how}); random points agree to {gap:.1e} at 30 digits",
            certificate=cert,
        )
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
