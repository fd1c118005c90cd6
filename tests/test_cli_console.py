"""What ``lptheory`` prints on a console: every command's help (each default once, never "(default: None)"),
``lptheory run``'s result table (aligned whatever the values) and progress line (rewritten in place on a
terminal and gone afterwards, plain lines elsewhere), and the rough edges of bad input (exit 2 naming the
flag, no traceback; a crash exits 3)."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from lptheory.app import cli
from lptheory.app.cli import main
from lptheory.app.console import Interval, StepProgress, fmt_num, table

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -------------------------------------------------------------------------------------------------
# help


def _subparsers():
    parser = cli.build_parser()
    subs = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    return parser, subs.choices


def _option_blocks(text: str) -> dict:
    """{first option string: its help text} from a help page (an entry starts with two spaces and a dash;
    deeper-indented lines continue it)."""
    blocks, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^  (-[-\w]+)", line)
        if m:
            cur = m.group(1)
            blocks[cur] = line
        elif cur is not None and line.startswith("    ") and line.strip():
            blocks[cur] += " " + line.strip()
        else:
            cur = None
    return {k: " ".join(v.split()) for k, v in blocks.items()}


def test_every_command_states_each_default_once_and_never_none(monkeypatch):
    """argparse's ArgumentDefaultsHelpFormatter printed "(their default: 3) (default: None)" for run --p and
    "(default: None)" / "(default: False)" after a dozen options; check, report, sweep and plot stated no
    defaults at all for some options with one (--seed 0, --ratio-tolerance 0.05)."""
    monkeypatch.setenv("COLUMNS", "100")
    parser, subs = _subparsers()
    assert set(subs) >= {"info", "demo", "run", "check", "report", "sweep", "plot", "diff"}
    for name, sp in subs.items():
        text = sp.format_help()
        assert "(default: None)" not in text and "(default: False)" not in text, name
        assert "(default: [])" not in text, name
        blocks = _option_blocks(text)
        for action in sp._actions:
            if not action.option_strings or action.dest == "help":
                continue
            block = blocks[action.option_strings[0]]
            n = len(re.findall(r"\bdefaults?\b", block, flags=re.IGNORECASE))
            assert n <= 1, (name, block)
            concrete = action.default is not None and not isinstance(action.default, bool)
            if concrete:  # a real default is stated (by the formatter or by the help itself)
                assert n == 1, (name, block)
    run = _option_blocks(subs["run"].format_help())
    assert run["--p"].endswith("(their default: 3)")
    assert "(default: 0.1)" in run["--sigma"] and "(default: stacey-pp)" in run["--optimizer"]
    assert "rank-one" in run["--noise"]
    check = _option_blocks(subs["check"].format_help())
    assert "(default: 0)" in check["--seed"] and "(default: 0.05)" in check["--ratio-tolerance"]


def test_long_choice_lists_do_not_flood_the_usage_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    _, subs = _subparsers()
    usage = subs["run"].format_usage()
    assert "--optimizer NAME" in usage and "--problem NAME" in usage and "--noise NAME" in usage
    assert "stacey-pp-schatten" not in usage  # listed in the option's help instead
    assert max(len(line) for line in usage.splitlines()) <= 100
    for width in range(60, 130, 7):  # no name broken at a hyphen, whatever the width
        monkeypatch.setenv("COLUMNS", str(width))
        parser, subs = _subparsers()
        for text in [parser.format_help(), *(sp.format_help() for sp in subs.values())]:
            assert not re.search(r"[\w]-\n", text), (width, text)


# -------------------------------------------------------------------------------------------------
# the table


def test_fmt_num_writes_non_finite_values_explicitly():
    assert fmt_num(math.inf) == "inf" and fmt_num(-math.inf) == "-inf" and fmt_num(math.nan) == "nan"
    assert fmt_num(np.float64("nan")) == "nan" and fmt_num(np.float32("-inf")) == "-inf"
    assert fmt_num(-0.0) == "0" and fmt_num(1234567.0) == "1.2346e+06" and fmt_num(-2.5) == "-2.5"
    assert fmt_num(3) == "3"


def _columns_line_up(lines):
    """Every line equally long (right-aligned last column), and the brackets and commas of the intervals at
    the same positions in every row."""
    assert len({len(s) for s in lines}) == 1, lines
    for ch in "[],":
        assert len({tuple(m.start() for m in re.finditer(re.escape(ch), s)) for s in lines[1:]}) == 1, lines


def test_table_aligns_numbers_whatever_their_values():
    rows = [
        ["a-very-long-optimizer-name", -1.5e-300, Interval(-math.inf, 2.0), 7, "3/16"],
        ["sgd", math.nan, Interval(math.nan, math.nan), 123456, "16/16"],
        ["x", 12345.678, Interval(-0.0001234, 1e300), 0, "0/16"],
    ]
    lines = table(["optimizer", "value", "95% CI", "count", "diverged"], rows, align="<>>>>")
    _columns_line_up(lines)
    assert lines[2].split()[1] == "nan" and "[      -inf,      2]" in lines[1]
    assert "[       nan,    nan]" in lines[2] and "[-0.0001234, 1e+300]" in lines[3]
    assert lines[1].startswith("a-very-long-optimizer-name  ") and lines[2].startswith("sgd ")
    assert all(not s.endswith(" ") for s in lines)
    with pytest.raises(ValueError, match="align"):
        table(["a", "b"], [[1, 2]], align="<")


def test_counts_are_exact_and_intervals_mix_with_text():
    """An integer cell (a count: nonfinite steps) in all its digits (123456 read 1.2346e+05); an integer too
    large for a float written, not an OverflowError; an interval in a column that also has text ("-") as
    "[lo, hi]", not the object's repr."""
    assert fmt_num(123456) == "123456" and fmt_num(np.int64(2**62)) == str(2**62) and fmt_num(10**400) == str(10**400)
    assert fmt_num(True) == "1" and fmt_num(2.0) == "2"
    lines = table(["a", "95% CI", "n"], [["x", Interval(1.0, math.nan), 200000], ["y", "-", 7]])
    assert lines[1].split() == ["x", "[1,", "nan]", "200000"] and lines[2].split() == ["y", "-", "7"]


