"""Exports: notebook display of records (_repr_html_), CITATION.cff, and provenance (the git commit from a
checkout or from the clone an installed package was built from; else the version and a sources hash)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from proofs_checks.records import Claim, Records, source_info, to_html

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("lptheory", "synthetic", "proofs_checks", "figures")


class _Cells(HTMLParser):
    """Text of every <td>, and every tag seen (a scripted or malformed table would show)."""

    def __init__(self):
        super().__init__()
        self.cells, self.tags, self._in = [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "td":
            self._in = True
            self.cells.append("")

    def handle_endtag(self, tag):
        if tag == "td":
            self._in = False

    def handle_data(self, data):
        if self._in:
            self.cells[-1] += data


def _records():
    return [
        Claim("lemma.x", "a <= b", "Lemma 1", "holds", "exact", params={"p": 3.0, "d": 4}, empirical=1.0, bound=2.0),
        Claim(
            "lemma.y",
            "E|X|^r <= 1",
            "Lemma 2",
            "violated",
            "adversarial-search",
            params={"p": 4.0},
            empirical=3.0,
            bound=1.0,
            witness={"kind": "expression"},
            reason="<script>alert(1)</script> found by search",
        ),
    ]


def test_records_display_as_html_tables():
    recs = _records()
    one = recs[0]._repr_html_()
    many = Records(recs)._repr_html_()
    as_dicts = Records(r.to_dict() for r in recs)._repr_html_()
    assert many == as_dicts == to_html(recs)
    for text, n in ((one, 1), (many, 2)):
        p = _Cells()
        p.feed(text)
        assert "script" not in p.tags  # everything escaped
        assert p.cells.count("lemma.x") == 1 and ("lemma.y" in p.cells) == (n == 2)
    p = _Cells()
    p.feed(many)
    row_y = p.cells[p.cells.index("lemma.y") :]
    assert row_y[:4] == ["lemma.y", "p=4", "violated", "3"] and row_y[5:7] == ["1", "3"]
    assert "&lt;script&gt;" in many and "1 holds (0 proved, 1 on what was tested), 1 violated" in many
    assert isinstance(Records(recs), list) and Records(recs)[1] is recs[1]


def test_run_claim_returns_records_that_display():
    from lptheory.app.testing import run_claim

    recs, _ = run_claim(_records())
    assert isinstance(recs, Records) and "lemma.y" in recs._repr_html_()


def test_citation_file():
    text = open(os.path.join(ROOT, "CITATION.cff")).read()
    yaml = pytest.importorskip("yaml")
    doc = yaml.safe_load(text)
    assert doc["cff-version"] == "1.2.0" and doc["type"] == "software" and doc["authors"] and doc["message"]
    assert str(doc["version"]) == _pyproject_version() and doc["license"] == "MIT"
    paper = doc["references"][0]
    assert paper["year"] == 2025 and "Stacey" in paper["title"] and len(paper["authors"]) == 6


def _pyproject_version():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


# -------------------------------------------------------------------------------------------------
# provenance


def _git(*args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not os.path.exists(os.path.join(ROOT, ".git")), reason="needs git and a checkout"
)


@needs_git
def test_commit_from_the_checkout(monkeypatch):
    monkeypatch.delenv("LPTHEORY_GIT_COMMIT", raising=False)
    info = source_info()
    assert info["git_commit"].split("-")[0] == _git("rev-parse", "HEAD", cwd=ROOT)
    assert info["text"].startswith("git ")


def _install_from(clone, site, direct_url):
    """What ``pip install CLONE`` leaves behind (PEP 376/610): the packages' files and a dist-info with
    METADATA and direct_url.json."""
    for pkg in PACKAGES:
        shutil.copytree(os.path.join(clone, pkg), os.path.join(site, pkg))
    dist = os.path.join(site, f"lptheory-{_pyproject_version()}.dist-info")
    os.makedirs(dist)
    with open(os.path.join(dist, "METADATA"), "w") as fh:
        fh.write(f"Metadata-Version: 2.1\nName: lptheory\nVersion: {_pyproject_version()}\n")
    with open(os.path.join(dist, "direct_url.json"), "w") as fh:
        json.dump(direct_url, fh)


def _source_info_in(site, cwd):
    env = {k: v for k, v in os.environ.items() if k != "LPTHEORY_GIT_COMMIT"}
    env["PYTHONPATH"] = site
    code = "import json; from proofs_checks.records import source_info; print(json.dumps(source_info()))"
    res = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return json.loads(res.stdout)


@needs_git
def test_commit_of_an_installed_package_from_its_clone(tmp_path):
    clone = str(tmp_path / "clone")
    subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
    head = _git("rev-parse", "HEAD", cwd=clone)
    site = str(tmp_path / "site")
    _install_from(clone, site, {"url": "file://" + clone, "dir_info": {}})
    info = _source_info_in(site, str(tmp_path))
    assert info["git_commit"] == head and info["version"] == _pyproject_version()
    assert os.path.realpath(site) != os.path.realpath(ROOT)
    # the clone moves on after the install: its commit no longer describes the installed code
    with open(os.path.join(clone, "lptheory", "__init__.py"), "a") as fh:
        fh.write("# changed after the install\n")
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "later", cwd=clone)
    info = _source_info_in(site, str(tmp_path))
    assert info["git_commit"] is None
    assert f"lptheory {_pyproject_version()}" in info["text"] and "sources sha256 " in info["text"]
    assert info["sources_sha256"] and info["text"].endswith(info["sources_sha256"][:16] + ")")
    # pip install git+file://...: pip records the commit itself
    site2 = str(tmp_path / "site2")
    _install_from(clone, site2, {"url": "file://" + clone, "vcs_info": {"vcs": "git", "commit_id": "abc123"}})
    assert _source_info_in(site2, str(tmp_path))["git_commit"] == "abc123"
