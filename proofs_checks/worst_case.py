"""The worst ratio term / bound over a :class:`~proofs_checks.distributions.DistributionSpace`:
:class:`SearchJob` (one claim at one setting), :func:`search_worst` and :func:`search_worst_many` (many jobs
in lockstep: one objective call evaluates a generation of every job, staged code per layout).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import sympy as sp

from . import expressions as X
from .evaluation import constants, evaluate_sides, with_batch_size
from .pools import map_tasks, search_pool, search_threads
from .search import maximize_many
from .spec import ClaimError, ClaimSpec

__all__ = ["SearchBudget", "SearchJob", "search_worst", "search_worst_many"]


@dataclass(frozen=True)
class SearchBudget:
    maxiter: int = 120
    popsize: int = 12


def search_ratios(spec, space, xs, scalars, scale, require):
    dist, sc, coords, env = _search_env(spec, space, xs, scalars)
    return _ratio_of(spec, env, scale, require), dist, sc, coords


def _search_env(spec, space, xs, scalars, rows=None, lanes=None, quiet=False):
    """The population ``xs`` decoded, with the constants the assumptions define (shared by every spec
    with the same defining assumptions). ``rows``: per-row scalars (the rows of several settings in one
    population, :class:`~proofs_checks.expressions.Env`), ``lanes`` their runs when known."""
    dist = space.decode(xs)
    sc = with_batch_size(spec, space.n, scalars)
    sc, coords, _ = constants(spec, dist, sc, rows=rows, lanes=lanes, quiet=quiet)
    return dist, sc, coords, X.Env(scalars=sc, coords=coords, dist=dist, rows=rows, lanes=lanes)


def _ratio_of(spec, env, scale, require):
    """term / (scale * bound) per row (``scale`` a number or one per row), 0 where not finite or where
    ``require`` fails; bound / term for a ``>=`` claim."""
    with np.errstate(all="ignore"):
        term, bound = evaluate_sides(spec, env, quiet=True)
        req = None if require is None else X.evaluate_quiet(require, env)
        return _ratio_tail(term, bound, req, scale, spec.relation == ">=")


def _ratio_tail(term, bound, req, scale, ge):
    """:func:`_ratio_of` from the values of the sides and of the condition (``req``, or None): one pass of
    the numba kernel :func:`~proofs_checks._search_kernels.ratio_tail` (the same IEEE operations per row)
    for float64 rows, else numpy."""
    route = _ratio_kernel_route(term, bound, req, scale)
    if route is not None:
        kern, sc = route
        return kern(term, bound, _NO_REQ if req is None else req, sc, bool(ge), np.empty(term.size))
    return _ratio_tail_numpy(term, bound, req, scale, ge)


def _ratio_kernel_route(term, bound, req, scale):
    """``(kernel, scale as a float64 vector)`` where :func:`_ratio_tail` takes the numba kernel for these
    values (float64 vectors of one shape, a scalar or per-row scale), else None."""
    kern = _ratio_kernel()
    if (
        kern is None
        or type(term) is not np.ndarray
        or type(bound) is not np.ndarray
        or term.dtype != np.float64
        or bound.dtype != np.float64
        or term.ndim != 1
        or bound.shape != term.shape
        or not (req is None or (type(req) is np.ndarray and req.dtype == np.float64 and req.shape == term.shape))
    ):
        return None
    sc = np.asarray(scale, dtype=np.float64).reshape(-1)
    return (kern, sc) if sc.size in (1, term.size) else None


def _ratio_kernel():
    """:func:`~proofs_checks._search_kernels.ratio_tail`, or None without numba."""
    kern = _RATIO.get("kernel", False)
    if kern is False:
        try:
            from ._search_kernels import ratio_tail as kern
        except ImportError:
            kern = None
        _RATIO["kernel"] = kern
    return kern


_RATIO: dict = {}


_NO_REQ = np.empty(0)


def _ratio_tail_numpy(term, bound, req, scale, ge):
    """:func:`_ratio_tail` in numpy."""
    ok = np.isfinite(term) & np.isfinite(bound) & (bound > 0)
    if req is not None:
        ok &= np.asarray(req, dtype=bool)
    r = np.where(ok, term / np.where(ok, scale * bound, 1.0), 0.0)
    if ge:
        r = np.where(ok & (term > 0), scale * bound / np.where(term > 0, term, 1.0), 0.0)
    return r


def _staged_objective(spec0, space, xs, shared, rows, lanes, shared_outcomes, parts, n_rows):
    """The lockstep objective's evaluation of one call (:func:`_lockstep_objective`), written by
    :class:`~proofs_checks.expressions.Stager` as a straight-line function of the population ``xs``:
    the decoding, the constants the assumptions define, and per block of rows (``parts``: ``(a, b, spec,
    scale, require)``) the sides, the condition and the ratio, with the same numpy calls on the same
    operands as the evaluation itself (the same bits) for every population laid out as ``xs`` (the
    caller keys the function by the rows per job and the layout of ``xs``). Returns ``(fn, value)``:
    the function and its value at ``xs`` (the staging run)."""
    st = X.Stager()
    xd = st.input(xs, "xs")
    dist = st.call(space.decode, xd)
    proto = dist.v
    sdist = X.SDist(st, proto, st.call(_get_values, dist), st.call(_get_weights, dist))
    renv = X.Env(S=n_rows, rows=rows, lanes=lanes)
    sc = with_batch_size(spec0, space.n, shared)
    senv = X.SEnv(st, renv, sdist)
    senv.scalars = {k: senv.scalar(v) for k, v in sc.items()}
    for a in spec0.defining():  # constants(): the tightest admissible value of each defined constant
        v = X.stage_shaped(a.value, senv, per_coordinate=a.per_coordinate)
        if a.per_coordinate:
            senv.coords[a.symbol.name] = senv.coord(v)
        else:
            senv.scalars[a.symbol.name] = senv.scalar(v)
    env = X.SEnv(st, renv, sdist, dict(senv.scalars), dict(senv.coords))  # a new Env: its own outcome contexts
    for which, layout in shared_outcomes:
        sdist.outcomes(which, layout)
    out = st.fresh(np.zeros, n_rows)
    for a, b, spec, scale, require in parts:
        sub = env if (a == 0 and b == n_rows) else env.take(a, b)
        for side in ("term", "bound"):
            if getattr(spec, side) is None:
                raise X.Unstageable(side)
        term = X.stage_quiet(spec.term, sub)
        bound = X.stage_quiet(spec.bound, sub)
        req = None if require is None else X.stage_quiet(require, sub)
        st.setitem(out, slice(a, b), _stage_ratio_tail(st, term, bound, req, scale, spec.relation == ">="))
    return st.function(out, "objective"), out.v


def _stage_ratio_tail(st, term, bound, req, scale, ge):
    """:func:`_ratio_tail`, staged: where it takes the numba kernel (decided on the staging run's values: float64
    vectors of one shape, as every run of the layout has them), the kernel itself is called, with the scale's
    array a constant of the function and a fresh output per run (the same call :func:`_ratio_tail` makes,
    without its ~12 checks and conversions per block of rows: measured at 24 rows, 7.1 -> 3.1 us); else
    :func:`_ratio_tail`."""
    t = X.val(term)
    route = _ratio_kernel_route(t, X.val(bound), X.val(req), scale)
    if route is not None:
        kern, sc = route
        r_arg = _NO_REQ if req is None else req
        return st.call(kern, term, bound, r_arg, sc, bool(ge), st.fresh(np.empty, t.size))
    return st.call(_ratio_tail, term, bound, req, scale, ge)


def _get_values(dist):
    return dist.values


def _get_weights(dist):
    return dist.weights


def _defining_key(spec):
    return tuple((a.symbol, a.value, a.per_coordinate, a.relation) for a in spec.defining())


@dataclass(frozen=True)
class SearchJob:
    """One adversarial search of :func:`search_worst_many`: a spec, its seed, bound scale and condition,
    and optionally its own scalars (``scalars``, e.g. ``{"p": 4.0}``: over the shared ones).

    ``require``: a condition the candidates must meet, a sympy relation (or a boolean combination of
    relations) of the setting's scalars and the constants the assumptions define, evaluated on every
    candidate; e.g. ``CoordSum(sigma) > 1e-6 * G`` (non-negligible noise). Anything else is a TypeError."""

    spec: ClaimSpec
    seed: object
    scale: float = 1.0
    require: object = None
    scalars: dict | None = None

    def __post_init__(self):
        _check_require(self.spec, self.require)
        if self.scalars is not None and not isinstance(self.scalars, dict):
            raise TypeError(f"claim {self.spec.id}: SearchJob.scalars must be a dict of numbers, got {self.scalars!r}")


def job_scalars(jb, scalars: dict) -> dict:
    """The job's own scalars (:class:`SearchJob`), then the shared ones it does not set."""
    own = dict(jb.scalars or {})
    return {**own, **{k: v for k, v in scalars.items() if k not in own}}


