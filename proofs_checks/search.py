"""Maximizing a vectorized objective over a box: scipy's differential evolution (vectorized, a whole
generation per call) followed by Nelder-Mead polishes run in lockstep.

:func:`nelder_mead` is Nelder and Mead's method exactly as ``scipy.optimize.minimize(method=
"Nelder-Mead")`` runs it (same initial simplex, coefficients, order of operations, termination and
count of evaluations), but for several independent problems at once and with the candidate points
of an iteration (reflection, expansion, both contractions) evaluated in one vectorized call. The
iterates and results are those of scipy's; only the number of objective calls drops.

Differential evolution is scipy's solver; its per-member sample selection (one ``Generator.shuffle``
of the population index per trial vector, most of its bookkeeping) runs as one numba pass per
generation on the same PCG64 stream (the Fisher-Yates shuffle numpy runs, drawing through the bit
generator's C ``next_uint32``): the same samples and stream positions, so the same results; the
'best1bin' mutation then takes scipy's steps without its per-candidate loop. Several solvers run in
lockstep (:func:`maximize_many`): stepped generation by generation as scipy's ``solve()`` steps each,
one objective call per generation for all of them (:func:`_de_driven`; threads where scipy's
internals are not the expected ones).
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np
from scipy.optimize import differential_evolution

__all__ = ["nelder_mead", "maximize", "maximize_many"]


def nelder_mead(
    fun, x0s, *, maxfev=None, xatol=1e-4, fatol=1e-4, owners: bool = False, speculate: bool = False, spec_rows=512
):
    """Minimize ``fun`` from each row of ``x0s`` (B, N); ``fun`` maps (M, N) points to (M,) values, by the
    simplex method of Nelder & Mead (1965) in the form analysed by Lagarias, Reeds, Wright & Wright (1998)
    (reflection rho = 1, expansion chi = 2, contractions gamma = 1/2, shrink sigma = 1/2), with the starting
    simplex, stop test and evaluation count of ``scipy.optimize.minimize(method="Nelder-Mead")``.
    With ``owners=True`` the B rows are B different problems: ``fun(points, owner)`` gets the problem
    index of each point as well (one call serves every problem's candidates).

    ``speculate``: a call that evaluates an iteration's candidates also evaluates the candidates of
    every simplex the next iteration can start from (the worst vertex replaced by each candidate that
    can be accepted, at each rank it can take; :func:`_speculate`), when that is at most ``spec_rows``
    rows; the next iteration then finds its candidates' values without a call. The iterates are
    unchanged (the values are those of the same points; a next simplex that was not foreseen, a
    shrink or a tie that sorts otherwise, is simply evaluated), and the calls about halve. Off by
    default: on the claim searches (2-4 problems, N = 4-24) the extra rows cost as much CPU as the calls
    saved (measured: check lemmas' searches at p = 4, 18.7-19.0 s against 17.1-18.0 s of CPU; Lemma 2's
    corrected search 12.2 s against 11.9 s); it pays where an objective's cost is mostly per call.

    Returns a list of ``(x, fval, nfev)`` per row, as scipy's Nelder-Mead with ``maxfev``,
    ``xatol``, ``fatol`` (``maxiter`` unlimited; default ``maxfev`` 200 N) would.
    """
    x0s = np.atleast_2d(np.asarray(x0s, dtype=np.float64))
    B, N = x0s.shape
    if not owners:
        plain = fun

        def fun(pts, own):
            return plain(pts)

    maxfev = 200 * N if maxfev is None else maxfev
    rho, chi, gamma, sigma = 1.0, 2.0, 0.5, 0.5  # Lagarias et al. (1998), eq. (2.1)'s standard choice
    # the starting simplex: x0 and, per coordinate k, x0 with that coordinate stretched by 5 percent (or set
    # to 0.00025 where it is zero); the values scipy starts from, so that the iterates are scipy's
    stretch, at_zero = 1.05, 0.00025
    sims = np.empty((B, N + 1, N))
    for b in range(B):
        sims[b, 0] = x0s[b]
        for k in range(N):
            vertex = np.array(x0s[b], copy=True)
            vertex[k] = stretch * vertex[k] if vertex[k] != 0 else at_zero
            sims[b, k + 1] = vertex
    # initial evaluations: N + 1 per problem (all within maxfev for maxfev >= N + 1)
    n0 = min(N + 1, maxfev)
    fs = np.full((B, N + 1), np.inf)
    vals = np.asarray(fun(sims[:, :n0].reshape(-1, N), np.repeat(np.arange(B), n0)), dtype=np.float64).reshape(B, n0)
    fs[:, :n0] = vals
    ncalls = np.full(B, n0)
    _sort_simplexes(sims, fs, np.arange(B))
    active = np.ones(B, dtype=bool)
    active &= ncalls < maxfev
    cache: list = [None] * B  # per problem: values of the next iteration's possible candidates (speculated)
    kern = None if speculate else _nm_kernels()
    if kern is not None:  # the same iterations with the per-problem bookkeeping compiled (numba)
        prepare, accept, reorder = kern
        idx_buf = np.empty(B, dtype=np.int64)
        cand_buf = np.empty((B, 4, N))
        shrink_buf = np.empty(B, dtype=np.int64)
        while active.any():
            nb = prepare(sims, fs, active, float(xatol), float(fatol), rho, chi, gamma, idx_buf, cand_buf)
            if nb == 0:
                break
            idx = idx_buf[:nb].copy()
            cand = cand_buf[:nb]
            fc = np.asarray(fun(cand.reshape(-1, N), np.repeat(idx, 4)), dtype=np.float64).reshape(nb, 4)
            ns = accept(sims, fs, idx, cand, np.ascontiguousarray(fc), ncalls, maxfev, shrink_buf)
            if ns:
                _shrink(fun, sims, fs, ncalls, shrink_buf[:ns].copy(), maxfev, N, sigma)
            reorder(sims, fs, idx, np.argsort(fs[idx], axis=1))
            active[idx[ncalls[idx] >= maxfev]] = False
        return [(sims[b, 0].copy(), float(np.min(fs[b])), int(ncalls[b])) for b in range(B)]
    while active.any():
        idx = np.flatnonzero(active)
        # termination test, per problem (scipy's: max |x_j - x_0| <= xatol and max |f_0 - f_j| <= fatol);
        # inf - inf gives NaN (the test is then false, as in scipy) without a RuntimeWarning
        with np.errstate(invalid="ignore", over="ignore"):
            conv = (np.max(np.abs(sims[idx, 1:] - sims[idx, :1]), axis=(1, 2)) <= xatol) & (
                np.max(np.abs(fs[idx, :1] - fs[idx, 1:]), axis=1) <= fatol
            )
        active[idx[conv]] = False
        idx = idx[~conv]
        if idx.size == 0:
            break
        cand = _trial_points(sims[idx], N, rho, chi, gamma)  # (b, 4, N)
        fc = np.empty((idx.size, 4))
        if speculate:
            need = []
            for j, b in enumerate(idx):
                c = cache[b]
                cache[b] = None
                if c is not None:  # the simplex that followed is one of those foreseen: same candidates, bit for bit
                    hit = np.flatnonzero((c[0] == cand[j]).all(axis=(1, 2)))
                    if hit.size:
                        fc[j] = c[1][hit[0]]
                        continue
                need.append(j)
            need = np.asarray(need, dtype=np.intp)
        else:
            need = np.arange(idx.size)
        if need.size:
            pts, own = cand[need].reshape(-1, N), np.repeat(idx[need], 4)
            spec = None
            if speculate and need.size * (4 + 4 * len(_spec_maps(N))) <= spec_rows:
                spec = _speculate(sims[idx[need], :N], cand[need], N, rho, chi, gamma)  # (nb, K4, N)
                pts = np.concatenate([pts, spec.reshape(-1, N)])
                own = np.concatenate([own, np.repeat(idx[need], spec.shape[1])])
            vals = np.asarray(fun(pts, own), dtype=np.float64)
            fc[need] = vals[: 4 * need.size].reshape(-1, 4)
            if spec is not None:
                K = spec.shape[1] // 4
                sv = vals[4 * need.size :].reshape(need.size, K, 4)
                sp = spec.reshape(need.size, K, 4, N)
                for jj, j in enumerate(need):
                    cache[idx[j]] = (sp[jj], sv[jj])
        # the acceptance rules (those of proofs_checks._search_kernels.nm_accept, which documents them), for
        # all problems at once
        f_refl, f_exp, f_out, f_in = fc[:, 0], fc[:, 1], fc[:, 2], fc[:, 3]
        f_best, f_next, f_worst = fs[idx, 0], fs[idx, -2], fs[idx, -1]
        room = (maxfev - ncalls[idx]) >= 2  # budget for a second evaluation in this iteration
        ncalls[idx] += 1  # the reflection
        beats_best = f_refl < f_best
        beats_next = ~beats_best & (f_refl < f_next)
        contracting = ~beats_best & ~beats_next & room
        ncalls[idx] += (beats_best & room) | contracting
        use_exp = beats_best & room & (f_exp < f_refl)
        use_refl = (beats_best & room & ~(f_exp < f_refl)) | beats_next
        outward = contracting & (f_refl < f_worst)
        use_out = outward & (f_out <= f_refl)
        use_in = contracting & ~(f_refl < f_worst) & (f_in < f_worst)
        pick = np.where(use_exp, 1, np.where(use_refl, 0, np.where(use_out, 2, 3)))
        rows = np.arange(idx.size)
        new_x = cand[rows, pick]
        new_f = fc[rows, pick]
        repl = use_exp | use_refl | use_out | use_in
        sims[idx[repl], -1] = new_x[repl]
        fs[idx[repl], -1] = new_f[repl]
        shrink = idx[contracting & ~use_out & ~use_in]
        if shrink.size:
            _shrink(fun, sims, fs, ncalls, shrink, maxfev, N, sigma)
        _sort_simplexes(sims, fs, idx)
        active[idx[ncalls[idx] >= maxfev]] = False
    return [(sims[b, 0].copy(), float(np.min(fs[b])), int(ncalls[b])) for b in range(B)]


def _shrink(fun, sims, fs, ncalls, shrink, maxfev, N, sigma):
    """The shrink step (Nelder & Mead 1965; Lagarias et al. 1998, step 5) for the problems ``shrink``:
    every vertex but the best moved towards it by the factor ``sigma`` and evaluated (one call for all of
    them), within each problem's ``maxfev`` as scipy counts it."""
    pts, owners_m = [], []
    for b in shrink:
        avail = maxfev - ncalls[b]
        m = min(N, avail)
        # scipy moves vertex j, then evaluates it; past maxfev the move of the next vertex happens
        # but its evaluation raises, which ends the run
        for jj in range(1, min(N, m + 1) + 1):
            sims[b, jj] = sims[b, 0] + sigma * (sims[b, jj] - sims[b, 0])
        pts.append(sims[b, 1 : 1 + m])
        owners_m.append((b, m))
    allpts = np.concatenate(pts, axis=0)
    own = np.concatenate([np.full(m, b) for b, m in owners_m])
    vals = np.asarray(fun(allpts, own), dtype=np.float64) if allpts.shape[0] else np.empty(0)
    pos = 0
    for b, m in owners_m:
        fs[b, 1 : 1 + m] = vals[pos : pos + m]
        pos += m
        ncalls[b] += m


def _nm_kernels():
    """The numba kernels of the Nelder-Mead bookkeeping (:mod:`proofs_checks._search_kernels`), or None
    without numba (the numpy loop is used then)."""
    if "nm" not in _SELECT:
        try:
            from ._search_kernels import nm_accept, nm_prepare, nm_reorder
        except ImportError:
            _SELECT["nm"] = None
        else:
            _SELECT["nm"] = (nm_prepare, nm_accept, nm_reorder)
    return _SELECT["nm"]


def _sort_simplexes(sims, fs, idx):
    """Each simplex of ``idx`` ordered by its values, as scipy orders one (``numpy.argsort`` of the row)."""
    if idx.size == 0:
        return
    ind = np.argsort(fs[idx], axis=1)
    fs[idx] = np.take_along_axis(fs[idx], ind, axis=1)
    sims[idx] = np.take_along_axis(sims[idx], ind[:, :, None], axis=1)


_SELECT: dict = {}


def _select_kernel():
    """The numba kernel of the generation's sample selection (:mod:`proofs_checks._search_kernels`),
    or None without numba."""
    if "k" in _SELECT:
        return _SELECT["k"]
    try:
        from ._search_kernels import select_many
    except ImportError:
        select_many = None
    _SELECT["k"] = select_many
    return select_many


def _solver_class():
    """scipy's DifferentialEvolutionSolver with the generation's sample selection in one numba pass
    (module docstring), or None where scipy's internals are not the expected ones."""
    if "solver" in _SELECT:
        return _SELECT["solver"]
    try:
        from scipy.optimize._differentialevolution import DifferentialEvolutionSolver as Base
    except ImportError:
        Base = None
    if Base is None or not all(hasattr(Base, a) for a in ("_mutate_many", "_select_samples", "solve")):
        _SELECT["solver"] = None
        return None

    class Solver(Base):
        def _mutate_many(self, candidates):
            rng = self.random_number_generator
            kern = _select_kernel()
            idx = getattr(self, "_random_population_index", None)
            bg = getattr(rng, "bit_generator", None)
            if (
                kern is None
                or callable(self.strategy)
                or type(bg) is not np.random.PCG64
                or idx is None
                or idx.dtype != np.int64
                or not idx.flags.c_contiguous
            ):
                return super()._mutate_many(candidates)
            cands = np.asarray(candidates, dtype=np.int64)
            out = np.empty((cands.size, 5), dtype=np.int64)
            with rng._bit_generator.lock if hasattr(rng, "_bit_generator") else bg.lock:
                if _pcg_inline_ok():  # PCG64 stepped in the kernel: the same words (_pcg_inline_ok checks it)
                    from ._search_kernels import select_many_pcg64

                    select_many_pcg64(_pcg_address(bg), bg.ctypes.state_address, idx, cands, 5, out)
                else:
                    kern(_next_uint32_address(bg), bg.ctypes.state_address, idx, cands, 5, out)
            if self.strategy == "best1bin" and _best1bin is not None:  # scipy's steps, without the per-candidate loop
                return _best1bin(self, cands, out)
            rows = iter(out)
            self._select_samples = lambda candidate, number_samples: next(rows)
            try:
                return super()._mutate_many(candidates)
            finally:
                del self._select_samples

    try:
        from scipy._lib._util import rng_integers
    except ImportError:
        rng_integers = None

    def best1bin(self, candidates, samples):
        """The trial vectors of Storn & Price's (1997) DE/best/1/bin for ``candidates``: the mutant
        v = x_best + F (x_r1 - x_r2) (r1, r2 the first two of ``samples``), then binomial crossover with
        the target (each coordinate from v with probability CR, one coordinate forced from v so the trial
        differs from the target). The draws come from the solver's generator in the order scipy's
        ``_mutate_many`` makes them (forced coordinates, then the uniforms), with the same operations,
        so the trials equal scipy's."""
        rng = self.random_number_generator
        S = len(candidates)
        target = np.copy(self.population[candidates])
        r1, r2 = samples[..., :2].T
        mutant = self.population[0] + self.scale * (self.population[r1] - self.population[r2])
        forced = rng_integers(rng, self.parameter_count, size=S)
        from_mutant = rng.uniform(size=(S, self.parameter_count)) < self.cross_over_probability
        rows = np.arange(S)
        from_mutant[rows, forced[rows]] = True
        return np.where(from_mutant, mutant, target)

    ok = rng_integers is not None and getattr(Base, "_binomial", {}).get("best1bin") == "_best1"
    globals()["_best1bin"] = best1bin if ok else None
    _SELECT["solver"] = Solver
    return Solver


_best1bin = None


def _differential_evolution(fun, bounds, *, _checked: bool = False, **kw):
    """``scipy.optimize.differential_evolution(fun, bounds, **kw)`` with the faster sample selection:
    the same result. scipy's own function where :func:`_solver_verified` does not confirm that
    (``_checked``: skip that check, for the check itself)."""
    Solver = _solver_class()
    if Solver is None or not isinstance(kw.get("seed"), np.random.Generator):
        return differential_evolution(fun, bounds, **kw)
    if not _checked and not _solver_verified():
        return differential_evolution(fun, bounds, **kw)
    import inspect

    params = inspect.signature(Solver.__init__).parameters
    if "seed" not in params and "rng" in params:  # scipy >= 1.15 (the public function maps seed= to rng=)
        kw["rng"] = kw.pop("seed")
    with Solver(fun, bounds, **kw) as solver:
        return solver.solve()


@functools.cache
def _spec_maps(N: int):
    """Row maps of the simplexes that can follow an iteration (module: :func:`nelder_mead`): into the
    N best vertices (0..N-1, sorted) and the trial points of :func:`_trial_points` (N..N+3: reflection,
    expansion, outside and inside contraction), the new point at each rank it can take: the expansion at
    rank 0 (it beat the best); the reflection at 0..N-1 (better than the second worst); either
    contraction at 0..N (better than the worst)."""
    maps = [[N + 1, *range(N)]]
    for q, ranks in ((0, range(N)), (2, range(N + 1)), (3, range(N + 1))):
        for r in ranks:
            maps.append([*range(r), N + q, *range(r, N)])
    return np.asarray(maps)


def _trial_points(simplexes, N, rho, chi, gamma):
    """The four trial points of a Nelder-Mead iteration (Lagarias et al. 1998, steps 2-4) of each simplex
    of ``simplexes`` (M, N + 1, N), sorted best first: with c the centroid of the N best vertices and w the
    worst, reflection c + rho (c - w), expansion c + rho chi (c - w), outside contraction
    c + gamma rho (c - w), inside contraction c - gamma (c - w); (M, 4, N) in that order.
    Written as (1 + a) c - a w and (1 - gamma) c + gamma w, c summed over the vertex axis and divided by N:
    the order of operations of scipy's loop (and of the compiled kernel), which keeps the bits equal."""
    centroid = np.add.reduce(simplexes[:, :-1], 1) / N
    w = simplexes[:, -1]
    return np.stack(
        [
            (1 + rho) * centroid - rho * w,
            (1 + rho * chi) * centroid - rho * chi * w,
            (1 + gamma * rho) * centroid - gamma * rho * w,
            (1 - gamma) * centroid + gamma * w,
        ],
        axis=1,
    )


def _speculate(best, cand, N, rho, chi, gamma):
    """The trial points (:func:`_trial_points`) of every simplex of :func:`_spec_maps`, computed as the
    main loop computes them (same operations, same order: the same bits): (nb, 4 K, N)."""
    maps = _spec_maps(N)
    E = np.concatenate([best, cand], axis=1)  # (nb, N + 4, N)
    S = E[:, maps]  # (nb, K, N + 1, N)
    nb, K = S.shape[:2]
    return _trial_points(S.reshape(nb * K, N + 1, N), N, rho, chi, gamma).reshape(nb, 4 * K, N)


def maximize(objective, bounds, *, seed, maxiter: int, popsize: int, polish_maxfev: int | None = None):
    """Maximize a vectorized ``objective`` ((M, dim) -> (M,)) over the box ``bounds``: differential
    evolution, then a Nelder-Mead polish from its best point (the objective clips to the box).
    Returns ``(x, value, nfev)``."""
    return maximize_many(
        lambda X, owner: objective(X),
        bounds,
        seeds=[seed],
        maxiter=maxiter,
        popsize=popsize,
        polish_maxfev=polish_maxfev,
    )[0]


class _Merge:
    """Objective calls of several solvers, each in its own thread, merged: a call waits until every
    solver still running has posted its rows, then the last one to arrive evaluates them all in one
    ``objective(X, owner)`` call (the value of a row does not depend on the other rows)."""

    def __init__(self, objective, n):
        self.objective = objective
        self.cv = threading.Condition()
        self.pending: dict = {}
        self.results: dict = {}
        self.active = n
        self.error = None

    def _flush(self):
        items = sorted(self.pending.items())
        self.pending = {}
        try:
            X = np.concatenate([x for _, x in items], axis=0)
            own = np.concatenate([np.full(x.shape[0], j) for j, x in items])
            vals = np.asarray(self.objective(X, own), dtype=np.float64)
            pos = 0
            for j, x in items:
                self.results[j] = vals[pos : pos + x.shape[0]]
                pos += x.shape[0]
        except BaseException as exc:  # handed to every waiting solver
            self.error = exc
        self.cv.notify_all()

    def call(self, j, X):
        with self.cv:
            if self.error is not None:
                raise self.error
            self.pending[j] = X
            if len(self.pending) == self.active:
                self._flush()
            while j not in self.results and self.error is None:
                self.cv.wait()
            if self.error is not None:
                raise self.error
            return self.results.pop(j)

    def done(self):
        with self.cv:
            self.active -= 1
            if self.pending and len(self.pending) == self.active:
                self._flush()


def _de_lockstep(objective, bounds, seeds, *, maxiter: int, popsize: int):
    """scipy's differential evolution (vectorized, deferred updating, no polish) for each seed, the
    solvers run in lockstep: one objective call per generation serves every solver's population (each
    solver gets the result it gets alone)."""
    kw = dict(maxiter=maxiter, popsize=popsize, vectorized=True, updating="deferred", polish=False, tol=1e-12)
    if len(seeds) == 1:

        def neg(xT):
            X = np.asarray(xT).T
            return -np.asarray(objective(X, np.zeros(X.shape[0], dtype=np.int64)), dtype=np.float64)

        return [_differential_evolution(neg, bounds, seed=seeds[0], **kw)]
    driven = _de_driven(objective, bounds, seeds, kw)
    if driven is not None:
        return driven
    merge = _Merge(objective, len(seeds))
    out: list = [None] * len(seeds)

    def run(j):
        try:

            def neg(xT):
                return -merge.call(j, np.asarray(xT).T)

            out[j] = _differential_evolution(neg, bounds, seed=seeds[j], **kw)
        except BaseException as exc:
            out[j] = exc
        finally:
            merge.done()

    threads = [threading.Thread(target=run, args=(j,), name=f"lptheory-de-{j}") for j in range(len(seeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return out


def _de_driven(objective, bounds, seeds, kw, *, _checked: bool = False):
    """The lockstep of :func:`_de_lockstep` without threads: scipy's solvers (the class of
    :func:`_solver_class`) stepped generation by generation as ``solve()`` and ``__next__`` step them
    (deferred updating, no constraints), each generation's trial populations evaluated in one call.
    Each solver calls its own methods in scipy's order (the same draws from its generator, the same
    arithmetic), so it ends where it ends alone. None where scipy's internals are not the expected ones
    or :func:`_lockstep_verified` finds that they no longer step as scipy does (the threaded lockstep,
    scipy's own ``solve()`` per solver, is used then). ``_checked``: skip that check (the check itself)."""
    Solver = _solver_class()
    if Solver is None or not all(isinstance(r, np.random.Generator) for r in seeds):
        return None
    if not _checked and not _lockstep_verified():
        return None
    import inspect

    need = (
        "_calculate_population_feasibilities",
        "_calculate_population_energies",
        "_promote_lowest_energy",
        "_ensure_constraint",
        "_scale_parameters",
        "_accept_trial",
        "_result",
        "converged",
    )
    if not all(hasattr(Solver, a) for a in need):
        return None
    params = inspect.signature(Solver.__init__).parameters
    key = "rng" if ("seed" not in params and "rng" in params) else "seed"
    try:
        from scipy.optimize._optimize import _status_message
    except ImportError:
        return None
    states = [r.bit_generator.state for r in seeds]  # given back if this path does not apply
    held: list = [None] * len(seeds)
    solvers = []
    try:
        for j, rng in enumerate(seeds):

            def fun(xT, j=j):  # the values of this solver's rows, evaluated with every other solver's
                return held[j]

            solvers.append(Solver(fun, bounds, **{**kw, key: rng}))
        for sv in solvers:
            if (
                getattr(sv, "_updating", None) != "deferred"
                or not getattr(sv, "vectorized", False)
                or getattr(sv, "_wrapped_constraints", True)
                or np.isfinite(sv.maxfun)
            ):
                for r, st in zip(seeds, states):
                    r.bit_generator.state = st
                return None

        def evaluate(parts, stacked=None):
            """``parts``: (j, population in [0, 1]) -> held[j], the solver's energies (-objective).
            ``stacked``: the populations of ``parts`` as one (J, NP, dim) array (one population size), scaled
            to the box by one solver's ``_scale_parameters`` for all: every solver here has the same bounds
            (so the same element-wise affine map and no integrality), the same values as per solver; the
            energies are returned as (J, NP)."""
            if stacked is not None:
                J, NP, dim = stacked.shape
                flat = stacked.reshape(J * NP, dim)
                if scaler is not None:  # scipy's _scale_parameters in one compiled pass (checked: _scaler)
                    X = scaler[0](flat, scaler[1], scaler[2], np.empty_like(flat))
                else:
                    X = solvers[parts[0][0]]._scale_parameters(flat)
                own = np.repeat(np.asarray([j for j, _ in parts]), NP)
                vals = -np.asarray(objective(X, own), dtype=np.float64)
                for t, (j, _) in enumerate(parts):
                    held[j] = vals[t * NP : (t + 1) * NP]
                return vals.reshape(J, NP)
            parts = [(j, sv_pop) for j, sv_pop in parts if len(sv_pop)]
            if not parts:
                return
            X = np.concatenate([solvers[j]._scale_parameters(pop) for j, pop in parts], axis=0)
            own = np.concatenate([np.full(len(pop), j) for j, pop in parts])
            vals = -np.asarray(objective(X, own), dtype=np.float64)
            pos = 0
            for j, pop in parts:
                held[j] = vals[pos : pos + len(pop)]
                pos += len(pop)

        batch = _batched_selection(solvers)  # the generation's sample selections of all solvers in one call
        scaler = _scaler(solvers[0]) if batch is not None else None
        # solve(): the initial energies
        init = [j for j, sv in enumerate(solvers) if np.all(np.isinf(sv.population_energies))]
        for j in init:
            sv = solvers[j]
            sv.feasible, sv.constraint_violation = sv._calculate_population_feasibilities(sv.population)
        evaluate([(j, solvers[j].population[solvers[j].feasible]) for j in init])
        for j in init:
            sv = solvers[j]
            sv.population_energies[sv.feasible] = sv._calculate_population_energies(sv.population[sv.feasible])
            sv._promote_lowest_energy()
        maxiter = kw["maxiter"]
        status = [None] * len(solvers)  # (nit, message, warning_flag) once a solver stops
        for nit in range(1, maxiter + 1):
            live = [j for j in range(len(solvers)) if status[j] is None]
            if not live:
                break
            trials = {}
            if batch is not None:  # the whole generation at once (each solver's draws in its own order)
                _generation_batched(solvers, live, batch, evaluate, held, status, nit, _status_message)
                continue
            for j in live if batch is None else ():  # __next__, deferred updating, up to the objective's call
                sv = solvers[j]
                if sv.dither is not None:
                    sv.scale = sv.random_number_generator.uniform(sv.dither[0], sv.dither[1])
                trial = sv._mutate_many(np.arange(sv.num_population_members))
                sv._ensure_constraint(trial)
                trials[j] = trial
            # without constraints every trial is feasible (feasible stays all True, the violations 0), so
            # _calculate_population_energies gives the values as they are (one vectorized call: nfev + 1),
            # _accept_trial is energy <= energy, and _promote_lowest_energy swaps the argmin into row 0
            evaluate(list(trials.items()))
            for j, trial in trials.items():  # __next__ from the call on
                sv = solvers[j]
                energies = np.array(held[j], dtype=np.float64)
                sv._nfev += 1
                loc = energies <= sv.population_energies
                sv.population = np.where(loc[:, np.newaxis], trial, sv.population)
                pe = sv.population_energies = np.where(loc, energies, sv.population_energies)
                best = int(np.argmin(pe))
                if best:
                    pe[[0, best]] = pe[[best, 0]]
                    sv.population[[0, best], :] = sv.population[[best, 0], :]
                # solve()'s test after each generation (converged())
                if not np.any(np.isinf(pe)) and np.std(pe) <= sv.atol + sv.tol * np.abs(np.mean(pe)):
                    status[j] = (nit, _status_message["success"], False)
        return [
            sv._result(nit=nit, message=msg, warning_flag=warn)
            for sv, (nit, msg, warn) in (
                (sv, status[j] or (maxiter, _status_message["maxiter"], True)) for j, sv in enumerate(solvers)
            )
        ]
    finally:
        for sv in solvers:
            sv.__exit__(None, None, None)


def _scaler(sv):
    """``(kernel, centres, widths)`` for :func:`proofs_checks._search_kernels.scale_rows`, which replaces the
    solver's ``_scale_parameters`` in :func:`_de_driven`'s stacked evaluations (the same operations in one pass:
    check lemmas' 5776 generations called scipy's three numpy operations on up to 2304 x 12 values), or None (then
    scipy's own method is called): no numba, integer parameters, scipy's private centres and widths not found as
    expected, or the kernel not giving scipy's bits on the solver's initial population (checked per solver set)."""
    try:
        from ._search_kernels import scale_rows
    except ImportError:
        return None
    a1 = getattr(sv, "_DifferentialEvolutionSolver__scale_arg1", None)
    a2 = getattr(sv, "_DifferentialEvolutionSolver__scale_arg2", None)
    integ = getattr(sv, "integrality", None)
    pop = getattr(sv, "population", None)
    if any(a is None for a in (a1, a2, integ, pop)) or np.count_nonzero(integ):
        return None
    dim = pop.shape[-1]
    if not all(type(a) is np.ndarray and a.dtype == np.float64 and a.shape == (dim,) for a in (a1, a2)):
        return None
    a1, a2 = np.ascontiguousarray(a1), np.ascontiguousarray(a2)
    probe = np.ascontiguousarray(pop, dtype=np.float64)
    with np.errstate(all="ignore"):
        got = scale_rows(probe, a1, a2, np.empty_like(probe))
        ok = np.array_equal(got, sv._scale_parameters(probe), equal_nan=True)
    return (scale_rows, a1, a2) if ok else None


# scipy versions (major, minor) whose differential evolution the stepping of _de_driven and
# _generation_batched was compared with bit for bit (tests/test_search.py); pyproject pins scipy to >= 1.10,
# < the next minor version after the newest of them (test_the_scipy_pin_covers_the_verified_versions).
# On any other version the threaded lockstep (scipy's own solve()) is used: the same results, slower.
_DE_VERIFIED_SCIPY = ((1, 17),)
_VERIFY_LOCK = threading.Lock()


def _scipy_version_verified(version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed ``scipy.__version__``) is one of ``_DE_VERIFIED_SCIPY``."""
    if version is None:
        import scipy

        version = scipy.__version__
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) in _DE_VERIFIED_SCIPY


def _lockstep_verified() -> bool:
    """Whether :func:`_de_driven` may step scipy's solvers itself (decided once per process, under a lock):
    the installed scipy is a verified version (``_DE_VERIFIED_SCIPY``), and a small lockstep of two solvers
    (4 generations, bounds repair included) ends bit for bit where scipy's own
    ``differential_evolution`` ends each one alone (x, energies, population, counts and the generator's
    state). It re-implements scipy's generation on private solver attributes, so a scipy change in the
    order of draws or operations turns the stepping off here instead of changing results."""
    return _verified_once("lockstep_ok", _lockstep_probe)


def _solver_verified() -> bool:
    """Whether :func:`_differential_evolution` may use the solver class of :func:`_solver_class` (its
    sample selection and DE/best/1/bin trials replace scipy's private ``_mutate_many``): decided once per
    process, under a lock, as :func:`_lockstep_verified` decides (a verified scipy version, and one small
    run, bounds repair included, equal bit for bit to scipy's ``differential_evolution``: x, energies,
    population, counts and the generator's state)."""
    return _verified_once("solver_ok", _solver_probe)


def _verified_once(key, probe) -> bool:
    """A verified scipy version and ``probe()`` true, decided once per process under a lock and kept in
    ``_SELECT[key]``; a probe that raises (a changed scipy internal) counts as not verified."""
    with _VERIFY_LOCK:
        if key not in _SELECT:
            try:
                ok = _scipy_version_verified() and probe()
            except Exception:  # a changed internal that raises: not verified
                ok = False
            _SELECT[key] = bool(ok)
        return _SELECT[key]


def _same_de_result(got, ref) -> bool:
    """Two differential-evolution results equal bit for bit (x, value, counts, population, energies)."""
    return bool(
        np.array_equal(got.x, ref.x)
        and got.fun == ref.fun
        and (got.nfev, got.nit) == (ref.nfev, ref.nit)
        and np.array_equal(getattr(got, "population", 0), getattr(ref, "population", 0))
        and np.array_equal(getattr(got, "population_energies", 0), getattr(ref, "population_energies", 0))
    )


def _solver_probe() -> bool:
    """The comparison of :func:`_solver_verified`: True when it holds bit for bit."""
    kw = dict(maxiter=4, popsize=6, vectorized=True, updating="deferred", polish=False, tol=1e-12)

    def f(xT):
        X = np.asarray(xT).T
        return np.sum(np.abs(X - 0.3), axis=1) - 0.2 * np.sin(5 * X[:, 0])

    ga, gb = np.random.default_rng(103), np.random.default_rng(103)
    ours = _differential_evolution(f, [(-1.0, 1.0)] * 3, seed=ga, _checked=True, **kw)
    ref = differential_evolution(f, [(-1.0, 1.0)] * 3, seed=gb, **kw)
    return _same_de_result(ours, ref) and ga.bit_generator.state == gb.bit_generator.state


def _lockstep_probe() -> bool:
    """The comparison of :func:`_lockstep_verified`: True when it holds bit for bit."""
    bounds = [(-1.0, 1.0)] * 3
    kw = dict(maxiter=4, popsize=6, vectorized=True, updating="deferred", polish=False, tol=1e-12)

    def objective(X, own):
        return -np.sum(np.abs(X - 0.3 + 0.1 * own[:, None]), axis=1) + 0.2 * np.sin(5 * X[:, 0])

    seeds = (101, 102)
    ours_rngs = [np.random.default_rng(s) for s in seeds]
    ours = _de_driven(objective, bounds, ours_rngs, kw, _checked=True)
    if ours is None:
        return False
    for j, s in enumerate(seeds):
        rng = np.random.default_rng(s)
        ref = differential_evolution(
            lambda xT, j=j: -objective(np.asarray(xT).T, np.full(np.shape(xT)[1], j)), bounds, seed=rng, **kw
        )
        if not (_same_de_result(ours[j], ref) and ours_rngs[j].bit_generator.state == rng.bit_generator.state):
            return False
    return True


def _generation_batched(solvers, live, batch, evaluate, held, status, nit, messages):
    """One generation of differential evolution, DE/best/1/bin (Storn & Price 1997), for the solvers
    ``live`` of :func:`_de_driven` (deferred updating: the whole generation's trials are built from the
    old population, then each replaces its target where it is not worse; one population size), their
    arrays stacked. Per member: the mutant x_best + F (x_r1 - x_r2), binomial crossover with the target
    (one coordinate forced from the mutant), out-of-bounds trials repaired by the solver, trials that do
    not lose to their targets kept, the best member moved to row 0, and scipy's convergence test
    (std(energies) <= atol + tol |mean(energies)|). Each solver's draws come from its own generator in the
    order scipy makes them (dither; the samples; forced coordinates and crossover uniforms; the repair's
    uniforms) and the arithmetic is the same per member, so each solver goes where scipy takes it alone;
    :func:`_batched_generation_ok` checks that at first use."""
    svs = [solvers[j] for j in live]
    P = np.stack([sv.population for sv in svs])  # (J, NP, dim)
    if batch.inline and _generation_inline_ok():
        trial = _trials_inline(svs, live, batch, P)
    else:
        trial = _trials_numpy(svs, live, batch, P)
    E = evaluate([(j, trial[t]) for t, j in enumerate(live)], stacked=trial)  # (J, NP) energies, held[j] set
    PE = np.stack([sv.population_energies for sv in svs])
    kern = _accept_kernel()
    if kern is not None and E.dtype == np.float64 and E.shape == PE.shape:  # P and PE are this call's own copies
        kern(P, PE, trial, np.ascontiguousarray(E))
    else:
        P, PE = _accept_numpy(P, PE, trial, E)
    anyinf = np.any(np.isinf(PE), axis=1)
    std, mean = np.std(PE, axis=1), np.mean(PE, axis=1)  # per row numpy's bits of np.std(pe), np.mean(pe)
    for t, (j, sv) in enumerate(zip(live, svs)):
        sv._nfev += 1
        sv.population, sv.population_energies = P[t], PE[t]
        if not anyinf[t] and std[t] <= sv.atol + sv.tol * np.abs(mean[t]):  # solve()'s converged()
            status[j] = (nit, messages["success"], False)


def _accept_numpy(P, PE, trial, E):
    """The selection of :func:`_generation_batched` in numpy: each trial kept where its energy is not above its
    target's (``E <= PE``), then per solver the member of least energy (numpy's argmin) swapped into row 0;
    the new (P, PE)."""
    loc = E <= PE
    P = np.where(loc[..., None], trial, P)
    PE = np.where(loc, E, PE)
    best = np.argmin(PE, axis=1)
    for t in np.flatnonzero(best):
        b = int(best[t])
        PE[t, [0, b]] = PE[t, [b, 0]]
        P[t, [0, b], :] = P[t, [b, 0], :]
    return P, PE


def _accept_kernel():
    """:func:`proofs_checks._search_kernels.accept_generation` (:func:`_accept_numpy` in place, one pass: the same
    values moved, no arithmetic; measured: 16 x 144 x 12 populations 176 -> 17 us, 10 x 96 x 8 89 -> 5 us:
    numpy's where over 12-wide rows and the swaps' fancy indexing), or None without numba."""
    if "accept" not in _SELECT:
        try:
            from ._search_kernels import accept_generation
        except ImportError:
            accept_generation = None
        _SELECT["accept"] = accept_generation
    return _SELECT["accept"]


def _trials_numpy(svs, live, batch, P):
    """The draws and trial vectors of one generation of the solvers ``svs`` (``live`` in ``batch``), each
    solver's draws from its own generator through numpy and scipy, in scipy's order (dither; the samples;
    forced coordinates and crossover uniforms; the repair's uniforms): the trials, (J, NP, dim), repaired."""
    from scipy._lib._util import rng_integers

    for sv in svs:
        if sv.dither is not None:
            sv.scale = sv.random_number_generator.uniform(sv.dither[0], sv.dither[1])
    samples = batch(live)[np.asarray(live)]  # (J, NP, 5)
    J, NP, dim = P.shape
    forced = np.empty((J, NP), dtype=np.int64)
    cross = np.empty((J, NP, dim))
    for t, sv in enumerate(svs):  # the crossover's draws (after the samples)
        rng = sv.random_number_generator
        forced[t] = rng_integers(rng, sv.parameter_count, size=NP)
        cross[t] = rng.uniform(size=(NP, dim))
    scale = np.array([sv.scale for sv in svs], dtype=np.float64)
    cr = np.array([sv.cross_over_probability for sv in svs], dtype=np.float64)
    kern = _trials_kernel()
    if kern is not None:  # the same element-wise operations in one compiled pass (best1bin_trials)
        trial = np.empty_like(P)
        oob = kern(P, np.ascontiguousarray(samples), scale, forced, cross, cr, trial)
    else:
        jj = np.arange(J)[:, None]
        mutant = P[:, 0:1, :] + scale[:, None, None] * (P[jj, samples[..., 0]] - P[jj, samples[..., 1]])
        from_mutant = cross < cr[:, None, None]
        from_mutant[jj, np.arange(NP)[None, :], forced] = True
        trial = np.where(from_mutant, mutant, P)
        oob = np.count_nonzero((trial > 1) | (trial < 0), axis=(1, 2))
    for t in np.flatnonzero(oob):  # scipy's repair (its draws only where a component is out of bounds)
        svs[t]._ensure_constraint(trial[t])
    return trial


def _trials_inline(svs, live, batch, P):
    """:func:`_trials_numpy` in one numba call for all the solvers
    (:func:`proofs_checks._search_kernels.generation_pcg64`: each PCG64 stepped in the kernel, every draw of
    the generation in scipy's order): the same words, trials and generator states, without the ~4 numpy calls
    and their Python layers per solver and generation (check lemmas' trials: 1.6-1.9 -> 1.1-1.2 s of CPU)."""
    import contextlib

    from ._search_kernels import generation_pcg64

    J, NP, dim = P.shape
    which = np.asarray(live, dtype=np.int64)
    # (a dithered solver's factor is drawn in the kernel: its attribute may still hold the dither's bounds)
    scale = np.array([sv.scale if sv.dither is None else 0.0 for sv in svs], dtype=np.float64)
    cr = np.array([sv.cross_over_probability for sv in svs], dtype=np.float64)
    samples = np.empty((J, NP, 5), dtype=np.int64)
    trial = np.empty_like(P)
    oob = np.empty(J, dtype=np.int64)
    with contextlib.ExitStack() as stack:
        for j in live:
            stack.enter_context(batch.locks[j])
        generation_pcg64(batch.fns, batch.sts, batch.idx, which, batch.dither, P, cr, 5, samples, scale, trial, oob)
    for t, sv in enumerate(svs):
        if sv.dither is not None:
            sv.scale = float(scale[t])
    return trial


def _generation_inline_ok() -> bool:
    """Whether :func:`_trials_inline` (every draw of a generation in one kernel) gives what
    :func:`_trials_numpy` gives through numpy and scipy: decided once per process, under a lock, by both on
    two copies of the same solvers (with and without dither, a kept 32-bit half and none, one coordinate
    and several, several generations, out-of-bounds trials repaired), comparing the trials, the samples'
    shuffled indices, the mutation factors and the generators' states bit for bit. Anything else (a scipy or
    numpy that draws otherwise) leaves the numpy path in use: the same results, slower."""
    with _PCG_LOCK:
        if "generation_inline" not in _SELECT:
            try:
                ok = _pcg_inline_ok_unlocked() and _generation_inline_probe()
            except Exception:  # a changed internal: not verified
                ok = False
            _SELECT["generation_inline"] = bool(ok)
        return _SELECT["generation_inline"]


# the cases of _generation_inline_probe: (seed, dim, popsize, mutation, 32-bit words drawn first, solvers, the live
# solvers of each generation)
_GENERATION_PROBE = (
    (21, 1, 5, (0.5, 1.0), 0, 2, ([0, 1], [1], [0, 1])),
    (22, 3, 6, 0.7, 1, 2, ([0, 1], [1], [0, 1])),
    (23, 7, 4, (0.5, 1.0), 3, 2, ([0, 1], [1], [0, 1])),
    (24, 12, 5, (0.9, 1.9), 2, 2, ([0, 1], [1], [0, 1])),
)


def _generation_inline_probe(cases=_GENERATION_PROBE) -> bool:
    """The comparison of :func:`_generation_inline_ok`: True when it holds bit for bit on every case of ``cases``
    (solver j of a case draws ``pre + j`` 32-bit words first: odd counts leave a kept half; each generation
    starts from the last one's trials stretched out of [0, 1] in places, so that the next trials need repairs)."""
    import inspect

    from ._search_kernels import select_batch_pcg64

    Solver = _solver_class()
    if Solver is None:
        return False
    params = inspect.signature(Solver.__init__).parameters
    key = "rng" if ("seed" not in params and "rng" in params) else "seed"
    for seed, dim, popsize, mutation, pre, n_solvers, lives in cases:
        sides = []
        for _ in range(2):
            svs = []
            for j in range(n_solvers):
                g = np.random.default_rng([seed, j])
                kw = dict(maxiter=3, popsize=popsize, vectorized=True, updating="deferred", polish=False)
                sv = Solver(
                    lambda xT: np.zeros(np.shape(xT)[-1]), [(-1.0, 1.0)] * dim, mutation=mutation, **kw, **{key: g}
                )
                g.integers(0, 9, size=pre + j, dtype=np.int32)
                svs.append(sv)
            sides.append((svs, _BatchSelect(select_batch_pcg64, svs, inline=True)))
        try:
            for live in lives:
                got = []
                for (svs, batch), fn in zip(sides, (_trials_numpy, _trials_inline)):
                    use = [svs[j] for j in live]
                    got.append(fn(use, live, batch, np.stack([sv.population for sv in use])))
                    for t, sv in enumerate(use):
                        sv.population = got[-1][t] * 1.7 - 0.35
                (a, ba), (b, bb) = sides
                if not (np.array_equal(got[0], got[1]) and np.array_equal(ba.idx, bb.idx)):
                    return False
                for sa, sb in zip(a, b):
                    if sa.scale != sb.scale or sa.random_number_generator.bit_generator.state != (
                        sb.random_number_generator.bit_generator.state
                    ):
                        return False
        finally:
            for svs, _ in sides:
                for sv in svs:
                    sv.__exit__(None, None, None)
    return True


def _trials_kernel():
    """The numba kernel :func:`proofs_checks._search_kernels.best1bin_trials`, or None without numba."""
    if "trials" not in _SELECT:
        try:
            from ._search_kernels import best1bin_trials
        except ImportError:
            best1bin_trials = None
        _SELECT["trials"] = best1bin_trials
    return _SELECT["trials"]


class _BatchSelect:
    """The sample selection of DE/best/1/bin (Storn & Price 1997: distinct members other than the target)
    for several solvers of one population size in one numba call per generation
    (:func:`proofs_checks._search_kernels.select_batch`): the solvers' population indices become rows of one
    array (each solver keeps its row as its index), each solver draws from its own PCG64."""

    def __init__(self, kern, solvers, inline: bool = False):
        self.kern, self.solvers = kern, solvers
        n = solvers[0].num_population_members
        self.idx = np.stack([sv._random_population_index for sv in solvers])
        for j, sv in enumerate(solvers):
            sv._random_population_index = self.idx[j]
        bgs = [sv.random_number_generator.bit_generator for sv in solvers]
        self.locks = [bg.lock for bg in bgs]
        # the kernel's first argument: each generator's next_uint32, or (``inline``: select_batch_pcg64, which
        # steps PCG64 itself) the address of its pcg64_random_t
        first = _pcg_address if inline else _next_uint32_address
        self.fns = np.array([first(bg) for bg in bgs], np.uint64)
        self.sts = np.array([bg.ctypes.state_address for bg in bgs], dtype=np.uint64)
        self.cands = np.arange(n, dtype=np.int64)
        self.out = np.empty((len(solvers), n, 5), dtype=np.int64)
        self.inline = bool(inline)
        # per solver (low, high - low, on): its dithered mutation factor's uniform (generation_pcg64)
        self.dither = np.array(
            [
                (sv.dither[0], sv.dither[1] - sv.dither[0], 1.0) if sv.dither is not None else (0.0, 0.0, 0.0)
                for sv in solvers
            ],
            dtype=np.float64,
        ).reshape(len(solvers), 3)

    def __call__(self, live):
        import contextlib

        with contextlib.ExitStack() as stack:
            for j in live:
                stack.enter_context(self.locks[j])
            self.kern(self.fns, self.sts, self.idx, np.asarray(live, dtype=np.int64), self.cands, 5, self.out)
        return self.out


def _batched_selection(solvers):
    """A :class:`_BatchSelect` for ``solvers`` when each one's ``_mutate_many`` would take the fast
    'best1bin' path with the same population size (PCG64, a contiguous int64 index), else None."""
    try:
        from ._search_kernels import select_batch, select_batch_pcg64
    except ImportError:
        return None
    if _best1bin is None or not solvers:
        return None
    n = solvers[0].num_population_members
    for sv in solvers:
        idx = getattr(sv, "_random_population_index", None)
        bg = getattr(sv.random_number_generator, "bit_generator", None)
        if (
            sv.strategy != "best1bin"
            or type(bg) is not np.random.PCG64
            or idx is None
            or idx.dtype != np.int64
            or idx.shape != (n,)
            or sv.num_population_members != n
        ):
            return None
    if _pcg_inline_ok():  # the same words from the same states, without a call per word (20-25% faster)
        return _BatchSelect(select_batch_pcg64, solvers, inline=True)
    return _BatchSelect(select_batch, solvers)


def _next_uint32_address(bg) -> int:
    """The address of the C function ``next_uint32`` of the bit generator ``bg``."""
    return ctypes.cast(bg.ctypes.next_uint32, ctypes.c_void_p).value


def _pcg_address(bg) -> int:
    """The address of the ``pcg64_random_t`` of numpy's PCG64 ``bg``: the pointer that opens its
    ``pcg64_state`` (numpy's pcg64.h)."""
    return ctypes.c_void_p.from_address(bg.ctypes.state_address).value


_PCG_LOCK = threading.Lock()


def _pcg_inline_ok() -> bool:
    """Whether :func:`proofs_checks._search_kernels.select_many_pcg64` (PCG64 stepped in the kernel) draws
    what :func:`~proofs_checks._search_kernels.select_many` draws through numpy's own ``next_uint32``:
    decided once per process, under a lock, by running both on two generators in the same state (a kept
    32-bit half and none, several generations of two population sizes) and comparing the samples, the
    shuffled indices and the generators' states (128-bit state, increment, kept half) bit for bit. A numpy
    whose PCG64 stores its state otherwise (an emulated 128-bit type, another layout) fails it, and the
    function-pointer kernel is used: the same results, slower."""
    with _PCG_LOCK:  # not _VERIFY_LOCK: the lockstep's own check (which holds that one) comes here
        return _pcg_inline_ok_unlocked()


def _pcg_inline_ok_unlocked() -> bool:
    """:func:`_pcg_inline_ok` with ``_PCG_LOCK`` already held."""
    if "pcg_inline" not in _SELECT:
        try:
            ok = _pcg_inline_probe()
        except Exception:  # a layout or internal that differs: not verified
            ok = False
        _SELECT["pcg_inline"] = bool(ok)
    return _SELECT["pcg_inline"]


def _pcg_inline_probe() -> bool:
    """The comparison of :func:`_pcg_inline_ok`: True when it holds bit for bit."""
    from ._search_kernels import select_many, select_many_pcg64

    for seed, n, pre in ((11, 7, 0), (12, 30, 1), (13, 61, 3)):
        ga, gb = np.random.default_rng(seed), np.random.default_rng(seed)
        for g in (ga, gb):
            g.integers(0, 2**31, size=pre, dtype=np.int32)  # odd counts of 32-bit draws leave a kept half
            if type(g.bit_generator) is not np.random.PCG64:
                return False
        ia, ib = np.arange(n, dtype=np.int64), np.arange(n, dtype=np.int64)
        cands = np.arange(n, dtype=np.int64)
        oa, ob = np.zeros((n, 5), dtype=np.int64), np.zeros((n, 5), dtype=np.int64)
        bga, bgb = ga.bit_generator, gb.bit_generator
        for _ in range(3):
            with bga.lock, bgb.lock:
                select_many(_next_uint32_address(bga), bga.ctypes.state_address, ia, cands, 5, oa)
                select_many_pcg64(_pcg_address(bgb), bgb.ctypes.state_address, ib, cands, 5, ob)
            if not (np.array_equal(ia, ib) and np.array_equal(oa, ob) and bga.state == bgb.state):
                return False
        if ga.random() != gb.random():
            return False
    return True


try:  # what np.clip(X, lo, hi) calls for float arrays (numpy 2), without its Python layers: the same values
    from numpy._core.umath import clip as _clip
except ImportError:
    _clip = np.clip


def maximize_many(objective, bounds, *, seeds, maxiter: int, popsize: int, polish_maxfev: int | None = None):
    """:func:`maximize` for ``len(seeds)`` problems on one box at once: ``objective(X, owner)`` gives
    the value of each row of ``X`` for problem ``owner[i]``. Differential evolution runs per problem
    (scipy's), the problems' generations in lockstep (one call per generation for all of them); the
    Nelder-Mead polishes run in lockstep too, every problem's candidates in one call. Each problem's
    result is the one :func:`maximize` gives it alone (the objective's value at a point must not
    depend on the other rows of the call).
    Returns a list of ``(x, value, nfev)``."""
    lo = np.array([b[0] for b in bounds], dtype=np.float64)
    hi = np.array([b[1] for b in bounds], dtype=np.float64)
    des = _de_lockstep(objective, bounds, seeds, maxiter=maxiter, popsize=popsize)
    dim = lo.size
    polished = nelder_mead(
        lambda X, own: -np.asarray(objective(_clip(X, lo, hi), own), dtype=np.float64),
        np.stack([r.x for r in des]),
        maxfev=polish_maxfev or 200 * dim,
        xatol=1e-12,
        fatol=1e-14,
        owners=True,
    )
    xs = np.stack([np.clip(xl, lo, hi) if fl < r.fun else r.x for (xl, fl, _), r in zip(polished, des)])
    vals = np.asarray(objective(xs, np.arange(len(seeds))), dtype=np.float64)
    return [(xs[j], float(vals[j]), int(r.nfev + nl)) for j, ((_, _, nl), r) in enumerate(zip(polished, des))]
