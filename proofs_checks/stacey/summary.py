"""The executive summary of the Stacey report: one paragraph per finding (what fails, the smallest witness,
why, what survives and whether Theorem 1 still stands), the errors that matter apart from the proof-step
typos. Registered on the pack with :meth:`proofs_checks.packs.Pack.summary`; the report shows it above
everything.

Every number is read from the records of the run (``claims``: dicts with ``check`` and ``anchor``); the
text here only says what the numbers mean. A finding whose records are not in the run (``--only``, a
claim that did not fail) is left out; a violated record no paragraph covers gets the report's generic
sentence (:func:`figures.report` adds it), so nothing violated goes unmentioned.
"""

from __future__ import annotations

import math

__all__ = ["summarize", "TYPOS", "ERRORS"]

THM_SHORT = "Theorem 1 still stands, through the combined lemma on $\\mathbb{E}[B]$ (the summary's first paragraph)."

# which violated claims are typos (a misprint that the next line of the proof repairs: nothing downstream
# changes) and which are errors that matter; the numbers come from the records
TYPOS = ("sym.thm1.step2", "sym.thm1.C.step1", "sym.lemma-B2.case1.step5")
ERRORS = ("thm1.B2", "sym.lemma-B2.case2.step5", "sym.lemma-B2.combine", "asm1.equivalence", "lionk.first-step")


def _g(x, n: int = 4) -> str:
    """A number in ``n`` significant digits (tiny and huge values in LaTeX scientific notation)."""
    if x is None:
        return "-"
    x = float(x)
    if not math.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e5):
        m, e = f"{x:.{max(n - 2, 1)}e}".split("e")
        return f"${m} \\times 10^{{{int(e)}}}$"
    return f"{x:.{n}g}"


def _r(x) -> str:
    """A ratio in 4 significant digits, trailing zeros kept (1.000 is not 1)."""
    return "-" if x is None else f"{float(x):#.4g}"


def _p(r) -> float | None:
    p = (r.get("params") or {}).get("p")
    return float(p) if isinstance(p, (int, float)) else None


def _records(claims, cid, status=None):
    return [r for r in claims if r["id"] == cid and (status is None or r["status"] == status)]


def _by_p(recs):
    return sorted(recs, key=lambda r: (_p(r) is None, _p(r) or 0.0))


def _plist(recs) -> str:
    return ", ".join(f"{_p(r):g}" for r in recs if _p(r) is not None)


def _by_p_and_d(recs) -> str:
    """``$p = 3$ (ratio 1.260 in $d = 2$, 1.145 in $d = 3$), $p = 4$ (...)``: the ratios grouped by p, each
    with its dimension (records of several checks at the same p are told apart)."""
    groups: dict = {}
    for r in recs:
        if _p(r) is not None:
            groups.setdefault(_p(r), []).append(r)
    parts = []
    for p in sorted(groups):
        items = sorted(groups[p], key=lambda r: (r["params"].get("d") is None, r["params"].get("d") or 0))
        ratios = ", ".join(
            _r(r["ratio"]) + (f" in $d = {r['params']['d']}$" if r["params"].get("d") is not None else "")
            for r in items
        )
        parts.append(f"$p = {p:g}$ (ratio {ratios})")
    return ", ".join(parts)


def _two_point(w) -> str:
    """The witness distribution in words: one coordinate's values with their probabilities."""
    dist = (w or {}).get("distribution") or {}
    vals, wts = dist.get("values") or [], dist.get("weights") or []
    coords = []
    for i, (vs, ws) in enumerate(zip(vals, wts)):
        pairs = " and ".join(f"{_g(v)} w.p. {_g(q)}" for v, q in zip(vs, ws))
        coords.append(pairs if len(vals) == 1 else f"coordinate {i + 1}: {pairs}")
    n = dist.get("n")
    batch = f", batch $n_t = {n:g}$" if isinstance(n, (int, float)) and n != 1 else ""
    return "$\\tilde g$ takes " + "; ".join(coords) + batch