def _check_require(spec, require):
    """``require`` is None or a sympy relation / boolean (a TypeError naming the claim otherwise)."""
    if require is None or isinstance(require, (sp.core.relational.Relational, sp.logic.boolalg.Boolean)):
        return
    raise TypeError(
        f"claim {spec.id}: require= must be a sympy relation of the scalars and constants (e.g. "
        f"CoordSum(sigma) > 1e-6 * G), got {type(require).__name__}: {require!r}"
    )


def search_worst(
    spec: ClaimSpec,
    spaces,
    scalars: dict,
    *,
    seed,
    budget: SearchBudget = SearchBudget(),
    scale: float = 1.0,
    require=None,
) -> dict:
    """Maximize term / (scale * bound) over each space (one differential evolution + Nelder-Mead polish
    per space); returns the worst case found: ``{"ratio", "space", "x", "nfev"}``."""
    return search_worst_many([SearchJob(spec, seed, scale, require)], spaces, scalars, budget=budget)[0]


def search_worst_many(
    jobs, spaces, scalars: dict, *, budget: SearchBudget = SearchBudget(), workers: int = 1
) -> list[dict]:
    """:func:`search_worst` for several jobs on the same spaces, each with the result it gets alone.
    Jobs whose specs share their defining assumptions (and the names of their own scalars) are searched
    in lockstep: one evaluation of the constants per call serves every job's candidates, the jobs of
    other settings (their own ``scalars``, e.g. other p) included, as per-row scalars. ``workers > 1``:
    the spaces are searched in that many forked processes (same results)."""
    jobs = list(jobs)
    for jb in jobs:
        if jb.spec.relation not in ("<=", ">="):
            raise ClaimError(f"claim {jb.spec.id}: the search needs a <= or >= relation, got {jb.spec.relation!r}")
        for space in spaces:  # a scalar n must be each space's batch size (checked before any work)
            with_batch_size(jb.spec, space.n, job_scalars(jb, scalars))
    children = []
    for jb in jobs:
        seq = jb.seed if isinstance(jb.seed, np.random.SeedSequence) else np.random.SeedSequence(jb.seed)
        children.append(seq.spawn(len(spaces)))
    groups: dict = {}
    for j, jb in enumerate(jobs):
        groups.setdefault((_defining_key(jb.spec), tuple(sorted(jb.scalars or {}))), []).append(j)
    order = []
    for members in groups.values():  # rows of one spec together, and within it those of one setting
        kinds: dict = {}
        for j in members:
            kinds.setdefault((id(jobs[j].spec), id(jobs[j].require)), len(kinds))
        order.append(
            sorted(
                members,
                key=lambda j: (
                    kinds[(id(jobs[j].spec), id(jobs[j].require))],
                    tuple(float(v) for _, v in sorted((jobs[j].scalars or {}).items())),
                    j,
                ),
            )
        )
    tasks = [(i, members) for i in range(len(spaces)) for members in order]
    state = (jobs, spaces, scalars, budget, children)
    cost = [spaces[i].dim * spaces[i].k ** (spaces[i].n - 1) * len(m) for i, m in tasks]  # biggest first
    results = map_tasks(_search_task, state, tasks, workers, cost=cost)
    best = [{"ratio": -np.inf} for _ in jobs]
    nfev = [0] * len(jobs)
    for (i, members), res in zip(tasks, results):
        for (x, r, n), j in zip(res, members):
            nfev[j] += n
            if r > best[j]["ratio"]:
                best[j] = {"ratio": r, "space": spaces[i], "x": x}
    for j in range(len(jobs)):
        best[j]["nfev"] = nfev[j]
    return best


