"""Every number of the executive summary is the value of the formula displayed next to it at the witness
shown (issue 35, item 3): recomputed here from the records' witness data with the displayed formula (written
out again in numpy/mpmath, not with the summary's helpers), and found in the text as the summary prints it.
Also: the severity tiers (item 2) and the sharper statement (item 7)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from proofs_checks.stacey import summary as S

# every test here reads the quick report (built in the background: minutes), so the module runs with the slow tests
pytestmark = pytest.mark.slow

fmt, fmt_r = S._g, S._r  # the summary's number formats (the values are recomputed here)


@pytest.fixture(scope="module")
def run(stacey_quick_report):
    _out, doc = stacey_quick_report
    return doc["claims"], S.summarize(doc["claims"])


def _item(summ, key):
    got = [x for x in summ["items"] + summ["sharper"] if x["key"] == key]
    assert got, key
    return got[0]


def _text(item, label=None):
    return " ".join(t for lbl, t in item["parts"] if label is None or lbl == label)


def _first(claims, cid, status="violated"):
    recs = [r for r in claims if r["id"] == cid and r["status"] == status]
    return min(recs, key=lambda r: r["params"].get("p") or 0) if recs else None


def _law(w):
    d = w["distribution"]
    assert len(d["values"]) == 1 and d.get("n", 1) == 1
    return np.array(d["values"][0], dtype=float), np.array(d["weights"][0], dtype=float)


def test_tiers_errors_imprecise_typos(run):
    _claims, summ = run
    kinds = {x["key"]: x["kind"] for x in summ["items"]}
    assert kinds["lionk"] == "imprecise"  # a reading is never an error that matters by itself
    assert {k for k, v in kinds.items() if v == "error"} == {"lemma2", "jensen", "combine", "asm1"}
    assert sum(v == "typo" for v in kinds.values()) == 3
    lion = _item(summ, "lionk")
    labels = [lbl for lbl, _ in lion["parts"]]
    assert labels == ["Statement", "Reading taken", "Under the other reading", "Under either reading"]
    assert "lionk.no-coupling" in _text(lion, "Under the other reading") and "holds in" in _text(lion)
    assert "4 errors that break a stated result, 1 imprecise" in summ["lead"]


def test_lemma2_numbers(run):
    claims, summ = run
    r = _first(claims, "thm1.B2")
    w = r["witness"]
    v, q = _law(w)
    p, G, eta, n = (float(w["scalars"][k]) for k in ("p", "G", "eta", "n"))
    g = float(np.dot(q, v))
    a = 1 / (p - 1)
    same = np.sign(v) == np.sign(g)
    lhs = eta * float(np.dot(q, np.where(same, abs(g) * np.abs(abs(g) ** a - np.abs(v) ** a), 0.0)))
    sig = math.sqrt(float(np.dot(q, (v - g) ** 2)))
    rhs = eta * G**a * sig / ((p - 1) * math.sqrt(n))
    t = _text(_item(summ, "lemma2"))
    assert f"\\mathbb{{E}}[B_2] = {fmt(lhs)}$ against the bound ${fmt(rhs)}$" in t
    assert f"$g = {fmt(g)}$" in t and f"$\\sigma = {fmt(sig)}$" in t
    # kappa(p) = max(1, sup_q R_p(q)), R_p(q) = (p-1)[q^2 (1 - q^a) + (1-q) q^(1+a)] / sqrt(q(1-q)), on a fine grid
    for c in (x for x in claims if x["id"] == "thm1.B2.corrected"):
        pc = float(c["params"]["p"])
        ac = 1 / (pc - 1)
        qs = np.linspace(1e-6, 1 - 1e-6, 400001)
        R = (pc - 1) * (qs**2 * (1 - qs**ac) + (1 - qs) * qs ** (1 + ac)) / np.sqrt(qs * (1 - qs))
        assert f"{fmt(max(1.0, float(R.max())), 4)} ($p={pc:g}$)" in t


def test_jensen_numbers_are_the_displayed_formula(run):
    claims, summ = run
    r = _first(claims, "sym.lemma-B2.case2.step5")
    w = r["witness"]
    v, q = _law(w)
    p = float(w["scalars"]["p"])
    g, sig, n = float(w["coords"]["g"][0]), float(w["coords"]["sigma"][0]), float(w["scalars"]["n"])
    e = (2 - p) / (p - 1)
    with mpmath.workdps(40):
        inner_l = mpmath.fsum(mpmath.mpf(qi) * abs(mpmath.mpf(vi)) ** (2 * e) for vi, qi in zip(v, q))
        inner_r = mpmath.fsum(mpmath.mpf(qi) * mpmath.mpf(vi) ** 2 for vi, qi in zip(v, q)) ** e
        lhs = mpmath.sqrt(g**2 * inner_l * sig**2 / n)
        rhs = mpmath.sqrt(g**2 * inner_r * sig**2 / n)
    item = _item(summ, "jensen")
    shown = _text(item, "What fails")
    assert "\\sqrt{|g|^2\\,\\mathbb{E}\\big[|\\tilde g|^{2(2-p)/(p-1)}\\big]\\,\\sigma^2/n_t}" in shown
    t = _text(item, "Smallest witness")
    assert f"left side {fmt(float(lhs))} against right side {fmt(float(rhs))}" in t
    assert f"reads {fmt(float(inner_l))} against {fmt(float(inner_r))}" in t
    # the record's own sides are the displayed (square-rooted) ones, not the bare inequality's
    assert math.isclose(r["empirical"], float(lhs), rel_tol=1e-9) and math.isclose(r["bound"], float(rhs), rel_tol=1e-9)


def test_combine_witness_refutes_the_combining_step(run):
    claims, summ = run
    r = _first(claims, "sym.lemma-B2.combine")
    w = r["witness"]
    v, q = _law(w)
    p, G = float(w["scalars"]["p"]), float(w["scalars"]["G"])
    g, sig = float(w["coords"]["g"][0]), float(w["coords"]["sigma"][0])
    a = 1 / (p - 1)
    same = np.sign(v) == np.sign(g)
    term = np.where(same, abs(g) * np.abs(abs(g) ** a - np.abs(v) ** a), 0.0)
    x1 = float(np.dot(q, np.where(np.abs(v) >= abs(g), term, 0.0)))
    x2 = float(np.dot(q, np.where(np.abs(v) < abs(g), term, 0.0)))
    b = max(x1, x2)
    # the step's premises hold for b = the larger part and its conclusion fails: it refutes the step itself
    assert 0 < min(x1, x2) and x1 + x2 > b and r["ratio"] <= 2.0
    assert math.isclose(r["empirical"], x1 + x2, rel_tol=1e-9) and math.isclose(r["bound"], b, rel_tol=1e-9)
    t = _text(_item(summ, "combine"), "Smallest witness")
    assert f"= {fmt(x1)}$" in t and f"= {fmt(x2)}$" in t
    assert f"{fmt(b)}, each part" in t and f"= {fmt(x1 + x2)}$ is not (ratio {fmt_r((x1 + x2) / b)})" in t
    lemma_bound = a * G**a * sig
    assert f"is {fmt(lemma_bound)} here" in t


def test_asm1_numbers(run):
    claims, summ = run
    r = _first(claims, "asm1.equivalence")
    sc = r["witness"]["scalars"]
    p = float(sc["p"])
    H = np.array([[sc["h11"], sc["h12"]], [sc["h12"], sc["h22"]]])
    u, v = np.array([sc["u1"], sc["u2"]]), np.array([sc["v1"], sc["v2"]])
    lip = float(u @ H @ v) / (np.sum(np.abs(u) ** p) ** (1 / p) * np.sum(np.abs(v) ** p) ** (1 / p))
    ts = np.linspace(0, math.pi, 2_000_001)
    wq = np.abs(H[0, 0] * np.cos(ts) ** 2 + 2 * H[0, 1] * np.sin(ts) * np.cos(ts) + H[1, 1] * np.sin(ts) ** 2)
    two = float(np.max(wq / (np.abs(np.sin(ts)) ** p + np.abs(np.cos(ts)) ** p) ** (2 / p)))
    t = _text(_item(summ, "asm1"))
    assert f"L_\\mathrm{{lip}} \\ge {fmt(lip)}$" in t and f"= {fmt(two)}$" in t
    for c in (x for x in claims if x["id"] == "asm1.corrected"):
        pc = float(c["params"]["p"])
        assert f"{fmt(2 ** (1 - 2 / pc), 4)} ($p={pc:g}$)" in t


def test_lionk_numbers(run):
    claims, summ = run
    r = _first(claims, "lionk.first-step")
    w = r["witness"]
    p, eta, b1 = (float(w["scalars"][k]) for k in ("p", "eta", "beta1"))
    c = (1 - b1) * np.array(w["coords"]["g"], dtype=float)
    ps = p / (p - 1)
    stacey = -eta * np.sign(c) * np.abs(c) ** (1 / (p - 1))  # Alg. 1's first step at tau = 0: -eta s(c)
    lion = -eta * np.sign(c) * np.abs(c) ** (ps - 1) / np.sum(np.abs(c) ** ps) ** ((ps - 1) / ps)  # -eta grad K(c)
    t = _text(_item(summ, "lionk"), "Reading taken")
    assert f"is {fmt(float(np.max(np.abs(stacey - lion))))} (they should be equal)" in t
    assert f"{fmt(float(np.linalg.norm(stacey) / np.linalg.norm(lion)), 4)} times Lion-K's" in t


def test_typo_numbers_recheck(run):
    from proofs_checks.recheck import recheck

    claims, summ = run
    for cid in S.TYPOS:
        r = _first(claims, cid)
        chk = recheck(r["witness"])  # the record's two sides re-evaluated at 60 digits from the witness alone
        t = _text(_item(summ, cid), "Witness")
        assert f"= {fmt(chk['empirical'])}, right side" in t and f"= {fmt(chk['bound'])} (difference" in t


def test_sharper_statement(run):
    claims, summ = run
    item = _item(summ, "sharper-B")
    recs = [r for r in claims if r["id"] == "thm1.B.sharper"]
    assert {r["params"]["p"] for r in recs} == {2.5, 3.0, 4.0, 8.0, 16.0, 50.0, 200.0, 1000.0}
    assert all(r["status"] == "holds" and r["evidence"] == "proved" for r in recs)  # combined_proof
    assert "(proved)" in item["title"]
    proof = _text(item, "Proved")
    for r in recs:  # the interval [searched, proved] of the sharp constant, from each record's proof data
        d = r["data"]["proof"]
        assert d["searched_constant"] == pytest.approx(r["ratio"]) and d["K"] < 1
        assert f"[{fmt_r(d['searched_constant'])}, {fmt_r(d['K'])}]" in proof
    t = _text(item, "Found")
    for r in (x for x in claims if x["id"] == "thm1.B" and x["params"].get("search")):
        pb = float(r["params"]["p"])
        assert fmt_r(r["ratio"]) in t and fmt_r(r["ratio"] * (2 * pb - 1) / (pb - 1)) in t
    for r in recs:  # each search's ratio is against the sharper bound: the paper's bound times (p-1)/(2p-1)
        pb = float(r["params"]["p"])
        assert r["ratio"] < 1 and fmt_r(r["ratio"]) in _text(item, "Searched")
        assert math.isclose(r["params"]["bound_scale"], (pb - 1) / (2 * pb - 1))


def test_lead_numbers_are_the_records(run):
    claims, summ = run
    (cor,) = [r for r in claims if r["id"] == "thm1.corrected"]
    rows = ((cor.get("data") or {}).get("correction") or {}).get("rows") or cor["data"]["rows"]
    wr = [x["combined_lemma_worst_ratio"] for x in rows]
    assert f"worst ratio {fmt(min(wr), 3)} to {fmt(max(wr), 3)}" in summ["lead"]
    assert f"by a factor of at least {fmt(min(x['paper_margin'] for x in rows), 3)}" in summ["lead"]
    bound = [r for r in claims if r["id"] == "thm1.bound"]
    n_ok = sum(r["status"] == "holds" for r in bound)
    assert f"holds in {n_ok} of {len(bound)} settings" in summ["lead"]


def test_lemma2_proved_upper_bound(run):
    """The proved kappa(p) <= p/2 beside the tight kappa(p): each value and the largest gap re-derive from the
    thm1.B2.corrected records (controls left out)."""
    claims, summ = run
    cor = sorted(
        (r for r in claims if r["id"] == "thm1.B2.corrected" and not r["params"].get("control")),
        key=lambda r: r["params"]["p"],
    )
    t = _text(_item(summ, "lemma2"), "What survives")
    ups = [r["data"]["correction"]["kappa_upper_proved"] for r in cor]
    assert ups == [r["params"]["p"] / 2 for r in cor]
    for u, r in zip(ups, cor):
        assert r["params"]["kappa"] <= u and f"{fmt(u, 4)} ($p={r['params']['p']:g}$)" in t
    assert f"at most {fmt(max(u - r['params']['kappa'] for u, r in zip(ups, cor)), 3)} above" in t
    assert t.count("($p=3$)") == 2  # kappa and its proved bound, once each: no control record counted