def _lhs_rhs(r) -> tuple:
    w = (r.get("witness") or {}).get("recheck") or {}
    lhs = w.get("empirical", r.get("empirical"))
    rhs = w.get("bound", r.get("bound"))
    return lhs, rhs


def _theorem1(claims) -> tuple[str, list]:
    """Whether Theorem 1 stands, in one sentence, and the records it rests on."""
    cor = _records(claims, "thm1.corrected")
    bound = _records(claims, "thm1.bound")
    comb = [r for r in _records(claims, "thm1.B") if (r.get("params") or {}).get("search")]
    ev, parts = [], []
    if cor:
        r = cor[0]
        rows = ((r.get("data") or {}).get("correction") or {}).get("rows") or (r.get("data") or {}).get("rows") or []
        if r["status"] == "holds":
            txt = "Theorem 1 still stands: its noise coefficient $\\frac{2p-1}{p-1}$ follows from the combined lemma on $\\mathbb{E}[B]$"
            if rows:
                wr = [x["combined_lemma_worst_ratio"] for x in rows if "combined_lemma_worst_ratio" in x]
                mg = [x["paper_margin"] for x in rows if "paper_margin" in x]
                ps = ", ".join(f"{x['p']:g}" for x in rows)
                if wr:
                    txt += f" (worst ratio {_g(min(wr), 3)} to {_g(max(wr), 3)} at $p$ = {ps})"
                if mg:
                    txt += f", and runs of Algorithm 3 stay below the bound by a factor of at least {_g(min(mg), 3)}"
            parts.append(txt + ".")
        else:
            parts.append(f"Theorem 1's repair ({r['id']}) is {r['status']}: see its record.")
        ev.append(r)
    elif comb:
        bad = [r for r in comb if r["status"] == "violated"]
        parts.append(
            "The combined lemma on $\\mathbb{E}[B]$ that Theorem 1 needs "
            + ("fails in the search." if bad else "holds in the adversarial search, so Theorem 1's bound stands.")
        )
        ev += comb[:1]
    if bound:
        n_ok = sum(r["status"] == "holds" for r in bound)
        n_bad = sum(r["status"] == "violated" for r in bound)
        n_na = sum(r["status"] == "not-applicable" for r in bound)
        parts.append(
            f"Along runs of Algorithm 3 the bound holds in {n_ok} of {len(bound)} settings"
            + (f", is violated in {n_bad}" if n_bad else "")
            + (
                f" ({n_na} more have unbounded noise, outside the theorem's assumptions, and are measured anyway)"
                if n_na
                else ""
            )
            + "."
        )
        ev.append(bound[0])
    return " ".join(parts), ev