def _job_lanes(jobs, members, scalars):
    """``(shared, lane_vals, lane_of)`` of the jobs ``members``: the scalars they share (the jobs' own scalars
    first, as :func:`job_scalars`), the values per job of their own scalars that differ between jobs, and
    each job's lane scalars (one dict per setting, shared by the jobs of that setting)."""
    own = [dict(jobs[j].scalars or {}) for j in members]
    names = sorted(own[0]) if own else []
    varying = [k for k in names if len({float(o[k]) for o in own}) > 1]
    shared = {k: own[0][k] for k in names if k not in varying}
    shared.update({k: v for k, v in scalars.items() if k not in names})
    lane_vals = {k: np.array([float(o[k]) for o in own]) for k in varying}
    settings: dict = {}
    lane_of = []
    for o in own:
        key = tuple(float(o[k]) for k in varying)
        lane_of.append(settings.setdefault(key, X.lane_values(varying, np.array(key))))
    return shared, lane_vals, lane_of


def _spec_blocks(jobs, members):
    """Blocks ``[key, m0, m1]`` of consecutive members with the same spec and condition (one evaluation each)."""
    blocks = []
    for m, j in enumerate(members):
        key = (id(jobs[j].spec), id(jobs[j].require))
        if blocks and blocks[-1][0] == key:
            blocks[-1][2] = m + 1
        else:
            blocks.append([key, m, m + 1])
    return blocks


