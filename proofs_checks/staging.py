"""Staged evaluation, the second compiler: one evaluation of a claim's expression traced as a
straight-line numpy function per input layout (:class:`Stager`, :func:`stage_shaped`, :func:`stage_quiet`),
with the same numpy calls as :mod:`proofs_checks.evaluator` and so the same bits.
"""

from __future__ import annotations

import re
import types

import numpy as np
import sympy as sp

from .evaluator import add_reduce, compile_expr, compositions, env_value, lane_route, log_batch_probs, product_index

__all__ = ["Unstageable", "Dyn", "val", "Stager", "SDist", "SEnv", "SCtx", "stage_shaped", "stage_quiet"]


# ---------------------------------------------------------------------------------------------------
# staged evaluation: the same numpy calls as a straight-line function


class Unstageable(Exception):
    """An evaluation that :class:`Stager` does not write as a straight line (the caller evaluates it as
    usual)."""


class Dyn:
    """A value of a staged evaluation that depends on the function's inputs: its value in the staging
    run (``v``) and its name in the generated source."""

    __slots__ = ("v", "name")

    def __init__(self, v, name):
        self.v, self.name = v, name


def val(a):
    """The value of ``a`` in the staging run (``a`` itself when it is static)."""
    return a.v if type(a) is Dyn else a


def _dyn(a) -> bool:
    """Whether ``a`` depends on the inputs: a :class:`Dyn`, or a list, tuple or dict holding one at any
    depth (as an item, a key or a value). Another container holding one (a set, a tuple or list
    subclass, a numpy object array) is :class:`Unstageable`: the Stager writes only plain lists, tuples
    and dicts as literals of the generated source."""
    t = type(a)
    if t is Dyn:
        return True
    if t is list or t is tuple:
        return any([_dyn(x) for x in a])
    if t is dict:
        return any([_dyn(k) or _dyn(v) for k, v in a.items()])
    if isinstance(a, (list, tuple, set, frozenset)):
        items = a
    elif isinstance(a, dict):
        items = [*a.keys(), *a.values()]
    elif isinstance(a, np.ndarray) and a.dtype == object:
        items = a.flat
    else:
        return False
    if any([_dyn(x) for x in items]):
        raise Unstageable(f"a {t.__name__} holding a value that depends on the inputs")
    return False


def _deep(a):
    """The value of ``a`` in the staging run, containers (:func:`_dyn`) rebuilt with their items'."""
    t = type(a)
    if t is Dyn:
        return a.v
    if t is list:
        return [_deep(x) for x in a]
    if t is tuple:
        return tuple(_deep(x) for x in a)
    if t is dict:
        return {_deep(k): _deep(v) for k, v in a.items()}
    return a


