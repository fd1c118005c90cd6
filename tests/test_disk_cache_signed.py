"""Signed JSON cache entries (proofs_checks.disk_cache.load_signed / save_signed): what this user wrote reads
back; an edited, foreign, damaged or misshapen entry is a miss with a warning naming the file; a missing one is a
plain miss."""

from __future__ import annotations

import os
import warnings

import pytest

from proofs_checks.disk_cache import CacheEntryIgnored, load_signed, save_signed


@pytest.fixture
def key_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path


def _shaped(text):
    """A parse that checks the shape the caller uses (an object with a list 'curve')."""
    import json

    doc = json.loads(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("curve"), list):
        raise ValueError("not an object with a list 'curve'")
    return doc


def test_round_trip_and_plain_miss(key_home):
    path = str(key_home / "c" / "run.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing entry: no warning
        assert load_signed(path) is None
        assert save_signed(path, {"curve": [1.0, 0.5]})
        assert load_signed(path, _shaped) == {"curve": [1.0, 0.5]}


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text.replace("0.5", "0.05"),  # an edited curve (the signature no longer verifies)
        lambda text: "[]",  # replaced by hand: no signature at all
        lambda text: text.split("\n", 1)[0] + "\n",  # truncated after the signature
    ],
    ids=["edited", "replaced", "truncated"],
)
def test_a_bad_entry_is_a_miss_naming_the_file(key_home, damage):
    path = str(key_home / "run.json")
    save_signed(path, {"curve": [1.0, 0.5]})
    with open(path) as fh:
        text = fh.read()
    with open(path, "w") as fh:
        fh.write(damage(text))
    with pytest.warns(CacheEntryIgnored, match="run.json"):
        assert load_signed(path, _shaped) is None


def test_a_signed_entry_of_the_wrong_shape_is_a_miss(key_home):
    """`[]` signed under the right key (a bug of an older writer, say): the parse's shape check makes it a miss,
    not an AttributeError on every rerun."""
    path = str(key_home / "run.json")
    save_signed(path, [])
    with pytest.warns(CacheEntryIgnored, match="damaged"):
        assert load_signed(path, _shaped) is None


def test_another_users_key_does_not_verify(key_home, monkeypatch):
    path = str(key_home / "run.json")
    save_signed(path, {"curve": [1.0]})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(key_home / "other"))  # another key: a copied cache
    with pytest.warns(CacheEntryIgnored, match="signature"):
        assert load_signed(path, _shaped) is None


def test_a_device_is_not_read(key_home):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    link = key_home / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.warns(CacheEntryIgnored, match="not a regular file"):
        assert load_signed(str(link)) is None