def _lanes_of(owner, lane_vals, lane_of, n_members):
    """Per-row scalars of rows grouped by job (owner sorted), and their runs (lanes)."""
    rows = {k: v[owner] for k, v in lane_vals.items()} or None
    lanes = None
    if rows:  # runs of consecutive jobs with the same setting
        cuts = np.searchsorted(owner, np.arange(n_members + 1))
        lanes = []
        for m in range(n_members):
            a, b = int(cuts[m]), int(cuts[m + 1])
            if a == b:
                continue
            if lanes and lanes[-1][1] is lane_of[m] and lanes[-1][0].stop == a:
                lanes[-1] = (slice(lanes[-1][0].start, b), lane_of[m])
            else:
                lanes.append((slice(a, b), lane_of[m]))
    return rows, lanes


def _block_parts(jobs, members, blocks, block_bounds, scales, owner):
    """``(a, b, spec, scale, require)`` of each block with rows in a call (rows grouped by job, owner sorted):
    its rows ``a:b``, and its scale (a number when its rows share it, else per row)."""
    cuts = np.searchsorted(owner, block_bounds)
    parts = []
    for bi, (_, m0, _) in enumerate(blocks):
        a, b = int(cuts[2 * bi]), int(cuts[2 * bi + 1])
        if a < b:
            jb = jobs[members[m0]]
            sc = scales[owner[a:b]]
            parts.append((a, b, jb.spec, float(sc[0]) if np.all(sc == sc[0]) else sc, jb.require))
    return parts


