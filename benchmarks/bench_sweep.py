"""Dask overhead of ``lptheory sweep``: the example config (or ``--config``) run serially in this process
and on a LocalCluster of ``--workers`` processes, in one run. Printed: the serial time (the sum of the
cells' compute), the cluster's wall time with its start-up apart, and the scheduler overhead per cell,
(workers x (wall - start-up) - compute) / compute (target: under 5% of the cells' run time).

    python benchmarks/bench_sweep.py [--config examples/sweeps/theorem1_rate.toml] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="examples/sweeps/theorem1_rate.toml")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    from lptheory.app import sweep as S
    from lptheory.parallel import close_dask

    cfg = S.load_config(args.config)
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        serial = S.run_sweep(cfg, os.path.join(tmp, "serial"), workers=0, progress=False)
        t_serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        client, cluster = S.connect(None, args.workers)
        close_dask(client, cluster)
        startup = time.perf_counter() - t0
        t0 = time.perf_counter()
        par = S.run_sweep(cfg, os.path.join(tmp, "dask"), workers=args.workers, progress=False)
        wall = time.perf_counter() - t0
    n = serial.cells
    compute = par.compute_seconds
    overhead = (args.workers * (wall - startup) - compute) / compute
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"{args.config}: {n} cells, {os.cpu_count()} cores, load average {load}")
    print(f"  serial (in process)          {t_serial:7.1f} s   (cells' compute {serial.compute_seconds:.1f} s)")
    print(
        f"  LocalCluster, {args.workers} workers      {wall:7.1f} s   (cells' compute {compute:.1f} s; "
        f"cluster start-up {startup:.1f} s)"
    )
    print(f"  speed-up over serial         {t_serial / wall:7.2f}x")
    print(
        f"  overhead per cell            {100 * overhead:6.1f}% of the cells' run time (idle workers at the end "
        f"included)   target < 5%: {'met' if overhead < 0.05 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