def _lemma2(claims, thm_txt, thm_ev):
    bad = _by_p(_records(claims, "thm1.B2", "violated"))
    if not bad:
        return None
    w0 = bad[0]
    lhs, rhs = _lhs_rhs(w0)
    wit = w0.get("witness") or {}
    co, sc = wit.get("coords") or {}, wit.get("scalars") or {}
    ok = [
        r
        for r in _by_p(_records(claims, "thm1.B2", "holds"))
        if (r.get("params") or {}).get("search") and (_p(r) or 0) < (_p(w0) or 0)
    ]
    fails = (
        "Lemma 2, $\\mathbb{E}[B_2] \\le \\frac{\\eta G^{1/(p-1)} \\|\\sigma\\|_1}{(p-1)\\sqrt{n_t}}$ (Appendix A.1), "
        f"fails at $p$ = {_plist(bad)} (ratio {', '.join(_r(r['ratio']) for r in bad)}: it grows with $p$)"
    )
    if ok:
        fails += f"; at $p$ = {_plist(ok)} the search's worst ratio is {', '.join(_r(r['ratio']) for r in ok)}"
    fails += "."
    witness = (
        f"at $p = {_p(w0):g}$, one coordinate: {_two_point(wit)}"
        + (
            f" (so $g = {_g(co['g'][0])}$, $\\sigma = {_g(co['sigma'][0])}$"
            if co.get("g") and co.get("sigma")
            else " ("
        )
        + (f", $G = {_g(sc['G'], 3)}$" if "G" in sc else "")
        + (f", $\\eta = {_g(sc['eta'], 3)}$" if "eta" in sc else "")
        + f"): $\\mathbb{{E}}[B_2] = {_g(lhs)}$ against the bound ${_g(rhs)}$, re-checked at "
        + (f"{dps} digits" if (dps := (wit.get("recheck") or {}).get("dps")) else "high precision")
        + " from the "
        "witness alone. The adversarial search's worst cases all collapse to this two-point family: "
        "one value at the gradient bound, the other next to 0 with the same sign."
    )
    why_ev = _records(claims, "sym.lemma-B2.case2.step5", "violated") + _records(
        claims, "sym.lemma-B2.combine", "violated"
    )
    why = (
        "the proof's case 2 applies Jensen's inequality in the wrong direction, and the two cases are each bounded by "
        "the whole bound and then added "
        + ("(the next two findings)." if why_ev else "(lptheory check symbolic audits these steps).")
    )
    cor = _by_p(_records(claims, "thm1.B2.corrected"))
    if cor:
        ks = ", ".join(f"{_g(r['params'].get('kappa'), 4)} ($p={_p(r):g}$)" for r in cor if r["params"].get("kappa"))
        sts = {r["status"] for r in cor}
        survives = (
            "the lemma with a constant: $\\mathbb{E}[B_2] \\le \\kappa(p) \\frac{\\eta G^{1/(p-1)} \\|\\sigma\\|_1}"
            "{(p-1)\\sqrt{n_t}}$, $\\kappa(p) = \\max(1, \\sup_q R_p(q))$ the supremum along the two-point family: "
            f"$\\kappa$ = {ks}; tight (admissible witnesses approach it) and "
            + (
                "the lemma's search re-run against $\\kappa(p)$ times the bound finds nothing above it."
                if sts == {"holds"}
                else f"the re-run search says {', '.join(sorted(sts))}."
            )
        )
    else:
        survives = "no correction in this run (run the corrections check)."
    return {
        "key": "lemma2",
        "kind": "error",
        "title": "Lemma 2 ($B_2$, the same-sign term) is false for larger $p$",
        "parts": [
            ("What fails", fails),
            ("Smallest witness", witness),
            ("Why", why),
            ("What survives", survives),
            ("Theorem 1", thm_txt or "no record of Theorem 1 in this run."),
        ],
        "evidence": bad + ok[:1] + why_ev + cor + thm_ev,
    }


def _violated_step(claims, cid):
    """``(violated records, the first, its lhs, rhs, witness, p)`` of the proof step ``cid``, or None when it
    holds."""
    bad = _records(claims, cid, "violated")
    if not bad:
        return None
    r = bad[0]
    lhs, rhs = _lhs_rhs(r)
    wit = r.get("witness") or {}
    return bad, r, lhs, rhs, wit, (wit.get("scalars") or {}).get("p")


