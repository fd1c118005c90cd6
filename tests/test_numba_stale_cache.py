"""A stale entry of numba's on-disk cache is recompiled, not a crash (:mod:`lptheory.fast.numba_cache`).

numba trusts a cache entry while the kernel's own file keeps its mtime and size; a kernel calling a function
of a module that has since moved (issue 34: ``lptheory._svml_kernels`` -> ``lptheory.fast.svml_kernels``)
then loads an entry that imports the old module, and crashed with ``ModuleNotFoundError``. The scenario is
rebuilt here in a scratch package, in fresh processes (so the disk cache is really read back)."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import pytest

numba = pytest.importorskip("numba")

from lptheory.fast import numba_cache  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "lpt_stale_pkg"
CALL = f"import {PKG}.kern as k; print(k.g(2.0))"
HOOK = "from lptheory.fast import numba_cache; assert numba_cache.install(); "


def _write(path, text):
    with open(path, "w") as fh:
        fh.write(textwrap.dedent(text))


def _run(code, env):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def scratch(tmp_path):
    """A package whose cached kernel ``kern.g`` calls ``dep_a.f`` through the shim ``dep`` (as the synthetic
    kernels call the fast machinery through ``lptheory.numpy_power``), and an environment with a fresh
    numba cache directory."""
    src = tmp_path / "src"
    pkg = src / PKG
    pkg.mkdir(parents=True)
    _write(pkg / "__init__.py", "")
    _write(pkg / "dep_a.py", "import numba\n\n\n@numba.njit(cache=True)\ndef f(x):\n    return 3.0 * x + 1.0\n")
    _write(pkg / "dep.py", f"from {PKG}.dep_a import f  # noqa: F401\n")
    _write(
        pkg / "kern.py",
        f"import numba\n\nfrom {PKG}.dep import f\n\n\n@numba.njit(cache=True)\ndef g(x):\n    return f(x) * 2.0\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(src), ROOT])
    env["PYTHONWARNINGS"] = "default"
    return pkg, env, tmp_path / "cache"


def _move_dependency(pkg):
    """dep_a.py -> dep_b.py, the shim follows; kern.py is not touched (its mtime and size stay)."""
    before = os.stat(pkg / "kern.py")
    os.rename(pkg / "dep_a.py", pkg / "dep_b.py")
    _write(pkg / "dep.py", f"from {PKG}.dep_b import f  # noqa: F401\n")
    after = os.stat(pkg / "kern.py")
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


@pytest.mark.slow  # compiles kernels in fresh processes: seconds each
def test_stale_entry_is_recompiled_with_one_warning(scratch):
    pkg, env, cache = scratch
    first = _run(CALL, env)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["14.0"]
    assert any(n.startswith("kern.g-") and n.endswith(".nbi") for _, _, fs in os.walk(cache) for n in fs)
    _move_dependency(pkg)

    # without the guard: numba loads kern.g's stale entry, whose pickled environment imports dep_a
    crash = _run(CALL, env)
    assert crash.returncode != 0
    assert f"ModuleNotFoundError: No module named '{PKG}.dep_a'" in crash.stderr
    assert "caching.py" in crash.stderr  # raised while numba loads the cache entry

    # with it: a miss, compiled afresh, the right value, one warning naming the kernel
    fixed = _run(HOOK + CALL, env)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.split() == ["14.0"]
    assert fixed.stderr.count("StaleNumbaCacheWarning") == 1, fixed.stderr
    assert f"{PKG}.kern.g" in fixed.stderr and "No module named" in fixed.stderr
    assert "*.nb[ic]" in fixed.stderr  # says how to clear the caches

    # numba overwrote the entry: the next process loads it without the guard and without a warning
    again = _run(CALL, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["14.0"]
    assert "StaleNumbaCacheWarning" not in again.stderr


def test_genuine_compile_error_still_raises(tmp_path, monkeypatch):
    assert numba_cache.install()
    _write(
        tmp_path / "lpt_bad_kernel.py",
        "import numba\n\n\n@numba.njit(cache=True)\ndef bad(x):\n    return x + 'a'\n\n\n"
        "@numba.njit(cache=True)\ndef gone(x):\n    return missing_module.f(x)  # noqa: F821\n",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import lpt_bad_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("error", numba_cache.StaleNumbaCacheWarning)
        with pytest.raises(numba.core.errors.TypingError):
            lpt_bad_kernel.bad(1.0)
        with pytest.raises(numba.core.errors.TypingError, match="missing_module"):
            lpt_bad_kernel.gone(1.0)


def test_guard_turns_only_stale_errors_into_a_miss(monkeypatch):
    monkeypatch.setattr(numba_cache, "_WARNED", [])

    def kernel():
        pass

    class Fake:
        _py_func = kernel
        cache_path = "/nowhere"

    def load(self, sig, ctx):
        raise errors.pop()

    guarded = numba_cache.guarded(load)
    assert numba_cache.guarded(guarded) is guarded  # installed once, never wrapped twice
    errors = [ValueError("a genuine error"), OSError("disk")]
    for exc in (OSError, ValueError):
        with pytest.raises(exc):
            guarded(Fake(), None, None)
    errors = [pickle.UnpicklingError("x"), AttributeError("no f"), ModuleNotFoundError("No module named 'old'")]
    with pytest.warns(numba_cache.StaleNumbaCacheWarning, match=r"kernel.*No module named 'old'.*nowhere"):
        assert guarded(Fake(), None, None) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: the next stale entries are silent
        assert guarded(Fake(), None, None) is None
        assert guarded(Fake(), None, None) is None


def test_guard_is_on_numbas_cache_loading():
    from numba.core import caching

    assert numba_cache.install()
    assert getattr(caching.Cache.load_overload, "_lptheory_stale_cache_guard", False)


def test_numba_without_the_hooked_method_is_left_alone(monkeypatch):
    from numba.core import caching

    class Other:  # another numba design: no Cache.load_overload to wrap
        pass

    monkeypatch.setattr(caching, "Cache", Other)
    assert numba_cache._hook.__wrapped__() is False
    assert not hasattr(Other, "load_overload")


def test_every_cached_kernel_module_installs_the_guard():
    """Each module defining a ``cache=True`` kernel calls ``numba_cache.install(__file__)`` (so the guard is in
    place before any cached dispatcher of lptheory, synthetic or proofs_checks is first called, and the module
    counts among the kernels' sources); every other module importing numba outside ``lptheory.fast`` (which
    numba_cache registers itself) registers too."""
    missing, seen = [], 0
    for top in ("lptheory", "synthetic", "proofs_checks", "figures"):
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if not f.endswith(".py") or f == "numba_cache.py":
                    continue
                path = os.path.join(dirpath, f)
                with open(path) as fh:
                    text = fh.read()
                if "cache=True" in text:
                    seen += 1
                    if f == "fused.py":  # registers the modules it generates, not itself (lptheory.fast is)
                        ok = "numba_cache.install(path, callee=False)" in text
                    else:
                        ok = "numba_cache.install(__file__)" in text
                    if not ok:
                        missing.append(path)
                elif "import numba" in text and os.path.dirname(path) != os.path.join(ROOT, "lptheory", "fast"):
                    if "numba_cache.register(__file__)" not in text and "numba_cache.install(__file__)" not in text:
                        missing.append(path)
    assert seen >= 10 and not missing
    with open(os.path.join(ROOT, "lptheory", "numpy_power.py")) as fh:
        assert "numba_cache.register(__file__)" in fh.read()  # the shim the synthetic kernels import from


def test_import_lptheory_still_does_not_import_numba():
    code = "import sys, lptheory, lptheory.fast.numba_cache; assert 'numba' not in sys.modules, 'numba imported'"
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = _run(code, env)
    assert out.returncode == 0, out.stderr


# -- a callee edited in place in another file (same module and name, new code) ------------------------------

DEP_PKG = "lpt_dep_pkg"
REG = "from lptheory.fast import numba_cache\n\nnumba_cache.install(__file__)\n"
STATS = "print(sum(k.g.stats.cache_hits.values()), sum(k.g.stats.cache_misses.values()))"


def _dep_source(a):
    return f"import numba\n{REG}\n\n@numba.njit(cache=True)\ndef f(x):\n    return {a} * x + 1.0\n"


@pytest.fixture
def dep_pkg(tmp_path):
    """A package registered the way the toolkit's kernel modules are (``numba_cache.install(__file__)``): the
    cached kernel ``kern.g`` calls ``dep_a.f`` (another file) through the shim ``dep``, as the synthetic
    kernels call ``lptheory.fast`` through ``lptheory.numpy_power``; a fresh numba cache directory."""
    src = tmp_path / "src"
    pkg = src / DEP_PKG
    pkg.mkdir(parents=True)
    _write(pkg / "__init__.py", "")
    _write(pkg / "dep_a.py", _dep_source("3.0"))
    _write(
        pkg / "dep.py",
        f"from lptheory.fast import numba_cache\n\nfrom {DEP_PKG}.dep_a import f  # noqa: F401\n"
        "\nnumba_cache.register(__file__)\n",
    )
    _write(
        pkg / "kern.py",
        f"import numba\n{REG}\nfrom {DEP_PKG}.dep import f\n\n\n"
        "@numba.njit(cache=True)\ndef g(x):\n    return f(x) * 2.0\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(src), ROOT])
    env["PYTHONWARNINGS"] = "error::lptheory.fast.numba_cache.StaleNumbaCacheWarning"
    return pkg, env


def _g(env, arg="2.0", pre="", post=""):
    """``kern.g(arg)`` in a fresh process: (value, cache hits of g, cache misses of g)."""
    out = _run(f"{pre}import {DEP_PKG}.kern as k\n{post}print(k.g({arg}))\n{STATS}", env)
    assert out.returncode == 0, out.stderr
    value, hits, misses = out.stdout.split()
    return float(value), int(hits), int(misses)


def _edit_callee(pkg, a):
    """dep_a.f gets new code under the same name; kern.py (the caller) keeps its mtime and size."""
    before = os.stat(pkg / "kern.py")
    _write(pkg / "dep_a.py", _dep_source(a))
    after = os.stat(pkg / "kern.py")
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size)


WITHOUT_CHECK = "from lptheory.fast import numba_cache as nc\nnc._older_than_sources = lambda cache: False\n"


@pytest.mark.slow  # compiles kernels in fresh processes: seconds each
def test_unchanged_tree_loads_from_cache(dep_pkg):
    pkg, env = dep_pkg
    assert _g(env) == (14.0, 0, 1)  # first run: compiled and written
    assert _g(env) == (14.0, 1, 0)  # unchanged files: loaded, nothing recompiled
    assert _g(env) == (14.0, 1, 0)


@pytest.mark.slow  # compiles kernels in fresh processes: seconds each
def test_callee_edited_in_another_file_is_recompiled(dep_pkg):
    pkg, env = dep_pkg
    assert _g(env) == (14.0, 0, 1)
    _edit_callee(pkg, "5.0")  # g(2) = (5 * 2 + 1) * 2 = 22 from now on
    # numba alone trusts g's entry (its own file is unchanged) and runs the old f
    assert _g(env, pre=WITHOUT_CHECK) == (14.0, 1, 0)
    # the check: g's index is older than dep_a.py, a miss; no warning (the warnings are errors here)
    assert _g(env) == (22.0, 0, 1)
    # the entry written then is newer than the sources: later processes load it
    assert _g(env) == (22.0, 1, 0)
    assert _g(env, pre=WITHOUT_CHECK) == (22.0, 1, 0)


@pytest.mark.slow  # compiles kernels in fresh processes: seconds each
def test_every_signature_of_an_edited_callers_entry_is_dropped(dep_pkg):
    """An index holding two signatures: after the edit, the one compiled first rewrites the index; the
    other must not be loaded from it (numba rewrites an index only to add a key)."""
    pkg, env = dep_pkg
    assert _g(env) == (14.0, 0, 1)
    assert _g(env, arg="2") == (14.0, 0, 1)  # an int64 entry beside the float64 one
    assert _g(env, arg="2") == (14.0, 1, 0)
    _edit_callee(pkg, "5.0")
    assert _g(env) == (22.0, 0, 1)
    assert _g(env, arg="2") == (22.0, 0, 1)
    assert _g(env, arg="2") == (22.0, 1, 0)
    assert _g(env) == (22.0, 1, 0)


@pytest.mark.slow  # compiles kernels in fresh processes: seconds each
def test_edit_while_a_process_runs_is_seen_by_the_next(dep_pkg):
    pkg, env = dep_pkg
    assert _g(env) == (14.0, 0, 1)
    # the process has imported f = 3x + 1; f is edited, then the process compiles g at a new signature:
    # its code is the old one, so that entry is not written, and the next process compiles the new code
    edit = f"open({str(pkg / 'dep_a.py')!r}, 'w').write({_dep_source('5.0')!r})\n"
    assert _g(env, arg="2", post=edit) == (14.0, 0, 1)
    assert _g(env, arg="2") == (22.0, 0, 1)
    assert _g(env) == (22.0, 0, 1)
    assert _g(env) == (22.0, 1, 0)


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_unregistered_kernels_keep_numbas_behaviour(dep_pkg):
    """A user's cached kernel (its file not registered) is checked by numba alone: loaded after an edit of
    its callee, as numba does (the guard against moved modules still applies to it)."""
    pkg, env = dep_pkg
    for name in ("kern.py", "dep_a.py", "dep.py"):
        text = (pkg / name).read_text().replace("numba_cache.install(__file__)", "numba_cache.install()")
        (pkg / name).write_text(text.replace("numba_cache.register(__file__)", ""))
    assert _g(env) == (14.0, 0, 1)
    _edit_callee(pkg, "5.0")
    assert _g(env) == (14.0, 1, 0)


def test_index_not_newer_than_the_sources_is_a_miss(tmp_path, monkeypatch):
    """The comparison itself: a registered kernel's index older than, or as old as, the newest registered
    source is emptied and missed; a newer one is loaded; an unregistered kernel is left to numba."""
    monkeypatch.setattr(numba_cache, "_KERNEL_FILES", set())
    monkeypatch.setattr(numba_cache, "_SOURCES", {})
    monkeypatch.setattr(numba_cache, "_NEWEST", [-1])
    kern, dep, index = tmp_path / "kern_mod.py", tmp_path / "dep_mod.py", tmp_path / "g.nbi"
    for path in (kern, dep, index):
        path.write_text("x = 1\n")
    os.utime(dep, ns=(0, 2_000_000_000_000_000_000))
    ns: dict = {}
    exec(compile("def g():\n    pass\n", str(kern), "exec"), ns)  # noqa: S102  (a function defined in kern_mod.py)

    class File:
        _index_path = str(index)

    class Fake:
        _py_func = ns["g"]
        _cache_file = File()
        flushed = 0

        def flush(self):
            self.flushed += 1

    load = numba_cache.guarded(lambda self, sig, ctx: "entry")
    fake = Fake()
    assert load(fake, None, None) == "entry"  # nothing registered: numba's behaviour
    numba_cache.register(str(kern))
    numba_cache.register(str(dep))
    assert numba_cache._NEWEST[0] >= 2_000_000_000_000_000_000
    for mtime, expected in ((1_999_999_999_000_000_000, None), (2_000_000_000_000_000_000, None)):
        os.utime(index, ns=(0, mtime))
        assert load(fake, None, None) is expected
    assert fake.flushed == 2
    os.utime(index, ns=(0, 2_000_000_000_000_000_001))
    assert load(fake, None, None) == "entry" and fake.flushed == 2
    index.unlink()
    assert load(fake, None, None) == "entry"  # no index yet: numba decides (a miss)
    with pytest.raises(TypeError, match="source"):
        numba_cache.register(None)


def test_lptheorys_own_sources_are_registered():
    code = (
        "import lptheory.numpy_power, synthetic._smooth_kernel as s\n"
        "from lptheory.fast import numba_cache as nc\n"
        "names = {os.path.relpath(p, sys.argv[1]) for p in nc._SOURCES}\n"
        "print(sorted(names))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import os, sys\n" + code, ROOT],
        env=dict(os.environ, PYTHONPATH=ROOT),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    names = set(eval(out.stdout))  # noqa: S307  (our own printed list)
    fast = {
        os.path.join("lptheory", "fast", f)
        for f in os.listdir(os.path.join(ROOT, "lptheory", "fast"))
        if f.endswith(".py")
    }
    assert fast <= names
    assert {os.path.join("lptheory", "numpy_power.py"), os.path.join("synthetic", "_smooth_kernel.py")} <= names
