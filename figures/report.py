"""``lptheory report``: run every available check, then write one report (HTML and Markdown), all
figures, ``claims.json`` and ``results.csv``.

The report runs whatever checks exist (``proofs_checks.CHECKS``); a check named in the configuration
but not available is listed as "not yet available", never faked. Configuration: the TOML file shipped
with the package (``figures/report_defaults.toml``), overridden value by value by ``--config FILE``.
Checks are independent: ``jobs > 1`` runs them in separate processes with identical results.
"""

from __future__ import annotations

import concurrent.futures as cf
import csv
import datetime as _dt
import hashlib
import html
import json
import os
import sys
import time
from importlib import resources

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover
    import tomli as tomllib

__all__ = ["load_config", "run_report"]

TITLES = {
    "lemmas": "Theorem 1: the per-step terms and their lemmas (Appendix A.1)",
    "theorem1": "Theorem 1 along runs of Algorithm 3: bound, N^{-1/4} rate, one-step inequality",
    "symbolic": "Symbolic audit of the proofs (Appendix A.1, Appendix B)",
    "majorization": "Appendix B: l2 majorization implies l_p smoothness",
    "smoothness": "Assumption 1: the two forms of l_p smoothness",
    "claims": "Smaller claims (Sections 1, 4.1, 4.2; Corollaries 2 and 3)",
    "acceleration": "Acceleration exponents (eq. (1)) and where Stacey stands",
}


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(path: str | None = None) -> dict:
    """The embedded defaults, with ``path`` (a TOML file) merged over them value by value."""
    text = resources.files("figures").joinpath("report_defaults.toml").read_text()
    cfg = tomllib.loads(text)
    if path:
        with open(path, "rb") as fh:
            cfg = _merge(cfg, tomllib.load(fh))
    return cfg


def _run_one(name: str, p, seed: int, quick: bool):
    """Run one check in this process; returns (name, records as dicts, elapsed seconds)."""
    from proofs_checks import get_check

    t0 = time.perf_counter()
    recs = get_check(name)(p, seed=seed, quick=quick)
    return name, [r.to_dict() for r in recs], time.perf_counter() - t0


def _say(msg: str) -> None:
    print(f"[lptheory report] {msg}", file=sys.stderr, flush=True)


def run_report(
    out_dir: str, *, config: str | None = None, quick: bool = False, jobs: int = 1, quiet: bool = False
) -> dict:
    """Run the checks and write the report; returns ``{"counts", "violated", "paths", "claims"}``."""
    from proofs_checks import CHECKS
    from proofs_checks.records import STATUSES, meta

    cfg = load_config(config)
    seed = int(cfg.get("seed", 0))
    wanted = list(cfg.get("checks", {}).keys())
    available = [c for c in wanted if c in CHECKS]
    missing = [c for c in wanted if c not in CHECKS]
    say = (lambda m: None) if quiet else _say
    os.makedirs(out_dir, exist_ok=True)
    t_all = time.perf_counter()
    results: dict[str, list] = {}
    elapsed: dict[str, float] = {}
    args = {c: (cfg["checks"][c].get("p"), seed, quick) for c in available}
    if jobs > 1 and len(available) > 1:
        with cf.ProcessPoolExecutor(max_workers=jobs) as ex:
            futs = {ex.submit(_run_one, c, *args[c]): c for c in available}
            for c in available:
                say(f"{c}: running")
            for fut in cf.as_completed(futs):
                name, recs, dt = fut.result()
                results[name], elapsed[name] = recs, dt
                say(
                    f"{name}: done in {dt:.1f}s ({len(results)}/{len(available)}, total {time.perf_counter() - t_all:.1f}s)"
                )
    else:
        for i, c in enumerate(available):
            say(f"{c}: running ({i + 1}/{len(available)})")
            name, recs, dt = _run_one(c, *args[c])
            results[name], elapsed[name] = recs, dt
            say(f"{name}: done in {dt:.1f}s (total {time.perf_counter() - t_all:.1f}s)")
    claims = []
    for c in available:  # fixed order, whatever the completion order
        for r in results[c]:
            claims.append({"check": c, **r})
    cfg_hash = hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]
    info = meta("report", seed, {"config": cfg, "quick": quick, "config_hash": cfg_hash, "missing_checks": missing})
    date = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    with open(os.path.join(out_dir, "claims.json"), "w") as fh:
        json.dump({"claims": claims, "meta": {**info, "date": date}}, fh, indent=1, sort_keys=True)
    _write_csv(os.path.join(out_dir, "results.csv"), claims, info, cfg_hash, date)
    from .theorem1 import figures_for

    figs: dict[str, list[str]] = {}
    for c in available:
        figs[c] = [os.path.basename(p) for p in figures_for(c, results[c], out_dir)]
    counts = {s: sum(r["status"] == s for r in claims) for s in STATUSES}
    violated = [r for r in claims if r["status"] == "violated"]
    md, page = _render(claims, available, missing, figs, counts, seed, elapsed, quick, cfg)
    with open(os.path.join(out_dir, "report.md"), "w") as fh:
        fh.write(md)
    with open(os.path.join(out_dir, "index.html"), "w") as fh:
        fh.write(page)
    say(f"report written to {out_dir} in {time.perf_counter() - t_all:.1f}s")
    return {"counts": counts, "violated": violated, "claims": claims, "missing": missing}


