"""One process budget for a run of several checks (issue 46, item 3): the runner's pool and the checks that
parallelize inside it share ``jobs`` busy processes (no ``2 x jobs``), each process runs one thread, and the
results are those of a serial run. Concurrency is read from the intervals the tasks record (wall clock,
across processes); the tasks sleep, so the test does not depend on the machine's load."""

from __future__ import annotations

import glob
import os
import time

import pytest

from proofs_checks import pools
from proofs_checks.packs import PackError, load
from proofs_checks.runner import plan, run_checks

pytestmark = pytest.mark.skipif("fork" not in __import__("multiprocessing").get_all_start_methods(), reason="fork")

NAP = 0.15


def _mark(folder, what):
    """Record (start, end) of a piece of work of this process in ``folder`` (one file per piece)."""
    t0 = time.time()
    time.sleep(NAP)
    t1 = time.time()
    threads = f"{os.environ.get('LPTHEORY_THREADS')},{os.environ.get('LPTHEORY_SEARCH_THREADS')}"
    with open(os.path.join(folder, f"{what}-{os.getpid()}-{t0:.6f}"), "w") as fh:
        fh.write(f"{t0} {t1} {threads}")


def _intervals(folder):
    out = []
    for path in glob.glob(os.path.join(folder, "*")):
        with open(path) as fh:
            t0, t1, threads = fh.read().split()
        out.append((float(t0), float(t1), threads, os.path.basename(path)))
    return out


def _most_at_once(iv) -> int:
    events = sorted([(t0, 1) for t0, _, _, _ in iv] + [(t1, -1) for _, t1, _, _ in iv])
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def _task(state, t):
    _mark(state, f"task{t}")
    return t * t


def test_map_tasks_under_a_budget_counts_this_process(tmp_path):
    """A search asking for 4 workers under a budget of 2 whose one token this process holds: this process and
    one helper at most (2 at once), results in order; without the budget, 4 at once (the control)."""
    with pools.process_budget(2), pools.holding():
        got = pools.map_tasks(_task, str(tmp_path), list(range(6)), workers=4)
    assert got == [t * t for t in range(6)]
    iv = _intervals(tmp_path)
    assert len(iv) == 6 and _most_at_once(iv) <= 2
    assert {os.getpid()} < {int(n.split("-")[1]) for *_, n in iv}  # this process ran some, a helper others
    ctl = tmp_path / "control"
    ctl.mkdir()
    assert pools.map_tasks(_task, str(ctl), list(range(4)), workers=4) == [0, 1, 4, 9]
    assert _most_at_once(_intervals(ctl)) == 4


def test_the_budget_sets_one_thread_and_restores(monkeypatch):
    monkeypatch.delenv("LPTHEORY_THREADS", raising=False)
    monkeypatch.setenv("LPTHEORY_SEARCH_THREADS", "3")  # the user's own setting is kept
    with pools.process_budget(2):
        assert pools.budget_active()
        assert os.environ["LPTHEORY_THREADS"] == "1" and os.environ["LPTHEORY_SEARCH_THREADS"] == "3"
    assert not pools.budget_active()
    assert "LPTHEORY_THREADS" not in os.environ and os.environ["LPTHEORY_SEARCH_THREADS"] == "3"


PACK_SRC = """
import os, sys
sys.path.insert(0, {tests!r})
from proofs_checks import pools
from proofs_checks.api import ClaimSpec, Pack, value_claim
from test_process_budget import _mark, _task

PACK = Pack("budget", title="checks that record when they run")
SPEC = ClaimSpec(id="budget.one", statement="1 <= 2", source="a test")
FOLDER = {folder!r}


def plain(ctx, name):
    _mark(FOLDER, name)
    _mark(FOLDER, name)
    return [value_claim(SPEC, 1.0, 2.0, {{"check": name}})]


for _n in ("a", "b", "c"):
    PACK.check(_n, title=_n)(lambda ctx, _n=_n: plain(ctx, _n))


@PACK.check(title="searches", parallel=True)
def searches(ctx):
    got = pools.map_tasks(_task, FOLDER, list(range(6)), workers=ctx.jobs)
    ctx.say("searched")
    return [value_claim(SPEC, float(sum(got)), 100.0, {{"jobs": 0}})]
"""