class Stager:
    """Writes an evaluation as a straight-line Python function of its inputs: every call whose arguments
    depend on the inputs (:class:`Dyn`) is made now (the staging run gives its value, so the layout
    decisions that follow are those of the evaluation) and written as one line ``vN = f(...)``; a call
    whose arguments are all static is made once, now, and its value is a constant of the function
    (constant folding). The function makes the same calls on the same operands as the evaluation it
    was staged from, in the same order: the same bits, without the walk of the expression tree, the
    dict look-ups and the bookkeeping between the calls. Only valid for inputs that take the same
    layout decisions (shapes, dtypes, memory layouts): the caller keys the functions by them."""

    def __init__(self):
        self.lines: list = []
        self.consts: dict = {}
        self._ids: dict = {}
        self.args: list = []

    def input(self, value, name):
        self.args.append(name)
        return Dyn(value, name)

    def _ref(self, a):
        t = type(a)
        if t is Dyn:
            return a.name
        if a is None or t is bool:
            return repr(a)
        if (t is list or t is tuple or t is dict) and _dyn(a):  # a literal: built anew on every run
            if t is dict:
                return "{" + ", ".join(f"{self._ref(k)}: {self._ref(v)}" for k, v in a.items()) + "}"
            items = ", ".join(self._ref(x) for x in a)
            return f"[{items}]" if t is list else f"({items}{',' if len(a) == 1 else ''})"
        got = self._ids.get(id(a))  # (every object named here is held by consts: its id stays its own)
        if got is None:
            got = self._ids[id(a)] = f"c{len(self.consts)}"
            self.consts[got] = a
        return got

    def _emit(self, head, args, kw, out):
        refs = [self._ref(a) for a in args] + [f"{k}={self._ref(v)}" for k, v in kw.items()]
        name = f"v{len(self.lines)}"
        self.lines.append(f"{name} = {head}({', '.join(refs)})")
        return Dyn(out, name)

    def call(self, fn, *args, **kw):
        """``fn(*args, **kw)``: a constant when no argument depends on the inputs (:func:`_dyn`: positional
        or keyword, or held in a list, tuple or dict argument), else a line."""
        if not _dyn(args) and not _dyn(kw):
            return fn(*args, **kw)
        out = fn(*_deep(args), **_deep(kw))
        return self._emit(self._ref(fn), args, kw, out)

    def fresh(self, fn, *args, **kw):
        """``fn(*args, **kw)`` made on every run (a new array the function then writes into)."""
        out = fn(*_deep(args), **_deep(kw))
        return self._emit(self._ref(fn), args, kw, out)

    def method(self, obj, name, *args, **kw):
        """``obj.name(*args, **kw)``: a constant when neither ``obj`` nor any argument depends on the inputs
        (as :meth:`call`), else a line."""
        if not _dyn(obj) and not _dyn(args) and not _dyn(kw):
            return getattr(obj, name)(*args, **kw)
        out = getattr(_deep(obj), name)(*_deep(args), **_deep(kw))
        return self._emit(f"{self._ref(obj)}.{name}", args, kw, out)

    def item(self, obj, key):
        """``obj[key]``: a constant when neither depends on the inputs (a tuple key holding a :class:`Dyn`
        does), else a line."""
        if not _dyn(obj) and not _dyn(key):
            return obj[key]
        out = _deep(obj)[_deep(key)]
        name = f"v{len(self.lines)}"
        self.lines.append(f"{name} = {self._ref(obj)}[{self._ref(key)}]")
        return Dyn(out, name)

    def setitem(self, obj, key, value):
        """``obj[key] = value`` (``obj`` made by :meth:`fresh`)."""
        _deep(obj)[_deep(key)] = _deep(value)
        self.lines.append(f"{self._ref(obj)}[{self._ref(key)}] = {self._ref(value)}")

    def _live(self, ret):
        """The lines whose values are used (by a later live line, an assignment into an array, or the
        result): the calls are pure (views and new arrays), so the others are left out."""
        need = {ret}
        keep = []
        for ln in reversed(self.lines):
            head, _, rhs = ln.partition(" = ")
            target = head.split("[", 1)[0]
            if "[" in head or target in need:  # an assignment into an array, or a value used later
                keep.append(ln)
                need.update(_NAMES.findall(rhs if "[" not in head else ln))
        return keep[::-1]

    def function(self, result, name="staged"):
        """The straight-line function of the inputs (in the order given to :meth:`input`) returning
        ``result``."""
        body = "\n".join(f"    {ln}" for ln in self._live(self._ref(result))) or "    pass"
        src = f"def {name}({', '.join(self.args)}):\n{body}\n    return {self._ref(result)}\n"
        code = _STAGED_CODE.get(src)
        if code is None:  # the same source (the same calls; constants by name) is compiled once
            ns: dict = {}
            exec(compile(src, f"<staged {name}>", "exec"), {}, ns)
            code = ns[name].__code__
            if len(_STAGED_CODE) > 1024:
                _STAGED_CODE.clear()
            _STAGED_CODE[src] = code
        fn = types.FunctionType(code, dict(self.consts), name)
        fn.source = src
        return fn


_NAMES = re.compile(r"\bv\d+\b")


_STAGED_CODE: dict = {}  # source -> code object of Stager.function


def _f64(st, a):
    """``np.asarray(a, dtype=np.float64)`` (``a`` itself for a float64 array, as numpy returns it)."""
    v = val(a)
    if type(v) is np.ndarray and v.dtype == np.float64:
        return a
    return st.call(np.asarray, a, dtype=np.float64)


