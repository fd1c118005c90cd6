"""Checks, packs and their discovery.

A *check* is a function ``fn(ctx) -> list[Claim]`` registered with a name, a title and the options it
takes (e.g. ``p``). A *pack* groups the checks of one paper: its title, its checks, the default
options of its report and its registered figures. Packs are found

* by name: the built-in pack (:data:`DEFAULT_PACK`, the default) and packs installed under the entry-point
  group ``lptheory.checks`` (``[project.entry-points."lptheory.checks"] mypaper = "mypkg.checks:PACK"``);
* by file path: ``path/to/claims.py`` (its ``Pack`` objects, or its module-level checks);
* by module path: ``mypkg.claims`` or ``mypkg.claims:PACK``.

:func:`load` turns such a target into a :class:`Pack`; errors (a missing file, a syntax error, a
check without a title, ...) raise :class:`PackError` naming the target.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "Check",
    "Context",
    "Pack",
    "PackError",
    "ReportSection",
    "check",
    "load",
    "installed_packs",
    "DEFAULT_PACK",
]

# the built-in pack: the one place that names it (its name on the command line, its import reference)
DEFAULT_PACK, _DEFAULT_REF = "stacey", "proofs_checks.stacey:PACK"
_BUILTIN = {DEFAULT_PACK: _DEFAULT_REF}


class PackError(ValueError):
    """A pack or claim file that cannot be loaded or is malformed (the message names it)."""


@dataclass
class Context:
    """What a check receives: ``seed``, ``quick``, its ``options`` (e.g. ``ctx.p``), ``say(msg)`` for
    progress lines and ``jobs``, the local processes it may use (its records must not depend on it)."""

    seed: int = 0
    quick: bool = False
    options: dict = field(default_factory=dict)
    say: Callable = lambda msg: None
    jobs: int = 1

    def __getattr__(self, name):
        opts = self.__dict__.get("options", {})
        if name in opts:
            return opts[name]
        raise AttributeError(f"this check has no option {name!r}")

    def get(self, name, default=None):
        return self.options.get(name, default)


@dataclass
class Check:
    """A registered check. ``options``: names of the options it takes (``p`` is a list of exponents;
    others are lists or scalars given with ``--set NAME=...``); ``defaults``: their default values."""

    name: str
    fn: Callable
    title: str
    description: str = ""
    options: tuple = ()
    defaults: dict = field(default_factory=dict)
    validate: Callable | None = None  # validate(options) raises ValueError naming the flag, before any work
    parallel: bool = False  # the check uses ctx.jobs processes itself
    heavy: bool = False  # one of the pack's longest checks: a pool starts it early (runner._pool_order)
    cost: float = 0.0  # its seconds on one core, figures included, as estimated: a pool starts the costlier first

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or " " in self.name:
            raise PackError(f"check name must be a non-empty word, got {self.name!r}")
        if not callable(self.fn):
            raise PackError(f"check {self.name!r}: its function is not callable")
        if not isinstance(self.title, str) or not self.title:
            raise PackError(f"check {self.name!r}: a title is required")
        unknown = set(self.defaults) - set(self.options)
        if unknown:
            raise PackError(f"check {self.name!r}: defaults for undeclared options {sorted(unknown)}")
        for flag in ("parallel", "heavy"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"check {self.name!r}: {flag} must be True or False, got {getattr(self, flag)!r}")
        c = self.cost
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            raise TypeError(f"check {self.name!r}: cost must be a number of seconds >= 0, got {c!r}")
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"check {self.name!r}: cost must be a finite number of seconds >= 0, got {c!r}")

    def resolve(self, given: dict | None) -> dict:
        """The options of a run: the defaults overridden by ``given``; unknown options raise ValueError
        naming them; ``validate`` runs here, before any work."""
        given = dict(given or {})
        unknown = sorted(set(given) - set(self.options))
        if unknown:
            takes = ", ".join("--" + o if o == "p" else o for o in self.options) or "no options"
            flag = ", ".join("--p" if u == "p" else f"--set {u}" for u in unknown)
            raise ValueError(f"check {self.name!r} does not take {flag} (it takes {takes})")
        typed = {k: self.coerce_option(k, v) for k, v in given.items() if v is not None}
        opts = {**self.defaults, **typed}
        if self.validate is not None:
            self.validate(opts)
        return opts

    def coerce_option(self, key: str, value):
        """The value of option ``key`` typed from its default: ``value`` is the text of ``--set KEY=TEXT``
        (``"1.5"``, ``"2,3"``), a parsed value or a list of them.

        * a scalar default (``int``, ``float``, ``bool``, ``str``) keeps the option scalar, of that type
          (an int takes only integers, a float any number, a bool ``true/false/yes/no/1/0``);
        * a list default gives a list, each element typed from the default's first element;
        * no default: numbers where they parse, a list (as ``--set`` always gave).

        A value of the wrong type or several values for a scalar option raise ValueError naming
        ``--set KEY``. The command line calls this for every ``--set``."""
        if key not in self.options:
            takes = ", ".join("--" + o if o == "p" else o for o in self.options) or "no options"
            flag = "--p" if key == "p" else f"--set {key}"
            raise ValueError(f"check {self.name!r} does not take {flag} (it takes {takes})")
        flag = "--p" if key == "p" else f"--set {key}"
        items = _split_values(value)
        default = self.defaults.get(key)
        if isinstance(default, (list, tuple)):
            if default and not items:  # `r = []`: a run of nothing (an empty report, exit 0) is never meant
                raise ValueError(
                    f"{flag}: an empty list; give at least one value, or leave it out (default {default!r})"
                )
            proto = default[0] if default else None
            return [_typed(flag, u, proto) for u in items]
        if default is None:
            return [_typed(flag, u, None) for u in items]
        if len(items) != 1:
            raise ValueError(f"{flag}: takes one value (its default is {default!r}), got {len(items)}: {value!r}")
        return _typed(flag, items[0], default)

    def run(self, ctx: Context):
        from .records import Claim

        out = self.fn(ctx)
        what = f"check {self.name!r} must return a list of Claim records, got {type(out).__name__}"
        if not isinstance(out, (list, tuple)):
            raise PackError(what + (" (it returned nothing: no return statement?)" if out is None else ""))
        bad = next(((i, r) for i, r in enumerate(out) if not isinstance(r, Claim)), None)
        if bad is not None:
            raise PackError(f"{what} whose element [{bad[0]}] is {type(bad[1]).__name__} {repr(bad[1])[:80]}")
        for r in out:
            r.check = self.name
        return list(out)


def _split_values(value) -> list:
    if isinstance(value, str):
        return [u.strip() for u in value.split(",")]
    if isinstance(value, (list, tuple)):
        return [u.strip() if isinstance(u, str) else u for u in value]
    return [value]


_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def _typed(flag: str, u, proto):
    """One value typed like ``proto`` (None: a number where it parses, else the text)."""
    kind = type(proto).__name__
    if isinstance(proto, bool):
        kind = "bool"
    try:
        if isinstance(proto, bool):
            if isinstance(u, bool):
                return u
            t = str(u).strip().lower()
            if t in _TRUE or t in _FALSE:
                return t in _TRUE
            raise ValueError
        if isinstance(proto, int):
            if isinstance(u, bool):
                raise ValueError
            if isinstance(u, float):
                if not u.is_integer():
                    raise ValueError
                return int(u)
            return int(str(u).strip()) if not isinstance(u, int) else u
        if isinstance(proto, float):
            if isinstance(u, bool):
                raise ValueError
            v = float(u)
            if math.isnan(v):  # inf is a value (p = inf is an exponent); the check's validate judges ranges
                raise ValueError
            return v
        if isinstance(proto, str):
            return str(u)
        if proto is None and isinstance(u, str):
            t = u.strip()
            try:
                return int(t) if t.lstrip("-").isdigit() else float(t)
            except ValueError:
                return t
        return u
    except (TypeError, ValueError):
        pass
    what = {"bool": "a boolean (true/false)", "int": "an integer", "float": "a number (not NaN)"}
    what = what.get(kind, "a " + kind)
    raise ValueError(f"{flag}: expected {what} (typed from the option's default {proto!r}), got {u!r}")


@dataclass
class ReportSection:
    """A section a pack adds to its report, after the verdict table (e.g. corrections of violated claims).

    ``name``: its anchor (``id="NAME"`` in the HTML page); ``title``: its heading; ``intro``: one paragraph
    of plain text under it; ``columns``: ``((key, label), ...)``, the first column naming the row;
    ``rows(claims) -> [dict]``: the rows from every record of the run (dicts with a ``check`` key), each a
    dict with the columns' keys (a value is text or a list of texts) and optionally ``status``. A section
    with no rows is left out. ``figure``: optionally ``"module:function"``, a figure function ``fn(claims,
    stem) -> [paths]`` drawn from every record of the run (a picture across checks, e.g. across tasks), imported
    only when the report draws the section."""

    name: str
    title: str
    intro: str
    columns: tuple
    rows: Callable
    figure: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or " " in self.name:
            raise PackError(f"report section name must be a non-empty word, got {self.name!r}")
        if not callable(self.rows):
            raise PackError(f"report section {self.name!r}: rows must be callable")
        self.columns = tuple(tuple(c) for c in self.columns)
        if not self.columns or any(len(c) != 2 for c in self.columns):
            raise PackError(f"report section {self.name!r}: columns must be (key, label) pairs")


class Pack:
    """The checks of one paper (or any set of claims), with everything its report needs: a pack is a
    self-contained plug-in, and the toolkit's own pack is built the same way.

    Parameters
    ----------
    name : short name (used on the command line)
    title : the report's title
    description : one paragraph shown under the title
    figures : optional module (``"pkg.figures"``) imported when figures are drawn, registering its figure
        functions with :meth:`figure` (so a pack's checks never import matplotlib); ``"module:NAME"``
        names a dict ``{check name: [(stem, fn), ...]}`` instead. Checks without figures get the
        generic ones.
    sections : optional ``{check name: section title}`` (default: the check's title)
    columns : the setting columns of ``results.csv``: parameter names, or ``(column, parameter)``
        pairs; default: the parameters the records display (their ``show``), in order of appearance

    Registration (decorators, as for checks): :meth:`check`, :meth:`figure`, :meth:`report_section`,
    :meth:`text_format` (how ``lptheory check`` prints a check's records).
    """

    def __init__(
        self,
        name: str,
        title: str,
        description: str = "",
        *,
        figures: str | None = None,
        sections: dict | None = None,
        columns: tuple | None = None,
    ):
        if not isinstance(name, str) or not name:
            raise PackError(f"pack name must be a non-empty string, got {name!r}")
        self.name, self.title, self.description = name, title, description
        self.figures = figures
        self.sections = dict(sections or {})
        self.columns = None if columns is None else tuple(c if isinstance(c, tuple) else (c, c) for c in columns)
        self.checks: dict[str, Check] = {}
        self.report_sections: list[ReportSection] = []
        self._figures: dict[str, list] = {}
        self._text: dict[str, Callable] = {}
        self._figures_loaded = False
        self.target = name  # how the CLI reaches this pack (set by load)

    def check(self, name: str | None = None, **options):
        """Decorator registering ``fn(ctx) -> list[Claim]`` as check ``name`` (default: the function's name).
        ``options``: those of :func:`check_options` (``title`` required; ``parallel=True``: the check spreads
        its own work over ``ctx.jobs`` processes; ``heavy=True``: one of the pack's longest checks, started early
        in a pool; ``cost``: its estimated seconds, the costlier started first)."""
        options = check_options(**options)

        def deco(fn):
            nm = name or fn.__name__.replace("_", "-")
            if nm in self.checks:
                raise PackError(f"pack {self.name!r}: check {nm!r} registered twice")
            self.checks[nm] = _make_check(fn, nm, options)
            return fn

        return deco

    def add(self, c: Check) -> None:
        if c.name in self.checks:
            raise PackError(f"pack {self.name!r}: check {c.name!r} registered twice")
        self.checks[c.name] = c

    def section(self, name: str) -> str:
        return self.sections.get(name) or self.checks[name].title

    def figure(self, check: str, stem: str | None = None):
        """Decorator registering ``fn(records, stem) -> [paths]`` as a figure of ``check`` (file stem:
        ``stem``, default the function's name); ``fn`` draws from the records only."""

        def deco(fn):
            self._figures.setdefault(check, []).append((stem or fn.__name__, fn))
            return fn

        return deco

    def figure_functions(self) -> dict:
        """``{check: [(stem, fn), ...]}``: the figures registered with :meth:`figure`, after importing the
        pack's ``figures`` module (once); a ``"module:NAME"`` reference gives its dict, or a function of the pack
        returning one."""
        if self.figures and not self._figures_loaded:
            self._figures_loaded = True
            mod, _, attr = self.figures.partition(":")
            obj = importlib.import_module(mod)
            if attr:  # a dict, or a function of the pack giving one (figures for checks made at run time)
                got = getattr(obj, attr)
                for k, v in (got(self) if callable(got) else got).items():
                    self._figures.setdefault(k, []).extend(v)
        return self._figures

    def report_section(self, name: str, *, title: str, intro: str = "", columns, figure: str | None = None):
        """Decorator registering ``rows(claims) -> [dict]`` as a report section (:class:`ReportSection`)."""

        def deco(fn):
            if any(s.name == name for s in self.report_sections):
                raise PackError(f"pack {self.name!r}: report section {name!r} registered twice")
            self.report_sections.append(ReportSection(name, title, intro, tuple(columns), fn, figure))
            return fn

        return deco

    def text_format(self, check: str):
        """Decorator registering ``fn(records) -> str``: how ``lptheory check`` prints ``check``'s records
        (records as dicts) instead of the generic table."""

        def deco(fn):
            self._text[check] = fn
            return fn

        return deco

    def summary(self, fn):
        """Decorator registering ``fn(claims) -> dict``: the report's executive summary, shown above
        everything. ``claims``: every record of the run as a dict (with ``check`` and ``anchor``, the record's
        anchor in the report). Returns ``{"lead": text, "items": [item, ...]}``, an item a dict with
        ``title``, ``kind`` (``"error"``: it matters; ``"typo"``: it changes nothing), ``parts``
        (``[(label, text), ...]``) and ``evidence`` (the records it rests on). Text may hold LaTeX
        between ``$...$``."""
        self._summary = fn
        return fn

    def summarize(self, claims) -> dict | None:
        """The registered summary of ``claims`` (:meth:`summary`), or None."""
        fn = getattr(self, "_summary", None)
        return None if fn is None else fn(claims)

    def notation(self, tex: dict):
        """Register ``{claim id: LaTeX}``: each claim's statement in the source's notation (math mode, no
        ``$``), shown by the report instead of the plain-text statement."""
        self.tex = {**getattr(self, "tex", {}), **dict(tex)}
        return self.tex

    def statement_tex(self, claim_id: str) -> str | None:
        """The registered LaTeX of ``claim_id`` (:meth:`notation`), or None."""
        return getattr(self, "tex", {}).get(claim_id)

    def format_text(self, check: str, records) -> str | None:
        """The registered text of ``check``'s records (:meth:`text_format`), or None (use the table)."""
        fn = self._text.get(check)
        if fn is None:
            return None
        return fn([r.to_dict() if hasattr(r, "to_dict") else r for r in records])

    def setting_columns(self, records) -> tuple:
        """``((column, parameter), ...)``: the setting columns of ``results.csv`` for ``records``."""
        if self.columns is not None:
            return self.columns
        keys: list = []
        for r in records:
            r = r.to_dict() if hasattr(r, "to_dict") else r
            pr = r.get("params") or {}
            for k in r.get("show") or [k for k, v in pr.items() if not isinstance(v, (dict, list))]:
                if k in pr and k not in keys:
                    keys.append(k)
        return tuple((k, k) for k in keys)

    def reproduce(self, check: str, *, seed: int, quick: bool, p=None, options=None) -> str:
        """The command that reproduces ``check`` (the records of one p when ``p`` is given)."""
        head = "lptheory check " + (check if self.target == DEFAULT_PACK else f"{self.target} {check}")
        parts = [head]
        if p is not None and "p" in self.checks[check].options:
            parts.append(f"--p {p:g}")
        for k, v in (options or {}).items():
            if k == "p":
                continue
            vs = v if isinstance(v, (list, tuple)) else [v]
            parts.append(f"--set {k}={','.join(str(u) for u in vs)}")
        parts.append(f"--seed {seed}")
        if quick:
            parts.append("--quick")
        parts.append("--json")
        return " ".join(parts)

    def __repr__(self):
        return f"Pack({self.name!r}, checks={list(self.checks)})"


def check(name: str | None = None, **options):
    """Module-level decorator: the check joins the pack built for its file or module by :func:`load`
    (``options``: those of :func:`check_options`)."""
    options = check_options(**options)

    def deco(fn):
        nm = name or fn.__name__.replace("_", "-")
        fn.__lptheory_check__ = _make_check(fn, nm, options)
        return fn

    return deco


def check_options(
    *,
    title: str,
    description: str = "",
    options=(),
    defaults=None,
    validate=None,
    parallel: bool = False,
    heavy: bool = False,
    cost: float = 0.0,
) -> dict:
    """The options of a check, as both decorators (:meth:`Pack.check`, :func:`check`) take them: ``title``,
    ``description`` (default: the first line of the function's docstring), ``options`` (the option names the
    check reads from its context, e.g. ``("p",)``), ``defaults`` (their default values), ``validate``
    (``validate(options)`` raising ValueError on a bad value), ``parallel`` (the check spreads its own work
    over ``ctx.jobs`` processes) and ``heavy`` (one of the pack's longest checks: a pool of ``--jobs`` workers starts
    it right after the parallel ones, so that it does not start last and keep one worker busy while the others are
    done) and ``cost`` (an estimate of its seconds on one core, figures included: among the parallel checks, the
    heavy ones and the others, a pool starts the costlier first, so that its last seconds go to short checks; 0,
    the default, keeps the pack's order). The order never changes a record. A keyword outside these raises
    TypeError when the decorator is made; a ``cost`` that is not a finite number >= 0 is refused there too."""
    return dict(
        title=title,
        description=description,
        options=options,
        defaults=defaults,
        validate=validate,
        parallel=parallel,
        heavy=heavy,
        cost=cost,
    )


def _make_check(fn, name, o: dict) -> Check:
    """The :class:`Check` both decorators register (description: the docstring's first line by default)."""
    desc = o["description"] or (fn.__doc__ or "").strip().split("\n")[0]
    return Check(
        name,
        fn,
        o["title"],
        desc,
        tuple(o["options"]),
        dict(o["defaults"] or {}),
        o["validate"],
        o["parallel"],
        o["heavy"],
        o["cost"],
    )


def installed_packs() -> dict[str, str]:
    """Pack names -> import references: the built-in pack and the ``lptheory.checks`` entry points."""
    out = dict(_BUILTIN)
    try:
        from importlib.metadata import entry_points

        for ep in entry_points(group="lptheory.checks"):
            out.setdefault(ep.name, ep.value)
    except Exception:  # pragma: no cover - broken metadata must not break the CLI
        pass
    return out


def _from_namespace(ns: dict, default_name: str, where: str) -> Pack:
    packs = [v for v in ns.values() if isinstance(v, Pack)]
    loose = [v.__lptheory_check__ for v in ns.values() if callable(v) and hasattr(v, "__lptheory_check__")]
    if not packs and not loose:
        # values that make their own pack (a practice task file: TASK = PracticeTask(...) or TASKS = [...]): their
        # class's ``__lptheory_pack__(values, name, where)`` builds it; nothing here knows the practice pack
        made = _values_pack(ns, default_name, where)
        if made is not None:
            return made
    if len(packs) > 1:
        names = [p.name for p in packs]
        raise PackError(f"{where}: defines {len(packs)} packs {names}; name one as MODULE:NAME")
    if packs:
        pack = packs[0]
        for c in loose:
            if c.name not in pack.checks:
                pack.add(c)
    else:
        if not loose:
            raise PackError(f"{where}: no checks found (decorate functions with @check(...) or define a Pack)")
        pack = Pack(
            default_name,
            title=ns.get("TITLE", f"lptheory report: {default_name}"),
            description=(ns.get("__doc__") or "").strip(),
        )
        for c in loose:
            pack.add(c)
    if not pack.checks:
        raise PackError(f"{where}: pack {pack.name!r} has no checks")
    return pack


def _values_pack(ns: dict, default_name: str, where: str):
    """The pack of ``TASK``/``TASKS`` values whose class defines ``__lptheory_pack__``, or None."""
    vals = []
    if "TASK" in ns:
        vals.append(ns["TASK"])
    if "TASKS" in ns:
        many = ns["TASKS"]
        if not isinstance(many, (list, tuple)):
            raise PackError(f"{where}: TASKS must be a list of tasks, got {type(many).__name__}")
        vals.extend(many)
    if not vals:
        return None
    makers = {getattr(type(v), "__lptheory_pack__", None) for v in vals}
    if None in makers or len(makers) != 1:
        bad = next(type(v).__name__ for v in vals if getattr(type(v), "__lptheory_pack__", None) is None)
        raise PackError(f"{where}: TASK/TASKS must hold PracticeTask values, got a {bad}")
    names = [v.name for v in vals]
    if len(set(names)) != len(names):
        raise PackError(f"{where}: two tasks are named alike ({names}): task names must differ")
    pack = makers.pop()(vals, default_name, where)
    return pack


def _import_file(path: str):
    name = "lptheory_user_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PackError(f"{path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as exc:
        raise PackError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from exc
    except PackError as exc:
        raise PackError(f"{path}: {exc}") from exc
    except SystemExit as exc:  # sys.exit() in a claim file: never a silent exit 0 with no checks run
        line = _line_in(exc, path)
        raise PackError(
            f"{path}:{line}: called sys.exit({exc.code!r}) while being imported (a claim file defines checks; "
            "it does not exit)"
        ) from None
    except Exception as exc:
        raise PackError(f"{path}:{_line_in(exc, path)}: {type(exc).__name__}: {exc}") from exc
    return mod


def _line_in(exc, path):
    """The line of ``path`` where ``exc`` was raised (the innermost frame in that file), or "?"."""
    tb = traceback.extract_tb(exc.__traceback__)
    return next((f.lineno for f in reversed(tb) if os.path.abspath(f.filename) == os.path.abspath(path)), "?")


def load(target: str | None = None) -> Pack:
    """The pack behind ``target``: a pack name (default: the built-in Stacey pack), a ``.py`` file,
    or a module path (``pkg.mod`` or ``pkg.mod:NAME``)."""
    target = target or DEFAULT_PACK
    packs = installed_packs()
    if target in packs:
        pack = load_ref(packs[target])
        pack.target = target
        return pack
    if target.endswith(".py") or os.path.sep in target or os.path.exists(target):
        if not os.path.isfile(target):
            raise PackError(f"{target}: no such claim file")
        mod = _import_file(target)
        pack = _from_namespace(vars(mod), os.path.splitext(os.path.basename(target))[0], target)
        pack.target = target
        return pack
    pack = load_ref(target)
    pack.target = target
    return pack


def load_ref(ref: str) -> Pack:
    """``module`` or ``module:NAME`` -> Pack."""
    mod_name, _, attr = ref.partition(":")
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        known = ", ".join(sorted(installed_packs()))
        raise PackError(
            f"{ref!r} is neither a pack name ({known}), a claim file (.py) nor an importable module: {exc}"
        ) from exc
    except SyntaxError as exc:
        raise PackError(f"{ref}: syntax error in {exc.filename}:{exc.lineno}: {exc.msg}") from exc
    except SystemExit as exc:  # sys.exit() at import: never a silent exit 0 with no checks run
        raise PackError(f"{ref}: called sys.exit({exc.code!r}) while being imported") from None
    if attr:
        obj = getattr(mod, attr, None)
        if not isinstance(obj, Pack):
            raise PackError(f"{ref}: {attr!r} is not a Pack")
        return obj
    return _from_namespace(vars(mod), mod_name.rsplit(".", 1)[-1], ref)