def _pack(tmp_path):
    folder = tmp_path / "marks"
    folder.mkdir()
    path = tmp_path / "budget_claims.py"
    path.write_text(PACK_SRC.format(tests=os.path.dirname(os.path.abspath(__file__)), folder=str(folder)))
    return load(str(path)), folder


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
@pytest.mark.parametrize("jobs", [2, 3])
def test_a_run_of_several_checks_keeps_to_its_budget(tmp_path, jobs):
    """Four checks, one of which parallelizes (6 tasks over ``jobs`` processes): never more than ``jobs`` pieces
    of work at once, every piece on one thread, the parallel check's progress line passed on, and the records of
    a serial run."""
    pack, folder = _pack(tmp_path)
    said = []
    got, _ = run_checks(pack, plan(pack), seed=0, quick=True, jobs=jobs, say=said.append)
    iv = _intervals(folder)
    assert len(iv) == 12 and _most_at_once(iv) <= jobs
    assert _most_at_once(iv) >= 2  # it did run in parallel
    assert {threads for _, _, threads, _ in iv} == {"1,1"}
    assert "searches: searched" in said
    for f in glob.glob(str(folder / "*")):
        os.remove(f)
    serial, _ = run_checks(pack, plan(pack), seed=0, quick=True, jobs=1)
    assert got == serial and list(got) == ["a", "b", "c", "searches"]
    assert _most_at_once(_intervals(folder)) == 1


def test_one_parallel_check_alone_runs_here_under_the_budget(tmp_path):
    pack, folder = _pack(tmp_path)
    got, _ = run_checks(pack, plan(pack, ["searches"]), seed=0, quick=True, jobs=3)
    iv = _intervals(folder)
    assert got["searches"][0]["empirical"] == sum(t * t for t in range(6))
    assert len(iv) == 6 and 2 <= _most_at_once(iv) <= 3
    assert os.getpid() in {int(n.split("-")[1]) for *_, n in iv}  # this process took its share


def test_the_pool_starts_parallel_then_heavy_checks_first(tmp_path):
    """The pool's order (runner._pool_order): the checks that parallelize themselves, then the heavy ones (a long
    check started last keeps one worker busy while the others are done), then the rest; within each group the
    costlier first (``cost``: longest first), the pack's order among equal costs. The Stacey pack marks its
    acceleration and sharper checks heavy and gives every check a cost. A bad ``heavy=`` keyword is refused like
    any other."""
    from proofs_checks import runner

    f = tmp_path / "claims.py"
    costs = {"a": 0, "b": 0, "c": 0, "d": 0, "e": 0, "f": 1.5, "g": 0.5, "h": 0, "k": 2.0}
    f.write_text(
        "from proofs_checks.api import ClaimSpec, Pack, value_claim\n"
        "PACK = Pack('order', title='t')\n"
        "S = ClaimSpec(id='c', statement='s', source='here')\n"
        + "".join(
            f"@PACK.check(title='{n}', parallel={n == 'd'}, heavy={n in 'bck'}, cost={costs[n]})\n"
            f"def {n}(ctx):\n    return [value_claim(S, 1.0, 2.0, {{'p': 3.0}})]\n"
            for n in "abcdefghk"
        )
    )
    pack = load(str(f))
    assert runner._pool_order(pack, plan(pack)) == ["d", "k", "b", "c", "f", "g", "a", "e", "h"]
    assert runner._pool_order(pack, plan(pack, ["a", "c", "e", "g"])) == ["c", "g", "a", "e"]
    stacey = load("stacey")
    assert {n for n, c in stacey.checks.items() if c.heavy} == {"acceleration", "sharper"}
    assert all(c.cost > 0 for c in stacey.checks.values())
    order = runner._pool_order(stacey, plan(stacey))
    assert set(order[:2]) == {"lemmas", "corrections"} and order[2:4] == ["acceleration", "sharper"]
    rest = [stacey.checks[n].cost for n in order[4:]]
    assert rest == sorted(rest, reverse=True) and order[-1] == "coverage"
    recs, _ = run_checks(pack, plan(pack), seed=0, quick=False, jobs=2)  # every check runs, whatever the order
    assert list(recs) == list("abcdefghk")


@pytest.mark.parametrize(
    "kw, err",
    [
        ("cost=-1", ValueError),
        ("cost=float('nan')", ValueError),
        ("cost='1'", TypeError),
        ("cost=True", TypeError),
        ("heavy=1", TypeError),
        ("parallel='yes'", TypeError),
    ],
)
def test_a_bad_cost_or_flag_is_refused_naming_it(tmp_path, kw, err):
    f = tmp_path / "claims.py"
    f.write_text(
        "from proofs_checks.api import Pack\n"
        "PACK = Pack('bad', title='t')\n"
        f"@PACK.check(title='x', {kw})\n"
        "def x(ctx):\n    return []\n"
    )
    name = kw.split("=")[0]
    with pytest.raises((err, PackError)) as info:
        load(str(f))
    assert name in str(info.value)
