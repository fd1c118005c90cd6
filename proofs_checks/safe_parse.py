"""The safe reader of the expressions a data file carries (a witness's ``lhs``, ``rhs``, ``require``, its
assumptions, a ``mean-function`` witness's ``function``, a cached ``.srepr``): the sympy ``srepr`` text the
toolkit writes, read without running it.

``sympy.sympify`` (and ``eval``) runs the text as Python: a witness whose ``lhs`` is
``__import__('os').system(...) or Symbol('a')`` would run a command on the machine that re-checks it, and
witnesses and ``claims.json`` are the files reviewers send each other. :func:`parse_expression` parses the
text with :mod:`ast` (``mode="eval"``), walks the tree and builds the sympy object itself, accepting only

* calls of the constructors in :data:`CONSTRUCTORS` (by name: ``Add``, ``Mul``, ``Pow``, ``Symbol``,
  ``Integer``, ``Float``, ``Abs``, ``Piecewise``, ...), and applied undefined functions written as sympy
  writes them, ``Function('Expect')(...)`` (the vocabulary's operators ``CoordSum``, ``Expect``, ...);
* the constants of :data:`CONSTANTS` by name (``pi``, ``E``, ``oo``, ``true``, ...);
* number literals (a sign in front included), tuples and lists of expressions; string literals only as a
  symbol's name (``Symbol('x')``), a Float's digits (``Float('0.5', precision=53)``) and a function's name;
* keyword arguments whose values are boolean or integer literals (``Symbol('x', positive=True)``).

A string is never handed to a constructor that would ``sympify`` it (``Abs('...')`` would run it).

Nothing else: no attribute access, no subscripts, no operators other than a literal's sign, no other names.
Anything outside the grammar raises :class:`ValueError` naming the field. The constructors are sympy's own,
called as ``sympify`` would call them, so a text the toolkit wrote reads back as the same expression (and
``srepr`` of it gives the text back). Like :mod:`proofs_checks.recheck`, this module imports nothing from the
toolkit (only ``sympy``).
"""

from __future__ import annotations

import ast
import re

import sympy as sp
from sympy.functions.elementary.piecewise import ExprCondPair

__all__ = ["parse_expression", "RefusedExpression", "CONSTRUCTORS", "CONSTANTS", "MAX_LENGTH"]

#: the sympy constructors a text may call, by the name ``srepr`` writes
CONSTRUCTORS: dict = {
    name: getattr(sp, name)
    for name in (
        # atoms
        "Symbol",
        "Integer",
        "Rational",
        "Float",
        # arithmetic
        "Add",
        "Mul",
        "Pow",
        # functions of the vocabulary and of the claims
        "Abs",
        "sign",
        "Max",
        "Min",
        "exp",
        "log",
        "sqrt",
        "sin",
        "cos",
        "tan",
        "floor",
        "ceiling",
        "Heaviside",
        "Piecewise",
        # relations and logic (conditions, Piecewise branches)
        "Equality",
        "Unequality",
        "StrictGreaterThan",
        "StrictLessThan",
        "GreaterThan",
        "LessThan",
        "And",
        "Or",
        "Not",
        # containers (MinEig's matrix, MaxOver's bounds)
        "Tuple",
        "ImmutableDenseMatrix",
    )
}
CONSTRUCTORS["ExprCondPair"] = ExprCondPair

#: the sympy constants a text may name
CONSTANTS: dict = {
    "pi": sp.pi,
    "E": sp.E,
    "I": sp.I,
    "oo": sp.oo,
    "zoo": sp.zoo,
    "nan": sp.nan,
    "true": sp.true,
    "false": sp.false,
}

MAX_LENGTH = 4_000_000
"""The longest text read (characters): an expression of the toolkit is far shorter."""

_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class RefusedExpression(ValueError):
    """A text that is not an expression of the toolkit's grammar (the message names the field and what was
    refused). A ``ValueError``: callers that turn evaluation errors into "not proved" re-raise this one."""


class _Refused(Exception):
    """A node outside the grammar (the message says which); turned into a ValueError naming the field."""


