"""Claims as tests in a user's own test-suite and CI.

* :func:`assert_claim_holds` and :func:`assert_violation_found`: run a claim (a record, a
  :class:`proofs_checks.spec.ClaimSpec` with a search setting, or a check of a pack) and fail with the
  record and the command that reproduces it;
* the pytest plugin (:mod:`lptheory.app.testing.pytest_plugin`, installed with the package): the
  ``--lptheory-seed`` option and ``lptheory_seed`` fixture, the ``lptheory_slow`` marker
  (``--lptheory-slow`` runs those tests), and these assertions;
* hypothesis strategies (:mod:`lptheory.app.testing.strategies`).

Like the CLI, this package sits on top of every layer (it runs claims and builds synthetic problems):
it imports ``proofs_checks`` and ``synthetic`` lazily, inside the functions that need them.
"""

from __future__ import annotations

__all__ = ["assert_claim_holds", "assert_violation_found", "run_claim", "default_seed"]

SEED = {"value": 0}


def default_seed() -> int:
    """The seed the assertions use when none is given: ``--lptheory-seed`` under pytest, else 0."""
    return SEED["value"]


def run_claim(claim, setting: dict | None = None, *, budget=None, seed: int | None = None, quick: bool = False):
    """Evaluate ``claim`` and return ``(records, reproduce)``.

    ``claim`` is one of:

    * a record (:class:`proofs_checks.records.Claim` or its dict), or a list of them: returned as is;
    * a :class:`proofs_checks.spec.ClaimSpec`: an adversarial search over ``setting["spaces"]``
      (``DistributionSpace`` objects) with ``setting["scalars"]`` (and optional ``params``, ``require``,
      ``scale``), under ``budget`` (a ``SearchBudget``);
    * ``"TARGET:CHECK"`` or ``(TARGET, CHECK)``: a check of a pack (``TARGET`` a pack name, a claim file or a
      module, as ``lptheory check`` takes it), with ``setting`` its options (e.g. ``{"p": [4.0]}``).

    ``reproduce`` is the command (or code) that re-runs it. ``records`` is a
    :class:`proofs_checks.records.Records` list (a table in a notebook).
    """
    from proofs_checks.records import Claim, Records
    from proofs_checks.spec import ClaimSpec

    seed = default_seed() if seed is None else int(seed)
    if isinstance(claim, (Claim, dict)) or (isinstance(claim, list) and claim and isinstance(claim[0], (Claim, dict))):
        recs = claim if isinstance(claim, list) else [claim]
        return Records(r.to_dict() if hasattr(r, "to_dict") else r for r in recs), "(a record given to the assertion)"
    if isinstance(claim, ClaimSpec):
        from proofs_checks.engines import SearchBudget, adversarial_search

        setting = dict(setting or {})
        if "spaces" not in setting:
            raise ValueError("setting['spaces'] (a list of DistributionSpace) is needed to search a ClaimSpec")
        budget = budget or SearchBudget()
        rec = adversarial_search(
            claim,
            setting["spaces"],
            dict(setting.get("params", {})),
            scalars=setting.get("scalars"),
            seed=seed,
            budget=budget,
            scale=setting.get("scale", 1.0),
            require=setting.get("require"),
        )
        repro = (
            f"adversarial_search({claim.id!r} spec, spaces={[s.describe() for s in setting['spaces']]}, "
            f"scalars={setting.get('scalars')}, seed={seed}, budget=SearchBudget({budget.maxiter}, {budget.popsize}))"
        )
        return Records([rec.to_dict()]), repro
    if isinstance(claim, str) and ":" in claim:
        claim = tuple(claim.rsplit(":", 1))
    if isinstance(claim, tuple) and len(claim) == 2:
        from proofs_checks.packs import load
        from proofs_checks.runner import plan, run_checks

        target, name = claim
        pack = load(target)
        planned = plan(pack, [name], {name: dict(setting or {})})
        results, _ = run_checks(pack, planned, seed=seed, quick=quick)
        repro = pack.reproduce(name, seed=seed, quick=quick, options=planned[name])
        p = planned[name].get("p")
        if p:
            repro = repro.replace(" --seed", " --p " + " ".join(f"{v:g}" for v in p) + " --seed", 1)
        return Records({"check": name, **r} for r in results[name]), repro
    raise TypeError(
        "claim must be a record, a ClaimSpec with a setting, or 'TARGET:CHECK' / (TARGET, CHECK), got "
        f"{type(claim).__name__}"
    )