def _sbc(st, a, shape):
    """:func:`_bc`, staged."""
    if not isinstance(val(a), np.ndarray):
        a = st.call(np.asarray, a)
    if np.shape(val(a)) == shape:
        return a
    return st.call(np.broadcast_to, a, shape)


class SDist:
    """A :class:`Distribution` in a staged evaluation: its values and weights (:class:`Dyn`), its outcomes
    as :meth:`Distribution._cached` caches them."""

    def __init__(self, st, proto, values, weights, cache=None):
        self.st, self.proto = st, proto  # proto: a Distribution with the same n, coupling, k, d
        self.values, self.weights = values, weights
        self.S = np.shape(val(values))[0]
        self.n, self.d, self.coupling = proto.n, proto.d, proto.coupling
        self.cache = {} if cache is None else cache

    def outcomes(self, which, layout):
        if which == "batch" and self.n == 1:
            which = "single"
        key = (which, layout)
        hit = self.cache.get(key)
        if hit is None:
            hit = self.cache[key] = self._outcomes(1 if which == "single" else self.n, layout)
        return hit

    def _outcomes(self, n, layout):
        """:meth:`Distribution._outcomes`, staged: the per-coordinate batch distribution computed once for
        both layouts (the same call on the same arrays), its constant parts folded."""
        st = self.st
        if self.coupling == "joint":
            both = st.call(self.proto._outcomes, self.values, self.weights, n, layout)
            return st.item(both, 0), st.item(both, 1)
        batch = self.__dict__.setdefault("_batch", {})
        if n not in batch:
            batch[n] = _stage_batch_outcomes(st, self.values, self.weights, n)
        v, p = batch[n]
        if layout == "marginal":
            return st.method(v, "swapaxes", 1, 2), st.method(p, "swapaxes", 1, 2)  # (np.swapaxes calls it)
        M = np.shape(val(v))[-1]
        if M**self.d > 2_000_000:
            raise Unstageable("too many joint outcomes")
        ix = (slice(None), np.arange(self.d), product_index(M, self.d))
        jp = st.item(st.call(np.multiply.reduce, st.item(p, ix), axis=-1), (Ellipsis, None))  # np.prod's call
        return st.item(v, ix), jp

    def take(self, a, b):
        st, sl = self.st, slice(a, b)
        cache = {key: (st.item(v, sl), st.item(p, sl)) for key, (v, p) in self.cache.items()}
        return SDist(st, self.proto, st.item(self.values, sl), st.item(self.weights, sl), cache)


class SEnv:
    """An :class:`Env` in a staged evaluation: scalars (static or :class:`Dyn`, as ``Env`` holds them),
    coordinate constants, an :class:`SDist`, and ``env``, an Env with the same rows and lanes (static)."""

    def __init__(self, st, env, dist, scalars=None, coords=None):
        self.st, self.env, self.dist = st, env, dist
        self.S = env.S
        self.rows = env.rows
        self.scalars = {} if scalars is None else scalars
        self.coords = {} if coords is None else coords
        self.octx: dict = {}

    def scalar(self, v):
        """:meth:`Env._scalar`."""
        a = _f64(self.st, v)
        return self.st.method(a, "reshape", -1, 1, 1) if np.ndim(val(a)) else a

    def coord(self, v):
        """:meth:`Env._coord`."""
        a = _f64(self.st, v)
        if np.ndim(val(a)) == 1:
            a = self.st.item(a, None)
        return self.st.item(a, (slice(None), None, slice(None)))

    def take(self, a, b):
        """:meth:`Env.take`."""
        st, S, sl = self.st, self.S, slice(a, b)

        def cut(v):
            x = val(v)
            return st.item(v, sl) if (np.ndim(x) and x.shape[0] == S) else v

        out = SEnv(st, self.env.take(a, b), None if self.dist is None else self.dist.take(a, b))
        out.scalars = {k: cut(v) for k, v in self.scalars.items()}
        out.coords = {k: cut(v) for k, v in self.coords.items()}
        return out