def parse_expression(text, field: str = "expression"):
    """The sympy expression of ``text`` (sympy ``srepr`` output; a JSON number is read as a sympy number).

    Parameters
    ----------
    text : str or int or float
        The expression, as the toolkit writes it (``sympy.srepr``), or a number.
    field : str
        The name of the field the text comes from, for the error message (``"lhs"``,
        ``"assumptions[0].rhs"``, ...).

    Returns
    -------
    sympy.Basic
        The expression, built by calling the whitelisted constructors (never ``eval``/``sympify`` on text).

    Raises
    ------
    ValueError
        ``text`` is not an expression of the grammar (module docstring): the message names ``field`` and
        what was refused.
    """
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise RefusedExpression(
            f"{field}: an expression is a string (sympy srepr) or a number, got {type(text).__name__}"
        )
    if not isinstance(text, str):
        return sp.Integer(text) if isinstance(text, int) else sp.Float(text)
    if len(text) > MAX_LENGTH:
        raise RefusedExpression(f"{field}: the expression is {len(text)} characters long, more than {MAX_LENGTH}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise RefusedExpression(f"{field}: not an expression ({exc.msg}): {text[:80]!r}") from None
    except (RecursionError, MemoryError, ValueError):
        raise RefusedExpression(f"{field}: the expression is nested too deeply or too large to read") from None
    try:
        out = _build(tree.body)
        if isinstance(out, (int, float)):
            return sp.Integer(out) if isinstance(out, int) else sp.Float(out)
        if not isinstance(out, sp.Basic):
            raise _Refused(f"a {type(out).__name__} where an expression was expected")
        return out
    except _Refused as exc:
        raise RefusedExpression(f"{field}: refused, not an expression of the toolkit's grammar: {exc}") from None
    except RecursionError:
        raise RefusedExpression(f"{field}: the expression is nested too deeply to read") from None


def _number(node):
    """A number literal (int or float, with an optional sign)."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    raise _Refused(f"{_what(node)} where a number was expected")


def _string(node) -> str:
    if isinstance(node, ast.Constant) and type(node.value) is str:
        return node.value
    raise _Refused(f"{_what(node)} where a name (a string) was expected")


def _what(node) -> str:
    if isinstance(node, ast.Constant):
        return f"the {type(node.value).__name__} literal {node.value!r:.40}"
    return f"a node of type {type(node).__name__}"


def _keywords(node: ast.Call) -> dict:
    """Keyword arguments with boolean or integer literal values (assumptions, a Float's precision)."""
    out = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise _Refused("a ** argument")
        v = kw.value
        if not (isinstance(v, ast.Constant) and type(v.value) in (bool, int)):
            raise _Refused(f"the keyword {kw.arg}= takes a boolean or an integer, got {_what(v)}")
        out[kw.arg] = v.value
    return out


def _atom(name: str, node: ast.Call):
    """``Symbol(name, assumptions)``, ``Integer(n)``, ``Rational(p, q)``, ``Float(text or number, precision=)``:
    the only calls that take literals (strings only as a symbol's name or a Float's digits, parsed by sympy's
    number readers, never evaluated)."""
    kwargs = _keywords(node)
    args = node.args
    if name == "Symbol":
        if len(args) != 1:
            raise _Refused("Symbol takes one name")
        return sp.Symbol(_string(args[0]), **kwargs)
    if name == "Float":
        if len(args) != 1 or set(kwargs) - {"precision"}:
            raise _Refused("Float takes its digits and precision=")
        a = args[0]
        digits = a.value if isinstance(a, ast.Constant) and type(a.value) is str else _number(a)
        return sp.Float(digits, **kwargs)
    if kwargs:
        raise _Refused(f"{name} takes no keywords")
    nums = [_number(a) for a in args]
    if not nums or len(nums) > (2 if name == "Rational" else 1) or not all(type(v) is int for v in nums):
        raise _Refused(f"{name} takes integer literals")
    return sp.Integer(*nums) if name == "Integer" else sp.Rational(*nums)


_ATOMS = ("Symbol", "Integer", "Rational", "Float")

MAX_EXACT_BITS = 1 << 17
"""The most bits of an exact number that a constructor may compute while a text is read (about 39,000 digits):
``Pow(Integer(10), Integer(100000000))`` would have sympy compute a number of 10^8 digits, and
``Pow(Integer(10), Pow(Integer(10), Integer(10)))`` one of 10^10, before anything is evaluated."""


def _bits(v) -> int:
    """The size in bits of an exact rational (numerator and denominator), 0 for anything else."""
    if isinstance(v, bool):
        return 0
    if isinstance(v, int):
        return v.bit_length()
    if isinstance(v, sp.Rational):
        return int(v.p).bit_length() + int(v.q).bit_length()
    return 0


def _exact_size(name: str, args) -> None:
    """Refuse an exact power or product of exact numbers larger than :data:`MAX_EXACT_BITS` (sympy computes it
    as the text is read)."""
    if name == "Pow" and len(args) == 2:
        base, expo = args
        b = _bits(base) if not (isinstance(base, (int, sp.Rational)) and abs(base) in (0, 1)) else 0
        if b and isinstance(expo, (int, sp.Rational)) and not isinstance(expo, bool):
            size = abs(float(expo)) * b  # float: an exponent of any size, compared without computing the power
            if size > MAX_EXACT_BITS:
                raise _Refused(f"an exact power of about {size:.3g} bits (at most {MAX_EXACT_BITS})")
    elif name == "Mul":
        size = sum(_bits(a) for a in args)
        if size > MAX_EXACT_BITS:
            raise _Refused(f"an exact product of about {size:.3g} bits (at most {MAX_EXACT_BITS})")


def _build(node):
    """The sympy object of a node: a whitelisted call, an applied undefined function, a named constant, a
    number, or a tuple/list of those (never a string)."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in _ATOMS:
                return _atom(func.id, node)
            if func.id not in CONSTRUCTORS:
                raise _Refused(f"a call of {func.id!r} (allowed: {', '.join(sorted(CONSTRUCTORS))})")
            args = [_build(a) for a in node.args]
            if func.id in ("Pow", "Mul"):
                _exact_size(func.id, args)
            return CONSTRUCTORS[func.id](*args, **_keywords(node))
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "Function":
            # Function('Name', assumptions...)(args): an applied undefined function (the vocabulary's operators)
            if len(func.args) != 1:
                raise _Refused("Function(...) takes one name")
            name = _string(func.args[0])
            if not _FUNCTION_NAME.match(name):
                raise _Refused(f"Function({name!r}): a function name is an identifier")
            return sp.Function(name, **_keywords(func))(*[_build(a) for a in node.args], **_keywords(node))
        raise _Refused(f"a call of {_what(func)}")
    if isinstance(node, ast.Name):
        if node.id not in CONSTANTS:
            raise _Refused(f"the name {node.id!r} (allowed: {', '.join(sorted(CONSTANTS))})")
        return CONSTANTS[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_build(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items
    if isinstance(node, (ast.Constant, ast.UnaryOp)):
        return _number(node)
    raise _Refused(f"{_what(node)} (an expression is calls of the constructors, named constants and numbers)")
