"""A witness's expressions call only the vocabulary's operators (issue 47's newcomer run).

The safe parser builds ``Function('NAME')(...)`` for any identifier NAME, and the re-check evaluates what is not
an operator through ``sympy.lambdify``, whose generated code calls an undefined function by its name: Python's
builtins were reachable from a witness file. ``Function('eval')(Function('bytes')(Tuple(Integer(95), ...)))`` ran
the text the integers spell (here: creating a file), ``Function('exit')(Integer(0))`` ended the re-check with exit
status 0 and no output, ``Function('print')`` wrote to its stdout. Each is now refused naming the field and the
function, before any evaluation; a witness built from the operators re-checks as before.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from proofs_checks.recheck import WitnessRefused, prove_expression, recheck
from proofs_checks.witness_core import OPS, parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _spell(text: str) -> str:
    return "Tuple(" + ", ".join(f"Integer({ord(c)})" for c in text) + ")"


def _payloads(path):
    code = f"open({str(path)!r}, 'w').write('ran')"
    return {
        "eval of bytes": f"Function('eval')(Function('bytes')({_spell(code)}))",
        "exec of bytes": f"Function('exec')(Function('bytes')({_spell(code)}))",
        "exit": "Function('exit')(Integer(0))",
        "print": "Function('print')(Integer(12345))",
        "inside a matrix": f"Function('MinEig')(ImmutableDenseMatrix([[Function('eval')(Function('bytes')("
        f"{_spell(code)}))]]))",
        "inside Piecewise": f"Piecewise((Function('eval')(Function('bytes')({_spell(code)})), true))",
        "inside an operator": f"Function('Expect1')(Function('eval')(Function('bytes')({_spell(code)})))",
    }


def _witness(lhs):
    return {"kind": "expression", "relation": "<=", "lhs": lhs, "rhs": "Integer(2)"}


@pytest.mark.parametrize("name", list(_payloads("x")))
def test_a_function_outside_the_vocabulary_is_refused(tmp_path, name):
    marker = tmp_path / "ran"
    lhs = _payloads(marker)[name]
    with pytest.raises(WitnessRefused, match=r"^lhs: Function\('(eval|exec|exit|print|bytes)'\) is not an operator"):
        recheck(_witness(lhs))
    with pytest.raises(WitnessRefused, match="lhs"):
        prove_expression(_witness(lhs))
    for field in ("rhs", "require"):
        w = {**_witness("Integer(3)"), field: lhs}
        with pytest.raises(WitnessRefused, match=f"^{field}: Function"):
            recheck(w)
    assert not marker.exists()


@pytest.mark.slow  # two interpreters (about 2 s); the refusal itself is tested in process above
def test_the_command_line_refuses_it_with_exit_2_and_runs_nothing(tmp_path):
    marker = tmp_path / "ran"
    for name in ("eval of bytes", "exit"):
        path = tmp_path / "w.json"
        path.write_text(json.dumps(_witness(_payloads(marker)[name])))
        p = subprocess.run(
            [sys.executable, "-m", "proofs_checks.recheck", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": ROOT},
            timeout=120,
        )
        assert p.returncode == 2, (name, p.returncode, p.stderr)
        assert "lhs: Function(" in p.stderr and "Traceback" not in p.stderr
        assert p.stdout == ""
    assert not marker.exists()


def test_the_operators_still_parse_and_a_real_violation_still_rechecks():
    for op in OPS:
        assert parse(f"Function('{op}')(Symbol('a'))", "lhs").func.__name__ == op
    w = {
        "kind": "expression",
        "relation": "<=",
        "lhs": "Function('Expect1')(Pow(Symbol('x'), Integer(2)))",
        "rhs": "Rational(1, 2)",
        "distribution": {"coupling": "independent", "n": 1, "values": [[-1, 1]], "weights": [[0.5, 0.5]]},
    }
    got = recheck(w)
    assert got["violated"] and got["empirical"] == 1.0
    assert not recheck({**w, "rhs": "Integer(2)"})["violated"]


def test_a_symbol_named_like_a_constant_it_shadows_is_refused_not_violated():
    """lambdify makes each symbol an argument of its name: ``pi - Symbol('pi')`` with the scalar pi = 0 evaluated
    to 0, and ``pi - pi_symbol >= 1`` (true: 3.14 >= 1) re-checked as violated."""
    w = {
        "kind": "expression",
        "relation": ">=",
        "lhs": "Add(pi, Mul(Integer(-1), Symbol('pi')))",
        "rhs": "Integer(1)",
        "scalars": {"pi": 0},
    }
    with pytest.raises(WitnessRefused, match="^lhs: the symbol 'pi' has the name of a constant or function"):
        recheck(w)
    for lhs, name in [("Pow(Symbol('sqrt'), Rational(1, 2))", "sqrt"), ("exp(Symbol('exp'))", "exp")]:
        with pytest.raises(WitnessRefused, match=f"symbol '{name}'"):
            recheck({**w, "lhs": lhs, "scalars": {name: 4}})
    # renamed, the same witness is what it says: pi - 0 >= 1 holds
    assert not recheck({**w, "lhs": "Add(pi, Mul(Integer(-1), Symbol('q')))", "scalars": {"q": 0}})["violated"]
    # a symbol sharing a name with an mpmath function the expression does not call (the paper's eta) is fine
    got = recheck({**w, "lhs": "Mul(Symbol('eta'), Integer(3))", "rhs": "Integer(13)", "scalars": {"eta": 4}})
    assert got["violated"] and got["empirical"] == 12.0


def test_shadowing_is_refused_through_an_operator_placeholder_too():
    """With an operator in the node (a Dummy placeholder among lambdify's arguments) the guard reads the names from
    the evaluator's own function (lambdify dummifies every argument then): the same refusal, the same values."""
    dist = {"coupling": "independent", "n": 1, "values": [[-1, 1]], "weights": [[0.5, 0.5]]}
    w = {
        "kind": "expression",
        "relation": ">=",
        "lhs": "Add(pi, Mul(Integer(-1), Symbol('pi')), Function('Expect1')(Pow(Symbol('x'), Integer(2))))",
        "rhs": "Integer(1)",
        "scalars": {"pi": 0},
        "distribution": dist,
    }
    with pytest.raises(WitnessRefused, match="^lhs: the symbol 'pi' has the name of a constant or function"):
        recheck(w)
    got = recheck({**w, "lhs": w["lhs"].replace("Symbol('pi')", "Symbol('q')"), "scalars": {"q": 0}})
    assert not got["violated"] and abs(got["empirical"] - (math.pi + 1)) < 1e-12
    got = recheck(
        {
            **w,
            "lhs": "Mul(Symbol('eta'), Function('Expect1')(Pow(Symbol('x'), Integer(2))))",
            "rhs": "Integer(5)",
            "scalars": {"eta": 4},
        }
    )
    assert got["violated"] and got["empirical"] == 4.0


def test_a_lambdify_with_a_dummy_argument_has_the_dummified_code_s_names():
    """The fast path of recheck._no_shadowing: lambdify(args, body) with a Dummy among args makes the code of
    lambdify(args, body, dummify=True), so their global names (what the guard reads) are the same."""
    import sympy as sp

    from proofs_checks.witness_core import dummy_names_in_order

    pi_, eta, x, e_ = sp.Symbol("pi"), sp.Symbol("eta"), sp.Symbol("x", real=True), sp.Symbol("E")
    for extra in ([], [sp.Dummy("op")]):
        for body in (
            sp.pi - pi_ + sum(extra),
            eta * sp.sqrt(sp.Abs(x)) ** 3 + sp.exp(x) * (extra[0] if extra else 1),
            sp.log(1 + sp.Abs(x - e_)) / (2 + sp.cos(sp.E * x)) + sp.Max(x, *extra, 0),
        ):
            syms = sorted(body.free_symbols, key=str)
            with dummy_names_in_order(len(syms)):
                plain = set(sp.lambdify(syms, body, modules="mpmath").__code__.co_names)
            with dummy_names_in_order(len(syms)):
                dumm = set(sp.lambdify(syms, body, modules="mpmath", dummify=True).__code__.co_names)
            if extra:
                assert plain == dumm
            elif pi_ in syms:  # without a Dummy the symbols keep their names: the guard needs the second lambdify
                assert "pi" not in plain and "pi" in dumm


def _batch_before(dist, points, weights, n, add, scale):
    """The enumeration as it was (every one of the k points visited for each outcome: O(outcomes * k))."""
    import itertools
    import math

    from proofs_checks.witness_core import is_zero

    out = []
    for combo in itertools.combinations_with_replacement(range(len(points)), n):
        counts = [combo.count(j) for j in range(len(points))]
        prob = dist.num(math.factorial(n))
        for c, w in zip(counts, weights):
            prob = prob / math.factorial(c) * (w**c if c else 1)
        if any(c and is_zero(weights[j]) for j, c in enumerate(counts)):
            continue
        val = None
        for j, c in enumerate(counts):
            if c:
                val = scale(points[j], c) if val is None else add(val, scale(points[j], c))
        out.append((scale(val, dist.num(1) / n), prob))
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_batch_law_visits_only_the_points_drawn_and_gives_the_same_bits(n):
    """A witness's law of k points was enumerated in O(outcomes * k): 2000 points took 16 s, the 50,000 a witness
    may carry hours. Now only the points drawn are visited; the outcomes and probabilities are the same mpf values
    (a point drawn 0 times multiplied by 1 / 0! * 1, exactly)."""
    import random

    import mpmath

    from proofs_checks.witness_core import WitnessDistribution

    rng = random.Random(n)
    values = [[rng.uniform(-3, 3) for _ in range(k)] for k in (1, 4, 7)]
    weights = [[rng.choice([0.0, 0.1, rng.random()]) + (j == 0) for j in range(len(r))] for r in values]
    dist = WitnessDistribution({"coupling": "independent", "n": n, "values": values, "weights": weights})
    with mpmath.workdps(60):
        for i in range(3):
            got = dist.marginal(i, n)
            want = _batch_before(dist, dist.values[i], dist.weights[i], n, lambda a, b: a + b, lambda a, c: a * c)
            assert got == want and len(got) >= 1
        joint = WitnessDistribution(
            {"coupling": "joint", "n": n, "values": [[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]], "weights": [0.2, 0.0, 0.8]}
        )
        add = lambda a, b: [u + v for u, v in zip(a, b)]  # noqa: E731
        scale = lambda a, c: [u * c for u in a]  # noqa: E731
        assert joint.joint(n) == _batch_before(joint, joint.values, joint.weights, n, add, scale)


def test_a_witness_with_a_large_law_rechecks():
    """E x^2 over 3000 equally likely points 0..2999 (about 3.0e6) against 10: violated, exactly."""
    w = {
        "kind": "expression",
        "relation": "<=",
        "lhs": "Function('Expect1')(Pow(Symbol('x'), Integer(2)))",
        "rhs": "Integer(10)",
        "distribution": {"coupling": "independent", "n": 1, "values": [list(range(3000))], "weights": [[1] * 3000]},
    }
    got = recheck(w)
    assert got["violated"] and got["empirical"] == sum(i * i for i in range(3000)) / 3000
