"""No data file runs code (issue 37, Major 1): a witness's expressions, a ``mean-function`` witness's function,
the limit cache's entries and the proof-step table are read by parsers that build the objects themselves.

The payloads are the issue's: a witness whose ``lhs`` is ``__import__('os').system('touch FILE') or
Symbol('a')`` created FILE through ``sympy.sympify``; here it is refused with a ValueError naming the field
and FILE is never created.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sympy as sp

from proofs_checks.recheck import prove_expression, recheck
from proofs_checks.safe_parse import RefusedExpression, parse_expression

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPRESSION_FIELDS = ("lhs", "rhs", "require", "function")


def _payloads(path):
    """Hostile texts, each of which would create ``path`` if it were run."""
    p = str(path)
    return [
        f"__import__('os').system('touch {p}') or Symbol('a')",
        f"Abs(\"__import__('os').system('touch {p}')\")",  # a string handed to a constructor that sympifies it
        f"Add(Symbol('a'), \"__import__('os').system('touch {p}')\")",
        f"Symbol('a', real=\"__import__('os').system('touch {p}')\")",
        f"Function(\"__import__('os').system('touch {p}')\")(Symbol('a'))",
        "Symbol('a').__class__.__base__.__subclasses__()",
        f"[c for c in ()] or open('{p}', 'w')",
        f"lambda: __import__('os').system('touch {p}')",
        f"Integer(1) if __import__('os').system('touch {p}') else Integer(2)",
        f"Symbol('a') + __import__('os').system('touch {p}')",
    ]


def _witness(**fields):
    w = {
        "kind": "expression",
        "relation": "<=",
        "lhs": "Symbol('a', positive=True)",
        "rhs": "Integer(1)",
        "scalars": {"a": 2.0},
        "coords": {},
        "assumptions": [
            {"name": "a is positive", "lhs": "Symbol('a', positive=True)", "relation": ">=", "rhs": "Integer(0)"}
        ],
    }
    w.update(fields)
    return w


def test_a_plain_witness_rechecks():
    """The witness the payloads are planted in re-checks (so a refusal below is the payload's)."""
    out = recheck(_witness())
    assert out["violated"] and out["assumptions_ok"]


@pytest.mark.parametrize("field", ["lhs", "rhs", "require"])
@pytest.mark.parametrize("k", range(10))
def test_a_hostile_witness_field_is_refused_and_runs_nothing(tmp_path, field, k):
    flag = tmp_path / "FILE"
    text = _payloads(flag)[k]
    with pytest.raises(ValueError, match=rf"^{field}: "):
        recheck(_witness(**{field: text}))
    with pytest.raises(ValueError, match=rf"^{field}: "):
        prove_expression(_witness(**{field: text}))
    assert not flag.exists()


def test_a_hostile_assumption_is_refused_naming_it(tmp_path):
    flag = tmp_path / "FILE"
    w = _witness()
    w["assumptions"][0]["rhs"] = _payloads(flag)[0]
    with pytest.raises(ValueError, match=r"assumptions\['a is positive'\]\.rhs"):
        recheck(w)
    assert not flag.exists()


def test_a_hostile_mean_function_witness_is_refused(tmp_path):
    import proofs_checks.engines  # noqa: F401  (registers the mean-function re-check)

    flag = tmp_path / "FILE"
    w = {
        "kind": "mean-function",
        "values": [1.0, 1.2, 0.9, 1.1],
        "level": 0.95,
        "bound": 0.5,
        "relation": "<=",
        "function": _payloads(flag)[0],
        "variable": "m",
    }
    with pytest.raises(ValueError, match=r"^function: "):
        recheck(w)
    assert not flag.exists()
    ok = recheck({**w, "function": sp.srepr(sp.Symbol("m") ** 2)})
    assert ok["empirical"] == pytest.approx(1.05**2)


def test_non_string_fields_are_refused(tmp_path):
    """A list or a dict in an expression field is refused (sympify would read the strings inside as code)."""
    flag = tmp_path / "FILE"
    for bad in ([_payloads(flag)[0]], {"a": _payloads(flag)[0]}, None, True):
        with pytest.raises(ValueError, match=r"^lhs: an expression is a string"):
            recheck(_witness(lhs=bad))
    assert not flag.exists()
    assert recheck(_witness(lhs=3))["empirical"] == 3.0  # a JSON number is a number


def test_the_grammar_round_trips_what_the_toolkit_writes():
    x, y = sp.Symbol("x", real=True), sp.Symbol("y", positive=True)
    exprs = [
        sp.Abs(x - y) ** sp.Rational(3, 2) / (1 + y),
        sp.Piecewise((1, x > 0), (0, True)),
        sp.Function("Expect")(sp.Function("CoordSum")(sp.sign(x) * sp.Abs(x) ** sp.Float("2.5"))),
        sp.Function("MaxOver")(sp.sin(x) * sp.cos(y), x, 0, sp.pi),
        sp.Function("MinEig")(sp.ImmutableMatrix([[y, 1], [1, y]])),
        sp.Max(x, y) - sp.Min(x, -y) + sp.sqrt(y) + sp.exp(-y) * sp.log(y),
        sp.Eq(x, y),
        sp.Ne(x, 1),
        sp.Integer(-7),
    ]
    for e in exprs:
        text = sp.srepr(e)
        got = parse_expression(text)
        assert got == e and sp.srepr(got) == text


def test_refusals_name_the_field_and_what():
    with pytest.raises(RefusedExpression, match=r"^rhs: refused.*'Lambda'|^rhs: refused.*Lambda"):
        parse_expression("Lambda(Symbol('x'), Symbol('x'))", "rhs")
    with pytest.raises(RefusedExpression, match=r"^rhs: refused.*attribute|^rhs: refused.*Attribute"):
        parse_expression("Symbol('x').func", "rhs")
    with pytest.raises(RefusedExpression, match=r"^w: not an expression"):
        parse_expression("Add(", "w")
    with pytest.raises(RefusedExpression, match=r"^w: .*nested"):
        parse_expression("Add(" * 100000 + ")" * 100000, "w")


def test_the_recheck_command_exits_2_naming_the_field(tmp_path):
    flag = tmp_path / "FILE"
    path = tmp_path / "witness.json"
    path.write_text(json.dumps(_witness(require=_payloads(flag)[0])))
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run(
        [sys.executable, "-m", "proofs_checks.recheck", str(path)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 2 and "require: " in r.stderr and not flag.exists(), r.stderr
    path.write_text(json.dumps(_witness()))
    r = subprocess.run(
        [sys.executable, "-m", "proofs_checks.recheck", str(path)], capture_output=True, text=True, env=env
    )
    assert r.returncode == 0 and json.loads(r.stdout)["violated"] is True, r.stderr


def test_the_standalone_recheck_imports_nothing_from_the_toolkit():
    """``proofs_checks.recheck`` and the modules it is built from load no module of the toolkit (the README tells
    users to run it on its own on a witness)."""
    allowed = {"recheck", "witness_core", "safe_parse", "ball", "t_quantiles"}
    code = (
        "import sys, json; import proofs_checks.recheck as R; "
        "R.recheck(json.loads(sys.argv[1])); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('lptheory', 'synthetic', 'figures', 'proofs_checks'))))"
    )
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(_witness())], capture_output=True, text=True, env=env, check=True
    )
    loaded = json.loads(r.stdout)
    assert {m.split(".", 1)[1] for m in loaded if "." in m} <= allowed, loaded
    assert all(m.split(".")[0] == "proofs_checks" for m in loaded), loaded


def _expression_fields(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _expression_fields(v, (*path, k))
    elif isinstance(obj, list):
        for v in obj:
            yield from _expression_fields(v, (*path, "[]"))
    elif isinstance(obj, str) and path and path[-1] in EXPRESSION_FIELDS and path[0] in ("witness", "data"):
        yield path, obj


def test_every_witness_of_the_records_parses_back_to_its_text():
    """Every expression the toolkit wrote into the stored quick records (witnesses, and the search's worst cases
    in ``data``) reads back, and ``srepr`` of what was read is the text itself."""
    with open(os.path.join(ROOT, "tests", "data", "stacey_quick_records.json"), encoding="utf-8") as fh:
        records = json.load(fh)["claims"]
    n = 0
    for rec in records:
        for path, text in _expression_fields(rec):
            assert sp.srepr(parse_expression(text, ".".join(path))) == text
            n += 1
    assert n >= 20


@pytest.mark.slow
def test_every_witness_of_a_fresh_quick_report_parses_and_rechecks_as_recorded(stacey_quick_report):
    """A fresh quick report: every expression field parses back to its text, and every ``expression`` witness
    re-checks as the report recorded it (violated, proved, ratio)."""
    out_dir, _ = stacey_quick_report
    with open(os.path.join(out_dir, "claims.json"), encoding="utf-8") as fh:
        records = json.load(fh)["claims"]
    parsed = rechecked = 0
    for rec in records:
        for path, text in _expression_fields(rec):
            assert sp.srepr(parse_expression(text, ".".join(path))) == text
            parsed += 1
        w = rec.get("witness") or {}
        if w.get("kind") == "expression" and "recheck" in w:
            got = recheck({k: v for k, v in w.items() if k != "recheck"})
            want = w["recheck"]
            assert (got["violated"], got.get("proved"), got["ratio"]) == (
                want["violated"],
                want.get("proved"),
                want["ratio"],
            ), rec["id"]
            rechecked += 1
    assert parsed >= 20 and rechecked >= 1


def test_the_step_table_refuses_code(tmp_path):
    """The proof-step table (TOML) is evaluated in its vocabulary only: an attribute other than ``.subs`` or a
    private name is refused with the row and field named (no way out through ``__class__``)."""
    from proofs_checks.stacey.symbolic import StepTableError, load_steps

    flag = tmp_path / "FILE"
    for text in (
        "().__class__.__base__.__subclasses__()",
        f"[c for c in ()] or __import__('os').system('touch {flag}')",
        "g.__class__",
        "_private",
    ):
        table = tmp_path / "steps.toml"
        table.write_text(f"[define]\nbad = {json.dumps(text)}\n")
        with pytest.raises(StepTableError, match=r"\[define\] bad"):
            load_steps(str(table))
    assert not flag.exists()


def test_the_limit_cache_reads_only_its_own_signed_entries(tmp_path, monkeypatch):
    """An entry of the limit cache is read back only when signed by this user's key (mode 0600); a foreign or
    edited entry, even one carrying a payload, is recomputed and never run."""
    import proofs_checks.disk_cache as D

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("LPTHEORY_LIMIT_CACHE", str(tmp_path / "lim"))
    t = sp.Symbol("t", positive=True)
    assert D.cached_limit(sp.sin(3 * t) / t, t, 0, "+") == 3
    key = D.key_path()
    assert os.stat(key).st_mode & 0o777 == 0o600
    (entry,) = list((tmp_path / "lim").iterdir())
    flag = tmp_path / "FILE"
    payload = _payloads(flag)[0]
    calls = []
    real = sp.limit
    monkeypatch.setattr(D.sp, "limit", lambda *a: calls.append(a) or real(*a))
    # a foreign entry: signed with another key (the old format: a plain sha256 of the text)
    import hashlib

    entry.write_text(hashlib.sha256(payload.encode()).hexdigest() + "\n" + payload)
    assert D.cached_limit(sp.sin(3 * t) / t, t, 0, "+") == 3 and len(calls) == 1 and not flag.exists()
    # an entry signed with this key but holding a payload (a key that leaked): refused by the parser
    entry.write_text(D._signature(D.cache_key(), payload) + "\n" + payload)
    assert D.cached_limit(sp.sin(3 * t) / t, t, 0, "+") == 3 and len(calls) == 2 and not flag.exists()
    assert D.cached_limit(sp.sin(3 * t) / t, t, 0, "+") == 3 and len(calls) == 2  # rewritten, signed, read back
    os.chmod(key, 0o644)  # a key others can read is not used: computed, nothing cached
    assert D.cache_key() is None
    assert D.cached_limit(sp.sin(3 * t) / t, t, 0, "+") == 3 and len(calls) == 3