class _Learning:
    """What the blocks of one objective share: the outcome keys (``Distribution.outcomes``) that several blocks
    read (``shared_outcomes``), learnt once from the first call with several blocks."""

    def __init__(self):
        self.shared_outcomes: list = []
        self.active = True  # until a call with several blocks has shown them
        self.lock = threading.Lock()


def _walk(spec0, space, xs, shared, rows, lanes, so, parts, learning):
    """The ratios of a call evaluated block by block (the tree walk): the constants once for all rows, the
    outcomes ``so`` (read by several blocks) once on all rows; learns ``so`` from the first call with several
    blocks."""
    _, _, _, env = _search_env(spec0, space, xs, shared, rows=rows, lanes=lanes, quiet=True)
    dist = env.dist
    for key in so:  # outcomes several blocks read: computed once on all rows
        dist.outcomes(key)
    before = set(dist.cached_keys())
    out = np.zeros(len(xs))
    seen: dict = {}
    taken = 0
    for a, b, spec, scale, require in parts:
        sub = env if (a == 0 and b == len(xs)) else env.take(a, b)
        out[a:b] = _ratio_of(spec, sub, scale, require)
        if learning.active and sub is not env:
            taken += 1
            for key in sub.dist.cached_keys():
                if key not in before:
                    seen[key] = seen.get(key, 0) + 1
    if learning.active and taken >= 2:  # learnt from a call with several blocks: what they share
        with learning.lock:  # the first half of a split call to learn sets them (once)
            if learning.active:
                learning.shared_outcomes[:] = [key for key, c in seen.items() if c >= 2]
                learning.active = False
    return out


def _lockstep_objective(jobs, members, space, scalars):
    """``obj(xs, owner)``: the ratio of each row of ``xs`` for the job ``members[owner]``, for jobs that
    share their defining assumptions (one evaluation of the constants for all rows; a job's own scalars
    that differ between jobs become per-row scalars) and are ordered spec by spec (``members``)."""
    shared, lane_vals, lane_of = _job_lanes(jobs, members, scalars)
    spec0 = jobs[members[0]].spec
    blocks = _spec_blocks(jobs, members)
    scales = np.array([float(jobs[j].scale) for j in members])
    block_bounds = np.array([m for _, m0, m1 in blocks for m in (m0, m1)])
    learning = _Learning()
    layouts: dict = {}  # owner (rows per job) -> (per-row scalars, lanes): the polish repeats its layouts
    plans: dict = {}  # layout of a call -> its evaluation as a staged function (_staged_objective)
    counts: dict = {}  # layout of a call -> how many calls had it (staged from the _STAGE_AFTER-th on)

    def obj(xs, owner):
        xs = np.asarray(xs)
        owner = np.asarray(owner)
        perm = None
        if owner.size > 1 and np.any(owner[1:] < owner[:-1]):  # rows grouped by job (a row's value is its own)
            perm = np.argsort(owner, kind="stable")
            xs, owner = xs[perm], owner[perm]
        n = len(xs)
        if n >= _SPLIT_ROWS and search_threads() > 1:  # two halves on two threads (numpy frees the GIL)
            c = n // 2
            fut = search_pool().submit(evaluate, xs[:c], owner[:c])
            tail = evaluate(xs[c:], owner[c:])
            out = np.concatenate([fut.result(), tail])
        else:
            out = evaluate(xs, owner)
        if perm is not None:
            res = np.empty_like(out)
            res[perm] = out
            out = res
        return out

    def evaluate(xs, owner):
        """The ratios of rows grouped by job (owner sorted)."""
        # the evaluation as a staged straight-line function, per layout of the call (and outcomes shared).
        # The outcomes shared are read once, here (``so``), and this snapshot alone serves the key, the
        # staging and the walk below: a split call runs two halves on two threads, and one half may
        # rewrite ``shared_outcomes`` (learning, at the end of its walk) while the other is between
        # computing its key and staging; with the list read again there, a plan staged with the new
        # outcomes would be stored under a key naming the old ones (a key that does not describe it).
        so = tuple(learning.shared_outcomes)  # (one C-level copy under the GIL: a consistent list)
        okey = (owner.dtype.str, owner.tobytes())
        pkey = (*okey, xs.shape, xs.strides, xs.dtype.str, xs.flags.c_contiguous, *so)
        fn = plans.get(pkey)
        if fn is not None:
            if fn is not _UNSTAGEABLE:
                try:
                    with np.errstate(all="ignore"):
                        return fn(xs)
                except Exception:  # a speed-only path: its failure is no result; the walk below decides
                    plans[pkey] = _UNSTAGEABLE
            pkey = None
        elif len(plans) > _PLANS:
            plans.clear()
        hit = layouts.get(okey) if lane_vals else None
        if hit is not None:  # the same rows per job as an earlier call (the polish's calls): the same lanes
            rows, lanes = hit
        else:
            rows, lanes = _lanes_of(owner, lane_vals, lane_of, len(members))
            if lane_vals:
                if len(layouts) > 64:
                    layouts.clear()
                layouts[okey] = (rows, lanes)
        parts = _block_parts(jobs, members, blocks, block_bounds, scales, owner)
        with np.errstate(all="ignore"):  # once for the whole call (the evaluations below are quiet)
            if pkey is not None and counts.get(pkey, 0) >= _STAGE_AFTER:
                try:
                    fn, out = _staged_objective(spec0, space, xs, shared, rows, lanes, so, parts, len(xs))
                except Exception:
                    # X.Unstageable (a node the Stager does not write), or any other error while staging (a
                    # limitation of the Stager, a spec shape its mirror of the evaluator does not handle):
                    # staging only saves time, so it never aborts the search; the layout is marked and
                    # this call (and the next ones of the layout) takes the walk below, which gives the
                    # value, or raises the evaluation's own error with its own message
                    plans[pkey] = _UNSTAGEABLE
                else:
                    plans[pkey] = fn
                    counts.pop(pkey, None)
                    return out
            elif pkey is not None:
                if len(counts) > 4 * _PLANS:
                    counts.clear()
                counts[pkey] = counts.get(pkey, 0) + 1
            return _walk(spec0, space, xs, shared, rows, lanes, so, parts, learning)

    return obj