def _jensen(claims, thm_txt, thm_ev):
    found = _violated_step(claims, "sym.lemma-B2.case2.step5")
    if found is None:
        return None
    bad, r, lhs, rhs, wit, p = found
    cor = _records(claims, "sym.lemma-B2.case2.step5.corrected")
    return {
        "key": "jensen",
        "kind": "error",
        "title": "Lemma 2, case 2: Jensen's inequality in the wrong direction",
        "parts": [
            (
                "What fails",
                "step 5 of case 2, $\\mathbb{E}\\big[|\\tilde g|^{2(2-p)/(p-1)}\\big] \\le "
                "\\big(\\mathbb{E}|\\tilde g|^2\\big)^{(2-p)/(p-1)}$.",
            ),
            (
                "Smallest witness",
                (f"$p = {_g(p)}$, " if p else "")
                + f"{_two_point(wit)}: left side {_g(lhs)} against right side {_g(rhs)} (ratio {_g(r.get('ratio'), 3)}). "
                "The size of the ratio means nothing by itself: the exponent $2(2-p)/(p-1)$ is negative, so the left "
                "side grows without bound as a value of $\\tilde g$ approaches 0, and the search drove it there.",
            ),
            (
                "Why",
                "$\\varphi(t) = t^{(2-p)/(p-1)}$ is convex on $t > 0$ for $p > 2$ (checked symbolically: "
                "$\\varphi'' > 0$), so Jensen gives $\\varphi(\\mathbb{E}\\,t) \\le \\mathbb{E}\\,\\varphi(t)$, the reverse "
                "of what the step needs.",
            ),
            (
                "What survives",
                "the reversed inequality"
                + (
                    f" ({cor[0]['status']} in {cor[0]['params'].get('samples', '')} random admissible cases)"
                    if cor
                    else ""
                )
                + ", which does not bound case 2: the repair is Lemma 2's constant $\\kappa(p)$ (finding 1). "
                + (THM_SHORT if thm_txt else ""),
            ),
        ],
        "evidence": bad + cor + thm_ev,
    }


def _combine(claims, thm_txt, thm_ev):
    found = _violated_step(claims, "sym.lemma-B2.combine")
    if found is None:
        return None
    bad, r, lhs, rhs, wit, p = found
    ratio = r.get("ratio")
    extra = (
        " The ratio exceeds 2, so here even twice the bound fails: case 2's own bound is the false Jensen step."
        if isinstance(ratio, (int, float)) and ratio > 2
        else ""
    )
    return {
        "key": "combine",
        "kind": "error",
        "title": "Lemma 2: the two cases are added, each bounded by the whole bound",
        "parts": [
            (
                "What fails",
                "the last line of Lemma 2's proof, $\\mathbb{E}[B_2] \\le \\frac{\\eta G^{1/(p-1)}\\|\\sigma\\|_1}"
                "{(p-1)\\sqrt{n_t}}$ with the two cases combined.",
            ),
            (
                "Smallest witness",
                (f"$p = {_g(p)}$, " if p else "")
                + f"{_two_point(wit)}: $\\mathbb{{E}}[B_2] = {_g(lhs)}$ against ${_g(rhs)}$ (ratio {_r(ratio)})."
                + extra,
            ),
            (
                "Why",
                "the cases split one expectation (law of total expectation); bounding each part by the full bound "
                "bounds their sum by twice it, not by it.",
            ),
            ("What survives", "Lemma 2 with the constant $\\kappa(p)$ (finding 1). " + (THM_SHORT if thm_txt else "")),
        ],
        "evidence": bad + thm_ev,
    }