def _write_csv(path, claims, info, cfg_hash, date):
    cols = [
        "check",
        "id",
        "setting",
        "status",
        "method",
        "quantity",
        "value",
        "seed",
        "config_hash",
        "lptheory",
        "numpy",
        "scipy",
        "python",
        "date",
    ]
    v = info["versions"]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(cols)
        for r in claims:
            setting = json.dumps(
                {k: r["params"][k] for k in sorted(r["params"]) if k not in ("search",)}, sort_keys=True
            )
            q = {"empirical": r["empirical"], "bound": r["bound"], "ratio": r["ratio"]}
            if r.get("ci"):
                q["ci_lo"], q["ci_hi"] = r["ci"]
            for name, val in q.items():
                if val is None:
                    continue
                w.writerow(
                    [
                        r["check"],
                        r["id"],
                        setting,
                        r["status"],
                        r["method"],
                        name,
                        val,
                        info["seed"],
                        cfg_hash,
                        v["lptheory"],
                        v["numpy"],
                        v["scipy"],
                        v["python"],
                        date,
                    ]
                )


def _fmt(x):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)


def _setting(params):
    keys = ("p", "d", "n", "noise", "problem", "instance", "method", "T", "direction", "setting", "step")
    return ", ".join(f"{k}={_fmt(params[k])}" for k in keys if k in params)


def _reproduce(r, seed):
    p = r["params"].get("p")
    return f"lptheory check {r['check']}" + (f" --p {p:g}" if isinstance(p, float) else "") + f" --seed {seed} --json"


