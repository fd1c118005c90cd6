"""A hostile newcomer's inputs, scripted (issue 45's groups, tried again on a fresh clone).

Run from the repository root::

    PYTHONPATH=$PWD python3 benchmarks/newcomer/hostile.py [--jobs 2] [--only GROUP] [--report DIR] [--md FILE]

Each case runs one command in a fresh process (``python3 -m lptheory ...``, ``python3 -m proofs_checks.recheck``,
``python3 -m proofs_checks.snapshot``) with a 20 s limit and records its input, exit code, the first line of its
stderr and a verdict:

* good: the expected outcome. For bad input that is exit 2 with a message naming the field, parameter, file or
  variable (the case lists the words one of which must appear), or a correct refusal (a forged witness re-checked
  as not violated, an interrupted import exit 130, ...); for the positive controls (a real violation, a valid
  input) the normal result.
* bad: a traceback, exit 0 on bad input, a wrong ``"violated": true``, a run past 20 s, a message that names
  nothing, or a positive control that no longer passes (the driver's own check that it can tell good from bad).

``--report DIR``: a report written by the quick start (``lptheory report --out DIR``): every witness file in
``DIR/witnesses`` must re-check as violated. ``--md FILE`` writes the result table (group, tried, good, bad,
examples of bad); the per-case rows go to ``FILE`` with ``.cases.tsv``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = sys.executable
LIMIT = 20.0


@dataclass
class Case:
    group: str
    label: str
    argv: list  # after "python3 -m"
    expect: str = "refuse"  # refuse | notviolated | violated | ok | rc:N | nomarker
    names: tuple = ()  # one of these (case-insensitive) must appear in the message of a refusal
    stdin: bytes | None = None
    env: dict = field(default_factory=dict)
    marker: str | None = None  # a file that must NOT exist afterwards (code that must not run)
    keep: str | None = None  # a file whose content must be unchanged afterwards (data loss)
    absent: tuple | None = None  # (file, text): the text must not be in the file afterwards (an injection)
    result: dict = field(default_factory=dict)


CASES: list[Case] = []
TMP = ""


def add(*a, **k):
    CASES.append(Case(*a, **k))


def wfile(name: str, content) -> str:
    path = os.path.join(TMP, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if isinstance(content, (dict, list)):
        content = json.dumps(content)
    mode = "wb" if isinstance(content, bytes) else "w"
    with open(path, mode) as fh:
        fh.write(content)
    return path


_n = [0]


def witness(group, label, w, expect="refuse", names=()):
    """A witness (object or raw text) re-checked by ``python -m proofs_checks.recheck FILE``."""
    _n[0] += 1
    path = wfile(f"w/{_n[0]:03d}.json", w if not isinstance(w, str) else w)
    add(group, label, ["proofs_checks.recheck", path], expect, tuple(names))


def lpt(group, label, args, expect="refuse", names=(), **kw):
    add(group, label, ["lptheory", *args], expect, tuple(names), **kw)


# ------------------------------------------------------------------------------------------------------ cases
SM = {"kind": "sample-mean", "n": 10, "mean": 1, "std": 0.1, "bound": 2}
RF = {"kind": "rate-fit", "x": [2, 4, 8, 16, 32], "y": [1, 0.5, 0.25, 0.125, 0.0625], "theory": 0.5, "margin": 0.05}
EX = {"kind": "expression", "relation": "<=", "lhs": "Integer(1)", "rhs": "Integer(2)"}
DV = {
    "kind": "divergence",
    "update": {"z": "Mul(Integer(2), Symbol('z'))"},
    "start": {"z": 1},
    "steps": 10,
    "measure": "Symbol('z')",
    "threshold": 100,
}
DIST = {
    "kind": "expression",
    "relation": "<=",
    "lhs": "Function('Expect1')(Pow(Symbol('x'), Integer(2)))",
    "rhs": "Integer(10)",
    "distribution": {"coupling": "independent", "n": 1, "values": [[-1, 1]], "weights": [[0.5, 0.5]]},
}


def build_cases(report_dir: str | None):
    G = "integrity: forged witnesses"
    # issue 45, verbatim
    witness(G, "sample-mean std -5 (issue 45)", {**SM, "std": -5}, names=["std"])
    witness(G, "sample-mean level -1", {**SM, "level": -1}, names=["level"])
    witness(G, "sample-mean level 2", {**SM, "level": 2}, names=["level"])
    witness(G, "sample-mean tests -1", {**SM, "tests": -1}, names=["tests"])
    witness(G, "rate-fit margin -5", {**RF, "margin": -5}, names=["margin"])
    witness(G, "rate-fit x, y of different lengths", {**RF, "y": [1, 0.5, 0.25]}, names=["y"])
    witness(
        G,
        "values and weights of different lengths",
        {**DIST, "distribution": {**DIST["distribution"], "weights": [[1.0]]}},
        names=["weights"],
    )
    witness(
        G,
        "sample-mean relation == with the bound inside the interval",
        {**SM, "relation": "==", "bound": 1.0},
        "notviolated",
    )
    # new ones
    for k, v in [("level", "0.9"), ("mean", "1"), ("std", "0.1"), ("bound", "2")]:  # decimal strings: exact numbers
        witness(G, f"sample-mean {k}={v!r} (a decimal string: an exact number, accepted)", {**SM, k: v}, "ok")
    for k, v in [
        ("level", 0),
        ("level", 1),
        ("level", True),
        ("level", None),
        ("tests", 0),
        ("tests", 1.5),
        ("tests", "2"),
        ("tests", True),
        ("tests", 10**12),
        ("n", 1),
        ("n", 0),
        ("n", 2.5),
        ("n", True),
        ("n", 10**16),
        ("n", -3),
        ("mean", "abc"),
        ("mean", None),
        ("mean", [1]),
        ("std", "-0.1"),
        ("std", None),
        ("bound", None),
        ("bound", "1e999"),
        ("bound", {}),
        ("mean", "1" * 300),
        ("relation", "<"),
        ("relation", "lt"),
        ("relation", None),
        ("relation", ["<="]),
    ]:
        witness(G, f"sample-mean {k}={v!r}", {**SM, k: v}, names=[k])
    witness(G, "sample-mean mean NaN token", json.dumps(SM).replace('"mean": 1', '"mean": NaN'), names=["mean"])
    witness(
        G, "sample-mean mean Infinity token", json.dumps(SM).replace('"mean": 1', '"mean": Infinity'), names=["mean"]
    )
    witness(G, "sample-mean bound 1e400", json.dumps(SM).replace('"bound": 2', '"bound": 1e400'), names=["bound"])
    witness(G, "sample-mean bound missing", {k: v for k, v in SM.items() if k != "bound"}, names=["bound"])
    witness(G, "sample-mean std missing", {k: v for k, v in SM.items() if k != "std"}, names=["std"])
    witness(G, "sample-mean values []", {"kind": "sample-mean", "values": [], "bound": 0}, names=["values"])
    witness(G, "sample-mean one value", {"kind": "sample-mean", "values": [5], "bound": 0}, names=["values"])
    witness(
        G, "sample-mean values strings", {"kind": "sample-mean", "values": ["a", "b"], "bound": 0}, names=["values"]
    )
    witness(
        G, "sample-mean values nested", {"kind": "sample-mean", "values": [[1, 2], [3]], "bound": 0}, names=["values"]
    )
    witness(
        G, "sample-mean values and n both", {"kind": "sample-mean", "values": [1, 2], "n": 2, "bound": 0}, names=["n"]
    )
    witness(G, "sample-mean values = dict", {"kind": "sample-mean", "values": {"a": 1}, "bound": 0}, names=["values"])
    witness(G, "sample-mean forged: mean below bound, relation <=", {**SM, "mean": 1.9, "std": 0.0}, "notviolated")
    witness(G, "control: sample-mean really above its bound", {**SM, "mean": 3}, "violated")
    witness(
        G,
        "control: values really below a >= bound",
        {"kind": "sample-mean", "values": [1.0, 1.1, 0.9, 1.05], "relation": ">=", "bound": 2},
        "violated",
    )
    for k, v in [
        ("x", []),
        ("x", [1]),
        ("x", [2, 2, 2, 2]),
        ("x", [-1, 2, 4, 8, 16]),
        ("x", [0, 2, 4, 8, 16]),
        ("x", "1,2,3"),
        ("x", None),
        ("y", [1, -0.5, 0.25, 0.125, 0.06]),
        ("y", ["a"] * 5),
        ("theory", None),
        ("theory", "half"),
        ("margin", "-0.1"),
        ("margin", None),
        ("pinned", "yes"),
        ("pinned", 1),
    ]:
        witness(G, f"rate-fit {k}={v!r}", {**RF, k: v}, names=[k])
    witness(G, "rate-fit theory 1e999", json.dumps(RF).replace('"theory": 0.5', '"theory": 1e999'), names=["theory"])
    witness(G, "rate-fit reference not an object", {**RF, "pinned": False, "reference": [1, 2]}, names=["reference"])
    witness(
        G,
        "rate-fit reference x, y lengths",
        {**RF, "pinned": False, "reference": {"x": [1, 2, 3], "y": [1]}},
        names=["reference"],
    )
    witness(G, "rate-fit forged: exponent 1 claimed 0.5 (not below)", RF, "notviolated")
    witness(
        G,
        "control: rate-fit y ~ x^-0.1 against 0.5, pinned",
        {**RF, "y": [2 ** (-0.1 * i) for i in range(1, 6)]},
        "violated",
    )
    for k, v in [
        ("relation", "<"),
        ("relation", None),
        ("lhs", None),
        ("lhs", [1]),
        ("lhs", True),
        ("rhs", {"a": 1}),
        ("scalars", [1]),
        ("scalars", {"r": "abc"}),
        ("scalars", {"r": None}),
        ("coords", {"g": [1, "x"]}),
        ("coords", {"g": 3}),
        ("tolerance", -1),
        ("tolerance", "x"),
        ("require", "import os"),
        ("assumptions", "none"),
        ("assumptions", [{"name": "a"}]),
        ("assumptions", [{"name": "a", "lhs": "Symbol('g')", "relation": "<>", "rhs": "Integer(0)"}]),
    ]:
        witness(G, f"expression {k}={v!r}", {**EX, k: v}, names=[k.rstrip("s"), k])
    witness(G, "expression lhs runs code", {**EX, "lhs": "__import__('os').system('touch /tmp/pwned')"}, names=["lhs"])
    witness(G, "expression lhs Function('eval')", {**EX, "lhs": "Function('eval')(Integer(1))"}, names=["lhs"])
    mark = os.path.join(TMP, "ran-by-witness")
    spell = "Tuple(" + ", ".join(f"Integer({ord(c)})" for c in f"open({mark!r}, 'w').write('x')") + ")"
    for name, lhs in [
        ("eval of bytes", f"Function('eval')(Function('bytes')({spell}))"),
        ("exec of bytes", f"Function('exec')(Function('bytes')({spell}))"),
        ("exit(0)", "Function('exit')(Integer(0))"),
        ("print", "Function('print')(Integer(7))"),
        ("input()", "Function('input')()"),
        ("breakpoint()", "Function('breakpoint')()"),
        ("eval inside Expect1", f"Function('Expect1')(Function('eval')(Function('bytes')({spell})))"),
    ]:
        _n[0] += 1
        add(
            G,
            f"expression lhs calls builtin {name}",
            ["proofs_checks.recheck", wfile(f"w/{_n[0]:03d}.json", {**EX, "lhs": lhs})],
            "refuse",
            ("lhs",),
            marker=mark,
        )
    witness(G, "expression lhs lambda", {**EX, "lhs": "(lambda: 1)()"}, names=["lhs"])
    witness(G, "expression lhs attribute", {**EX, "lhs": "Integer(1).__class__"}, names=["lhs"])
    witness(
        G,
        "expression coords of different lengths",
        {**EX, "lhs": "Function('CoordSum')(Symbol('g'))", "coords": {"g": [1, 2], "sigma": [1]}},
        names=["coords", "sigma"],
    )
    witness(G, "expression distribution n 0", {**DIST, "distribution": {**DIST["distribution"], "n": 0}}, names=["n"])
    witness(
        G,
        "expression weights negative",
        {**DIST, "distribution": {**DIST["distribution"], "weights": [[1.5, -0.5]]}},
        names=["weights"],
    )
    witness(
        G,
        "expression weights summing to 2 (normalised: a valid law)",
        {**DIST, "distribution": {**DIST["distribution"], "weights": [[1.0, 1.0]]}},
        "notviolated",
        names=["weights"],
    )
    witness(
        G,
        "expression coupling 'foo'",
        {**DIST, "distribution": {**DIST["distribution"], "coupling": "foo"}},
        names=["coupling"],
    )
    witness(G, "expression distribution a list", {**DIST, "distribution": [1, 2]}, names=["distribution"])
    witness(G, "expression forged: 1 <= 2 claimed violated", EX, "notviolated")
    witness(
        G,
        "expression pi - Symbol('pi') >= 1 with pi = 0 (the symbol shadows the constant)",
        {
            **EX,
            "relation": ">=",
            "lhs": "Add(pi, Mul(Integer(-1), Symbol('pi')))",
            "rhs": "Integer(1)",
            "scalars": {"pi": 0},
        },
        "notviolated",
        names=["lhs", "pi"],
    )
    witness(
        G,
        "expression sqrt(Symbol('sqrt'))",
        {**EX, "lhs": "Pow(Symbol('sqrt'), Rational(1, 2))", "scalars": {"sqrt": 9}},
        names=["lhs", "sqrt"],
    )
    witness(G, "expression 1/0 <= 2 (a division by zero)", {**EX, "lhs": "Pow(Integer(0), Integer(-1))"}, "notviolated")
    witness(G, "expression nan >= 0", {**EX, "relation": ">=", "lhs": "nan", "rhs": "Integer(0)"}, "notviolated")
    witness(G, "expression oo <= 1", {**EX, "lhs": "oo", "rhs": "Integer(1)"}, "notviolated")
    witness(
        G,
        "expression 1e-400 scalar underflow",
        json.dumps({**EX, "lhs": "Symbol('r')", "scalars": {"r": 1}}).replace('"r": 1}', '"r": 1e-400}'),
        "notviolated",
        names=["r", "scalars"],
    )
    witness(
        G,
        "expression 400-digit integer scalar",
        {**EX, "lhs": "Symbol('r')", "scalars": {"r": 10**400}},
        names=["r", "scalars"],
    )
    witness(G, "control: expression 3 <= 2 (a true violation)", {**EX, "lhs": "Integer(3)"}, "violated")
    witness(G, "control: E x^2 <= 1/2 broken by +-1", {**DIST, "rhs": "Rational(1, 2)"}, "violated")
    witness(G, "divergence update [] (issue 45)", {**DV, "update": ["z"]}, names=["update"])
    for k, v in [
        ("update", {}),
        ("start", {}),
        ("start", {"z": "one"}),
        ("steps", -1),
        ("steps", "10"),
        ("steps", 1.5),
        ("measure", None),
        ("measure", "os.system('x')"),
        ("threshold", None),
        ("threshold", "nan"),
        ("scalars", {"a": [1]}),
        ("last", {"z": "big"}),
        ("last", [1]),
    ]:
        witness(G, f"divergence {k}={v!r}", {**DV, k: v}, names=[k])
    witness(G, "divergence forged: 2^10 = 1024 > 10^6?", {**DV, "threshold": 10**6}, "notviolated")
    witness(G, "control: divergence 2^10 > 100", DV, "violated")
    witness(G, "kind missing", {"n": 1}, names=["kind"])
    witness(G, "kind 5", {"kind": 5}, names=["kind"])
    witness(G, "kind unknown", {"kind": "nope"}, names=["kind"])
    witness(G, "kind registered by module os (not allowed)", {"kind": "nope", "module": "os"}, names=["os", "allow"])
    witness(G, "kind with module 42", {"kind": "nope", "module": 42}, names=["module"])
    witness(G, "witness a JSON list", [1, 2], names=["kind", "object"])
    witness(G, "witness not JSON", "{kind: sample-mean", names=["json", "expecting", "line"])
    witness(G, "witness empty file", "", names=["json", "expecting", "line", "empty"])
    witness(G, "witness non-UTF-8 bytes", b"\xff\xfe{\x00", names=["utf", "decode", "codec"])
    witness(G, "witness nested 100000 deep", "[" * 100000 + "]" * 100000, names=["nested", "deep"])
    add(
        G,
        "witness file missing",
        ["proofs_checks.recheck", os.path.join(TMP, "missing.json")],
        "refuse",
        ("missing.json", "no such"),
    )
    add(G, "witness file a directory", ["proofs_checks.recheck", TMP], "refuse", ("directory", os.path.basename(TMP)))
    add(G, "witness /dev/zero", ["proofs_checks.recheck", "/dev/zero"], "refuse", ("zero", "too large", "json"))
    add(G, "two witness files", ["proofs_checks.recheck", "a.json", "b.json"], "refuse", ("usage",))
    add(
        G,
        "--allow-module with nothing after it",
        ["proofs_checks.recheck", "--allow-module"],
        "refuse",
        ("allow-module",),
    )
    add(G, "--bogus flag", ["proofs_checks.recheck", "--bogus"], "refuse", ("usage",))
    add(G, "witness on stdin: a number", ["proofs_checks.recheck"], "refuse", ("kind", "object"), stdin=b"42")

    G = "integrity: unbounded work"
    witness(
        G, "lhs 10^(10^10) (issue 45)", {**EX, "lhs": "Pow(Integer(10), Pow(Integer(10), Integer(10)))"}, names=["lhs"]
    )
    witness(G, "lhs 10^(10^8) (issue 45)", {**EX, "lhs": "Pow(Integer(10), Integer(100000000))"}, names=["lhs"])
    witness(G, "divergence steps 10^9 (issue 45)", {**DV, "steps": 1000000000}, names=["steps"])
    witness(
        G,
        "distribution n 100000 (issue 45)",
        {**DIST, "distribution": {**DIST["distribution"], "n": 100000}},
        names=["n"],
    )
    witness(
        G, "lhs (10^1000)^1000", {**EX, "lhs": "Pow(Pow(Integer(10), Integer(1000)), Integer(1000))"}, names=["lhs"]
    )
    witness(G, "lhs 2^200000", {**EX, "lhs": "Pow(Integer(2), Integer(200000))"}, names=["lhs"])
    witness(
        G,
        "lhs Rational(1, 10^5000)",
        {**EX, "lhs": "Rational(1, Pow(Integer(10), Integer(5000)))"},
        "notviolated",
        names=["lhs"],
    )
    witness(G, "lhs exp(exp(exp(100)))", {**EX, "lhs": "exp(exp(exp(Integer(100))))"}, "notviolated", names=["lhs"])
    witness(G, "lhs factorial(10^6)", {**EX, "lhs": "factorial(Integer(1000000))"}, "notviolated", names=["lhs"])
    witness(G, "lhs a 100000-digit integer literal", {**EX, "lhs": "Integer(" + "9" * 100000 + ")"}, names=["lhs"])
    witness(
        G,
        "lhs a 100000-digit Float literal (10^100000 <= 2 is false)",
        {**EX, "lhs": "Float('" + "9" * 100000 + "')"},
        "violated",
        names=["lhs"],
    )
    witness(
        G,
        "lhs Add nested 5000 deep",
        {**EX, "lhs": "Add(" * 5000 + "Integer(1)" + ", Integer(1))" * 5000},
        names=["lhs"],
    )
    nested = "Symbol('t')"
    for _ in range(3):
        nested = f"MaxOver({nested}, Symbol('t'), Integer(0), Integer(1))"
    witness(G, "lhs MaxOver nested 3 deep", {**EX, "lhs": nested}, "notviolated", names=["lhs"])
    witness(
        G,
        "CoordSum over 10^6 coordinates",
        {**EX, "lhs": "Function('CoordSum')(Symbol('g'))", "coords": {"g": [1.0] * 1_000_000}},
        names=["coords", "g"],
    )
    witness(
        G,
        "distribution 2000 points, n 10, Expect1 (one draw: 2000 outcomes, E x^2 > 10)",
        {
            **DIST,
            "distribution": {
                "coupling": "independent",
                "n": 10,
                "values": [list(range(2000))],
                "weights": [[1 / 2000] * 2000],
            },
        },
        "violated",
        names=["n", "outcomes", "distribution"],
    )
    witness(G, "rate-fit 100000 points", {**RF, "x": list(range(1, 100001)), "y": [1.0] * 100000}, names=["x"])
    witness(
        G,
        "sample-mean 2 million values",
        {"kind": "sample-mean", "values": [1.0] * 2_000_000, "bound": 0},
        names=["values"],
    )
    witness(
        G,
        "divergence 100000 steps of a 200-term update",
        {**DV, "steps": 100000, "update": {"z": "Add(" + ", ".join(["Symbol('z')"] * 200) + ")"}, "threshold": 1e300},
        "violated",
        names=["update", "steps"],
    )
    witness(
        G,
        "divergence state with 5000 variables",
        {**DV, "update": {f"s{i}": "Integer(1)" for i in range(5000)}, "start": {f"s{i}": 0 for i in range(5000)}},
        names=["update"],
    )
    witness(
        G,
        "Expect over a joint law 50 atoms, n 4",
        {
            **DIST,
            "distribution": {"coupling": "joint", "n": 4, "values": [[v] for v in range(50)], "weights": [1 / 50] * 50},
            "lhs": "Function('Expect')(Symbol('x'))",
        },
        names=["n", "outcomes", "distribution"],
    )

    G = "practice cache"
    snippet = (
        "import os, sys, json, warnings\n"
        "from proofs_checks.practice import protocol as P\n"
        "d = P.cache_dir(); path = os.path.join(d, 'e.json')\n"
        "P._write(path, 'K', {'curve': {'val': [1.0, 0.5]}})\n"
        "assert P._read(path, 'K') is not None, 'own entry not read'\n"
        "MODE = sys.argv[1]\n"
        "raw = open(path).read()\n"
        "if MODE == 'edit': open(path, 'w').write(raw.replace('0.5', '0.05'))\n"
        "elif MODE == 'list': open(path, 'w').write('[]')\n"
        "elif MODE == 'empty': open(path, 'w').write('')\n"
        "elif MODE == 'trunc': open(path, 'w').write(raw[: len(raw) // 2])\n"
        "elif MODE == 'binary': open(path, 'wb').write(b'\\xff\\x00' * 50)\n"
        "elif MODE == 'dir': os.remove(path); os.mkdir(path)\n"
        "elif MODE == 'otherkey': pass\n"
        "elif MODE == 'nan': open(path, 'w').write(raw.replace('0.5', 'NaN'))\n"
        "elif MODE == 'zero': os.remove(path); os.symlink('/dev/zero', path)\n"
        "elif MODE == 'fifo': os.remove(path); os.mkfifo(path)\n"
        "elif MODE == 'deep': open(path, 'w').write(raw.split(chr(10))[0] + chr(10) + '[' * 100000)\n"
        "with warnings.catch_warnings(record=True) as ws:\n"
        "    warnings.simplefilter('always')\n"
        "    got = P._read(path, 'OTHER' if MODE == 'otherkey' else 'K')\n"
        "msg = ' | '.join(str(w.message) for w in ws)\n"
        "if got is not None: print('ACCEPTED', got); sys.exit(0)\n"
        "print('miss: ' + msg, file=sys.stderr); sys.exit(2 if 'e.json' in msg else 4)\n"
    )
    sfile = wfile("cache_probe.py", snippet)
    for mode in ("edit", "list", "empty", "trunc", "binary", "dir", "otherkey", "nan", "zero", "fifo", "deep"):
        cdir = os.path.join(TMP, f"pcache-{mode}")
        add(
            G,
            f"practice cache entry damaged: {mode}",
            [sfile, mode],
            "refuse",
            ("e.json",),
            env={"LPTHEORY_PRACTICE_CACHE": cdir},
        )
    vals = ["/dev/null", os.path.join(TMP, "w", "001.json"), "/dev/null/sub"]
    if os.geteuid() != 0:  # root writes into a read-only directory: no refusal to expect there
        ro = os.path.join(TMP, "ro-cache")
        os.makedirs(ro, exist_ok=True)
        os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
        vals.append(ro)
    for val in vals:
        lpt(
            G,
            f"LPTHEORY_PRACTICE_CACHE={os.path.basename(val)}",
            ["check", "practice", "--quick"],
            "refuse",
            ("LPTHEORY_PRACTICE_CACHE",),
            env={"LPTHEORY_PRACTICE_CACHE": val},
        )

    G = "--out data loss"
    for name, files in [
        ("report.md", {"report.md": "notes\n"}),
        ("index.html", {"index.html": "<p>mine</p>"}),
        ("claims.json", {"claims.json": "{}"}),
        ("an unrelated file", {"thesis.tex": "x"}),
        ("a hidden file", {".keep": "x"}),
    ]:
        d = os.path.join(TMP, f"out-{name.replace(' ', '_')}")
        os.makedirs(d, exist_ok=True)
        for k, v in files.items():
            wfile(os.path.relpath(os.path.join(d, k), TMP), v)
        key = os.path.join(d, next(iter(files)))
        lpt(
            G,
            f"report --out DIR holding {name} (issue 45)",
            ["report", "--claims", "examples/claim_moment_lemma.py", "--quick", "--out", d],
            "refuse",
            (os.path.basename(d),),
            keep=key,
        )
    for cmd in (
        ["check", "examples/claim_moment_lemma.py", "--quick"],
        ["run", "--steps", "5", "--replicates", "2", "--quiet"],
    ):
        d = os.path.join(TMP, f"out-{cmd[0]}")
        wfile(os.path.relpath(os.path.join(d, "notes.txt"), TMP), "mine")
        lpt(
            G,
            f"{cmd[0]} --out a foreign directory",
            [*cmd, "--out", d],
            "refuse",
            (os.path.basename(d),),
            keep=os.path.join(d, "notes.txt"),
        )
    os.makedirs(os.path.join(TMP, "real"), exist_ok=True)
    wfile("real/thesis.tex", "mine")
    os.symlink(os.path.join(TMP, "real"), os.path.join(TMP, "link-out"))
    lpt(
        G,
        "report --out a symlink to a foreign directory",
        ["report", "--claims", "examples/claim_moment_lemma.py", "--quick", "--out", os.path.join(TMP, "link-out")],
        "refuse",
        ("link-out", "real"),
        keep=os.path.join(TMP, "real", "thesis.tex"),
    )
    lpt(
        G,
        "report --out an existing file",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--out",
            os.path.join(TMP, "w", "001.json"),
        ],
        "refuse",
        ("001.json",),
    )
    lpt(
        G,
        "report --out ''",
        ["report", "--claims", "examples/claim_moment_lemma.py", "--quick", "--out", ""],
        "refuse",
        ("--out",),
    )
    lpt(
        G,
        "report --out /",
        ["report", "--claims", "examples/claim_moment_lemma.py", "--quick", "--out", "/"],
        "refuse",
        ("'/'", " / ", "--out"),
    )
    lpt(
        G,
        "report --out under a file",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--out",
            os.path.join(TMP, "w", "001.json", "sub"),
        ],
        "refuse",
        ("001.json",),
    )
    if os.geteuid() != 0:
        os.makedirs(os.path.join(TMP, "ro-out"), exist_ok=True)
        wfile("ro-out/x", "x")
        os.chmod(os.path.join(TMP, "ro-out"), stat.S_IRUSR | stat.S_IXUSR)
        lpt(
            G,
            "run --out a read-only directory's child",
            ["run", "--steps", "5", "--replicates", "2", "--quiet", "--out", os.path.join(TMP, "ro-out", "new")],
            "refuse",
            ("ro-out",),
        )
    sweep_out = os.path.join(TMP, "out-sweep")
    wfile("out-sweep/results.parquet", "mine")
    tiny = wfile("tiny.toml", "[sim]\nsteps = 4\nreplicates = 2\n")
    lpt(
        G,
        "sweep --out a foreign directory",
        ["sweep", tiny, "--out", sweep_out, "--workers", "0", "--yes"],
        "refuse",
        ("out-sweep",),
        keep=os.path.join(sweep_out, "results.parquet"),
    )

    G = "code run for commands that do not take it"
    for cmd in (
        ["info"],
        ["diff", "a.json", "b.json"],
        ["check", "lemmas", "--quick"],
        ["report", "--quick"],
        ["demo"],
        ["plot", TMP],
        ["check", "examples/claim_moment_lemma.py"],
    ):
        mk = os.path.join(TMP, f"ran-{cmd[0]}-{len(CASES)}")
        mod = wfile(f"mods/m{len(CASES)}.py", f"open({mk!r}, 'w').write('ran')\n")
        lpt(
            G,
            f"{cmd[0]} --optimizer-module x.py (issue 45)",
            [*cmd, "--optimizer-module", mod],
            "refuse",
            ("--optimizer-module",),
            marker=mk,
        )
    mk = os.path.join(TMP, "ran-config")
    mod = wfile("mods/cfg.py", f"open({mk!r}, 'w').write('ran')\n")
    cfg = wfile("cfg_code.toml", f'seed = 0\n[checks.jensen]\nr = [2.0]\nplugin = "{mod}"\n')
    lpt(
        G,
        "report --config naming a module in a check table",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--config",
            cfg,
            "--out",
            os.path.join(TMP, "o-cfg"),
        ],
        "refuse",
        ("plugin",),
        marker=mk,
    )
    mk = os.path.join(TMP, "ran-sweepcfg")
    mod = wfile("mods/sw.py", f"open({mk!r}, 'w').write('ran')\n")
    swc = wfile(
        "sweep_code.toml",
        open(os.path.join(ROOT, "examples/sweeps/theorem1_rate.toml"))
        .read()
        .replace('name = "separable"', f'name = "separable"\nmodule = "{mod}"'),
    )
    lpt(
        G,
        "sweep config naming a module in [problem]",
        ["sweep", swc, "--dry-run", "--out", os.path.join(TMP, "o-sw")],
        "refuse",
        ("module",),
        marker=mk,
    )
    mk = os.path.join(TMP, "ran-baseline")
    lpt(
        G,
        "check --baseline a .py file",
        [
            "check",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--baseline",
            wfile("mods/base.py", f"open({mk!r}, 'w').write('ran')\n"),
        ],
        "refuse",
        ("base.py",),
        marker=mk,
    )

    G = "vanished runs"
    for label, body, rc, names in [
        ("sys.exit(0) at import (issue 45)", "import sys\nsys.exit(0)\n", "refuse", ("exit0.py", "sys.exit")),
        ("sys.exit(1) at import", "import sys\nsys.exit(1)\n", "refuse", ("exit1.py", "sys.exit")),
        ("sys.exit('bye') at import", "import sys\nsys.exit('bye')\n", "refuse", ("exitstr.py", "sys.exit")),
        ("raise SystemExit at import", "raise SystemExit\n", "refuse", ("sysexit.py", "exit")),
        ("KeyboardInterrupt at import (issue 45)", "raise KeyboardInterrupt\n", "rc:130", ()),
        ("an exception at import", "raise RuntimeError('boom')\n", "refuse", ("boom.py",)),
        ("a syntax error", "def (:\n", "refuse", ("syntax.py",)),
        ("no Pack in the file", "X = 1\n", "refuse", ("nopack.py", "Pack")),
        ("an empty file", "", "refuse", ("empty.py", "Pack")),
        (
            "two Packs in the file",
            "from proofs_checks.api import Pack\nA = Pack('a')\nB = Pack('b')\n",
            "refuse",
            ("twopacks.py", "Pack"),
        ),
    ]:
        fname = {
            "sys.exit(0) at import (issue 45)": "exit0.py",
            "sys.exit(1) at import": "exit1.py",
            "sys.exit('bye') at import": "exitstr.py",
            "raise SystemExit at import": "sysexit.py",
            "KeyboardInterrupt at import (issue 45)": "kbd.py",
            "an exception at import": "boom.py",
            "a syntax error": "syntax.py",
            "no Pack in the file": "nopack.py",
            "an empty file": "empty.py",
            "two Packs in the file": "twopacks.py",
        }[label]
        path = wfile(f"claims/{fname}", body)
        lpt(G, f"check claim file: {label}", ["check", path, "--quick"], rc, names)
    head = "from proofs_checks.api import Pack\nPACK = Pack('v', title='v')\n@PACK.check(title='t')\ndef c(ctx):\n"
    for label, body, exp, names in [
        ("a check calling sys.exit(0)", "    import sys\n    sys.exit(0)\n", "rc:3", ("c",)),
        ("a check returning None", "    return None\n", "rc:3", ("c",)),
        ("a check returning [] (shown: '0 records')", "    return []\n", "ok", ()),
        ("a check returning a string", "    return 'holds'\n", "rc:3", ("c",)),
        ("a check raising KeyboardInterrupt", "    raise KeyboardInterrupt\n", "rc:130", ()),
    ]:
        path = wfile(f"claims/chk{len(CASES)}.py", head + body)
        lpt(G, f"check: {label}", ["check", path, "--quick"], exp, names)
    mod = wfile("mods/optexit.py", "import sys\nsys.exit(0)\n")
    lpt(
        G,
        "run --optimizer-module calling sys.exit(0) (issue 45)",
        ["run", "--optimizer-module", mod, "--steps", "5", "--quiet"],
        "refuse",
        ("optexit.py",),
    )
    mod = wfile("mods/optkbd.py", "raise KeyboardInterrupt\n")
    lpt(
        G,
        "run --optimizer-module raising KeyboardInterrupt",
        ["run", "--optimizer-module", mod, "--steps", "5", "--quiet"],
        "rc:130",
    )
    mod = wfile("mods/optnone.py", "X = 1\n")
    lpt(
        G,
        "run --optimizer-module registering nothing, --optimizer missing",
        ["run", "--optimizer-module", mod, "--optimizer", "mine", "--steps", "5", "--quiet"],
        "refuse",
        ("mine", "optimizer"),
    )

    G = "non-numbers"
    for v in ("inf", "1e400", "nan", "-inf", "-1e400", "NaN", "infinity"):
        lpt(
            G,
            f"--set r={v}",
            ["check", "examples/claim_moment_lemma.py", "--quick", "--set", f"r={v}"],
            "refuse",
            ("r",),
        )
    lpt(
        G,
        "--set r=1e300 (0 <= 0 from rounding)",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--set", "r=1e300", "--json"],
        "not-holds",
    )
    for v in ("abc", "1,,2", "", "3j", "0x10", "[1]"):
        lpt(
            G,
            f"--set r={v!r}",
            ["check", "examples/claim_moment_lemma.py", "--quick", "--set", f"r={v}"],
            "refuse",
            ("r",),
        )
    lpt(
        G,
        "--set bogus=1",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--set", "bogus=1"],
        "refuse",
        ("bogus",),
    )
    lpt(G, "--set =3", ["check", "examples/claim_moment_lemma.py", "--quick", "--set", "=3"], "refuse", ("--set",))
    lpt(G, "--set r", ["check", "examples/claim_moment_lemma.py", "--quick", "--set", "r"], "refuse", ("--set", "r"))
    for v in ("inf", "nan", "1e308", "1", "0.5", "-3", "1e-300", "abc", "1001"):
        lpt(G, f"--p {v}", ["check", "lemmas", "--quick", "--p", v], "refuse", ("--p",))
    lpt(G, "--set p=1e308 on lemmas", ["check", "lemmas", "--quick", "--set", "p=1e308"], "refuse", ("p",))
    for v in ("-1", "1.5", "9223372036854775808", "abc", "1e3"):
        lpt(
            G, f"--seed {v}", ["check", "examples/claim_moment_lemma.py", "--quick", "--seed", v], "refuse", ("--seed",)
        )
    lpt(
        G,
        "--jobs 100000000000 (more than the cores: capped)",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--jobs", "100000000000"],
        "ok",
    )
    for v in ("0", "-1", "abc", "1.5"):
        lpt(
            G, f"--jobs {v}", ["check", "examples/claim_moment_lemma.py", "--quick", "--jobs", v], "refuse", ("--jobs",)
        )
    for v in ("nan", "inf", "-1", "abc"):
        lpt(
            G,
            f"--ratio-tolerance {v}",
            ["check", "examples/claim_moment_lemma.py", "--quick", "--ratio-tolerance", v],
            "refuse",
            ("--ratio-tolerance",),
        )
    for flag, v in [
        ("--lr", "inf"),
        ("--lr", "nan"),
        ("--lr", "-1"),
        ("--lr", "0"),
        ("--steps", "0"),
        ("--steps", "-5"),
        ("--replicates", "0"),
        ("--batch", "0"),
        ("--d", "-1"),
        ("--d", "0"),
        ("--sigma", "nan"),
        ("--sigma", "-1"),
        ("--beta1", "1.5"),
        ("--beta2", "nan"),
        ("--eps", "-1"),
        ("--weight-decay", "inf"),
        ("--record-every", "0"),
        ("--steps", "1e99"),
        ("--alpha", "nan"),
        ("--tau", "-1"),
    ]:
        extra = [] if flag == "--steps" else ["--steps", "5"]
        lpt(
            G,
            f"run {flag} {v}",
            ["run", flag, v, *extra, "--quiet", "--out", os.path.join(TMP, "o-run")],
            "ok" if (flag, v) == ("--lr", "0") else "refuse",
            (flag, flag[2:].replace("-", "_") + " must"),
        )
    lpt(
        G,
        "run --steps 10^12 (memory)",
        ["run", "--steps", "1000000000000", "--replicates", "100000", "--quiet"],
        "refuse",
        ("memory", "--steps", "--replicates"),
    )
    nf = wfile(
        "claims/nonfinite.py",
        (
            "import sympy as sp\nfrom proofs_checks.api import ClaimSpec, Pack, value_claim\n"
            "PACK = Pack('nf', title='nf')\n"
            "S = ClaimSpec(id='nf.div', statement='1 <= 1/0', source='none', term=sp.Integer(1),\n"
            "              bound=sp.Integer(1)/sp.Integer(0))\n"
            "@PACK.check(title='t')\ndef c(ctx):\n    return [value_claim(S, 1.0, float('inf'), {})]\n"
        ),
    )
    lpt(G, "a claim whose bound is 1/0 (non-finite bound)", ["check", nf, "--quick"], "refuse", ("nf.div", "nf.py"))
    nf2 = wfile(
        "claims/nonfinite2.py",
        (
            "import sympy as sp\nfrom proofs_checks.api import ClaimSpec, Pack, value_claim\n"
            "PACK = Pack('nf2', title='nf2')\n"
            "S = ClaimSpec(id='nf2.inf', statement='x <= bound', source='none', term=sp.Symbol('a'),\n"
            "              bound=sp.Symbol('b'))\n"
            "@PACK.check(title='t')\ndef c(ctx):\n    return [value_claim(S, 1.0, float('nan'), {})]\n"
        ),
    )
    lpt(G, "a check handing a NaN bound to value_claim", ["check", nf2, "--quick"], "refuse", ("nf2.inf", "nonfinite2"))

    G = "tracebacks: records files"
    good = wfile("rec/good.json", {"meta": {"format": 1}, "claims": []})
    big = wfile("rec/bigint.json", '{"meta": {"format": 1}, "claims": [{"id": "a", "ratio": 1' + "0" * 400 + "}]}")
    for label, text, names in [
        ("an integer literal above 1e308 (issue 45)", None, ("bigint.json",)),
        ("not JSON", "{claims:", ("notjson.json",)),
        ("a NaN token", '{"meta": {"format": 1}, "claims": [{"id": "a", "ratio": NaN}]}', ("nan.json",)),
        ("claims not a list", '{"meta": {"format": 1}, "claims": 5}', ("claims",)),
        ("a claim not an object", '{"meta": {"format": 1}, "claims": [5]}', ("claims[0]",)),
        ("meta.format 99", '{"meta": {"format": 99}, "claims": []}', ("format",)),
        ("meta.format 'one'", '{"meta": {"format": "one"}, "claims": []}', ("format",)),
        ("empty file", "", ("empty.json",)),
        ("a JSON list", "[]", ("list.json", "claims")),
        ("nested 100000 deep", "[" * 100000 + "]" * 100000, ("deep.json",)),
        ("non-UTF-8", b"\xff\xfe\x00{", ("nonutf8.json",)),
        ("a status 'great'", '{"meta": {"format": 1}, "claims": [{"id": "a", "status": "great"}]}', ("status",)),
        ("a claim without id", '{"meta": {"format": 1}, "claims": [{"status": "holds"}]}', ("id",)),
    ]:
        fname = {
            "an integer literal above 1e308 (issue 45)": "bigint.json",
            "not JSON": "notjson.json",
            "a NaN token": "nan.json",
            "claims not a list": "claimsnum.json",
            "a claim not an object": "five.json",
            "meta.format 99": "f99.json",
            "meta.format 'one'": "fone.json",
            "empty file": "empty.json",
            "a JSON list": "list.json",
            "nested 100000 deep": "deep.json",
            "non-UTF-8": "nonutf8.json",
            "a status 'great'": "great.json",
            "a claim without id": "noid.json",
        }[label]
        path = big if text is None else wfile(f"rec/{fname}", text)
        lpt("tracebacks: records files", f"diff: {label}", ["diff", path, good], "refuse", names)
        if label in ("an integer literal above 1e308 (issue 45)", "a NaN token", "nested 100000 deep", "non-UTF-8"):
            lpt(
                "tracebacks: records files",
                f"check --baseline: {label}",
                ["check", "examples/claim_moment_lemma.py", "--quick", "--baseline", path],
                "refuse",
                names,
            )
            add(
                "tracebacks: records files",
                f"snapshot --from: {label}",
                ["proofs_checks.snapshot", "--from", path],
                "refuse",
                names,
            )
    dup = wfile(
        "rec/dup.json",
        {
            "meta": {"format": 1},
            "claims": [
                {
                    "id": "a",
                    "status": "holds",
                    "statement": "s",
                    "source": "s",
                    "params": {},
                    "empirical": 1.0,
                    "bound": 2.0,
                },
                {
                    "id": "a",
                    "status": "violated",
                    "statement": "s",
                    "source": "s",
                    "params": {},
                    "empirical": 3.0,
                    "bound": 2.0,
                },
            ],
        },
    )
    lpt(G, "diff: duplicate record ids (issue 45)", ["diff", dup, dup], "refuse", ("dup.json", "'a'", "duplicate"))
    zdir = os.path.join(TMP, "zero-report")
    os.makedirs(zdir, exist_ok=True)
    os.symlink("/dev/zero", os.path.join(zdir, "claims.json"))
    lpt(
        G,
        "diff: claims.json symlinked to /dev/zero (issue 45)",
        ["diff", zdir, good],
        "refuse",
        ("claims.json", "zero-report"),
    )
    lpt(G, "diff: a directory without claims.json", ["diff", os.path.join(TMP, "mods"), good], "refuse", ("mods",))
    lpt(G, "diff: a missing file", ["diff", os.path.join(TMP, "nope.json"), good], "refuse", ("nope.json",))
    lpt(G, "diff: /dev/zero itself", ["diff", "/dev/zero", good], "refuse", ("/dev/zero",))
    lpt(G, "diff: a FIFO", ["diff", os.path.join(TMP, "fifo"), good], "refuse", ("fifo",))

    G = "tracebacks: sweep and plot"
    os.makedirs(os.path.join(TMP, "cfgdir.toml"), exist_ok=True)
    lpt(
        G,
        "sweep config a directory (issue 45)",
        ["sweep", os.path.join(TMP, "cfgdir.toml"), "--dry-run"],
        "refuse",
        ("cfgdir.toml",),
    )
    deep = wfile("deep.toml", "[sweep]\nx = " + "[" * 200000 + "]" * 200000 + "\n")
    lpt(G, "sweep config a 200k-deep array (issue 45)", ["sweep", deep, "--dry-run"], "refuse", ("deep.toml",))
    lpt(
        G,
        "sweep config non-UTF-8 (issue 45)",
        ["sweep", wfile("latin.toml", b'[sweep]\nname = "caf\xe9"\n'), "--dry-run"],
        "refuse",
        ("latin.toml",),
    )
    lpt(G, "sweep config missing", ["sweep", os.path.join(TMP, "nope.toml"), "--dry-run"], "refuse", ("nope.toml",))
    lpt(
        G,
        "sweep config empty",
        ["sweep", wfile("empty.toml", ""), "--dry-run"],
        "refuse",
        ("empty.toml", "sweep", "grid"),
    )
    lpt(G, "sweep config not TOML", ["sweep", wfile("bad.toml", "[sweep\n"), "--dry-run"], "refuse", ("bad.toml",))
    base = open(os.path.join(ROOT, "examples/sweeps/theorem1_rate.toml")).read()
    for label, text, names in [
        ("an empty grid list", base.replace("p = [2.0, 3.0, 4.0, 8.0]", "p = []"), ("p", "grid")),
        ("an unknown optimizer", base.replace('"lp-descent", ', '"nope", '), ("nope", "optimizer")),
        ("p = 1 in the grid", base.replace("p = [2.0, 3.0, 4.0, 8.0]", "p = [1.0]"), ("p",)),
        ("p = inf in the grid", base.replace("p = [2.0, 3.0, 4.0, 8.0]", "p = [inf]"), ("p",)),
        ("steps = -1", base.replace('"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [-1]'), ("steps",)),
        ("steps = 1e300", base.replace('"sim.steps" = [64, 256, 1024, 4096]', '"sim.steps" = [1e300]'), ("steps",)),
        ("an unknown section", base + "\n[bogus]\nx = 1\n", ("bogus",)),
        ("an unknown key in [sim]", base.replace("seed = 0", "seed = 0\nspeed = 9"), ("speed",)),
        ("seed a string", base.replace("seed = 0", 'seed = "zero"'), ("seed",)),
        ("replicates 0", base.replace("replicates = 16", "replicates = 0"), ("replicates",)),
        ("sigma nan", base.replace("sigma = 0.2", "sigma = nan"), ("sigma",)),
        ("a grid key unknown", base.replace("p = [2.0", '"optimizer.bogus" = [1]\np = [2.0'), ("bogus",)),
        (
            "a 10^7-cell grid",
            base.replace(
                "p = [2.0, 3.0, 4.0, 8.0]", "p = [" + ", ".join(str(2 + i / 1000) for i in range(3000)) + "]"
            ).replace(
                '"sim.steps" = [64, 256, 1024, 4096]',
                '"sim.steps" = [' + ", ".join(str(10 + i) for i in range(4000)) + "]",
            ),
            ("cells", "grid"),
        ),
    ]:
        path = wfile(f"sw/{len(CASES)}.toml", text)
        lpt(
            G,
            f"sweep config: {label}",
            ["sweep", path, "--dry-run", "--out", os.path.join(TMP, f"swo{len(CASES)}")],
            "refuse",
            names,
        )
    lpt(G, "plot a directory that is no sweep", ["plot", os.path.join(TMP, "mods")], "refuse", ("mods",))
    lpt(G, "plot a missing directory", ["plot", os.path.join(TMP, "nope")], "refuse", ("nope",))
    lpt(G, "plot --x of nothing", ["plot", os.path.join(TMP, "mods"), "--x", "nope"], "refuse", ("mods", "nope"))
    lpt(
        G,
        "sweep --workers -1",
        ["sweep", "examples/sweeps/theorem1_rate.toml", "--workers", "-1", "--dry-run"],
        "refuse",
        ("--workers",),
    )
    lpt(
        G,
        "sweep --scheduler-timeout nan",
        ["sweep", "examples/sweeps/theorem1_rate.toml", "--scheduler-timeout", "nan", "--dry-run"],
        "refuse",
        ("--scheduler-timeout",),
    )
    lpt(
        G,
        "sweep --scheduler not an address",
        [
            "sweep",
            tiny,
            "--scheduler",
            "hello world",
            "--scheduler-timeout",
            "2",
            "--yes",
            "--out",
            os.path.join(TMP, "o-sched"),
        ],
        "refuse",
        ("--scheduler", "hello world"),
    )
    lpt(
        G,
        "sweep --scheduler nobody listens",
        [
            "sweep",
            tiny,
            "--scheduler",
            "tcp://127.0.0.1:9",
            "--scheduler-timeout",
            "2",
            "--yes",
            "--out",
            os.path.join(TMP, "o-sched2"),
        ],
        "refuse",
        ("--scheduler", "127.0.0.1:9"),
    )

    G = "tracebacks: env variables"
    for var, val in [
        ("LPTHEORY_THREADS", "abc"),
        ("LPTHEORY_THREADS", "0"),
        ("LPTHEORY_THREADS", "-2"),
        ("LPTHEORY_THREADS", "1e9"),
        ("LPTHEORY_SEARCH_THREADS", "x"),
        ("LPTHEORY_ENGINE", "fortran"),
        ("LPTHEORY_SVML", "maybe"),
        ("LPTHEORY_OMP", "2"),
        ("LPTHEORY_KERNEL_CACHE_MAX", "-1"),
        ("LPTHEORY_LIMIT_CACHE", "/dev/null"),
        ("LPTHEORY_CACHE_DIR", "/dev/null"),
        ("LPTHEORY_SHARP_CACHE", "/dev/null"),
        ("LPTHEORY_GN_KERNEL", "yes"),
        ("LPTHEORY_SYMBOLIC_BATCH", "2"),
    ]:
        lpt(G, f"{var}={val}", ["check", "examples/claim_moment_lemma.py", "--quick"], "refuse", (var,), env={var: val})
    for var, val in [
        ("LPTHEORY_PRACTICE_CACHE", "/dev/null/sub"),
        ("LPTHEORY_LIMIT_CACHE", "/etc/hostname"),
        ("LPTHEORY_TEST_CACHE", "/dev/null"),
    ]:
        lpt(G, f"{var}={val}", ["check", "examples/claim_moment_lemma.py", "--quick"], "refuse", (var,), env={var: val})
    gout = os.path.join(TMP, "o-git")
    lpt(
        G,
        "LPTHEORY_GIT_COMMIT with a newline and HTML: shown as text in the report",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--quiet",
            "--config",
            wfile("git.toml", "[checks.jensen]\nr = [1.5]\n"),
            "--out",
            gout,
        ],
        "ok",
        env={"LPTHEORY_GIT_COMMIT": "abc\n<script>alert(1)</script>"},
        absent=(os.path.join(gout, "index.html"), "<script>alert(1)"),
    )

    G = "silent acceptance"
    cfg = wfile("empty_r.toml", "[checks.jensen]\nr = []\n")
    lpt(
        G,
        "[checks.jensen] r = [] (issue 45)",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--config",
            cfg,
            "--out",
            os.path.join(TMP, "o-emptyr"),
        ],
        "refuse",
        ("r",),
    )
    lpt(G, "check '' (issue 45)", ["check", ""], "refuse", ("TARGET", "''", "target"))
    lpt(
        G,
        "report --only '' (issue 45)",
        ["report", "--quick", "--only", "", "--out", os.path.join(TMP, "o-only")],
        "refuse",
        ("--only",),
    )
    lpt(
        G,
        "report --skip ''",
        ["report", "--quick", "--skip", "", "--out", os.path.join(TMP, "o-skip")],
        "refuse",
        ("--skip",),
    )
    lpt(
        G,
        "report --only ,",
        ["report", "--quick", "--only", ",", "--out", os.path.join(TMP, "o-only2")],
        "refuse",
        ("--only",),
    )
    lpt(
        G,
        "--fail-on ,, (issue 45)",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--fail-on", ",,"],
        "refuse",
        ("--fail-on",),
    )
    lpt(
        G,
        "--fail-on bogus",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--fail-on", "bogus"],
        "refuse",
        ("--fail-on", "bogus"),
    )
    lpt(
        G,
        "--fail-on ''",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--fail-on", ""],
        "refuse",
        ("--fail-on",),
    )
    lpt(
        G,
        "report --only nope",
        ["report", "--quick", "--only", "nope", "--out", os.path.join(TMP, "o-nope")],
        "refuse",
        ("nope",),
    )
    lpt(
        G,
        "report --skip nope",
        ["report", "--quick", "--skip", "nope", "--out", os.path.join(TMP, "o-nope2")],
        "refuse",
        ("nope",),
    )
    lpt(
        G,
        "report --only lemmas --skip lemmas",
        ["report", "--quick", "--only", "lemmas", "--skip", "lemmas", "--out", os.path.join(TMP, "o-both")],
        "refuse",
        ("lemmas", "--skip", "--only"),
    )
    lpt(
        G,
        "check lemmas nope (unknown NAME)",
        ["check", "examples/claim_moment_lemma.py", "nope", "--quick"],
        "refuse",
        ("nope",),
    )
    lpt(G, "check symbolic --p 3 (a flag it ignores)", ["check", "symbolic", "--quick", "--p", "3"], "refuse", ("--p",))
    lpt(
        G,
        "run --momentum for adam",
        ["run", "--optimizer", "adam", "--momentum", "0.9", "--steps", "5", "--quiet"],
        "refuse",
        ("--momentum",),
    )
    lpt(
        G, "run --device cuda on numpy", ["run", "--device", "cuda", "--steps", "5", "--quiet"], "refuse", ("--device",)
    )
    lpt(G, "run --optimizer nope", ["run", "--optimizer", "nope", "--steps", "5", "--quiet"], "refuse", ("nope",))
    lpt(G, "run --problem nope", ["run", "--problem", "nope", "--steps", "5", "--quiet"], "refuse", ("nope",))
    lpt(G, "check nope-target", ["check", "nope-target"], "refuse", ("nope-target",))
    lpt(G, "check a .py that does not exist", ["check", os.path.join(TMP, "nope.py")], "refuse", ("nope.py",))
    lpt(G, "check a directory", ["check", TMP], "refuse", (os.path.basename(TMP),))
    lpt(G, "check module:NOPE", ["check", "proofs_checks.packs:NOPE"], "refuse", ("NOPE",))
    for label, text, names in [
        ("unknown check table", "[checks.nope]\nr = [2.0]\n", ("nope",)),
        ("unknown key", "[checks.jensen]\nq = [2.0]\n", ("q",)),
        ("r a string", '[checks.jensen]\nr = "big"\n', ("r",)),
        ("r = [inf]", "[checks.jensen]\nr = [inf]\n", ("r",)),
        ("seed -1", "seed = -1\n", ("seed",)),
        ("seed 1.5", "seed = 1.5\n", ("seed",)),
        ("top-level unknown key", "speed = 1\n", ("speed",)),
        ("checks not a table", "checks = 3\n", ("checks",)),
        ("not TOML", "[checks\n", ("cfg",)),
        ("non-UTF-8", b"seed = 0 # caf\xe9\n", ("cfg",)),
        ("r = [[2.0]]", "[checks.jensen]\nr = [[2.0]]\n", ("r",)),
    ]:
        path = wfile(f"cfg/cfg{len(CASES)}.toml", text)
        lpt(
            G,
            f"report --config: {label}",
            [
                "report",
                "--claims",
                "examples/claim_moment_lemma.py",
                "--quick",
                "--config",
                path,
                "--out",
                os.path.join(TMP, f"oc{len(CASES)}"),
            ],
            "refuse",
            names + (os.path.basename(path),) if names == ("cfg",) else names,
        )
    lpt(
        G,
        "report --config a directory",
        ["report", "--quick", "--config", TMP, "--out", os.path.join(TMP, "ocd")],
        "refuse",
        (os.path.basename(TMP),),
    )
    lpt(
        G,
        "report --config /dev/zero",
        ["report", "--quick", "--config", "/dev/zero", "--out", os.path.join(TMP, "ocz")],
        "refuse",
        ("/dev/zero",),
    )

    lpt(
        G,
        "report --skip ,",
        ["report", "--quick", "--skip", ",", "--out", os.path.join(TMP, "o-skip2")],
        "refuse",
        ("--skip",),
    )
    lpt(
        G,
        "report --config a 5000-deep array",
        [
            "report",
            "--quick",
            "--config",
            wfile("deepcfg.toml", "[checks]\nx = " + "[" * 5000 + "]" * 5000 + "\n"),
            "--out",
            os.path.join(TMP, "o-deepcfg"),
        ],
        "refuse",
        ("deepcfg.toml",),
    )
    lpt(
        G,
        "report --config /dev/null (a device)",
        ["report", "--quick", "--config", "/dev/null", "--out", os.path.join(TMP, "o-devnull")],
        "refuse",
        ("/dev/null",),
    )
    lpt(
        G,
        "report --config a FIFO",
        ["report", "--quick", "--config", os.path.join(TMP, "fifo"), "--out", os.path.join(TMP, "o-fifo")],
        "refuse",
        ("fifo",),
    )

    G = "wording"
    lpt(G, "a misspelt command: lptheory chek", ["chek", "lemmas"], "refuse", ("chek",))
    lpt(G, "check without a target", ["check"], "refuse", ("TARGET",))
    lpt(
        G,
        "run --optimizer stacey (a near miss)",
        ["run", "--optimizer", "stacey", "--steps", "3", "--quiet"],
        "refuse",
        ("stacey",),
    )
    lpt(G, "diff with one file", ["diff", os.path.join(TMP, "rec", "good.json")], "refuse", ("NEW",))
    lpt(
        G,
        "report --claims a missing file",
        ["report", "--claims", "examples/nope.py", "--quick", "--out", os.path.join(TMP, "o-nope3")],
        "refuse",
        ("nope.py",),
    )
    lpt(
        G,
        "run --p 3 for adam (p is also the measured norm: accepted)",
        ["run", "--optimizer", "adam", "--p", "3", "--steps", "3", "--quiet"],
        "ok",
        ("--p",),
    )
    lpt(
        G,
        "check --set r=abc names --set r",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--set", "r=abc"],
        "refuse",
        ("--set r", "r:"),
    )
    lpt(G, "run --steps 2.5", ["run", "--steps", "2.5", "--quiet"], "refuse", ("--steps",))
    cfg = wfile("wording.toml", '[checks.jensen]\nr = ["x"]\n')
    lpt(
        G,
        "a config value is not blamed on --set (issue 45)",
        [
            "report",
            "--claims",
            "examples/claim_moment_lemma.py",
            "--quick",
            "--config",
            cfg,
            "--out",
            os.path.join(TMP, "o-word"),
        ],
        "refuse-not",
        ("wording.toml", "[checks.jensen]", "config"),
    )
    lpt(
        G,
        "--set p=1e308 names p, not the pack (issue 45)",
        ["check", "lemmas", "--quick", "--set", "p=1e308"],
        "refuse",
        ("p=", "p:", "'p'", " p "),
    )
    lpt(
        G,
        "check --p for a claim file without p",
        ["check", "examples/claim_moment_lemma.py", "--quick", "--p", "3"],
        "refuse",
        ("--p",),
    )

    G = "orphans and interruptions"
    pc = os.path.join(TMP, "pcache-kill")
    add(
        G,
        "SIGKILL of check practice --quick --jobs 2 at 25 s (issue 45)",
        ["lptheory", "check", "practice", "--quick", "--jobs", "2", "--quiet"],
        "kill:KILL:25",
        env={"LPTHEORY_PRACTICE_CACHE": pc},
    )
    add(
        G,
        "SIGKILL of report --quick --jobs 2 at 20 s",
        ["lptheory", "report", "--quick", "--jobs", "2", "--quiet", "--out", os.path.join(TMP, "o-kill")],
        "kill:KILL:20",
    )
    add(
        G,
        "Ctrl-C (SIGINT) of report --quick --jobs 2 at 20 s: exit 130, the new --out removed",
        ["lptheory", "report", "--quick", "--jobs", "2", "--quiet", "--out", os.path.join(TMP, "o-int")],
        "kill:INT:20",
        marker=os.path.join(TMP, "o-int"),
    )
    add(
        G,
        "SIGTERM of check lemmas --jobs 2 at 8 s",
        ["lptheory", "check", "lemmas", "--jobs", "2", "--quiet"],
        "kill:TERM:8",
    )
    add(
        G,
        "SIGINT of check practice --quick --jobs 2 at 20 s",
        ["lptheory", "check", "practice", "--quick", "--jobs", "2", "--quiet"],
        "kill:INT:20",
        env={"LPTHEORY_PRACTICE_CACHE": pc},
    )

    if report_dir:  # a records file whose violated record's witness calls eval: read by diff, --baseline, snapshot
        recs = json.load(open(os.path.join(report_dir, "claims.json")))
        bad = next(
            r for r in recs["claims"] if r.get("status") == "violated" and r["witness"].get("kind") == "expression"
        )

        def evil_records(tag):  # each case its own marker: a shared one blamed one case for another's code
            mark = os.path.join(TMP, f"ran-by-records-{tag}")
            spell = "Tuple(" + ", ".join(f"Integer({ord(c)})" for c in f"open({mark!r}, 'w').write('x')") + ")"
            rec = json.loads(json.dumps(bad))
            rec["witness"]["lhs"] = f"Function('eval')(Function('bytes')({spell}))"
            return mark, rec

        G = "integrity: forged witnesses"
        mark, rec = evil_records("diff")
        evil = wfile("rec/evil-diff.json", {**recs, "claims": [rec]})
        lpt(G, "diff of records whose witness calls eval", ["diff", evil, evil], "safe", marker=mark)
        mark, rec = evil_records("baseline")
        evil = wfile("rec/evil-baseline.json", {**recs, "claims": [rec]})
        lpt(
            G,
            "check --baseline records whose witness calls eval",
            ["check", "examples/claim_moment_lemma.py", "--quick", "--baseline", evil],
            "safe",
            marker=mark,
        )
        mark, rec = evil_records("recheck")
        add(
            G,
            "recheck of a records file's witness that calls eval",
            ["proofs_checks.recheck", wfile("w/evil.json", rec["witness"])],
            "refuse",
            ("lhs",),
            marker=mark,
        )
        G = "first hour: the quick start's report"
        wdir = os.path.join(report_dir, "witnesses")
        files = sorted(os.listdir(wdir)) if os.path.isdir(wdir) else []
        if not files:
            add(G, "witnesses/ holds a file per violated record", ["proofs_checks.recheck", wdir], "violated")
        for f in files:
            add(G, f"re-check witnesses/{f}", ["proofs_checks.recheck", os.path.join(wdir, f)], "violated")


# ------------------------------------------------------------------------------------------------------ running
def _tagged(tag: str) -> list:
    """The pids of live processes whose environment carries ``NEWCOMER_TAG=tag`` (a command and its workers)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if f"NEWCOMER_TAG={tag}".encode() in fh.read().split(b"\0"):
                    with open(f"/proc/{pid}/stat") as st:
                        if st.read().split(") ")[-1].startswith("Z"):
                            continue
                    found.append(int(pid))
        except OSError:
            continue
    return found


