import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# The deciders' kept decisions (proofs_checks.moment.kept_decision) of this session live in a directory of its own:
# a test that plants a bug in a decider (monkeypatched, so invisible to the sources' hash that keys an entry) must
# never leave its planted result in the user's cache for a later run to read back. LPTHEORY_SHARP_CACHE set by the
# caller is kept (0 turns the cache off).
if "LPTHEORY_SHARP_CACHE" not in os.environ:
    import atexit

    _SHARP_DIR = tempfile.mkdtemp(prefix="lptheory-test-sharp-")
    os.environ["LPTHEORY_SHARP_CACHE"] = _SHARP_DIR
    atexit.register(shutil.rmtree, _SHARP_DIR, True)

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def rng():
    return np.random.default_rng(np.random.SeedSequence(20251121))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: a deselected test does not start the build
def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` need CUDA: skipped (with the reason) on machines without it, such as CI.
    When a selected test uses the quick report, its build starts now in a background process."""
    if any("stacey_quick_report" in getattr(item, "fixturenames", ()) for item in items):
        _QUICK.start(config)
    if _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


# ---------------------------------------------------------------------------------------------------
# the quick report shared by tests/test_report.py
#
# `lptheory report --quick` of the Stacey pack at seed 0 costs minutes, most of the suite's time. It is
# built once per session in a background process (`--jobs 1`: one core, while the tests run on the
# other), started as soon as collection finds a test that needs it, and cached on disk under a key made
# of every source file the report reads and the versions of the libraries that compute it, so an
# unchanged tree reuses it (LPTHEORY_TEST_CACHE=0 turns the cache off; LPTHEORY_TEST_CACHE=DIR moves it).

ROOT = Path(__file__).resolve().parent.parent
_SOURCES = ("lptheory", "synthetic", "proofs_checks", "figures")
_RUNNER = """
import sys
from lptheory.app.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _report_key() -> str:
    """sha256 of the report's inputs: every source file (path and bytes) and the library versions."""
    import mpmath
    import scipy
    import sympy

    h = hashlib.sha256()
    for pkg in _SOURCES:
        for f in sorted((ROOT / pkg).rglob("*")):
            if (
                f.is_file()
                and f.suffix in (".py", ".j2", ".toml", ".json", ".css", ".js")
                and "__pycache__" not in f.parts
            ):
                h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes() + b"\0")
    versions = [sys.version, np.__version__, scipy.__version__, sympy.__version__, mpmath.__version__]
    try:
        import numba

        versions.append(numba.__version__)
    except ImportError:
        versions.append("no numba")
    versions.append(os.environ.get("LPTHEORY_ENGINE", ""))
    h.update(repr(versions).encode())
    return h.hexdigest()[:24]


def _cache_root() -> Path | None:
    env = os.environ.get("LPTHEORY_TEST_CACHE", "")
    if env == "0":
        return None
    return Path(env) if env else Path.home() / ".cache" / "lptheory" / "test-quick-report"


class _QuickReport:
    """The quick report's build: a cached copy, a background process, or (if either fails) in-process."""

    ARGS = ["report", "--quick", "--quiet", "--jobs", "1"]

    def __init__(self):
        self.proc = None
        self.log = None
        self.out = None
        self.cached = None
        self.key = None

    def start(self, config):
        if self.out is not None:
            return
        self.key = _report_key()
        root = _cache_root()
        if root is not None and (root / self.key / "claims.json").is_file():
            self.cached = root / self.key
        self.out = Path(tempfile.mkdtemp(prefix="lptheory-quick-report-"))
        if self.cached is not None:
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
        self.log = open(self.out.with_suffix(".log"), "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _RUNNER, *self.ARGS, "--out", str(self.out / "report")],
            cwd=str(ROOT),
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def result(self):
        """(out_dir, claims.json as a dict), waiting for the background build."""
        report = self.out / "report"
        if self.cached is not None:
            if not report.exists():
                shutil.copytree(self.cached, report)
        else:
            rc = self.proc.wait() if self.proc is not None else None
            if rc != 0:  # the background build failed (or never started): build it here, where the error shows
                if self.proc is not None:
                    self.log.seek(0)
                    sys.stderr.write(f"background quick report failed (exit {rc}):\n{self.log.read()[-4000:]}\n")
                try:
                    from lptheory.app.cli import main
                except ImportError:
                    from lptheory.cli import main
                shutil.rmtree(report, ignore_errors=True)
                assert main([*self.ARGS, "--out", str(report)]) == 0
            self.proc = None
            root = _cache_root()
            if root is not None and self.key == _report_key():  # the tree did not change during the build
                dest = root / self.key
                try:
                    if not dest.exists():
                        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=_mkdir(root)))
                        shutil.copytree(report, tmp / "r")
                        try:
                            os.replace(tmp / "r", dest)
                        except OSError:
                            pass  # another session stored it first
                        shutil.rmtree(tmp, ignore_errors=True)
                except OSError:
                    pass  # no writable cache directory: the next session builds it again
        return report, json.loads((report / "claims.json").read_text())

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.out is not None:
            shutil.rmtree(self.out, ignore_errors=True)
            try:
                self.out.with_suffix(".log").unlink()
            except OSError:
                pass


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


_QUICK = _QuickReport()


def pytest_unconfigure(config):
    _QUICK.stop()


@pytest.fixture(scope="session")
def stacey_quick_report():
    """`lptheory report --quick` of the Stacey pack at seed 0, once per test session (built in the
    background from collection on, or taken from the on-disk cache of an unchanged tree): (out_dir, result)."""
    if _QUICK.out is None:
        _QUICK.start(None)
    return _QUICK.result()
