"""Sweeps: a grid of simulator cells (optimizer x p x problem x noise x batch x T x seed ...) run on Dask,
with tidy results in Parquet, one file per cell, cached and resumable (``lptheory sweep CONFIG.toml``).

Config (TOML). Sections give the fixed values, ``[grid]`` the swept ones (lists), by dotted key::

    [sweep]                 name, rows = "final" | "all", metrics = [...], max_cells
    [problem]               name = "separable", d = 4, ... (the problem class's arguments)
    [noise]                 name = "rademacher", sigma = 0.2, profile = "flat"
    [oracle]                batch = 1 (or "T": n_t = T, Theorem 1's batch)
    [optimizer]             name = "lp-descent", lr = 0.01 (or "theorem1"), any hyper-parameter
    [sim]                   steps, replicates, seed, record_every, backend, device, dtype
    [grid]                  "optimizer.name" = [...], p = [...], "sim.steps" = [...], ...
    [plot]                  x, y, hue, col, theory_slope (defaults of ``lptheory plot``)

``p`` is the geometry of the cell: it sets the optimizer's ``p`` where the optimizer has one and the
exponent the gradient norm is measured in (``grad_pstar`` = ||grad f||_{p*}^{p*}). A key that does
not apply to a cell's optimizer is dropped from that cell (cells that become equal run once).

Each cell is a pure function of its parameters (:func:`run_cell`: one vectorized ``simulate`` with one
random stream per replicate), so a cell's rows are the same bits wherever it runs; its hash names its
Parquet file, which is written under a temporary name and renamed (a crash never leaves a partial
file), and a cell whose file exists is not recomputed. Rows: one per (cell, recorded step, metric),
with the mean over replicates, its Student-t interval, the standard deviation and counts, the cell's
parameters as columns and provenance columns (config hash, cell hash, seed, versions, git commit,
backend, device, date).
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import os
import time

import numpy as np

from lptheory.progress import StepProgress, is_terminal

__all__ = ["SweepConfigError", "SweepError", "load_config", "cells", "run_cell", "run_sweep", "read_results"]

SECTIONS = ("sweep", "problem", "noise", "oracle", "optimizer", "sim", "grid", "plot")
SIM_KEYS = {
    "steps": int,
    "replicates": int,
    "seed": int,
    "record_every": int,
    "backend": str,
    "device": str,
    "dtype": str,
}
NOISE_KEYS = {"name": str, "sigma": float, "profile": str}
METRICS = ("f", "gap", "grad_pstar", "grad_2")
DEFAULTS = {
    "p": 3.0,
    "problem.name": "separable",
    "noise.name": "rademacher",
    "noise.sigma": 0.1,
    "noise.profile": "flat",
    "oracle.batch": 1,
    "optimizer.name": "lp-descent",
    "sim.steps": 256,
    "sim.replicates": 16,
    "sim.seed": 0,
    "sim.record_every": 1,
    "sim.backend": "numpy",
}
MAX_CELLS = 100_000


class SweepConfigError(ValueError):
    """A bad sweep configuration; the message names the key."""


class SweepError(RuntimeError):
    """A sweep that cannot go on (corrupt output, unreachable scheduler, ...)."""


# ---------------------------------------------------------------------------------------------------
# configuration


def load_config(path: str) -> dict:
    """Read and validate a sweep config (TOML); returns ``{"base", "grid", "sweep", "plot", "hash"}``."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    if os.path.isdir(path):
        raise SweepConfigError(f"{path}: a directory, not a config file")
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_CONFIG + 1)
        if len(data) > _MAX_CONFIG:
            raise SweepConfigError(f"{path}: larger than {_MAX_CONFIG} bytes (not a sweep config)")
        raw = tomllib.loads(data.decode("utf-8"))
    except FileNotFoundError:
        raise SweepConfigError(f"{path}: no such config file") from None
    except UnicodeDecodeError as exc:
        raise SweepConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); a TOML file is UTF-8"
        ) from None
    except OSError as exc:
        raise SweepConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except RecursionError:
        raise SweepConfigError(f"{path}: nested too deeply to read (not a sweep config)") from None
    except tomllib.TOMLDecodeError as exc:
        raise SweepConfigError(f"{path}: not valid TOML ({exc})") from None
    if not raw:  # an empty file (or only comments) is no sweep: a wrong path, not a one-cell run of the defaults
        raise SweepConfigError(f"{path}: empty (no [sweep], [grid] or other section; see examples/sweeps/)")
    return parse_config(raw)


_MAX_CONFIG = 16 * 1024 * 1024  # bytes: a sweep config is a few lines (and /dev/zero is not read forever)