_UNSTAGEABLE = object()


_STAGE_AFTER = 1  # a layout seen this many times before is staged (a function per layout costs ~1-3 ms)


_PLANS = 512  # staged functions kept per objective


# an objective call with this many rows is split in two halves over two threads. Measured (2026-11-29, 2 cores,
# load 3.5-4.9; each call of >= 1000 rows of `check lemmas` timed both ways in the same process, alternating): the
# report's calls (up to 2304 rows; ~100 numpy calls each, mostly their Python layers, which hold the GIL) took
# more wall time split (0.94 against 0.38 s for 300 calls as they are, 1.05 against 0.82 s at twice their rows)
# and always more CPU (+30-45%); at 4x their rows the two were even in wall time (1.48 against 1.56 s), at 8x
# (~10^4 rows) the split took 16% less (2.40 against 2.85 s). Over the searches of lemmas, corrections and sharper,
# the split's 4837 calls of 512-2304 rows took 6.3 s CPU and 15.6 s wall against 4.8 s and 7.5 s unsplit; on a quiet
# machine (load 1.0-1.6) 5.4 s CPU and 5.4 s wall against 4.4 and 4.5 s (the halves ran one after the other). It was
# 512 when each call cost much more per row (before the staged objective and its kernels).
_SPLIT_ROWS = 8192


def _search_task(state, task):
    """One space's searches for a group of jobs sharing their constants (see search_worst_many)."""
    jobs, spaces, scalars, budget, children = state
    i, members = task
    space = spaces[i]
    return maximize_many(
        _lockstep_objective(jobs, members, space, scalars),
        space.bounds(),
        seeds=[np.random.default_rng(children[j][i]) for j in members],
        maxiter=budget.maxiter,
        popsize=budget.popsize,
    )