class SCtx:
    """A :class:`_Ctx` in a staged evaluation."""

    def __init__(self, senv, outcomes=None, probs=None):
        self.env = senv
        S = senv.S
        if outcomes is not None:
            d = np.shape(val(outcomes))[-1]
        elif senv.coords:
            d = np.shape(val(next(iter(senv.coords.values()))))[-1]
        elif senv.dist is not None:
            d = senv.dist.d
        else:
            d = 1
        M = 1 if outcomes is None else np.shape(val(outcomes))[1]
        self.shape = (S, M, d)
        self.items = {} if outcomes is None else {"x": outcomes, "_p": probs}

    def value(self, name):
        if name in self.items:
            return self.items[name]
        v = env_value(self.env, name)
        if v is None:
            raise Unstageable(name)
        return v

    def with_outcomes(self, which, layout):
        env = self.env
        if env.dist is None:
            raise Unstageable("no distribution")
        if which == "batch" and env.dist.n == 1:
            which = "single"
        got = env.octx.get((which, layout))
        if got is None:
            v, p = env.dist.outcomes(which, layout)
            got = env.octx[(which, layout)] = SCtx(env, v, p)
        return got


def _stage_reduce(st, a, axis):
    """``add_reduce(a, axis)``, staged: numpy's reduction called directly where :func:`add_reduce` would
    call it (the same test, on the staging run's array: the same layout on every run)."""
    v = val(a)
    n = v.shape[axis] if v.ndim == 3 else 8
    if v.size < 1024 or n >= 8 or v.dtype != np.float64 or v.strides[0] < max(v.strides[1], v.strides[2]):
        return st.call(np.add.reduce, a, axis=axis, keepdims=True)
    return st.call(add_reduce, a, axis)


def _stage_batch_outcomes(st, values, weights, n):
    """:func:`batch_outcomes`, staged (inside the caller's ``errstate(all="ignore")``)."""
    values = _f64(st, values)
    weights = _f64(st, weights)
    if n == 1:
        return values, weights
    counts, logc = compositions(np.shape(val(values))[-1], n)
    vals = st.call(_div, st.call(_matmul, values, counts.T.astype(np.float64)), n)
    return vals, st.call(np.exp, st.call(log_batch_probs, st.call(np.log, weights), counts, logc))


def _matmul(a, b):
    return a @ b


def _div(a, b):
    return a / b


def _stage_fn(fn, c):
    """A node of :class:`_Compiled` (``fn.stage``), staged on the context ``c`` (:class:`SCtx`)."""
    node = getattr(fn, "stage", None)
    if node is None:
        raise Unstageable("node")
    st = c.env.st
    kind = node[0]
    if kind == "sum":
        return _stage_reduce(st, _sbc(st, _stage_fn(node[1], c), c.shape), -1)
    if kind == "sep":
        _, parts, which = node
        cm = c.with_outcomes(which, "marginal")
        total = 0.0
        for cf, phi in parts:
            prod = st.call(_mul, cm.items["_p"], _stage_fn(phi, cm))
            e_phi = _stage_reduce(st, _sbc(st, prod, cm.shape), 1)
            total = st.call(_add, total, st.call(_mul, _stage_fn(cf, c), _stage_reduce(st, e_phi, -1)))
        return total
    if kind == "joint":
        _, inner, which, op, layout = node
        cj = c.with_outcomes(which, layout)
        v = _f64(st, _stage_fn(inner, cj))
        if np.ndim(val(v)) < 3:
            v = st.method(v, "reshape", (1, 1, 1))
        S, M = cj.shape[:2]
        pr = cj.items["_p"]
        v = _sbc(st, v, (S, M, max(np.shape(val(v))[-1], np.shape(val(pr))[-1] if layout == "marginal" else 1)))
        if op == "Sup1":
            neg = st.call(np.where, st.call(_gt, pr, 0), v, -np.inf)
            return st.call(np.maximum.reduce, neg, axis=1, keepdims=True)
        return _stage_reduce(st, st.call(_mul, pr, v), 1)
    _, f, names, dmap, plain, variants = node
    env = c.env
    if env.rows and not plain.isdisjoint(env.rows):
        full, kinds = [], []
        for s in names:
            if s in dmap:
                v = _stage_fn(dmap[s], c)
            elif s.name in env.rows:
                full.append(None)
                kinds.append("L")
                continue
            else:
                v = c.value(s.name)
            full.append(v)
            kinds.append("S" if np.ndim(val(v)) == 0 else "A")
            if kinds[-1] == "S" and type(v) is Dyn:
                raise Unstageable("a scalar that depends on the data")
        how, a, b = lane_route(env.env, f, names, full, kinds, variants, c.shape[0])
        if how == "one":
            return _f64(st, _leaf_call(st, f, [a[s.name] if v is None else v for s, v in zip(names, full)]))
        if how == "per":
            raise Unstageable("a leaf evaluated lane by lane")
        return _f64(st, st.call(a, *full, b))
    args = [_stage_fn(dmap[s], c) if s in dmap else c.value(s.name) for s in names]
    return _f64(st, _leaf_call(st, f, args))


