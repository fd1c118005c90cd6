"""What a command will need, checked against what the machine has, before anything is allocated.

``lptheory run --replicates 100000 --d 1000000`` or ``--steps 100000000000`` used to die in a
MemoryError (or build a 1e10-element set first): :func:`run_estimate` computes the bytes from the
flags alone, and the CLI refuses (exit 2, with the numbers) when they exceed :func:`available_memory`.
"""

from __future__ import annotations

import os

# (R, d) arrays alive at the peak of a simulated step, besides the optimizer's own state slots:
# theta, the gradient buffer, the metric buffer, the noise draw and the oracle's temporaries, the
# update's temporaries. Measured peak resident memory (numpy, d = 1e5, R = 64, batch 1): 9.0 (sgd,
# 1 slot) to 10.0 (adam, 2 slots) arrays above the imports. With a batch > 1 the noise keeps its draws
# (int64) and their float64 image per thread, sized to the rows that thread has stepped: the first
# step on the whole array and the parts of the split step (lptheory.simulate) keep about three arrays
# (tracemalloc peak, R = 16, d = 2e4, adam, batch 4, 2 threads: 12.7-13.2 arrays; BATCH_ARRAYS = 3).
WORKING_ARRAYS = 9
BATCH_ARRAYS = 3
RECORD_ARRAYS = 6  # f, gap, grad_pstar, grad_2 (K, R) float64, and the trace's table when it is written


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (Linux ``MemAvailable``; else the free physical
    pages); None when unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1000.0
    return f"{n:.3g} EB"  # pragma: no cover


def state_slots(optimizer) -> int:
    """How many parameter-shaped arrays the optimizer's state holds (from ``init`` on a (1, 2) array)."""
    import numpy as np

    state = optimizer.init(np.zeros((1, 2)))
    leaves = state.values() if isinstance(state, dict) else (state if isinstance(state, (list, tuple)) else [state])
    return sum(1 for v in leaves if getattr(v, "shape", None) == (1, 2))


def run_estimate(
    *, replicates: int, d: int, steps: int, record_every: int, slots: list[int], itemsize: int = 8, batch: int = 1
) -> dict:
    """Bytes ``lptheory run`` needs: ``{"working", "records", "total", "recorded_steps", "arrays"}``.
    The optimizers run one after the other (the working arrays of the largest), their records all stay."""
    k = steps // record_every + 2  # t = 0, every record_every steps, and T
    arrays = WORKING_ARRAYS + max(slots or [0]) + (BATCH_ARRAYS if batch > 1 else 0)
    working = arrays * replicates * d * itemsize
    records = len(slots or [0]) * RECORD_ARRAYS * k * replicates * 8
    return {"working": working, "records": records, "total": working + records, "recorded_steps": k, "arrays": arrays}