def parse_config(raw: dict) -> dict:
    for sec in raw:
        if sec not in SECTIONS and sec != "p":
            raise SweepConfigError(f"unknown section [{sec}] (sections: {', '.join(SECTIONS)})")
    base = dict(DEFAULTS)
    if "p" in raw:
        base["p"] = raw["p"]
    for sec in ("problem", "noise", "oracle", "optimizer", "sim"):
        body = raw.get(sec, {})
        if not isinstance(body, dict):
            raise SweepConfigError(f"[{sec}] must be a table")
        for k, v in body.items():
            base[f"{sec}.{k}"] = v
    grid = raw.get("grid", {})
    if not isinstance(grid, dict):
        raise SweepConfigError("[grid] must be a table of lists")
    for k, v in grid.items():
        if not isinstance(v, list):
            raise SweepConfigError(f"grid.{k} must be a list of values, got {v!r}")
        if not v:
            raise SweepConfigError(f"grid.{k} is empty: the sweep would have no cells")
        if k != "p" and k.split(".")[0] not in ("problem", "noise", "oracle", "optimizer", "sim"):
            raise SweepConfigError(
                f"grid.{k}: a swept key is 'p' or section.name (problem, noise, oracle, optimizer, sim)"
            )
    sweep = _parse_sweep_section(raw.get("sweep", {}))
    plot = _parse_plot_section(raw.get("plot", {}), sweep["metrics"])
    cfg = {"base": base, "grid": grid, "sweep": sweep, "plot": plot}
    cfg["hash"] = _hash({"base": base, "grid": grid, "sweep": sweep})
    return cfg


INT_MAX = 2**63 - 1  # the integers of a cell are int64 in the Parquet rows (and in numpy's samplers)
PLOT_KEYS = {"x": str, "y": str, "hue": str, "col": str, "theory_slope": (int, float)}


def _parse_sweep_section(raw) -> dict:
    """``[sweep]`` validated: name (text), rows (final or all), metrics (known names), max_cells (an
    integer >= 1); SweepConfigError naming the key otherwise."""
    if not isinstance(raw, dict):
        raise SweepConfigError("[sweep] must be a table")
    sweep = dict(raw)
    for k in sweep:
        if k not in ("name", "rows", "metrics", "max_cells"):
            raise SweepConfigError(f"sweep.{k}: unknown key (name, rows, metrics, max_cells)")
    if sweep.get("rows", "final") not in ("final", "all"):
        raise SweepConfigError(f"sweep.rows must be 'final' or 'all', got {sweep.get('rows')!r}")
    if not isinstance(sweep.get("name", "sweep"), str):
        raise SweepConfigError(f"sweep.name must be a string, got {sweep['name']!r}")
    limit = sweep.get("max_cells", MAX_CELLS)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= INT_MAX:
        raise SweepConfigError(f"sweep.max_cells must be an integer in [1, 2**63 - 1], got {limit!r}")
    metrics = sweep.get("metrics", list(METRICS) + [m + "_avg" for m in METRICS])
    if not isinstance(metrics, list) or not metrics:
        raise SweepConfigError("sweep.metrics must be a non-empty list")
    for m in metrics:
        if not isinstance(m, str) or m.removesuffix("_avg") not in METRICS:
            raise SweepConfigError(
                f"sweep.metrics: unknown metric {m!r} (metrics: {', '.join(METRICS)}, each also as NAME_avg: "
                "its running mean over the recorded steps)"
            )
    sweep["metrics"] = list(metrics)
    sweep.setdefault("rows", "final")
    sweep.setdefault("name", "sweep")
    return sweep


def _parse_plot_section(raw, metrics: list) -> dict:
    """``[plot]`` validated when the configuration is read (not first at ``lptheory plot``): known keys,
    text for x, y, hue, col, a finite number for theory_slope, y among the sweep's metrics."""
    if not isinstance(raw, dict):
        raise SweepConfigError("[plot] must be a table")
    for k, v in raw.items():
        kind = PLOT_KEYS.get(k)
        if kind is None:
            raise SweepConfigError(f"plot.{k}: unknown key ({', '.join(PLOT_KEYS)})")
        if isinstance(v, bool) or not isinstance(v, kind):
            what = "a finite number" if k == "theory_slope" else "a column name (a string)"
            raise SweepConfigError(f"plot.{k} must be {what}, got {v!r}")
    slope = raw.get("theory_slope")
    if slope is not None and not math.isfinite(slope):
        raise SweepConfigError(f"plot.theory_slope must be a finite number, got {slope!r}")
    if "y" in raw and raw["y"] not in metrics:
        raise SweepConfigError(f"plot.y = {raw['y']!r} is not among sweep.metrics ({', '.join(metrics)})")
    return dict(raw)