def _leaf_call(st, f, args):
    """``f(*args)`` for a lambdified leaf ``f``, staged: where some arguments are static numbers (the
    setting's scalars, a lane's values) and others depend on the inputs, the call of :func:`_folded`
    (``f`` with its sub-expressions of static arguments computed once) on the others; else ``f`` itself."""
    dyn = [i for i, a in enumerate(args) if _dyn(a)]
    if dyn and len(dyn) < len(args):
        g = _folded(f, {i: a for i, a in enumerate(args) if i not in dyn})
        if g is not None:
            return st.call(g, *[args[i] for i in dyn])
    return st.call(f, *args)


def _static_key(v):
    """A hashable key of a static argument's type and bits (None: not a number :func:`_folded` folds)."""
    t = type(v)
    if t is float or t is int or t is bool:
        return (t, repr(v))
    if isinstance(v, (np.ndarray, np.generic)) and np.ndim(v) == 0 and v.dtype.kind in "fiub":
        return (t, v.dtype.str, np.asarray(v).tobytes())
    return None


def _folded(f, static: dict):
    """``f`` (a lambdified leaf: ``def f(a, b, ...): return EXPR``) with the arguments at the positions of
    ``static`` bound to those values and every largest sub-expression of them (and of constants) computed
    once, now, as ``f`` computes it (the same Python and numpy operations on the same objects, under
    ``errstate(all="ignore")`` as the staged function runs): a function of the other arguments, in order,
    that makes the remaining operations on the same values, so the same bits and types; a sub-expression
    whose evaluation raises is left in place. None where the source is not of that form or a static value
    is not a number (0-d). Memoized per leaf and static values. Measured: a leaf
    ``where(equal(sign(g), sign(x)), 1, 0) * abs(g) * abs(abs(g) ** ((p - 1) ** -1.0) - ...)`` at one p, 24
    rows: 10.5 -> 8.9 us."""
    keys = []
    for i in sorted(static):
        k = _static_key(static[i])
        if k is None:
            return None
        keys.append((i, k))
    mkey = (f, tuple(keys))
    hit = _FOLDED.get(mkey, False)
    if hit is not False:
        return hit
    g = None
    try:
        g = _fold_source(f, static)
    except Exception:  # (a speed-only path: no folding)
        g = None
    if len(_FOLDED) > 4096:
        _FOLDED.clear()
    _FOLDED[mkey] = g
    return g


_FOLDED: dict = {}