def _describe(rec: dict) -> str:
    setting = rec.get("setting") or {k: v for k, v in rec.get("params", {}).items() if not isinstance(v, dict)}
    lines = [
        f"  claim     {rec.get('id')}: {rec.get('statement', '')}",
        f"  source    {rec.get('source', '')}",
        f"  setting   {setting}",
        f"  status    {rec.get('status')}  (method {rec.get('method')})",
        f"  empirical {rec.get('empirical')}  {rec.get('relation', '<=')}  bound {rec.get('bound')}  "
        f"(ratio {rec.get('ratio')})",
    ]
    if rec.get("reason"):
        lines.append(f"  reason    {rec['reason']}")
    if rec.get("witness"):
        w = rec["witness"]
        lines.append(f"  witness   kind {w.get('kind')} (re-check: proofs_checks.recheck.recheck(witness))")
    return "\n".join(lines)


def assert_claim_holds(
    claim, setting=None, *, budget=None, seed=None, quick: bool = False, allow_inconclusive: bool = False
):
    """Fail (AssertionError with the records and the reproduce command) unless every record of ``claim``
    holds (``not-applicable`` records are fine; ``inconclusive`` only with ``allow_inconclusive``; a negative
    control that fails as it must, :func:`proofs_checks.records.control_failed`, is counted apart).
    Returns the records. ``claim``, ``setting``: see :func:`run_claim`."""
    from proofs_checks.records import control_failed, is_control

    recs, repro = run_claim(claim, setting, budget=budget, seed=seed, quick=quick)
    bad_status = {"violated"} | (set() if allow_inconclusive else {"inconclusive"})
    # a negative control that fails as it must is the check's evidence, not a record that should hold
    bad = [r for r in recs if r.get("status") in bad_status and not (is_control(r) and control_failed(r))]
    if bad:
        body = "\n\n".join(_describe(r) for r in bad)
        raise AssertionError(f"{len(bad)} of {len(recs)} record(s) do not hold:\n{body}\n  reproduce: {repro}")
    return recs


def assert_violation_found(claim, setting=None, *, budget=None, seed=None, quick: bool = False):
    """Fail unless some record of ``claim`` is ``violated`` with a witness that re-checks independently
    (:func:`proofs_checks.recheck.recheck`). Returns the violated records. A negative control's record
    (:func:`proofs_checks.records.is_control`; a pack written before the one convention records a failing
    control ``violated``) is the check's evidence that it can fail, not a violation of the claim: skipped."""
    from proofs_checks.recheck import recheck
    from proofs_checks.records import is_control

    recs, repro = run_claim(claim, setting, budget=budget, seed=seed, quick=quick)
    found = []
    for r in recs:
        if r.get("status") != "violated" or is_control(r):
            continue
        w = r.get("witness")
        if not w:
            raise AssertionError(f"a violated record without a witness:\n{_describe(r)}\n  reproduce: {repro}")
        chk = recheck({k: v for k, v in w.items() if k != "recheck"})
        if not chk.get("violated"):
            raise AssertionError(
                f"the witness of a violated record does not re-check ({chk}):\n{_describe(r)}\n  reproduce: {repro}"
            )
        found.append(r)
    if not found:
        body = "\n\n".join(_describe(r) for r in recs)
        raise AssertionError(f"no violation found in {len(recs)} record(s):\n{body}\n  reproduce: {repro}")
    return found
