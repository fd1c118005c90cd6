"""Power shown for a searched ``holds`` (issue 35, item 6): a planted violation of known size run through the
same search, reported as its own control record ("fails as it must" when found).

The planted violation: the claim's constant divided by ``1 + size`` (:data:`PLANTED_SIZE`, 25% by default, the
rule fixed before searching). It is a violation of known size only where the claim's constant is known to be
attained (the true supremum of the searched ratio is 1: a tightness proof, a family of witnesses, or the
search itself reaching the bound), which the caller names in ``attained``. The searches this is used on are
invariant under the constant's scale (they maximize lhs / bound, and the bound's scale does not enter where
they look), so the search against the planted constant takes the same path and its worst point is the
original search's worst point: the planted violation is *found* when that point's ratio against the planted
constant exceeds 1, i.e. when the search reached more than ``1/(1 + size)`` of the true supremum.

Found: the control record is ``inconclusive``, "negative control 'planted-violation' fails as it must", and
the searched record's reason says the power it showed. Not found: the control record says it PASSES and the
searched record's ``holds`` is withdrawn (``inconclusive``: the search's power is not shown).
"""

from __future__ import annotations

import dataclasses

from .records import Claim
from .verdict import Verdict, control_verdict

__all__ = ["PLANTED_SIZE", "PLANTED", "planted_scale_control", "planted_record_control"]

PLANTED_SIZE = 0.25
"""The planted violation's size: the claimed constant divided by 1.25 (the ratio at the attaining point 1.25)."""
PLANTED = "planted-violation"
"""The control's name in its record's ``params.control``."""


def planted_scale_control(rec: Claim, *, attained: str, size: float = PLANTED_SIZE) -> tuple[Claim, Claim]:
    """(the searched record with its power stated, the planted violation's control record) for a searched
    ``<=`` record ``rec`` (``empirical``: the search's worst left side; ``bound``: the claimed constant's
    value there) whose constant is known to be attained (``attained``: why, in words).

    The control record copies ``rec``'s setting with ``params.control = "planted-violation"``,
    ``params.planted_size`` and ``params.control_for``; its bound is ``rec.bound / (1 + size)``. A record
    that is not ``holds`` is returned unchanged (with the control record, for the count of controls).

    Examples
    --------
    >>> r = Claim(id="c", statement="s", source="s", status="holds", method="adversarial-search",
    ...           empirical=0.99, bound=1.0, reason="no violation")
    >>> main, ctrl = planted_scale_control(r, attained="x")
    >>> main.status, ctrl.status, ctrl.params["control"], round(ctrl.ratio, 4)
    ('holds', 'inconclusive', 'planted-violation', 1.2375)
    """
    if not (isinstance(size, (int, float)) and 0 < size < 10):
        raise ValueError(f"size must be a number in (0, 10), got {size!r}")
    if rec.relation != "<=" or rec.empirical is None or rec.bound is None or not rec.bound > 0:
        raise ValueError(f"planted_scale_control: {rec.id} needs a '<=' record with a positive bound")
    if not attained:
        raise ValueError("planted_scale_control: attained must say why the claimed constant is attained")
    planted_bound = float(rec.bound) / (1.0 + size)
    r = float(rec.empirical) / planted_bound
    found = r > 1.0
    what = (
        f"the claimed constant divided by {1 + size:g} (a planted violation of {size:.0%}: the true supremum of "
        f"the searched ratio is 1, {attained}), searched by the same search (scale-invariant: the same path and "
        "worst point)"
    )
    raw = Verdict(
        "violated" if found else "holds",
        f"worst ratio {r:.4g} against the planted constant {planted_bound:.6g}: "
        + (f"the planted violation is found (> 1; {size:.0%} planted)" if found else "NOT found (<= 1)"),
        evidence="searched",
    )
    cv = control_verdict(PLANTED, raw, what, failed=found)
    params = {**rec.params, "control": PLANTED, "control_for": rec.id, "planted_size": size}
    ctrl = dataclasses.replace(
        rec,
        params=params,
        status=cv.status,
        reason=cv.reason,
        bound=planted_bound,
        ratio=r,
        witness=None,
        data={k: v for k, v in (rec.data or {}).items() if k != "correction"} or None,
        evidence="searched",
        show=[*(rec.show or []), "control"],
        scope=f"{rec.scope}; planted violation of {size:.0%}",
    )
    return _gate(rec, found, f"a planted violation of {size:.0%} (constant / {1 + size:g})", f"ratio {r:.4g}"), ctrl


def _gate(rec: Claim, found: bool, planted: str, numbers: str) -> Claim:
    """``rec`` with the power its planted violation showed (found) or its holds withdrawn (not found)."""
    if rec.status != "holds":
        return rec
    if found:
        return dataclasses.replace(
            rec, reason=f"{rec.reason}; power shown: {planted} run through the same search is found ({numbers})"
        )
    txt = (
        f"; but {planted} run through the same search is NOT found ({numbers}): the search's power is not shown, "
        "so this holds is withdrawn"
    )
    return dataclasses.replace(rec, status="inconclusive", reason=f"{rec.reason}{txt}")


def planted_record_control(rec: Claim, planted: Claim, *, size: float, what: str) -> tuple[Claim, Claim]:
    """(``rec`` with its power stated, the control record) where the planted violation was run through the same
    check as its own record ``planted`` (e.g. a proof step whose right side is moved by ``size`` and
    spot-checked on the same random cases): found when the check finds ``planted`` violated (its witness
    re-checked). ``what``: the planted violation in words."""
    found = planted.status == "violated"
    raw = Verdict(planted.status, planted.reason or planted.status, planted.witness, None, planted.evidence)
    cv = control_verdict(PLANTED, raw, what, failed=found)
    ctrl = dataclasses.replace(
        planted,
        id=rec.id,
        statement=rec.statement,
        source=rec.source,
        params={**rec.params, "control": PLANTED, "control_for": rec.id, "planted_size": size},
        status=cv.status,
        reason=cv.reason,
        data={k: v for k, v in (planted.data or {}).items() if k != "correction"} or None,
        show=[*(rec.show or []), "control"],
        # what the control's own evidence covers (a proved counterexample of the planted violation, or what its
        # check tried), then the claim's record it controls
        scope=f"{planted.scope} (the planted violation of {size:.0%}); the claim's record: {rec.scope}",
    )
    return _gate(rec, found, f"a planted violation of {size:.0%} ({what})", f"planted record {planted.status}"), ctrl