def run_kill_case(c: Case):
    """Start the command, send it the signal after the delay, and look for anything of it still alive 5 s after it
    ended: good when nothing is (and, for SIGINT, exit 130 and the new --out gone)."""
    _, sig, delay = c.expect.split(":")
    tag = f"{os.getpid()}-{id(c)}"
    env = {**os.environ, "PYTHONPATH": ROOT, "NEWCOMER_TAG": tag, **c.env}
    t0 = time.time()
    p = subprocess.Popen(
        [PY, "-m", *c.argv],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        p.wait(float(delay))
        ran_out = True
    except subprocess.TimeoutExpired:
        ran_out = False
        before = len(_tagged(tag))
        os.kill(p.pid, getattr(signal, f"SIG{sig}"))
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    rc = p.returncode
    time.sleep(5)
    alive = _tagged(tag)
    for pid in alive:  # clean up what the test found
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    err = err.decode(errors="replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if ran_out:
        verdict, why = "bad", f"finished before the signal (rc {rc}): nothing tested"
    elif alive:
        verdict, why = "bad", f"{len(alive)} of {before} processes alive 5 s after the command ended"
    elif "Traceback (most recent call last)" in err:
        verdict, why = "bad", "traceback"
    elif sig in ("INT", "TERM") and rc != 130:
        verdict, why = "bad", f"exit {rc}, expected 130"
    elif c.marker and os.path.exists(c.marker):
        verdict, why = "bad", "the new --out directory was left behind"
    else:
        verdict, why = "good", f"{before} processes before the signal, none after (rc {rc})"
    c.result = {
        "rc": rc,
        "seconds": round(time.time() - t0, 1),
        "stderr": (lines[0] if lines else "")[:300],
        "message": (lines[-1] if lines else "")[:300],
        "verdict": verdict,
        "why": why,
        "stdout": "",
    }
    return c


def run_case(c: Case):
    if c.expect.startswith("kill:"):
        return run_kill_case(c)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LPTHEORY_")}
    env.update({"PYTHONPATH": ROOT, "PYTHONWARNINGS": "default", **c.env})
    argv = [PY, *c.argv] if c.argv[0].endswith(".py") else [PY, "-m", *c.argv]
    t0 = time.time()
    before = open(c.keep).read() if c.keep and os.path.isfile(c.keep) else None
    p = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE if c.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = p.communicate(c.stdin, timeout=LIMIT)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = None
    dt = time.time() - t0
    out, err = out.decode(errors="replace"), err.decode(errors="replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    errline = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else "")
    first = lines[0] if lines else ""
    verdict, why = judge(c, rc, out, err, errline)
    if verdict == "good" and c.marker and os.path.exists(c.marker):
        verdict, why = "bad", "code ran: the module was imported"
    if (
        verdict == "good"
        and c.keep
        and before is not None
        and (not os.path.isfile(c.keep) or open(c.keep).read() != before)
    ):
        verdict, why = "bad", f"{os.path.basename(c.keep)} overwritten"
    if verdict == "good" and c.absent and os.path.isfile(c.absent[0]) and c.absent[1] in open(c.absent[0]).read():
        verdict, why = "bad", f"{c.absent[1]!r} written into {os.path.basename(c.absent[0])}"
    if verdict == "good" and c.absent and not os.path.isfile(c.absent[0]):
        verdict, why = "bad", f"{os.path.basename(c.absent[0])} not written"
    c.result = {
        "rc": rc,
        "seconds": round(dt, 1),
        "stderr": first[:300],
        "message": errline[:300],
        "verdict": verdict,
        "why": why,
        "stdout": out[-400:],
    }
    return c


def judge(c: Case, rc, out, err, errline):
    if rc is None:
        return "bad", f"hang > {LIMIT:.0f} s"
    if "Traceback (most recent call last)" in err and c.expect != "rc:3":
        return "bad", "traceback"
    msg = err.lower()
    named = any(n.lower() in msg for n in c.names) if c.names else True
    if c.expect == "refuse":
        if rc == 2 and errline.strip():
            return ("good", "refused naming it") if named else ("bad", "message names nothing expected")
        if rc == 0:
            return "bad", "exit 0 on bad input"
        return "bad", f"exit {rc}"
    if c.expect == "refuse-not":  # refused, and the message must not blame --set
        if rc != 2:
            return "bad", f"exit {rc}"
        if "--set" in errline:
            return "bad", "blames --set for a config value"
        return ("good", "refused naming it") if named else ("bad", "message names nothing expected")
    if c.expect in ("notviolated", "violated"):
        if rc == 2 and (c.expect == "notviolated" or c.names):
            return ("good", "refused") if named and c.names else ("bad", "refused a valid witness")
        if rc != 0:
            return "bad", f"exit {rc}"
        try:
            res = json.loads(out)
        except ValueError:
            return "bad", "no JSON result"
        if bool(res.get("violated")) != (c.expect == "violated"):
            return "bad", f"violated = {res.get('violated')} (expected {c.expect})"
        return "good", ("confirmed" if c.expect == "violated" else "not violated: " + str(res.get("inconclusive", "")))
    if c.expect == "not-holds":  # exit 2, or no plain 'holds' from a non-number
        if rc == 2 and named:
            return "good", "refused"
        if rc == 0:
            try:
                recs = json.loads(out)
                recs = recs.get("claims", recs) if isinstance(recs, dict) else recs
                bad = [r for r in recs if isinstance(r, dict) and r.get("status") == "holds"]
            except ValueError:
                return "bad", "no JSON"
            return ("bad", "holds from a non-number") if bad else ("good", "not holds")
        return "bad", f"exit {rc}"
    if c.expect.startswith("rc:"):
        want = int(c.expect[3:])
        if rc != want:
            return "bad", f"exit {rc}, expected {want}"
        if want == 130 and len([ln for ln in err.splitlines() if ln.strip()]) > 2:
            return "bad", "more than one line"
        return ("good", f"exit {want}") if named else ("bad", "message names nothing expected")
    if c.expect == "safe":  # ran or refused, without running the file's code (the marker) or a traceback
        return ("good", f"exit {rc}, nothing run") if rc in (0, 1, 2) else ("bad", f"exit {rc}")
    if c.expect == "ok":
        return ("good", "ran") if rc == 0 else ("bad", f"exit {rc}")
    return "bad", f"unknown expectation {c.expect}"


def main():
    global TMP
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=None, help="run only the groups whose name contains this")
    ap.add_argument("--report", default=None, help="the quick start's report directory (its witnesses re-checked)")
    ap.add_argument("--md", default=None, help="write the result table here (and FILE.cases.tsv)")
    a = ap.parse_args()
    TMP = tempfile.mkdtemp(prefix="newcomer-")
    os.mkfifo(os.path.join(TMP, "fifo"))
    try:
        build_cases(a.report)
        cases = [c for c in CASES if not a.only or a.only in c.group]
        kills = [c for c in cases if c.expect.startswith("kill:")]  # alone at the end: their timing is theirs
        with ThreadPoolExecutor(a.jobs) as pool:
            for c in [*pool.map(run_case, [c for c in cases if c not in kills]), *map(run_case, kills)]:
                r = c.result
                print(
                    f"{r['verdict']:4s} {c.group[:28]:28s} {c.label[:60]:60s} rc={r['rc']} {r['seconds']:5.1f}s "
                    f"{r['why']}: {r['message'][:110]}",
                    flush=True,
                )
        groups: dict = {}
        for c in cases:
            g = groups.setdefault(c.group, {"tried": 0, "good": 0, "bad": 0, "examples": []})
            g["tried"] += 1
            g[c.result["verdict"]] += 1
            if c.result["verdict"] == "bad":
                g["examples"].append(f"{c.label} ({c.result['why']})")
        tot = {k: sum(g[k] for g in groups.values()) for k in ("tried", "good", "bad")}
        print(f"\n{tot['tried']} cases: {tot['good']} good, {tot['bad']} bad")
        for name, g in groups.items():
            print(f"  {name}: {g['tried']} tried, {g['good']} good, {g['bad']} bad")
        if a.md:
            rows = ["| group | tried | good | bad | examples of bad |", "|---|---:|---:|---:|---|"]
            for name, g in groups.items():
                ex = "; ".join(g["examples"]).replace("|", "\\|") or "-"
                rows.append(f"| {name} | {g['tried']} | {g['good']} | {g['bad']} | {ex} |")
            rows.append(f"| **all** | {tot['tried']} | {tot['good']} | {tot['bad']} | |")
            with open(a.md, "w") as fh:
                fh.write("\n".join(rows) + "\n")
            with open(a.md + ".cases.tsv", "w") as fh:
                fh.write("group\tcase\tinput\trc\tseconds\tverdict\twhy\tfirst stderr line\n")
                for c in cases:
                    r = c.result
                    inp = " ".join(x if len(x) < 80 else x[:77] + "..." for x in c.argv).replace(TMP, "$TMP")
                    cells = [
                        c.group,
                        c.label,
                        inp,
                        str(r["rc"]),
                        str(r["seconds"]),
                        r["verdict"],
                        r["why"],
                        r["stderr"].replace(TMP, "$TMP"),
                    ]
                    fh.write("\t".join(x.replace("\t", " ").replace("\n", " ") for x in cells) + "\n")
        return 0 if tot["bad"] == 0 else 1
    finally:
        for root, dirs, _ in os.walk(TMP):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
