"""Certificates: evidence ``proved`` is earned, never written (issue 44, item 3).

A record's evidence ``proved`` stands only on a decision the toolkit made: interval branch and bound
(:func:`proofs_checks.bnb.branch_and_bound`, :func:`~proofs_checks.bnb.enclose_max`,
:func:`~proofs_checks.bnb.compose_bound`), the ball re-check of a witness (:func:`proofs_checks.verdict.decide`'s
re-check, :func:`proofs_checks.witnesses.prove_expression`), a sympy identity decision
(:func:`proofs_checks.identity.prove_identity`, :func:`~proofs_checks.identity.identity_claim`,
:func:`proofs_checks.verdict.decide_identity` given ``lhs`` and ``rhs``), the moment engine and the repository's
combined proofs. Each such decision *issues* a certificate: a JSON object ``{"certificate_id", "kind", "decided",
"outcome", "issued_by", ...}`` (what was decided, in words, and by which code) that travels inside the record
(``data["certificate"]``, a re-checked witness's ``recheck["certificate"]``, or a decider's own output kept in
``data``, e.g. ``data["bnb"]``). The id is the sha256 (128 bits) of the certificate's content, so the same decision
gives the same record in every run and worker process; this module keeps the id of every certificate issued in the
running process, so a certificate that no toolkit decision of this process produced (made up, or altered after it
was issued) has an id that is not there, or that its content no longer gives.

The gate (:func:`certified`, applied by :class:`proofs_checks.records.Claim` whenever a record is built): a record
with evidence ``proved`` must carry at least one certificate, and every certificate it carries must have been
issued in this process and be unchanged. A record that asks for ``proved`` without one (a hand-built
``Verdict("holds", ..., evidence="proved")`` in a claim file) is **refused** with a :class:`ValueError` naming the
record and the deciders that can earn it; a level the engines *derive* (evidence left unset) falls back to the
level of the same record without the proof (``exact``, ``searched``).

Who may issue: only the files of :data:`DECIDER_FILES` (the toolkit's deciders and the repository's written proofs
whose machine steps are the toolkit's). :func:`certify` called from any other file (a user's claim file) is refused.
An author chains toolkit proofs instead: :func:`~proofs_checks.bnb.compose_bound` propagates proved interval images
through f o f o ... o f, and a record built from several decisions carries all their certificates
(``data={"certificate": [c1, c2]}``).

A decider that keeps its decisions on disk (:func:`proofs_checks.moment.kept_decision`: entries
signed under this user's key and keyed by the hash of the deciding sources) re-admits the certificates of an entry
it reads back (:func:`readmit`): the same decision, made by the same code in an earlier run. An edited, foreign or
unsigned entry is never read, so its certificates are never admitted. The signature guards against other users and
copied caches, not against code run as this user: a claim file can sign an entry (the key is this user's), and the
decision it writes is read back by every later run of the same sources, for every claim, with nothing in the
records to show it (``LPTHEORY_SHARP_CACHE=0``, or an empty directory, recomputes every decision).

What the gate does not do: it does not check that a certificate decides the record's statement (a reader compares
the certificate's ``decided`` text with the statement; a record lists it), and it is a guard against assertion,
not against forgery by code that rewrites this module's state. Records read back from a file are data, not
re-gated (their certificates are kept as written, for the reader).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

__all__ = [
    "DECIDER_FILES",
    "CERTIFICATE_KEY",
    "certify",
    "issue",
    "is_issued",
    "readmit",
    "caller_is_decider",
    "certificates_in",
    "certified",
    "refusal",
]

CERTIFICATE_KEY = "certificate_id"
"""The key that marks a JSON object as a certificate."""

_ROOT = os.path.dirname(os.path.abspath(__file__))

DECIDER_FILES = frozenset(
    {
        "bnb.py",  # interval branch and bound, enclose_max, compose_bound
        "verdict.py",  # the ball re-check of a witness (decide/_confirm), decide_identity with lhs and rhs
        "witnesses.py",  # bnb_record, divergence_claim's re-check, prove_expression
        "identity.py",  # prove_identity, identity_claim
        "moment.py",  # the moment engine (issue 44, items 1-2)
        os.path.join("stacey", "combined_proof.py"),  # the combined proofs (enclosure + identities + grid steps)
        os.path.join("stacey", "corrections.py"),  # Assumption 1's exact polynomial proof, Lion-K's identity
        os.path.join("stacey", "sharper.py"),  # the sharp constants (moment engine)
        os.path.join("stacey", "sharp.py"),  # the sharp records: the combined proof's upper end below the paper's
        os.path.join("stacey", "bnb_claims.py"),  # `check proved`: keeps its branch-and-bound decisions (kept_decision)
        os.path.join("stacey", "coverage.py"),  # alg2.uniform-convexity: keeps its branch-and-bound decisions (idem)
        os.path.join("spectral", "newton_schulz.py"),  # phi^5's interval enclosure
    }
)
"""The files (relative to the ``proofs_checks`` package) whose code may issue certificates."""

_ISSUED: set[str] = set()  # the ids of the certificates issued in this process


def _digest(cert: dict) -> str:
    """A certificate's id: the sha256 (128 bits) of its content, the id itself left out."""
    body = {k: v for k, v in cert.items() if k != CERTIFICATE_KEY}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:32]


def _caller_file(depth: int) -> str | None:
    """The path, relative to the package, of the code ``depth`` frames above the caller of this function (None
    outside the package)."""
    f = sys._getframe(depth + 1)
    path = os.path.realpath(f.f_code.co_filename)
    root = os.path.realpath(_ROOT)
    if not path.startswith(root + os.sep):
        return None
    return os.path.relpath(path, root)