class _Trace:
    def __init__(self, gap, grad, diverged):
        self.s = {"gap": gap, "grad_pstar": grad, "diverged": diverged}

    def summary(self):
        return self.s


def test_run_table_aligns_negative_nan_and_long_names():
    """The old table: a fixed 12-character name column and unpadded intervals, so a long optimizer name, a
    negative bound or a nan shifted every column after it."""
    iv = lambda m, lo, hi: {"mean": m, "lo": lo, "hi": hi}  # noqa: E731
    traces = {
        "stacey-pp-schatten": _Trace(iv(2.5579, 1.899, 3.216), iv(1.5892, 1.242, 1.936), 0),
        "sgd": _Trace(iv(30.911, 26.25, 35.58), iv(0.30394, -0.05408, 0.662), 0),
        "adam": _Trace(iv(math.nan, math.nan, math.nan), iv(math.inf, math.nan, math.nan), 4),
    }
    lines = cli._run_table(traces, {"stacey-pp-schatten": 0, "sgd": 0, "adam": 12}, 3.0, 4)
    _columns_line_up(lines)
    assert "(p=3)" in lines[0] and lines[3].split()[1] == "nan" and " inf " in lines[3]
    assert lines[3].endswith("4/4         12")


def test_cli_run_prints_an_aligned_table(tmp_path, capsys):
    args = ["run", "--steps", "6", "--replicates", "3", "--d", "12", "--lr", "10", "--quiet"]
    opts = ["--optimizer", "stacey-pp-schatten", "--optimizer", "sgd", "--optimizer", "adam"]
    assert main([*args, *opts, "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out.splitlines()
    head = next(i for i, s in enumerate(out) if s.startswith("optimizer "))
    lines = out[head : head + 4]
    _columns_line_up(lines)
    assert [s.split()[0] for s in lines[1:]] == ["stacey-pp-schatten", "sgd", "adam"]
    assert "assumptions: unbiased, bounded variance, bounded gradient hold" in "\n".join(out)


# -------------------------------------------------------------------------------------------------
# progress


def _screen(raw: str, width: int) -> list[str]:
    """What a terminal of ``width`` columns shows after ``raw``: carriage return to the line's start, newline
    to the next line, and a character written in the last column wraps to a new line."""
    lines, row, col = [[]], 0, 0
    for ch in raw:
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append([])
        else:
            if col == width:
                row, col = row + 1, 0
                if row == len(lines):
                    lines.append([])
            line = lines[row]
            line.extend(" " * (col + 1 - len(line)))
            line[col] = ch
            col += 1
    return ["".join(s).rstrip() for s in lines]


class _Stream:
    def __init__(self, tty):
        self.text, self.tty = "", tty

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return self.tty


class _Clock:
    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


@pytest.mark.parametrize("width", [24, 80])
def test_progress_on_a_terminal_rewrites_one_line_and_leaves_only_the_summary(width):
    """Narrower than the line: it is cut (a wrapped line cannot be rewritten: its first part stays on
    screen). A warning during the run goes on its own line. Afterwards: the summary, nothing else."""
    s = _Stream(True)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda msg, cat, *a, **k: s.write(f"{cat.__name__}: {msg}\n")
        with StepProgress("a-long-optimizer-name", 1000, 2, 3, stream=s, width=width, clock=_Clock(0.05)) as bar:
            for t in range(1, 1001):
                bar(t, 1000)
                if t == 500:
                    warnings.warn("halfway", UserWarning, stacklevel=1)
    screen = [x for x in _screen(s.text, width) if x]
    assert "\r" in s.text and s.text.count("\r  a-long") > 10 and all(len(x) <= width for x in screen)
    assert not any("%" in x for x in screen), screen  # the live line is gone, also where the warning came
    joined = "".join(screen).replace(" ", "")  # the summary is a plain line: it may wrap
    assert re.fullmatch(r"UserWarning:halfwaya-long-optimizer-name\(2/3\):1,000stepsin50\.\ds\(20steps/s\)", joined)


def test_progress_interrupted_says_where_it_stopped():
    s = _Stream(True)
    with pytest.raises(KeyboardInterrupt):
        with StepProgress("sgd", 100, stream=s, width=80, clock=_Clock(0.2)) as bar:
            for t in range(1, 41):
                bar(t, 100)
            raise KeyboardInterrupt
    screen = [x for x in _screen(s.text, 80) if x]
    assert screen == ["  sgd: stopped at 40 of 100 steps after 8.2s"]


def test_progress_elsewhere_is_plain_throttled_lines():
    """Not a terminal: no carriage returns; a line at a tenth of the steps only when a second has passed
    since the last one (a fast run prints its summary alone: it printed ten lines per optimizer)."""
    fast = _Stream(False)
    with StepProgress("adam", 50, stream=fast, clock=_Clock(0.001)) as bar:
        for t in range(1, 51):
            bar(t, 50)
    assert fast.text.count("\n") == 1 and "\r" not in fast.text and fast.text.startswith("  adam: 50 steps in")
    slow = _Stream(False)
    with StepProgress("adam", 50, stream=slow, clock=_Clock(0.6)) as bar:
        for t in range(1, 51):
            bar(t, 50)
    lines = slow.text.splitlines()
    assert "\r" not in slow.text and len(lines) == 10  # 10%, ..., 90%, then the summary
    assert lines[0].startswith("  adam:  10%  5/50 steps") and lines[-1].startswith("  adam: 50 steps in")


def test_report_progress_on_a_terminal_keeps_messages_apart(monkeypatch):
    """``lptheory report`` on a terminal: the checks' line rewritten in place with the last check done, a
    message of the run (``say``) on its own line with the live line drawn again under it, and at the end
    the messages and the summary only (tqdm drew nothing on a terminal reporting zero columns)."""
    s = _Stream(True)
    monkeypatch.setattr("sys.stderr", s)
    bar = cli._CheckBar(3, quiet=False)
    say = cli._say_factory(False, "lptheory report")
    bar.done("lemmas", 104, 2.0)
    say("claims: a message")
    after = s.text.rsplit("[lptheory report] claims: a message\n", 1)[1]
    assert after.startswith("\r  checks:  33%  1/3 checks") and after.endswith("lemmas: 104 records in 2s")
    bar.done("claims", 10, 1.0)
    bar.done("symbolic", 20, 3.0)
    bar.close()
    bar.close()  # idempotent
    screen = [x for x in _screen(s.text, 80) if x]
    assert screen[0] == "[lptheory report] claims: a message"
    assert re.fullmatch(r"  checks: 3 checks in \d+\.\ds", screen[1]) and len(screen) == 2, screen
    assert "lemmas: 104 records in 2s" in s.text and "symbolic: 20 records in 3s" in s.text


def test_report_progress_interrupted_is_cleared(monkeypatch):
    s = _Stream(True)
    monkeypatch.setattr("sys.stderr", s)
    bar = cli._CheckBar(4, quiet=False)
    bar.done("lemmas", 104, 2.0)
    bar.close(KeyboardInterrupt())
    screen = [x for x in _screen(s.text, 80) if x]
    assert len(screen) == 1 and screen[0].startswith("  checks: stopped at 1 of 4 checks after"), screen


def _pty_run(args, cols=60):
    return _pty_exec([sys.executable, "-m", "lptheory", *args], cols)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_run_through_a_pseudo_terminal_leaves_no_junk(tmp_path):
    """``script -q -c "lptheory run ..."``: the progress line was drawn and cleared, each optimizer leaves its
    summary line, and no control sequence remains (numba's colorama wrote ESC[0m at exit)."""
    args = ["run", "--steps", "300", "--replicates", "2", "--d", "20", "--out", str(tmp_path / "o")]
    rc, raw = _pty_run([*args, "--optimizer", "sgd", "--optimizer", "adam"])
    assert rc == 0, raw
    assert "\x1b" not in raw and "\r  sgd (1/2):" in raw  # drawn in place
    screen = [x for x in _screen(raw.replace("\r\n", "\n"), 60) if x]
    assert not any("%" in x and "steps" in x for x in screen), screen
    assert any(x.startswith("  sgd (1/2): 300 steps in") for x in screen)
    assert any(x.startswith("  adam (2/2): 300 steps in") for x in screen)


# -------------------------------------------------------------------------------------------------
# rough edges


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["demo", "--d", "0"], "--d must be >= 1"),
        (["demo", "--replicates", "-1"], "--replicates must be >= 1"),
        (["demo", "--optimizer", "adam", "--p", "3"], "--p: optimizer adam has no exponent p"),
        (["run", "--batch", "1e20", "--steps", "2"], "--batch"),
        (["run", "--backend", "torch", "--device", "foo", "--steps", "2"], "--device foo: not a torch device"),
        (["run", "--noise", "rank-one", "--shape", "3", "5", "--d", "12"], "--shape 3 5"),
        (["check", "lemmas", "--ratio-tolerance", "-1"], "--ratio-tolerance must be a finite number >= 0"),
        (["check", "lemmas", "--ratio-tolerance", "nan"], "--ratio-tolerance must be a finite number >= 0"),
        (["demo", "--lr", "-1"], "--lr: lr must be in [0, inf)"),
        (["run", "--batch-schedule", "T", "--batch", "5"], "--batch 5: not used with --batch-schedule T"),
        (["run", "--sigma", "-1", "--steps", "2"], "--sigma: sigma must be in [0, inf)"),
        (["plot", "/no/such/sweep", "--theory-slope", "nan"], "--theory-slope must be a finite number"),
    ],
)
def test_bad_values_are_exit_2_before_any_output(tmp_path, capsys, argv, msg):
    if "torch" in argv:
        pytest.importorskip("torch")
    argv = argv + (["--out", str(tmp_path / "o"), "--quiet"] if argv[0] == "run" else [])
    assert main(argv) == 2
    cap = capsys.readouterr()
    assert msg in cap.err and "Traceback" not in cap.err and "running" not in cap.err
    assert cap.out == ""  # demo printed its header before failing on --d 0
    assert not (tmp_path / "o").exists()


