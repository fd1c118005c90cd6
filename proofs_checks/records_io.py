"""Reading records files (``claims.json``, ``check_NAME.json``, a report directory) that a reviewer sends:
every field of a record is validated, and a bad file is a :class:`RecordsFileError` (a ValueError) naming
the file and the key (``claims[3].status``), never a traceback.

A records document is ``{"claims": [...], "meta": {...}}``; ``meta.format`` is its format version
(:data:`FORMAT`, written by every writer: :func:`proofs_checks.records.dumps` and the report's
``claims.json``); a file without it was written before the field and is read as format 1, a format this
version does not know is refused.

Each record: ``id`` a non-empty string and ``status`` one of :data:`proofs_checks.records.STATUSES`
(required); where present, ``check``, ``statement``, ``source`` strings, ``reason`` a string or null,
``params`` an object, ``data`` and ``witness`` objects or null (a ``violated`` record must carry a witness
object), ``method``, ``relation`` and ``evidence`` in :data:`~proofs_checks.records.METHODS`,
:data:`~proofs_checks.records.RELATIONS` and :data:`~proofs_checks.records.EVIDENCE`, ``empirical`` and
``bound`` null, a finite number or one of the strings ``'inf'``, ``'-inf'``, ``'nan'`` (how
:func:`proofs_checks.records.clean` writes a non-finite value), ``ci`` null or a list of two such values,
``ratio`` a finite number or null (a NaN ratio silently turned the ratio-regression check off).
JSON's non-standard ``NaN`` and ``Infinity`` tokens are refused, and so is nesting deeper than
:data:`MAX_DEPTH` (which ended in a RecursionError).
"""

from __future__ import annotations

import json
import math
import os

__all__ = ["FORMAT", "FORMATS", "MAX_DEPTH", "RecordsFileError", "read_document", "read_records", "validate_records"]

FORMAT = 1  # the format version every writer puts in meta.format
FORMATS = (1,)  # the versions this reader reads (a file without meta.format is format 1)
MAX_DEPTH = 64  # JSON nesting a records file may have (a witness's expression trees included)
NONFINITE = ("inf", "-inf", "nan")  # how records.clean writes a non-finite value


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
    if not os.path.isfile(path):  # a FIFO, /dev/zero (through a symlink): never read without end
        raise RecordsFileError(f"{what} {path}: not a regular file")
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read(MAX_CHARS + 1)
        if len(text) > MAX_CHARS:
            raise RecordsFileError(f"{what} {path}: larger than {MAX_CHARS} characters (not a claims JSON file)")
        doc = json.loads(text, parse_constant=_refuse_constant, parse_int=_bounded_int)
    except RecursionError:
        raise RecordsFileError(f"{what} {path}: nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise RecordsFileError(f"{what} {path}: not a claims JSON file ({exc})") from None
    validate_records(doc, f"{what} {path}")
    return doc


MAX_CHARS = 1 << 30
"""The largest records file read (characters)."""


def _bounded_int(text: str) -> int:
    """An integer literal of a records file: at most 308 digits (float64's range; an integer beyond it cannot
    be compared or plotted, and ``math.isfinite`` of it raised OverflowError)."""
    digits = text.lstrip("-")
    if len(digits) > 308:
        raise ValueError(f"an integer literal of {len(digits)} digits, beyond float64's range (at most 1e308)")
    return int(text)


def _is_value(v) -> bool:
    """A record's number: null, a finite number, or a non-finite one as :func:`records.clean` writes it."""
    if v is None or v in NONFINITE:
        return True
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_format(doc, where: str) -> None:
    if "meta" in doc and not isinstance(doc["meta"], dict):
        raise RecordsFileError(f"{where}: meta must be an object, got {type(doc['meta']).__name__}")
    fmt = doc.get("meta", {}).get("format", 1)  # absent: written before the field, format 1
    if type(fmt) is not int or fmt not in FORMATS:
        raise RecordsFileError(
            f"{where}: meta.format {fmt!r} is not a records format this version reads "
            f"(it reads {', '.join(map(str, FORMATS))}; a newer lptheory wrote the file?)"
        )


def _check_record(rec: dict, where: str) -> None:
    """Every field of one record (``where`` names the file and the record); RecordsFileError."""
    from .records import EVIDENCE, METHODS, RELATIONS, STATUSES

    status = rec.get("status")
    if status not in STATUSES:
        raise RecordsFileError(f"{where}.status must be one of {', '.join(STATUSES)}, got {status!r}")
    for field, kind, name in (
        ("check", str, "a string"),
        ("statement", str, "a string"),
        ("source", str, "a string"),
        ("reason", str, "a string or null"),
        ("params", dict, "an object"),
        ("data", dict, "an object or null"),
        ("witness", dict, "an object or null"),
    ):
        if rec.get(field) is not None and not isinstance(rec[field], kind):
            raise RecordsFileError(
                f"{where}.{field} must be {name}, got {type(rec[field]).__name__} {rec[field]!r:.60}"
            )
    if status == "violated" and not isinstance(rec.get("witness"), dict):
        raise RecordsFileError(f"{where}.witness: a violated record needs a witness object, got {rec.get('witness')!r}")
    for field, allowed in (("method", METHODS), ("relation", RELATIONS), ("evidence", EVIDENCE)):
        if field in rec and rec[field] not in allowed:
            raise RecordsFileError(f"{where}.{field} must be one of {', '.join(allowed)}, got {rec[field]!r:.60}")
    for field in ("empirical", "bound"):
        if not _is_value(rec.get(field)):
            raise RecordsFileError(
                f"{where}.{field} must be null, a finite number or 'inf', '-inf', 'nan', got {rec[field]!r:.60}"
            )
    ci = rec.get("ci")
    if ci is not None and not (isinstance(ci, list) and len(ci) == 2 and all(map(_is_value, ci))):
        raise RecordsFileError(f"{where}.ci must be null or a list [lo, hi] of two numbers, got {ci!r:.60}")
    ratio = rec.get("ratio")
    if ratio is not None and (
        isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not math.isfinite(ratio)
    ):
        raise RecordsFileError(f"{where}.ratio must be a finite number or null, got {ratio!r}")


def validate_records(doc, where: str) -> list[dict]:
    """The records of a parsed claims document, its format (``meta.format``) and every field of each record
    checked; ``where`` starts every message (the file). Raises :class:`RecordsFileError`."""
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise RecordsFileError(f'{where}: expected {{"claims": [...], "meta": {{...}}}}')
    _check_format(doc, where)
    if _depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise RecordsFileError(f"{where}: nested too deeply (more than {MAX_DEPTH} levels)")
    for i, rec in enumerate(doc["claims"]):
        key = f"claims[{i}]"
        if not isinstance(rec, dict):
            raise RecordsFileError(f"{where}: {key} must be an object (a record), got {type(rec).__name__}")
        rid = rec.get("id")
        if not isinstance(rid, str) or not rid:
            raise RecordsFileError(f"{where}: {key}.id must be a non-empty string, got {rid!r}")
        _check_record(rec, f"{where}: {key} ({rid})")
    return doc["claims"]