def _asm1(claims):
    bad = _by_p(_records(claims, "asm1.equivalence", "violated"))
    if not bad:
        return None
    r = bad[0]
    wit = r.get("witness") or {}
    H = wit.get("matrix")
    htxt = (
        "$H = \\begin{pmatrix}" + " \\\\ ".join(" & ".join(_g(v, 3) for v in row) for row in H) + "\\end{pmatrix}$"
        if H
        else "the witness matrix"
    )
    cor = _by_p(_records(claims, "asm1.corrected"))
    ks = ", ".join(f"{_g(c.get('empirical'), 4)} ($p={_p(c):g}$)" for c in cor if c.get("empirical") is not None)
    proved = [c for c in cor if c.get("evidence") == "proved"]
    return {
        "key": "asm1",
        "kind": "error",
        "title": "Assumption 1: its two forms are not equivalent with the same $L$",
        "parts": [
            (
                "What fails",
                'Assumption 1 states $\\|\\nabla f(x) - \\nabla f(y)\\|_{p^*} \\le L\\|x-y\\|_p$ "or equivalently" '
                "$|f(y) - f(x) - \\langle \\nabla f(x), y-x\\rangle| \\le \\frac{L}{2}\\|y-x\\|_p^2$ with the same $L$; "
                f"for quadratics the Lipschitz constant exceeds the two-sided one at {_by_p_and_d(bad)}.",
            ),
            (
                "Smallest witness",
                f"$d = {r['params'].get('d', 2)}$, $p = {_p(r):g}$, $f(x) = \\frac12 x^\\top H x$ with {htxt}: "
                f"$L_\\mathrm{{lip}} \\ge {_g(r.get('empirical'))}$ at an explicit pair, against "
                f"$L_\\mathrm{{two\\text{{-}}sided}} = {_g(r.get('bound'))}$.",
            ),
            (
                "Why",
                "for $p = 2$ polarization turns the quadratic-form bound into the operator-norm bound at no cost; for "
                "$p \\ne 2$ and an indefinite $H$, $\\sup u^\\top H v / (\\|u\\|_p\\|v\\|_p)$ can exceed "
                "$\\sup |w^\\top H w| / \\|w\\|_p^2$.",
            ),
            (
                "What survives",
                "$L_\\mathrm{lip} \\le 2^{1-2/p} L_\\mathrm{two\\text{-}sided}$, tight at $H = \\mathrm{diag}(1,-1)$"
                + (f": {ks}" if ks else "")
                + (
                    "; proved for every symmetric $H$ in every dimension at "
                    + ", ".join(f"$p = {_p(c):g}$" for c in proved)
                    + " (polarization loses at most the factor $2^{1-2/p}$: Clarkson's inequality and the power mean, "
                    "their polynomial inequalities and the identity decided exactly)"
                    if proved
                    else ""
                )
                + ". Theorem 1 is unaffected: its proof uses only the upper quadratic bound, which follows from "
                "either form.",
            ),
        ],
        "evidence": bad + cor,
    }


def _lionk(claims):
    bad = _records(claims, "lionk.first-step", "violated")
    if not bad:
        return None
    r = bad[0]
    wit = r.get("witness") or {}
    sc, g = wit.get("scalars") or {}, (wit.get("coords") or {}).get("g")
    cor = _records(claims, "lionk.corrected")
    worst = max((c.get("empirical") or 0.0 for c in cor), default=None)
    return {
        "key": "lionk",
        "kind": "error",
        "title": "Lion-K and Stacey$(p,2)$ at $\\tau = 0$ differ by a factor",
        "parts": [
            (
                "What fails",
                "Section 4.2: Lion-$\\mathcal{K}$ with $\\mathcal{K} = \\|\\cdot\\|_{p^*}$ and Stacey$(p,2)$ coincide "
                "at $\\tau = 0$; their first iterates differ.",
            ),
            (
                "Smallest witness",
                f"$p = {_p(r):g}$"
                + (f", $\\tilde g_0 = ({', '.join(_g(v, 3) for v in g)})$" if g else "")
                + (f", $\\eta = {_g(sc['eta'], 3)}$" if "eta" in sc else "")
                + (f", $\\beta_1 = {_g(sc['beta1'], 3)}$" if "beta1" in sc else "")
                + f": largest coordinate gap of $\\theta_1$ {_g(r.get('empirical'))} (they should be equal)"
                + (
                    f"; Stacey's step is {_g(wit['ratio_of_steps'], 4)} times Lion-K's."
                    if isinstance(wit.get("ratio_of_steps"), (int, float))
                    else "."
                ),
            ),
            (
                "Why",
                "Stacey's steepest step $s(c)$ is $\\|c\\|_{p^*}^{1/(p-1)}$ times Lion-K's $\\nabla\\mathcal{K}(c)$: "
                "the same direction, a gradient-dependent step size.",
            ),
            (
                "What survives",
                "with Lion-K's step size $\\eta\\|c\\|_{p^*}^{1/(p-1)}$, $c = (1-\\beta_1)\\tilde g_0$, the first steps "
                "are equal for every $\\tilde g_0$ and $p > 1$ (sympy"
                + (f"; float64 difference at most {_g(worst, 2)}" if worst is not None else "")
                + "). Theorem 1 is unaffected (a remark on related methods).",
            ),
        ],
        "evidence": bad + cor,
    }


