"""Reading records files (``claims.json``, ``check_NAME.json``, a report directory) that a reviewer sends:
every field the readers use is validated, and a bad file is a :class:`RecordsFileError` (a ValueError) naming
the file and the key (``claims[3].status``), never a traceback.

The readers (``lptheory diff``, ``lptheory check --baseline``) use only ``id``, ``check``, ``status``,
``params``, ``ratio`` and ``witness`` of a record; those are checked here: ``id`` a non-empty string,
``status`` one of :data:`proofs_checks.records.STATUSES`, ``check`` a string, ``params`` an object,
``ratio`` a finite number or null (a NaN ratio silently turned the ratio-regression check off),
``witness`` an object or null. JSON's non-standard ``NaN`` and ``Infinity`` tokens are refused, and so is
nesting deeper than :data:`MAX_DEPTH` (which ended in a RecursionError).
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["MAX_DEPTH", "RecordsFileError", "read_document", "read_records", "validate_records"]

MAX_DEPTH = 64  # JSON nesting a records file may have (a witness's expression trees included)


class RecordsFileError(ValueError):
    """A records file that cannot be read; the message names the file and the key."""


def _refuse_constant(token: str):
    raise ValueError(f"{token} is not a JSON number (write null for a missing value)")


def _depth(obj, limit: int) -> int:
    """The nesting depth of ``obj`` (iteratively), stopping once it passes ``limit``."""
    deepest, todo = 0, [(obj, 1)]
    while todo:
        o, d = todo.pop()
        if d > deepest:
            deepest = d
            if deepest > limit:
                return deepest
        if isinstance(o, dict):
            todo.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            todo.extend((v, d + 1) for v in o)
    return deepest


def read_records(path: str, what: str = "FILE") -> list[dict]:
    """The records of a claims JSON file (``{"claims": [...], "meta": {...}}``) or a report directory (its
    ``claims.json``), validated (:func:`validate_records`). ``what`` names the argument in the messages
    (``OLD``, ``--baseline``). Raises :class:`RecordsFileError` naming the file and the key."""
    return read_document(path, what)["claims"]


def read_document(path: str, what: str = "FILE") -> dict:
    """:func:`read_records`, the whole document (``{"claims": [...], "meta": {...}}``)."""
    if os.path.isdir(path):
        path = os.path.join(path, "claims.json")
    if not os.path.exists(path):
        raise RecordsFileError(f"{what} {path}: no such file")
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh, parse_constant=_refuse_constant)
    except RecursionError:
        raise RecordsFileError(f"{what} {path}: nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise RecordsFileError(f"{what} {path}: not a claims JSON file ({exc})") from None
    validate_records(doc, f"{what} {path}")
    return doc


def validate_records(doc, where: str) -> list[dict]:
    """The records of a parsed claims document, each field the readers use checked; ``where`` starts every
    message (the file). Raises :class:`RecordsFileError`."""
    from .records import STATUSES

    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise RecordsFileError(f'{where}: expected {{"claims": [...], "meta": {{...}}}}')
    if "meta" in doc and not isinstance(doc["meta"], dict):
        raise RecordsFileError(f"{where}: meta must be an object, got {type(doc['meta']).__name__}")
    if _depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise RecordsFileError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
    for i, rec in enumerate(doc["claims"]):
        key = f"claims[{i}]"
        if not isinstance(rec, dict):
            raise RecordsFileError(f"{where}: {key} must be an object (a record), got {type(rec).__name__}")
        rid = rec.get("id")
        if not isinstance(rid, str) or not rid:
            raise RecordsFileError(f"{where}: {key}.id must be a non-empty string, got {rid!r}")
        key = f"claims[{i}] ({rid})"
        status = rec.get("status")
        if status not in STATUSES:
            raise RecordsFileError(f"{where}: {key}.status must be one of {', '.join(STATUSES)}, got {status!r}")
        for field, kind, name in (("check", str, "a string"), ("params", dict, "an object")):
            if rec.get(field) is not None and not isinstance(rec[field], kind):
                raise RecordsFileError(
                    f"{where}: {key}.{field} must be {name}, got {type(rec[field]).__name__} {rec[field]!r:.60}"
                )
        if rec.get("witness") is not None and not isinstance(rec["witness"], dict):
            raise RecordsFileError(f"{where}: {key}.witness must be an object or null")
        ratio = rec.get("ratio")
        if ratio is not None and (
            isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio)
        ):
            raise RecordsFileError(f"{where}: {key}.ratio must be a finite number or null, got {ratio!r}")
    return doc["claims"]