def _render(claims, available, missing, figs, counts, seed, elapsed, quick, cfg):
    md = ["# lptheory report: Stacey (ICML 2025)", ""]
    md.append(f"Seed {seed}; {'quick smoke run; ' if quick else ''}checks: {', '.join(available)}.")
    if missing:
        md.append(f"Not yet available (listed, not run): {', '.join(missing)}.")
    md.append("")
    md.append("Verdicts: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + ".")
    md.append("")
    md.append("## Verdict table")
    md.append("")
    md.append("| check | claim id | setting | status | empirical | bound | ratio | method | source |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    for r in claims:
        st = f"**{r['status'].upper()}**" if r["status"] == "violated" else r["status"]
        cells = [
            r["check"],
            f"`{r['id']}`",
            _setting(r["params"]),
            st,
            _fmt(r["empirical"]),
            _fmt(r["bound"]),
            _fmt(r["ratio"]),
            r["method"],
            r["source"],
        ]
        md.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    for c in available:
        md.append("")
        md.append(f"## {TITLES.get(c, c)}")
        md.append(f"`lptheory check {c}` ({elapsed.get(c, 0):.1f}s)")
        md.append("")
        for f in figs.get(c, []):
            if f.endswith(".png"):
                md.append(f"![{f}]({f})")
        seen = set()
        for r in (r for r in claims if r["check"] == c):
            if r["id"] not in seen:
                seen.add(r["id"])
                md.append("")
                md.append(f"**`{r['id']}`** ({r['source']}): {r['statement']}")
            if r["status"] == "violated":
                wit = json.dumps(r["witness"], indent=1, sort_keys=True)
                if len(wit) > 3000:
                    wit = wit[:3000] + "\n... (truncated; the whole witness is in claims.json)"
                md.append("")
                md.append(f"- VIOLATED ({_setting(r['params'])}): {r.get('reason') or ''}")
                md.append(f"  Reproduce: `{_reproduce(r, seed)}`")
                md.append("")
                md.append("```json")
                md.append(wit)
                md.append("```")
            elif r["status"] in ("inconclusive", "not-applicable"):
                md.append(f"- {r['status']} ({_setting(r['params'])}): {r.get('reason')}")
    text = "\n".join(md) + "\n"
    return text, _html(claims, available, missing, figs, counts, seed)


def _html(claims, available, missing, figs, counts, seed):
    h = [
        "<!doctype html><html><head><meta charset='utf-8'><title>lptheory report</title>",
        "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:3px}.violated{background:#fdd}.holds{background:#efe}"
        ".inconclusive{background:#ffe6c0}.not-applicable{background:#eee}pre{background:#f6f6f6;overflow:auto;"
        "font-size:11px}img{max-width:100%}</style></head><body>",
        "<h1>lptheory report: Stacey (ICML 2025)</h1>",
        "<p>Verdicts: " + ", ".join(f"{n} {html.escape(s)}" for s, n in counts.items()) + "</p>",
    ]
    if missing:
        h.append("<p>Not yet available (listed, not run): " + html.escape(", ".join(missing)) + "</p>")
    h.append(
        "<h2>Verdict table</h2><table><tr><th>check</th><th>claim id</th><th>claim (as the paper states it)</th>"
        "<th>source</th><th>setting</th><th>status</th><th>empirical</th><th>bound</th><th>ratio</th><th>method</th></tr>"
    )
    for r in claims:
        h.append(
            f"<tr class='{r['status']}'><td>{r['check']}</td><td>{html.escape(r['id'])}</td><td>{html.escape(r['statement'])}</td>"
            f"<td>{html.escape(r['source'])}</td><td>{html.escape(_setting(r['params']))}</td><td>{r['status']}</td>"
            f"<td>{_fmt(r['empirical'])}</td><td>{_fmt(r['bound'])}</td><td>{_fmt(r['ratio'])}</td><td>{r['method']}</td></tr>"
        )
    h.append("</table>")
    for c in available:
        h.append(f"<h2>{html.escape(TITLES.get(c, c))}</h2>")
        for f in figs.get(c, []):
            if f.endswith(".png"):
                h.append(
                    f"<p><img src='{html.escape(f)}' alt='{html.escape(f)}'> <a href='{html.escape(f[:-4])}.svg'>SVG</a></p>"
                )
        for r in (r for r in claims if r["check"] == c and r["status"] != "holds"):
            h.append(
                f"<div class='{r['status']}'><b>{html.escape(r['id'])}</b> ({html.escape(_setting(r['params']))}): "
                f"{r['status']} &mdash; {html.escape(r.get('reason') or '')}"
            )
            if r["status"] == "violated":
                wit = json.dumps(r["witness"], indent=1, sort_keys=True)
                h.append(
                    f"<br>Reproduce: <code>{html.escape(_reproduce(r, seed))}</code><pre>{html.escape(wit[:3000])}</pre>"
                )
            h.append("</div>")
    h.append("</body></html>")
    return "\n".join(h)