_TYPO_TEXT = {
    "sym.thm1.step2": (
        "Theorem 1, step 2: the factor $\\eta^2$ is missing",
        "the last term reads $\\frac{L}{2}\\|s(\\tilde g_t)\\|_p^2$ for $\\frac{L\\eta^2}{2}\\|s(\\tilde g_t)\\|_p^2$",
        "the next line of the proof has $\\eta^2$ back",
    ),
    "sym.thm1.C.step1": (
        "Theorem 1, term $C$: $g_t$ written for $\\tilde g_t$",
        "$\\|s(\\tilde g_t)\\|_p^2$ is expanded with $g_t^{(i)}$ in place of $\\tilde g_t^{(i)}$",
        "with $\\tilde g_t$ the identity holds and Assumption 4 bounds the term, as the proof goes on",
    ),
    "sym.lemma-B2.case1.step5": (
        "Lemma 2, case 1, step 5: $\\mathbb{E}_{|=}[Y]\\,\\mathbb{P}[=] = \\mathbb{E}[Y]$ written as an equality",
        "$\\mathbb{E}_{|=}[Y]\\,\\mathbb{P}[=] = \\mathbb{E}[Y\\,1[=]]$, which is at most $\\mathbb{E}[Y]$, not equal to it",
        "it holds as $\\le$, the direction the chain of inequalities needs",
    ),
}


def _typo(claims, cid):
    bad = _records(claims, cid, "violated")
    if not bad:
        return None
    r = bad[0]
    lhs, rhs = _lhs_rhs(r)
    cor = _records(claims, cid + ".corrected")
    diff = abs(float(lhs) - float(rhs)) if isinstance(lhs, (int, float)) and isinstance(rhs, (int, float)) else None
    title, what, surv = _TYPO_TEXT[cid]
    if cor:
        surv += (
            f". The corrected step {cor[0]['status']} in {cor[0]['params'].get('samples', '')} random admissible cases"
        )
    return {
        "key": cid,
        "kind": "typo",
        "title": title,
        "parts": [
            ("What fails", what + "."),
            (
                "Witness",
                f"left side {_g(lhs)}, right side {_g(rhs)}"
                + (f" (difference {_g(diff)})" if diff is not None else "")
                + ".",
            ),
            ("What survives", surv + "; nothing downstream changes."),
        ],
        "evidence": bad + cor,
    }


def summarize(claims) -> dict:
    """The summary of a run's records (see the module docstring)."""
    thm_txt, thm_ev = _theorem1(claims)
    items = [
        _lemma2(claims, thm_txt, thm_ev),
        _jensen(claims, thm_txt, thm_ev),
        _combine(claims, thm_txt, thm_ev),
        _asm1(claims),
        _lionk(claims),
        *(_typo(claims, cid) for cid in TYPOS),
    ]
    items = [x for x in items if x]
    if not any(x["key"] == "lemma2" for x in items):  # cross-references to a paragraph this run does not have
        for x in items:
            x["parts"] = [
                (lbl, t.replace("(finding 1)", "(thm1.B2.corrected, lptheory check corrections)"))
                for lbl, t in x["parts"]
            ]
    n_err = sum(x["kind"] == "error" for x in items)
    n_typo = sum(x["kind"] == "typo" for x in items)
    lead = ""
    if items:
        lead = (
            f"{n_err} finding{'s' if n_err != 1 else ''} that matter"
            + ("s" if n_err == 1 else "")
            + f" and {n_typo} typo{'s' if n_typo != 1 else ''} in the proofs. "
        )
    if thm_txt:
        lead += thm_txt
    return {"lead": lead.strip(), "items": items}