def issue(kind: str, decided: str, *, outcome: str = "holds", depth: int = 1, **detail) -> dict:
    """A new certificate of a decision made by the calling decider (a file of :data:`DECIDER_FILES`, else
    ValueError): ``kind`` (``branch-and-bound``, ``enclosure``, ``composition``, ``ball-recheck``,
    ``sympy-identity``, ``moment``, ``combined-proof``, ...), ``decided`` (what was decided, in words),
    ``outcome`` (``holds``: the relation holds on the whole set; ``violated``: a proved counterexample;
    ``enclosed``: a rigorous enclosure), ``detail`` (JSON-able facts: the box, the enclosure, the backend).
    ``depth``: how many frames above the caller the deciding code is (1: the caller itself)."""
    who = _caller_file(depth)
    if who not in DECIDER_FILES:
        raise ValueError(
            f"a certificate of kind {kind!r} was asked for by {who or 'code outside the toolkit'}: only the toolkit's "
            "deciders issue certificates (branch_and_bound, enclose_max, compose_bound, the ball re-check of a "
            "witness, prove_expression, prove_identity / identity_claim, the moment engine, the combined proofs); a "
            "claim file earns 'proved' by calling them and keeping their certificates in its records"
        )
    if not isinstance(kind, str) or not kind or not isinstance(decided, str) or not decided:
        raise ValueError("a certificate needs a kind and what it decided, in words")
    if outcome not in ("holds", "violated", "enclosed"):
        raise ValueError(f"outcome must be holds, violated or enclosed, got {outcome!r}")
    cert = {
        "kind": kind,
        "decided": decided,
        "outcome": outcome,
        "issued_by": "proofs_checks/" + who.replace(os.sep, "/"),
        **detail,
    }
    cert = json.loads(json.dumps(cert, default=str))  # JSON values only, as the record will hold them
    cert = {CERTIFICATE_KEY: _digest(cert), **cert}
    _ISSUED.add(cert[CERTIFICATE_KEY])
    return cert


def certify(kind: str, decided: str, *, outcome: str = "holds", **detail) -> dict:
    """:func:`issue` for the written proofs of the packs shipped here (their files are in :data:`DECIDER_FILES`):
    a proof whose machine steps the toolkit decided certifies its conclusion. Called from any other file (a
    user's claim file) it is refused with ValueError: a claim file keeps the certificates of the toolkit's
    deciders instead (:func:`proofs_checks.bnb.compose_bound` chains interval images)."""
    return issue(kind, decided, outcome=outcome, depth=2, **detail)


def caller_is_decider(depth: int = 1) -> bool:
    """Whether the code ``depth`` frames above the caller of this function (1: the caller's caller) is in a file of
    :data:`DECIDER_FILES`: for a decider's helper that only the deciders may call
    (:func:`proofs_checks.moment.kept_decision`)."""
    return _caller_file(depth + 1) in DECIDER_FILES


def readmit(cert: dict) -> bool:
    """Admit ``cert``, read back from a decision kept on disk, as issued in this process: for the deciders' own
    caches only (the caller must be a file of :data:`DECIDER_FILES`, else ValueError), which read an entry only
    when it is signed under this user's key and was written by the same code (the hash of the sources is part of
    its key: :func:`proofs_checks.moment.kept_decision`). The certificate must be unchanged (its id is its content's
    digest); returns whether it was admitted."""
    who = _caller_file(1)
    if who not in DECIDER_FILES:
        raise ValueError(
            "readmit: only the toolkit's deciders re-admit their kept certificates, not "
            + (who or "code outside the toolkit")
        )
    if not isinstance(cert, dict) or cert.get(CERTIFICATE_KEY) != _digest(cert):
        return False
    _ISSUED.add(cert[CERTIFICATE_KEY])
    return True


def is_issued(cert) -> bool:
    """Whether ``cert`` is a certificate issued in this process and unchanged since."""
    if not isinstance(cert, dict):
        return False
    cid = cert.get(CERTIFICATE_KEY)
    return isinstance(cid, str) and cid in _ISSUED and cid == _digest(cert)


def certificates_in(*objs) -> list[dict]:
    """Every certificate (a dict with :data:`CERTIFICATE_KEY`) found in ``objs`` (dicts and lists, searched
    recursively): a record's ``data`` and ``witness``."""
    out, stack = [], list(objs)
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            if CERTIFICATE_KEY in o:
                out.append(o)
                continue
            stack.extend(o.values())
        elif isinstance(o, (list, tuple)):
            stack.extend(o)
    return out


def certified(data, witness) -> bool:
    """The gate: at least one certificate in ``data`` or ``witness``, and every one issued (:func:`is_issued`)."""
    found = certificates_in(data, witness)
    return bool(found) and all(is_issued(c) for c in found)


def refusal(rec_id: str, data, witness) -> str:
    """The message of a record refused for asking for ``proved`` without an issued certificate."""
    found = certificates_in(data, witness)
    why = (
        "it carries no certificate"
        if not found
        else f"{sum(not is_issued(c) for c in found)} of its {len(found)} certificates were not issued by a toolkit "
        "decision in this process (written or altered by hand)"
    )
    return (
        f"claim {rec_id}: evidence 'proved' is refused: {why}. 'proved' is earned from a decision of the toolkit "
        "(branch_and_bound / bnb_record, enclose_max, compose_bound for f o f o ... o f, prove_expression or a "
        "re-checked witness, prove_identity / identity_claim / decide_identity(lhs=, rhs=), the moment engine), "
        "whose certificate the record keeps; leave evidence unset to have it derived from the method"
    )