def test_messages_do_not_repeat_themselves(tmp_path, capsys):
    assert main(["check", "lemmas", "--set", "foo=1"]) == 2
    err = capsys.readouterr().err
    assert err.count("check 'lemmas'") == 1, err
    assert main(["sweep", str(tmp_path / "no.toml"), "--out", str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err
    assert err.count(str(tmp_path / "no.toml")) == 1, err


def test_plot_names_a_corrupt_sweep_json(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    (tmp_path / "results.parquet").write_bytes(b"")
    (tmp_path / "sweep.json").write_text("{not json")
    assert main(["plot", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'sweep.json'}: not a sweep's sweep.json" in err and "Traceback" not in err


def test_the_batch_schedule_t_run_says_its_batch(tmp_path, capsys):
    """--batch-schedule T: the header (and the plot's title) said "batch T" / "batch 1" (the unused --batch)."""
    argv = ["run", "--batch-schedule", "T", "--steps", "3", "--replicates", "2", "--d", "8", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 0
    assert "batch n_t = T = 3, T=3" in capsys.readouterr().out


def test_a_crash_exits_3_with_the_traceback(tmp_path, capsys, monkeypatch):
    """A bug in a command (here the simulator raising) used to escape main() and exit 1: the status of a
    finding under --fail-on. Now the traceback, one line naming the command, exit 3, no output left."""
    import lptheory.simulate as sim

    def boom(*a, **k):
        raise RuntimeError("planted")

    monkeypatch.setattr(sim, "simulate", boom)
    out = tmp_path / "o"
    assert main(["run", "--steps", "3", "--d", "8", "--replicates", "2", "--out", str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "lptheory: run crashed: RuntimeError: planted" in err
    assert not out.exists()


def test_rank_one_noise_from_the_command_line(tmp_path, capsys):
    """--noise rank-one with the problem's own matrix shape, and with --shape for a vector optimizer (the
    noise's layout; no matrix optimizer needed)."""
    base = ["run", "--noise", "rank-one", "--steps", "4", "--replicates", "2", "--quiet"]
    assert main([*base, "--problem", "kronecker-quadratic", "--d", "36", "--out", str(tmp_path / "a")]) == 0
    assert "noise rank-one on a 6 x 6 matrix" in capsys.readouterr().out
    assert main([*base, "--d", "12", "--shape", "3", "4", "--out", str(tmp_path / "b")]) == 0
    assert "noise rank-one on a 3 x 4 matrix" in capsys.readouterr().out
    meta = json.loads((tmp_path / "b" / "run.json").read_text())
    assert meta["argv"]["noise"] == "rank-one"


# -------------------------------------------------------------------------------------------------
# review fixes: one layout for a matrix optimizer and the rank-one noise, the report's table of violated
# claims, the checks' bar closed whatever stops the run, check --help


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_matrix_optimizer_and_rank_one_noise_share_one_default_layout(tmp_path, capsys):
    """``run --optimizer muon --noise rank-one --d 12`` laid Muon out as 1 x 12 and the noise as 3 x 4: one
    default layout now (the noise's split, 3 x 4); --shape and a matrix problem's own shape still win."""
    base = ["run", "--optimizer", "muon", "--noise", "rank-one", "--steps", "2", "--replicates", "2"]
    assert main([*base, "--d", "12", "--out", str(tmp_path / "a")]) == 0
    cap = capsys.readouterr()
    assert "muon: each replicate's iterate as a 3 x 4 matrix" in cap.err
    assert "noise rank-one on a 3 x 4 matrix" in cap.out
    assert main([*base, "--d", "12", "--shape", "2", "6", "--out", str(tmp_path / "b")]) == 0
    cap = capsys.readouterr()
    assert "muon: each replicate's iterate as a 2 x 6 matrix" in cap.err
    assert "noise rank-one on a 2 x 6 matrix" in cap.out
    assert main([*base, "--problem", "kronecker-quadratic", "--d", "36", "--out", str(tmp_path / "c")]) == 0
    cap = capsys.readouterr()
    assert "muon: each replicate's iterate as a 6 x 6 matrix" in cap.err and "on a 6 x 6 matrix" in cap.out
    # a noise without a layout leaves the matrix optimizer's default (the iterate as one row)
    plain = ["run", "--optimizer", "muon", "--noise", "gaussian", "--steps", "2", "--replicates", "2"]
    assert main([*plain, "--d", "12", "--out", str(tmp_path / "d")]) == 0
    assert "muon: each replicate's iterate as a 1 x 12 matrix" in capsys.readouterr().err
    run = _option_blocks(_subparsers()[1]["run"].format_help())
    assert "one layout for both" in run["--shape"] and "same layout" in run["--noise"]


def _violated(id_, check, ratio, show=None, **params):
    return {"id": id_, "check": check, "ratio": ratio, "show": show or [], "params": params, "status": "violated"}


def test_report_violated_table_tells_rows_of_one_claim_apart():
    """The report's closing table printed ``lionk.first-step p=3 coverage-more -`` three times: rows of the same
    claim and check now show the parameters that differ (the record's ``show`` keys first, as few as needed),
    quoted when they hold spaces; rows already apart keep p and d only."""
    setting = ["p", "setting"]
    found = [
        _violated("lionk.first-step", "coverage-more", "-", setting, p=3.0, eta=0.1, setting=f"tau = 0, g0 #{k}")
        for k in (1, 2, 3)
    ]
    found += [
        _violated("asm1.equivalence", "smoothness", 1.26, ["p", "d"], p=3.0, d=2, direction="lip/2s"),
        _violated("asm1.equivalence", "coverage-more", 1.145, ["p", "d"], p=3.0, d=3, direction="lip/2s"),
        _violated("thm1.B2", "lemmas", 1.117, None, p=3.0, d=1, k=3, n=1),
        _violated("thm1.B2", "lemmas", 1.2, None, p=3.0, d=1, k=2, n=1),
        _violated("sym.thm1.step2", "symbolic", None, ["proof", "step"], proof="thm1", step="step2"),
    ]
    lines = cli._violated_table(found)
    rows = [ln for ln in lines[1:]]
    assert len(set(rows)) == len(rows) == len(found), lines
    for k in (1, 2, 3):
        assert any(f'p=3 setting="tau = 0, g0 #{k}"' in r and "coverage-more" in r for r in rows), lines
    assert not any("eta=" in r for r in rows)  # the same in every row: not shown
    assert any(r.startswith("asm1.equivalence") and " p=3 d=2 " in r and "direction" not in r for r in rows)
    assert any(" p=3 d=1 k=3 " in r for r in rows) and any(" p=3 d=1 k=2 " in r for r in rows)
    assert lines[0].split() == ["claim", "params", "check", "ratio"]


@pytest.mark.parametrize("stop", [SystemExit(7), KeyboardInterrupt(), RuntimeError("planted")])
def test_report_check_bar_is_closed_whatever_stops_the_run(tmp_path, monkeypatch, stop):
    """A SystemExit (not an Exception) raised while the checks ran left the checks' line live and
    ``warnings.showwarning`` replaced: the bar is closed in a ``finally`` now."""
    from lptheory import progress as _progress

    def boom(*args, **kwargs):
        raise stop

    monkeypatch.setattr("proofs_checks.runner.run_checks", boom)
    s = _Stream(True)
    monkeypatch.setattr("sys.stderr", s)
    before = warnings.showwarning
    argv = ["report", "--only", "symbolic", "--quick", "--out", str(tmp_path / "r")]
    if isinstance(stop, SystemExit):
        with pytest.raises(SystemExit):
            cli._cmd_report(cli.build_parser().parse_args(argv))
    else:
        assert main(argv) == (3 if isinstance(stop, RuntimeError) else cli.EXIT_INTERRUPTED)
    assert warnings.showwarning is before and not _progress._LIVE
    assert "checks: stopped at 0 of 1 checks" in s.text


def test_check_help_does_not_list_a_stale_set_of_checks(capsys):
    """``check --help`` listed eight of the Stacey pack's checks (not proved, coverage, coverage-more); it now
    points at ``lptheory info``, which lists every pack's checks."""
    text = " ".join(_subparsers()[1]["check"].format_help().split())
    assert "`lptheory info` lists every pack's checks" in text
    assert "lemmas, theorem1" not in text
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for name in ("lemmas", "proved", "coverage", "coverage-more"):
        assert re.search(rf"stacey: checks .*\b{re.escape(name)}\b", out), out


# -------------------------------------------------------------------------------------------------
# the simulator's own progress (progress=True): the same primitive, a core module


_SIM = """
import numpy as np
from lptheory.optimizers import OPTIMIZERS
from lptheory.simulate import simulate
from synthetic.noise import make_noise
from synthetic.oracle import GradientOracle
from synthetic.problems import make_problem
pr = make_problem("separable", d=10, seed=0)
o = GradientOracle(pr, make_noise("gaussian", np.full(10, 0.1)), 1)
simulate(OPTIMIZERS["sgd"](lr=0.01), pr, o, 400, 2, 0, progress=True)
print("done")
"""


def _pty_exec(cmd, cols):
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 0 if cols == 0 else 24, cols, 0, 0))
    proc = subprocess.Popen(
        cmd, env={**os.environ, "PYTHONPATH": ROOT}, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave
    )
    os.close(slave)
    raw = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        raw += chunk
    proc.wait(timeout=120)
    os.close(master)
    return proc.returncode, raw.decode()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_simulate_progress_draws_on_a_zero_column_terminal():
    """``simulate(..., progress=True)`` drew with tqdm, which draws nothing on a terminal reporting zero
    columns (``script -q -c ...``): it draws the line in place now, cleared at the end, then a summary."""
    rc, raw = _pty_exec([sys.executable, "-c", _SIM], cols=0)
    assert rc == 0, raw
    assert "\r  sgd:" in raw and "400/400 steps" in raw, raw
    screen = [x for x in _screen(raw.replace("\r\n", "\n"), 80) if x]
    assert not any("%" in x for x in screen), screen
    assert any(re.fullmatch(r"  sgd: 400 steps in \d+\.\ds \([\d,]+ steps/s\)", x) for x in screen), screen
    assert "done" in screen  # (numba may write ESC[0m at exit: not the simulator's)


def test_simulate_progress_in_a_pipe_is_plain_lines():
    proc = subprocess.run(
        [sys.executable, "-c", _SIM], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": ROOT}
    )
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and re.search(r"^  sgd: 400 steps in ", proc.stderr, flags=re.M), proc.stderr


def test_simulate_progress_changes_no_bit_and_says_where_it_stopped(monkeypatch):
    from lptheory import progress as _progress
    from lptheory.optimizers import OPTIMIZERS
    from lptheory.simulate import simulate
    from synthetic.noise import make_noise
    from synthetic.oracle import GradientOracle
    from synthetic.problems import make_problem

    pr = make_problem("separable", d=6, seed=0)
    o = GradientOracle(pr, make_noise("gaussian", np.full(6, 0.1)), 1)
    s = _Stream(True)
    monkeypatch.setattr("sys.stderr", s)
    before = warnings.showwarning
    a = simulate(OPTIMIZERS["sgd"](lr=0.01), pr, o, 30, 3, 4, record_every=5, progress=True)
    b = simulate(OPTIMIZERS["sgd"](lr=0.01), pr, o, 30, 3, 4, record_every=5)
    assert np.array_equal(a.gap, b.gap, equal_nan=True) and np.array_equal(a.grad_pstar, b.grad_pstar)
    screen = [x for x in _screen(s.text, 80) if x]
    assert len(screen) == 1 and screen[0].startswith("  sgd: 30 steps in"), screen
    s.text = ""
    with pytest.raises(FloatingPointError):
        simulate(OPTIMIZERS["sgd"](lr=1e200), pr, o, 30, 2, 0, progress=True)
    screen = [x for x in _screen(s.text, 80) if x]
    assert len(screen) == 1 and re.match(r"  sgd: stopped at \d+ of 30 steps", screen[0]), screen
    assert warnings.showwarning is before and not _progress._LIVE
    # bad input is refused before any progress is drawn (it used to write "stopped at 0 of 30 steps" first)
    for bad in ({"record_every": 0}, {"on_nonfinite": "ignore"}, {"p_measure": 0.5}, {"device": "cuda"}):
        s.text = ""
        with pytest.raises(ValueError):
            simulate(OPTIMIZERS["sgd"](lr=0.01), pr, o, 30, 2, 0, progress=True, **bad)
        assert s.text == "", (bad, s.text)
    assert warnings.showwarning is before and not _progress._LIVE
