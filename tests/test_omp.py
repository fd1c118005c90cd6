"""lptheory.fast.omp: work on the OpenMP team of torch's operations (issue 25, item 3: the torch fused step's
second thread shared a core with torch's spinning OpenMP threads).

What must hold: every item runs exactly once whatever the team size; items run on distinct threads at
once; an item's exception reaches the caller and the team stays usable; the route turns off with
``LPTHEORY_OMP=0`` and in a forked child; the torch optimizers give the same bits on the team as on the
pool and unsplit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import types

import pytest

from lptheory.fast import omp as _omp
from lptheory.fast import pool as _pool

torch = pytest.importorskip("torch")

TORCH_LIB = os.path.join(os.path.dirname(torch.__file__), "lib")


def _torch_team():
    import lptheory.torch as lt

    team = lt._omp_team()
    if team is None:
        pytest.skip("no OpenMP team identified here (not Linux, or ATen's backend is not OpenMP)")
    return team


def _each_once(run, n, threads):
    """``run(fn, n, threads)`` called with an ``fn`` that counts its calls: the results in item order and
    every item called exactly once."""
    calls = [0] * n
    lock = threading.Lock()

    def fn(i):
        with lock:
            calls[i] += 1
        return 10 * i

    got = run(fn, n, threads)
    assert got == [10 * i for i in range(n)], got
    assert calls == [1] * n, calls


@pytest.mark.parametrize("n, threads", [(1, 1), (2, 2), (7, 2), (2, 5), (13, 1), (64, 3), (9, 4)])
def test_every_item_once_in_order(n, threads):
    _each_once(_torch_team().run, n, threads)


def test_no_items_is_an_empty_list():
    assert _torch_team().run(lambda i: 1 / 0, 0, 2) == []


def test_the_once_check_catches_a_runner_that_repeats_or_skips():
    """Planted bugs: a runner that runs item 0 twice, one that skips the last item."""

    def twice(fn, n, threads):
        fn(0)
        return [fn(i) for i in range(n)]

    def skips(fn, n, threads):
        return [fn(i) for i in range(n - 1)] + [10 * (n - 1)]

    for bad in (twice, skips):
        with pytest.raises(AssertionError):
            _each_once(bad, 5, 2)


def test_items_run_at_once_on_distinct_threads():
    """Two items that each wait for the other (a barrier of 2) finish only if two members run them at the
    same time; they ran on two distinct threads, the calling thread one of them."""
    team = _torch_team()
    barrier = threading.Barrier(2, timeout=20)

    def fn(i):
        barrier.wait()
        return threading.get_ident()

    idents = team.run(fn, 2, 2)
    assert len(set(idents)) == 2
    assert threading.get_ident() in idents


def test_an_items_exception_reaches_the_caller_and_the_team_stays_usable():
    team = _torch_team()

    def fn(i):
        if i == 3:
            raise KeyError("item 3")
        return i

    with pytest.raises(KeyError, match="item 3"):
        team.run(fn, 6, 2)
    _each_once(team.run, 6, 2)


def test_concurrent_callers_from_two_python_threads():
    """Two Python threads splitting at the same time (each master has its own OpenMP team): both get
    their own results."""
    team = _torch_team()
    out, errors = {}, []

    def caller(tag):
        try:
            for _ in range(20):
                out[tag] = team.run(lambda i: (tag, i), 9, 2)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    ts = [threading.Thread(target=caller, args=(t,)) for t in ("a", "b")]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors
    assert out == {t: [(t, i) for i in range(9)] for t in ("a", "b")}


def test_lptheory_omp_switch(monkeypatch):
    _torch_team()
    monkeypatch.setenv("LPTHEORY_OMP", "0")
    assert not _omp.enabled() and _omp.team(TORCH_LIB) is None
    monkeypatch.setenv("LPTHEORY_OMP", "yes")
    with pytest.raises(ValueError, match="LPTHEORY_OMP must be 0 or 1"):
        _omp.enabled()
    monkeypatch.setenv("LPTHEORY_OMP", "1")
    assert _omp.team(TORCH_LIB) is not None


def test_the_team_is_torchs_runtime():
    """The runtime picked is one mapped into the process, from torch's library directory when torch
    loads one from there."""
    team = _torch_team()
    mapped = _omp._mapped_runtimes()
    assert team.path in mapped
    here = [p for p in mapped if os.path.dirname(p) == os.path.normpath(TORCH_LIB)]
    if here:
        assert team.path == here[0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_use_the_team():
    _torch_team()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave at once (no pytest teardown here)
        try:
            os.write(w, b"none" if _omp.team(TORCH_LIB) is None else b"team")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"none"
    assert _omp.team(TORCH_LIB) is not None  # the parent keeps it


def test_pool_split_uses_the_team_only_inside_on_team():
    team = _torch_team()
    seen = []

    class Spy:
        def run(self, fn, n, threads):
            seen.append(n)
            return team.run(fn, n, threads)

    _each_once(_pool.split, 5, 2)
    assert seen == []
    with _pool.on_team(Spy()):
        _each_once(_pool.split, 5, 2)
        with _pool.on_team(None):
            _each_once(_pool.split, 4, 2)
    _each_once(_pool.split, 3, 2)
    assert seen == [5]


def _spy_team_runs(monkeypatch):
    count = [0]
    real = _omp.Team.run

    def run(self, fn, n, threads):
        count[0] += 1
        return real(self, fn, n, threads)

    monkeypatch.setattr(_omp.Team, "run", run)
    return count


@pytest.mark.skipif(sys.platform != "linux", reason="the OpenMP route is Linux-only")
@pytest.mark.parametrize("route", ["team", "pool"])
def test_torch_optimizers_give_the_same_bits_on_the_team_the_pool_and_unsplit(monkeypatch, route):
    """StaceyPP at p = 2.7 on parameters large enough to be split (a 400x400 matrix, a 140001 vector),
    fused and default paths, new gradients every step: the iterates and states on each route equal those
    of one thread (LPTHEORY_THREADS=1) bit for bit, and the route taken is the one asked for."""
    from lptheory.fast import fused as _fused

    if not _fused.available():
        pytest.skip("numba not installed")
    import lptheory.torch as lt

    _torch_team()
    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)
    count = _spy_team_runs(monkeypatch)
    before = torch.get_num_threads()
    shapes = [(400, 400), (140001,), (33,)]

    def run(flags, threads, omp):
        monkeypatch.setenv("LPTHEORY_THREADS", str(threads))
        monkeypatch.setenv("LPTHEORY_OMP", omp)
        ps = [torch.nn.Parameter(torch.randn(s, generator=torch.Generator().manual_seed(1))) for s in shapes]
        opt = lt.StaceyPP(ps, lr=0.01, p=2.7, eps_mode="official", weight_decay=0.1, **flags)
        g = torch.Generator().manual_seed(8)
        for _ in range(3):
            for p in ps:
                p.grad = torch.randn(p.shape, generator=g)
            opt.step()
        return [p.detach().clone() for p in ps] + [opt.state[p][k].clone() for p in ps for k in ("w", "m")]

    torch.set_num_threads(2)
    try:
        for flags in (dict(fused=True), dict(foreach=False)):
            ref = run(flags, 1, "0")
            count[0] = 0
            got = run(flags, 2, "1" if route == "team" else "0")
            assert (count[0] > 0) == (route == "team"), count[0]
            assert all(torch.equal(a, b) for a, b in zip(ref, got)), flags
    finally:
        torch.set_num_threads(before)


def test_a_keyboard_interrupt_dropped_by_ctypes_is_raised_after_the_region():
    """Python runs a pending signal handler on entry to a member's callback, before its ``try``; ctypes then
    hands the KeyboardInterrupt to ``sys.unraisablehook`` and drops it. The hook keeps it (as ctypes would
    pass it: the member as ``object``) and the call raises it; other exceptions and objects are not kept."""
    team = _torch_team()

    def unraisable(exc, obj):
        return types.SimpleNamespace(exc_type=type(exc), exc_value=exc, exc_traceback=None, err_msg=None, object=obj)

    assert not _omp.keep_interrupt(unraisable(ValueError("x"), team._member))
    assert not _omp.keep_interrupt(unraisable(KeyboardInterrupt(), print))
    assert _omp.keep_interrupt(unraisable(KeyboardInterrupt(), team._member))
    with pytest.raises(KeyboardInterrupt):
        team.run(lambda i: i, 4, 2)
    assert team.run(lambda i: i, 4, 2) == [0, 1, 2, 3]  # raised once


def _run_script(code: str, env=None, timeout=120):
    """``code`` in a fresh interpreter (the repository first on sys.path): its completed process; a hang
    past ``timeout`` seconds fails the test."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    full = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]), **(env or {}))
    try:
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], env=full, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the script hung (over {timeout} s): {exc.stdout!r} {exc.stderr!r}")


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.parametrize("imported", [True, False])
def test_steps_in_a_forked_child_finish(imported):
    """The parent uses torch's OpenMP threads (a matrix product), then forks without having stepped an
    lptheory optimizer (with lptheory.torch imported or not); the child, on one torch thread (torch's own
    parallel operations hang in a forked child otherwise, whatever lptheory does), steps large tensors on the
    default and the fused paths. It must finish: a child never enters the parent's team (lptheory.torch
    imported before the fork: the fork hook turns the team off, checked; imported only in the child:
    lptheory.torch never asks for more threads than torch's)."""
    _torch_team()
    code = f"""
        import os, sys, torch
        torch.set_num_threads(2)
        a = torch.randn(600, 600)
        (a @ a).sum()  # torch's OpenMP team created and used
        if {imported}:
            import lptheory.torch
        g = torch.Generator().manual_seed(0)
        ps = [torch.nn.Parameter(torch.randn(400, 400, generator=g)) for _ in range(2)]
        grads = [torch.randn(400, 400, generator=g) for _ in range(2)]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                torch.set_num_threads(1)
                import lptheory.torch as lt
                if {imported} and lt._omp_team() is not None:
                    os._exit(3)
                for i, flags in enumerate([dict(foreach=False), dict(fused=True)]):
                    ps[i].grad = grads[i]
                    lt.StaceyPP([ps[i]], lr=1e-3, p=3.0, **flags).step()
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    """
    done = _run_script(code, env={"LPTHEORY_THREADS": "2"}, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_a_team_smaller_than_asked_still_runs_every_item_once():
    """OMP_THREAD_LIMIT=1: asking for 2 threads gives a team of one; every item still runs, once."""
    _torch_team()
    code = """
        import threading, torch
        import lptheory.torch as lt
        team = lt._omp_team()
        calls = []
        got = team.run(lambda i: (calls.append(i), threading.get_ident())[1], 7, 2)
        print(sorted(calls) == list(range(7)), len(set(got)))
    """
    done = _run_script(code, env={"OMP_THREAD_LIMIT": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "1"], done.stdout


def test_the_default_path_never_asks_for_more_threads_than_torch(monkeypatch):
    """One torch thread: the default path's large tensors do not enter an OpenMP region (no thread torch
    does not have); two: they do."""
    from lptheory.fast import fused as _fused

    if not _fused.available():
        pytest.skip("numba not installed")
    import lptheory.torch as lt

    team = _torch_team()
    monkeypatch.setattr(lt, "_NUMBA_ON_CPU", True)
    monkeypatch.setenv("LPTHEORY_THREADS", "2")
    regions = []
    real = team._parallel

    def parallel(body, key, nthreads, flags):
        regions.append(nthreads)
        return real(body, key, nthreads, flags)

    monkeypatch.setattr(team, "_parallel", parallel)
    before = torch.get_num_threads()
    try:
        for nt in (1, 2):
            torch.set_num_threads(nt)
            regions.clear()
            p = torch.nn.Parameter(torch.randn(400, 400))
            p.grad = torch.randn(400, 400)
            lt.StaceyPP([p], lr=1e-3, p=3.0).step()
            assert regions == ([] if nt == 1 else [2]), (nt, regions)
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(sys.platform != "linux", reason="the OpenMP route is Linux-only")
def test_the_team_is_found_wherever_torch_runs_on_openmp(monkeypatch):
    """Where ATen's backend is OpenMP (the PyPI wheel: CI), the team must be found: the other tests skip without
    it, so a detection that silently broke would show here, not as skips. Control: LPTHEORY_OMP=0 gives None."""
    import lptheory.torch as lt

    if "parallel backend: OpenMP" not in torch.__config__.parallel_info():
        pytest.skip("ATen's parallel backend is not OpenMP in this torch build")
    assert lt._omp_team() is not None
    monkeypatch.setenv("LPTHEORY_OMP", "0")
    assert lt._omp_team() is None