def _hash(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def grid_size(cfg) -> int:
    """The number of cells of the grid: the product of its axes' lengths (no cell is built)."""
    return math.prod(len(v) for v in cfg["grid"].values()) if cfg["grid"] else 1


_grid_size = grid_size  # its earlier name


def cells(cfg: dict, *, confirm_large: bool = False) -> list[dict]:
    """Every distinct cell of the grid (in grid order), validated: unknown keys, wrong types and
    values the builders reject raise :class:`SweepConfigError` naming the key, before any work."""
    n = grid_size(cfg)
    limit = int(cfg["sweep"].get("max_cells", MAX_CELLS))
    if n > limit and not confirm_large:
        raise SweepConfigError(
            f"the grid has {n:,} cells (more than sweep.max_cells = {limit:,}); pass --yes to run it anyway"
        )
    keys = list(cfg["grid"])
    out, seen = [], set()
    for combo in itertools.product(*[cfg["grid"][k] for k in keys]):
        cell = dict(cfg["base"])
        cell.update(zip(keys, combo))
        cell = _normalize(cell)
        h = cell_hash(cell)
        if h not in seen:
            seen.add(h)
            out.append(cell)
    _validate_cells(out)
    return out


def _normalize(cell: dict) -> dict:
    """Types checked, optimizer keys that do not apply dropped."""
    from lptheory.optimizers import OPTIMIZERS, hyper_names

    for k, typ in SIM_KEYS.items():
        key = f"sim.{k}"
        if key in cell and cell[key] is not None:
            v = cell[key]
            if typ is int and (isinstance(v, bool) or not isinstance(v, int)):
                raise SweepConfigError(f"{key} must be an integer, got {v!r}")
            if typ is int and abs(v) > INT_MAX:
                raise SweepConfigError(f"{key} must be an integer of at most 2**63 - 1, got {v}")
            if typ is str and not isinstance(v, str):
                raise SweepConfigError(f"{key} must be a string, got {v!r}")
    for k in cell:
        sec, _, name = k.partition(".")
        if sec == "sim" and name not in SIM_KEYS:
            raise SweepConfigError(f"{k}: unknown simulator key (sim keys: {', '.join(SIM_KEYS)})")
        if sec == "noise" and name not in NOISE_KEYS:
            raise SweepConfigError(f"{k}: unknown noise key (noise keys: {', '.join(NOISE_KEYS)})")
        if sec == "oracle" and name != "batch":
            raise SweepConfigError(f"{k}: unknown oracle key (oracle keys: batch)")
    p = cell["p"]
    if isinstance(p, str) and p == "inf":
        p = math.inf
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise SweepConfigError(f"p must be a number (or 'inf'), got {p!r}")
    cell["p"] = float(p)
    name = cell["optimizer.name"]
    if name not in OPTIMIZERS:
        raise SweepConfigError(f"optimizer.name must be one of {sorted(OPTIMIZERS)}, got {name!r}")
    fields = set(hyper_names(OPTIMIZERS[name]))
    return {
        k: v
        for k, v in cell.items()
        if not (k.startswith("optimizer.") and k != "optimizer.name" and k[10:] not in fields)
    }


def _validate_cells(cell_list: list[dict]) -> None:
    """Build each distinct problem/noise/oracle and optimizer of the cells once (cheap): a value a builder
    rejects fails here, naming the key, before any cell runs."""
    from synthetic.problems import PROBLEMS

    from .resources import available_memory, state_slots

    built_p, built_o, have = set(), {}, available_memory()
    for c in cell_list:
        # the simulator's own keys first: the oracle's batch "T" is sim.steps, so a bad sim.steps must be
        # named as such, not as the oracle.batch it would make
        for k, lo in (("sim.steps", 1), ("sim.replicates", 1), ("sim.record_every", 1), ("sim.seed", 0)):
            if c[k] < lo:
                raise SweepConfigError(f"{k} must be >= {lo}, got {c[k]}")
        if c.get("sim.backend", "numpy") not in ("numpy", "torch"):
            raise SweepConfigError(f"sim.backend must be 'numpy' or 'torch', got {c['sim.backend']!r}")
        pname = c["problem.name"]
        if pname not in PROBLEMS:
            raise SweepConfigError(f"problem.name must be one of {sorted(PROBLEMS)}, got {pname!r}")
        params = inspect.signature(PROBLEMS[pname].__init__).parameters
        for k in c:
            if k.startswith("problem.") and k != "problem.name" and k[8:] not in params:
                raise SweepConfigError(
                    f"{k}: {pname} has no such argument (arguments: {', '.join(p for p in params if p != 'self')})"
                )
        ok = tuple(sorted((k, repr(v)) for k, v in c.items() if k.startswith("optimizer.") or k == "p"))
        if ok not in built_o:
            try:
                built_o[ok] = state_slots(_build_optimizer(c, None, None, validate_only=True))
            except SweepConfigError:
                raise
            except (ValueError, TypeError) as exc:
                raise SweepConfigError(f"optimizer of cell {_describe(c)}: {exc}") from None
        _check_cell_memory(c, built_o[ok], have)  # before the problem is built: its arrays could not fit
        pk = tuple(
            sorted((k, repr(v)) for k, v in c.items() if k.startswith(("problem.", "noise.", "oracle.", "sim.")))
        )
        if pk not in built_p:
            built_p.add(pk)
            try:
                _build_setting(c)
            except SweepConfigError:
                raise
            except (ValueError, TypeError) as exc:
                raise SweepConfigError(f"problem/noise/oracle of cell {_describe(c)}: {exc}") from None


def _cell_dimension(cell: dict):
    """The dimension d a cell's problem will have, from its keys (``problem.d``, else ``problem.m`` x
    ``problem.n``), checked to be an integer >= 1; None when the keys do not give it (the problem's
    default)."""
    dims = {k: cell[f"problem.{k}"] for k in ("d", "m", "n") if f"problem.{k}" in cell}
    for k, v in dims.items():
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= INT_MAX:
            raise SweepConfigError(f"problem.{k} must be an integer in [1, 2**63 - 1], got {v!r}")
    if "d" in dims:
        return dims["d"]
    if "m" in dims and "n" in dims:
        return dims["m"] * dims["n"]
    return None


def _check_cell_memory(cell: dict, slots: int, have: int | None) -> None:
    """Refuse (SweepConfigError naming the keys, with the numbers) a cell whose arrays and records cannot
    fit in ``have`` bytes (the memory available; None: unknown), before its problem or any array is
    built (as ``lptheory run`` does: :func:`lptheory.app.resources.run_estimate`)."""
    from .resources import fmt_bytes, run_estimate

    d = _cell_dimension(cell)
    if have is None:
        return
    steps, every = cell["sim.steps"], cell["sim.record_every"]
    batch = cell.get("oracle.batch", 1)
    est = run_estimate(
        replicates=cell["sim.replicates"],
        d=d or 1,
        steps=steps,
        record_every=every,
        slots=[slots],
        itemsize=4 if cell.get("sim.dtype") == "float32" else 8,
        batch=steps if batch == "T" else batch if isinstance(batch, int) else 1,
    )
    if est["total"] > have:
        size = f"problem.d = {d} x " if d else ""
        raise SweepConfigError(
            f"cell {_describe(cell)}: {size}sim.replicates = {cell['sim.replicates']}, sim.steps = {steps} / "
            f"sim.record_every = {every} needs about {fmt_bytes(est['total'])} of memory (records "
            f"{fmt_bytes(est['records'])} for {est['recorded_steps']:,} recorded steps) but {fmt_bytes(have)} is "
            "available; lower them, or raise sim.record_every"
        )


def _raw_optimizer_keys(cfg: dict) -> set[str]:
    keys = {k[10:] for k in cfg["base"] if k.startswith("optimizer.") and k != "optimizer.name"}
    keys |= {k[10:] for k in cfg["grid"] if k.startswith("optimizer.") and k != "optimizer.name"}
    return keys


def check_optimizer_keys(cfg: dict) -> None:
    """An optimizer key that applies to none of the grid's optimizers is a mistake (a typo)."""
    from lptheory.optimizers import OPTIMIZERS, hyper_names

    names = cfg["grid"].get("optimizer.name", [cfg["base"]["optimizer.name"]])
    fields = set()
    for n in names:
        if n not in OPTIMIZERS:
            raise SweepConfigError(f"optimizer.name must be one of {sorted(OPTIMIZERS)}, got {n!r}")
        fields |= set(hyper_names(OPTIMIZERS[n]))
    for k in _raw_optimizer_keys(cfg):
        if k not in fields:
            raise SweepConfigError(
                f"optimizer.{k}: none of the sweep's optimizers ({', '.join(names)}) has this hyper-parameter"
            )


def _describe(cell: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.items() if k in ("optimizer.name", "p", "sim.steps", "problem.name"))


def cell_hash(cell: dict) -> str:
    """The cell's identity in a sweep directory (a resumed sweep reuses the results of equal hashes). A
    matrix optimizer's cell also carries the layout rule of :func:`lptheory.spectral.laid_out` (results
    written before it coupled the replicates: their hashes differ, so they are computed again), and a cell
    whose noise has a matrix layout (rank-one) the rule that lays the noise and the matrix optimizers out as
    ``lptheory run`` does (the problem's own shape, else the noise's split; cells written before it differ)."""
    from lptheory.optimizers import OPTIMIZERS
    from lptheory.spectral import MatrixOptimizer
    from synthetic.noise import NOISES, has_layout

    key = {k: cell[k] for k in sorted(cell)}
    cls = OPTIMIZERS.get(cell.get("optimizer.name"))
    laid = cell.get("noise.name") in NOISES and has_layout(cell["noise.name"])
    if isinstance(cls, type) and issubclass(cls, MatrixOptimizer):
        key["layout"] = "laid_out-2" if laid else "laid_out-1"  # 2: the noise's layout, as lptheory run
    elif laid:
        key["layout"] = "noise-layout-1"  # the noise laid out as the problem's own shape, as lptheory run
    return _hash(key)


# ---------------------------------------------------------------------------------------------------
# one cell


def _build_setting(cell: dict):
    """(problem, noise, oracle) of a cell, assembled as ``lptheory run`` does (:mod:`lptheory.app.assembly`)."""
    from .assembly import SettingError, build_setting

    batch = cell.get("oracle.batch", 1)
    if batch == "T":
        batch = cell["sim.steps"]
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise SweepConfigError(f"oracle.batch must be an integer >= 1 or 'T', got {cell.get('oracle.batch')!r}")
    try:
        setting = build_setting(
            cell["problem.name"],
            {k[8:]: v for k, v in cell.items() if k.startswith("problem.") and k != "problem.name"},
            noise=cell["noise.name"],
            sigma=cell.get("noise.sigma", 0.1),
            profile=cell.get("noise.profile", "flat"),
            batch=batch,
        )
    except SettingError as exc:
        raise exc.error from None  # the builder's own error: the caller names the cell
    return setting.problem, setting.noise, setting.oracle


def _build_optimizer(cell: dict, problem, oracle, *, validate_only: bool = False):
    from lptheory.optimizers import OPTIMIZERS, hyper_names
    from lptheory.schedules import theorem1_lr

    from .assembly import lay_out, noise_layout

    cls = OPTIMIZERS[cell["optimizer.name"]]
    hyper = {k[10:]: v for k, v in cell.items() if k.startswith("optimizer.") and k != "optimizer.name"}
    if "p" in hyper_names(cls):
        hyper["p"] = cell["p"]
    if hyper.get("lr") == "theorem1":
        if validate_only:
            hyper["lr"] = 1e-3
        else:
            p = cell["p"]
            hyper["lr"] = theorem1_lr(problem.smoothness(p), oracle.certified_G(p), cell["sim.steps"], p)
    elif isinstance(hyper.get("lr"), str):
        raise SweepConfigError(f"optimizer.lr must be a number or 'theorem1', got {hyper['lr']!r}")
    opt = cls(**hyper)
    if problem is None:
        return opt
    # as lptheory run (optimizer.shape = [m, n] in the configuration sets another layout)
    return lay_out(opt, problem, noise_layout(getattr(oracle, "noise", None)))


def run_cell(cell: dict, metrics=None, rows: str = "final", plugins=()) -> dict:
    """Run one cell: ``{"columns": {name: list}, "seconds": compute time}`` (a pure function of the cell).
    ``plugins``: the user plug-ins the parent loaded (:func:`lptheory.plugins.loaded`), loaded here first, so a
    Dask worker knows the optimizers of ``--optimizer-module`` as the parent does."""
    from lptheory import plugins as _plugins
    from lptheory.simulate import mean_interval, simulate

    _plugins.ensure(plugins)

    t0 = time.perf_counter()
    metrics = list(metrics or (list(METRICS) + [m + "_avg" for m in METRICS]))
    problem, noise, oracle = _build_setting(cell)
    opt = _build_optimizer(cell, problem, oracle)
    backend = cell.get("sim.backend", "numpy")
    tr = simulate(
        opt,
        problem,
        oracle,
        cell["sim.steps"],
        cell["sim.replicates"],
        cell["sim.seed"],
        record_every=cell["sim.record_every"],
        p_measure=cell["p"],
        on_nonfinite="record",
        backend=backend,
        device=cell.get("sim.device"),
        dtype=cell.get("sim.dtype"),
    )
    series = {"f": tr.f, "gap": tr.gap, "grad_pstar": tr.grad_pstar, "grad_2": tr.grad_2}
    K = len(tr.steps)
    ks = range(K) if rows == "all" else [K - 1]
    cols: dict[str, list] = {k: [] for k in ("step", "metric", "mean", "lo", "hi", "std", "n", "diverged")}
    ok = ~tr.diverged
    for m in metrics:
        base = np.asarray(series[m.removesuffix("_avg")], dtype=np.float64)
        if m.endswith("_avg"):
            base = np.cumsum(base, axis=0) / np.arange(1, K + 1)[:, None]
        for k in ks:
            v = base[k, ok]
            mean, lo, hi = mean_interval(v)
            cols["step"].append(int(tr.steps[k]))
            cols["metric"].append(m)
            cols["mean"].append(float(mean))
            cols["lo"].append(float(lo))
            cols["hi"].append(float(hi))
            cols["std"].append(float(np.std(v, ddof=1)) if v.size > 1 else math.nan)
            cols["n"].append(int(v.size))
            cols["diverged"].append(int(tr.diverged.sum()))
    return {"columns": cols, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------------
# output


def _cells_dir(out: str) -> str:
    return os.path.join(out, "cells")


def cached_cells(out: str) -> set[str]:
    """Hashes of the cells whose Parquet file is in ``out``; a file that is not valid Parquet raises
    :class:`SweepError` naming it (it is never overwritten silently)."""
    import pyarrow.parquet as pq

    d = _cells_dir(out)
    if not os.path.isdir(d):
        return set()
    got = set()
    for name in sorted(os.listdir(d)):
        if not name.endswith(".parquet"):
            continue
        path = os.path.join(d, name)
        try:
            pq.read_metadata(path)
        except Exception as exc:  # pyarrow raises several kinds for a damaged file
            raise SweepError(
                f"{path} is not a valid Parquet file ({type(exc).__name__}: {exc}); remove it to recompute that cell"
            ) from None
        got.add(name[: -len(".parquet")])
    return got


def _provenance(cfg: dict) -> dict:
    import datetime as dt

    from proofs_checks.records import git_commit, versions

    return {
        "config_hash": cfg["hash"],
        "versions": json.dumps(versions(), sort_keys=True),
        "git_commit": git_commit() or "",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }


PROVENANCE_VOLATILE = ("date", "seconds")  # when a cell ran, and how long it took


def _write_cell(out: str, cell: dict, result: dict, prov: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = dict(result["columns"])
    n = len(cols["step"])
    h = cell_hash(cell)
    cols["cell_hash"] = [h] * n
    for k, v in cell.items():
        cols[k] = [json.dumps(v) if isinstance(v, (list, dict)) else v] * n
    cols["seed"] = [cell["sim.seed"]] * n
    cols["backend"] = [cell.get("sim.backend", "numpy")] * n
    cols["device"] = [str(cell.get("sim.device") or "cpu")] * n
    cols["seconds"] = [float(result["seconds"])] * n
    for k, v in prov.items():
        cols[k] = [v] * n
    table = pa.table({k: _column(v) for k, v in cols.items()})
    d = _cells_dir(out)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{h}.parquet.part")
    pq.write_table(table, tmp)
    os.replace(tmp, os.path.join(d, f"{h}.parquet"))


def _column(values):
    import pyarrow as pa

    kinds = {type(v) for v in values}
    if kinds <= {int, bool} and bool not in kinds:
        return pa.array(values, type=pa.int64())
    if kinds <= {int, float}:
        return pa.array([float(v) for v in values], type=pa.float64())
    return pa.array([v if isinstance(v, str) else json.dumps(v) for v in values], type=pa.string())


def read_results(out: str, cell_list: list[dict] | None = None):
    """The sweep's rows as one pyarrow Table, in cell order (``cell_list``) or file-name order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = _cells_dir(out)
    hashes = [cell_hash(c) for c in cell_list] if cell_list is not None else sorted(cached_cells(out))
    tables = []
    for h in hashes:
        path = os.path.join(d, f"{h}.parquet")
        if os.path.exists(path):
            tables.append(pq.read_table(path))
    if not tables:
        return None
    return pa.concat_tables(tables, promote_options="permissive")


# ---------------------------------------------------------------------------------------------------
# the sweep


@dataclasses.dataclass
class SweepResult:
    cells: int
    computed: list
    cached: list
    failed: dict
    seconds: float
    compute_seconds: float
    path: str | None


def plan(cfg: dict, out: str, *, confirm_large: bool = False) -> dict:
    """What a sweep would do: cells, how many are cached, the estimated work (cell-steps x replicates)."""
    check_optimizer_keys(cfg)
    cl = cells(cfg, confirm_large=confirm_large)
    cached = cached_cells(out)
    todo = [c for c in cl if cell_hash(c) not in cached]
    work = sum(c["sim.steps"] * c["sim.replicates"] for c in todo)
    return {"cells": cl, "cached": len(cl) - len(todo), "todo": todo, "work": work}


def preview(cfg: dict, out: str, *, show: int = 20) -> dict:
    """What ``--dry-run`` prints for a grid too large to list (beyond ``sweep.max_cells``), at once and in
    little memory whatever its size: the number of cells (the product of the axes' lengths; cells that
    become equal run once, so at most that), the cell files already in ``out``, the work (replicate-steps,
    at most) and the first ``show`` cells. Every value of every axis is validated (the first cells and one
    diagonal through the grid that meets each value), and the largest cell is held against the memory
    available, before anything runs."""
    check_optimizer_keys(cfg)
    keys, axes = list(cfg["grid"]), list(cfg["grid"].values())
    longest = max((len(a) for a in axes), default=1)
    diagonal = [tuple(a[i % len(a)] for a in axes) for i in range(longest)]
    first = list(itertools.islice(itertools.product(*axes), show))
    sample, seen = [], set()
    for combo in first + diagonal:
        cell = _normalize({**cfg["base"], **dict(zip(keys, combo))})
        if cell_hash(cell) not in seen:
            seen.add(cell_hash(cell))
            sample.append(cell)
    _validate_cells(sample)
    _validate_cells([_largest_cell(cfg, keys, axes)])

    def total(key):  # the sum of a key over the grid's values of it (its fixed value when not swept)
        return sum(cfg["grid"][key]) if key in cfg["grid"] else cfg["base"][key]

    rest = math.prod(len(a) for k, a in zip(keys, axes) if k not in ("sim.steps", "sim.replicates"))
    return {
        "cells": grid_size(cfg),
        "cached": len(cached_cells(out)),
        "work": rest * total("sim.steps") * total("sim.replicates"),
        "first": sample[: min(show, len(first))],
    }


def _largest_cell(cfg: dict, keys: list, axes: list) -> dict:
    """The cell with the most memory of the grid (as far as its integer axes tell): the largest steps,
    replicates and problem size, the smallest record_every."""
    cell = dict(cfg["base"])
    for k, a in zip(keys, axes):
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in a)
        cell[k] = (min(a) if k == "sim.record_every" else max(a)) if ints else a[0]
    return _normalize(cell)


def run_sweep(
    cfg: dict,
    out: str,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    resume: bool = False,
    confirm_large: bool = False,
    progress: bool = True,
    on_cell=None,
    scheduler_timeout: float = 30.0,
) -> SweepResult:
    """Run the sweep ``cfg`` into ``out``: serially in this process (``workers=0``), on an embedded Dask
    ``LocalCluster`` (default: one single-threaded worker process per core) or on the Dask scheduler at
    ``scheduler``. Cached cells are skipped; a failed cell is recorded in ``failed.json`` and the sweep
    goes on. ``on_cell(hash, status)`` is called as cells finish (status computed/failed).
    ``scheduler_timeout``: seconds to wait for the scheduler's handshake (SweepError after that)."""
    t0 = time.perf_counter()
    meta_path = os.path.join(out, "sweep.json")
    if os.path.exists(meta_path):
        try:
            with open(meta_path) as fh:
                old = json.load(fh)
        except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError are ValueErrors
            raise SweepError(
                f"{meta_path}: not a sweep's sweep.json ({type(exc).__name__}: {exc}); remove it to start the sweep "
                "afresh (its cells are kept) or use another --out"
            ) from None
        if not isinstance(old, dict):
            raise SweepError(f"{meta_path}: not a sweep's sweep.json (expected a JSON object); remove it")
        if old.get("config_hash") != cfg["hash"]:
            raise SweepError(
                f"{out} holds a sweep of another configuration (config hash {old.get('config_hash')}, this one "
                f"{cfg['hash']}): use another --out"
            )
    elif resume:
        raise SweepError(f"--resume: {out} holds no sweep to resume (no sweep.json)")
    pl = plan(cfg, out, confirm_large=confirm_large)
    client = cluster = None
    if pl["todo"] and workers != 0:
        # an unreachable or silent scheduler fails here, before any work
        client, cluster = connect(scheduler, workers, timeout=scheduler_timeout)
    os.makedirs(out, exist_ok=True)
    tmp = meta_path + ".part"
    with open(tmp, "w") as fh:
        json.dump(
            {"config_hash": cfg["hash"], "config": {k: cfg[k] for k in ("base", "grid", "sweep", "plot")}},
            fh,
            indent=1,
            sort_keys=True,
            default=str,
        )
    os.replace(tmp, meta_path)
    prov = _provenance(cfg)
    metrics, rows = cfg["sweep"]["metrics"], cfg["sweep"]["rows"]
    todo = pl["todo"]
    cached = [cell_hash(c) for c in pl["cells"] if c not in todo]
    computed, failed, compute_s = [], {}, 0.0
    bar = _Bar(len(pl["cells"]), len(cached), progress)

    def done(cell, result=None, error=None):
        nonlocal compute_s
        h = cell_hash(cell)
        if error is not None:
            failed[h] = {"cell": cell, "error": error}
            bar.update(failed=True)
            if on_cell:
                on_cell(h, "failed")
            return
        _write_cell(out, cell, result, prov)
        compute_s += result["seconds"]
        computed.append(h)
        bar.update()
        if on_cell:
            on_cell(h, "computed")

    try:
        if workers == 0 or not todo:
            for c in todo:
                try:
                    res = run_cell(c, metrics, rows)
                except Exception as exc:  # a failed cell is recorded, the sweep goes on
                    done(c, error=f"{type(exc).__name__}: {exc}")
                    continue
                done(c, res)
        else:
            from lptheory.plugins import loaded

            _run_dask(client, todo, metrics, rows, done, loaded())
    finally:
        bar.close()
        if client is not None:
            from lptheory.parallel import close_dask

            close_dask(client, cluster)
    with open(os.path.join(out, ".failed.json.part"), "w") as fh:
        json.dump(failed, fh, indent=1, default=str)
    os.replace(os.path.join(out, ".failed.json.part"), os.path.join(out, "failed.json"))
    table = read_results(out, pl["cells"])
    path = None
    if table is not None:
        import pyarrow.parquet as pq

        path = os.path.join(out, "results.parquet")
        pq.write_table(table, path + ".part")
        os.replace(path + ".part", path)
    return SweepResult(len(pl["cells"]), computed, cached, failed, time.perf_counter() - t0, compute_s, path)


def connect(scheduler: str | None, workers: int | None, timeout: float = 30.0):
    """A Dask client (:func:`lptheory.parallel.dask_client`); a scheduler that cannot be reached, or dask that
    is not installed, raises SweepError."""
    from lptheory.parallel import DaskUnavailable, dask_client

    try:
        return dask_client(scheduler, workers, timeout)
    except DaskUnavailable as exc:
        raise SweepError(str(exc)) from None


def _run_dask(client, todo, metrics, rows, done, plugins=()):
    """One task per cell; results come back to this process, which writes them (workers need no shared
    file system). A worker that dies loses nothing: the scheduler runs its tasks elsewhere."""
    from distributed import as_completed

    futs = {}
    # the costliest cells first (steps x replicates x batch): no long cell left alone at the end
    cost = lambda c: c["sim.steps"] * c["sim.replicates"] * (c["sim.steps"] if c.get("oracle.batch") == "T" else 1)  # noqa: E731
    for c in sorted(todo, key=cost, reverse=True):
        f = client.submit(
            run_cell, c, metrics, rows, plugins, key=f"lptheory-cell-{cell_hash(c)}", pure=False, priority=0
        )
        futs[f] = c
    for f in as_completed(list(futs)):
        c = futs[f]
        try:
            res = f.result()
        except Exception as exc:
            done(c, error=f"{type(exc).__name__}: {exc}")
            continue
        done(c, res)


class _Bar:
    """Cells done / cached / failed with an ETA: one line rewritten in place on a terminal
    (:class:`lptheory.progress.StepProgress`, also where the terminal reports zero columns), plain lines
    otherwise."""

    def __init__(self, total, cached, enabled, stream=None, tty=None):
        import sys

        self.total, self.cached, self.done, self.failed = total, cached, 0, 0
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.bar = None
        self.last = 0.0
        self.stream = sys.stderr if stream is None else stream
        if tty is None:
            tty = is_terminal(self.stream)
        if enabled and tty:
            self.bar = StepProgress("lptheory sweep", total, stream=self.stream, tty=True, unit="cells", rate=False)
            self.bar.__enter__()
            self.bar.note = f"{cached} cached, 0 failed"
            self.bar(cached, total)

    def update(self, failed=False):
        self.done += 1
        self.failed += bool(failed)
        if self.bar is not None:
            self.bar.note = f"{self.cached} cached, {self.failed} failed"
            self.bar(self.done + self.cached, self.total)
            return
        if not self.enabled:
            return
        now = time.perf_counter()
        left = self.total - self.cached - self.done
        if now - self.last > 2.0 or left == 0:
            self.last = now
            rate = (now - self.t0) / max(self.done, 1)
            print(
                f"[lptheory sweep] {self.done + self.cached}/{self.total} cells ({self.cached} cached, "
                f"{self.failed} failed), ETA {rate * left:.0f}s",
                file=self.stream,
                flush=True,
            )

    def close(self):
        if self.bar is not None:
            bar, self.bar = self.bar, None
            finished = self.done + self.cached >= self.total
            bar.__exit__(None if finished else RuntimeError, None, None)  # summary, or "stopped at"