def _fold_source(f, static):
    """:func:`_folded`'s rewriting of ``f``'s source (None: nothing to fold, or not a one-expression leaf)."""
    import ast
    import builtins
    import inspect

    tree = ast.parse(inspect.getsource(f))
    fdef = tree.body[0] if tree.body else None
    if (
        not isinstance(fdef, ast.FunctionDef)
        or len(fdef.body) != 1
        or not isinstance(fdef.body[0], ast.Return)
        or fdef.args.vararg
        or fdef.args.kwonlyargs
        or fdef.args.defaults
        or fdef.decorator_list
    ):
        return None
    argn = [a.arg for a in fdef.args.args]
    if len(argn) != len(static) + sum(1 for i in range(len(argn)) if i not in static) or max(static) >= len(argn):
        return None
    fixed = {argn[i]: v for i, v in static.items()}
    dynamic = {argn[i] for i in range(len(argn)) if i not in static}
    consts: dict = {}

    def is_static(node):
        """Whether ``node`` reads no dynamic argument (and is made of names, constants, attributes, calls
        without keywords and operators only)."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, ast.Name):  # a static argument, or a name of the leaf's module (numpy) or builtins
            return node.id in fixed or (
                node.id not in dynamic and (node.id in f.__globals__ or hasattr(builtins, node.id))
            )
        if isinstance(node, ast.Attribute):
            return is_static(node.value)
        if isinstance(node, ast.UnaryOp):
            return is_static(node.operand)
        if isinstance(node, ast.BinOp):
            return is_static(node.left) and is_static(node.right)
        if isinstance(node, ast.Call):
            return not node.keywords and is_static(node.func) and all(is_static(a) for a in node.args)
        return False

    def fold(node):
        """``node`` with its largest static sub-expressions (those that read a static argument) replaced
        (not inside a lambda or a comprehension: names there may be their own)."""
        if isinstance(node, (ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            return node
        if is_static(node) and isinstance(node, (ast.Name, ast.UnaryOp, ast.BinOp, ast.Call)):
            reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & set(fixed)
            if reads:
                code = compile(ast.Expression(body=node), "<folded leaf>", "eval")
                try:
                    with np.errstate(all="ignore"):
                        value = eval(code, f.__globals__, dict(fixed))  # noqa: S307 (the leaf's own source)
                except Exception:
                    value = _RAISES
                if value is not _RAISES:
                    name = f"_k{len(consts)}"
                    consts[name] = value
                    return ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node)
        for field, old in ast.iter_fields(node):
            if isinstance(old, list):
                setattr(node, field, [fold(x) if isinstance(x, ast.expr) else x for x in old])
            elif isinstance(old, ast.expr):
                setattr(node, field, fold(old))
        return node

    body = fold(fdef.body[0].value)
    if not consts:
        return None
    for name in consts:
        if name in f.__globals__ or name in argn:
            return None
    fdef.body[0].value = body
    fdef.args.args = [a for a in fdef.args.args if a.arg in dynamic]
    fdef.name = "_folded_leaf"
    mod = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    # the static arguments also as names of the function's module: the function reads them where they were
    # not folded (in a lambda or a comprehension of the leaf; the leaf's own names shadow them there as before)
    ns = {**f.__globals__, **fixed, **consts}
    exec(compile(mod, "<folded leaf>", "exec"), ns)  # noqa: S102 (the leaf's own source, rewritten)
    return ns["_folded_leaf"]


_RAISES = object()


def _mul(a, b):
    return a * b


def _add(a, b):
    return a + b


def _gt(a, b):
    return a > b


def stage_shaped(expr, senv: SEnv, *, per_coordinate: bool):
    """:func:`evaluate_shaped` (quiet), staged."""
    st = senv.st
    coupling = senv.dist.coupling if senv.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    out = _f64(st, _stage_fn(c.fn, SCtx(senv)))
    o = val(out)
    if per_coordinate:
        r = st.method(out, "reshape", o.shape[0], -1)
        return st.call(np.array, _sbc(st, r, (senv.S, senv.dist.d)))
    return st.call(np.array, _sbc(st, st.method(out, "reshape", -1), (senv.S,)))


def stage_quiet(expr, senv: SEnv):
    """:func:`evaluate_quiet`, staged."""
    st = senv.st
    coupling = senv.dist.coupling if senv.dist is not None else "independent"
    c = compile_expr(expr if isinstance(expr, sp.Basic) else sp.sympify(expr), coupling)
    out = _f64(st, _stage_fn(c.fn, SCtx(senv)))
    o = val(out)
    if o.ndim == 3:
        if o.shape[1] != 1 or o.shape[2] != 1:
            raise Unstageable("per-coordinate at the top level")
        out = st.item(out, (slice(None), 0, 0))
    return st.call(np.array, _sbc(st, out, (senv.S,)), dtype=np.float64)
