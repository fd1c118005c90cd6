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
    assert numba_cache.install.__wrapped__() is False
    assert not hasattr(Other, "load_overload")


def test_every_cached_kernel_module_installs_the_guard():
    """Each module defining a ``cache=True`` kernel calls ``numba_cache.install()`` (so the guard is in place
    before any cached dispatcher of lptheory, synthetic or proofs_checks is first called)."""
    missing, seen = [], 0
    for top in ("lptheory", "synthetic", "proofs_checks", "figures"):
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(dirpath, f)) as fh:
                        text = fh.read()
                    if "cache=True" in text and f != "numba_cache.py":
                        seen += 1
                        if "numba_cache.install()" not in text:
                            missing.append(os.path.join(dirpath, f))
    assert seen >= 10 and not missing


def test_import_lptheory_still_does_not_import_numba():
    code = "import sys, lptheory, lptheory.fast.numba_cache; assert 'numba' not in sys.modules, 'numba imported'"
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = _run(code, env)
    assert out.returncode == 0, out.stderr
