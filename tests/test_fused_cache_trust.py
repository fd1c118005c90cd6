"""The fused engine's cache of generated code imports only this installation's own output (issue 37)."""

import hashlib
import os

import pytest

from lptheory.fast import fused


def _planted(root, source, marker):
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = root / f"lptheory_fused_{digest}.py"
    path.write_text(f"open({str(marker)!r}, 'w').close()\nX = 666\n")
    return path


def test_a_planted_kernel_file_is_never_imported(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("LPTHEORY_CACHE_DIR", str(root))
    source = "X = 1\n"
    marker = tmp_path / "ran"
    path = _planted(root, source, marker)
    mod = fused._module(source)
    assert mod.X == 1 and not marker.exists()
    assert path.read_text() == source  # rewritten with our own output
    assert fused._module(source).X == 1  # and then reused


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_cache_directory_others_can_write_is_not_used(tmp_path, monkeypatch):
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o777)
    monkeypatch.setenv("LPTHEORY_CACHE_DIR", str(root))
    source = "X = 2\n"
    marker = tmp_path / "ran"
    _planted(root, source, marker)
    with pytest.raises(OSError, match="not private"):
        fused.private_cache_dir(str(root))
    mod = fused._module(source)  # compiled in memory: nothing imported from the shared directory
    assert mod.X == 2 and not marker.exists()


def test_the_cache_directory_is_created_private(tmp_path):
    root = tmp_path / "new" / "cache"
    fused.private_cache_dir(str(root))
    assert os.stat(root).st_mode & 0o077 == 0
