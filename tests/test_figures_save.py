"""figures.style.save draws each figure from one layout with its ticks computed once per axis state: the files
must be those of matplotlib's own savefig path (PNG bytes identical; here on log, linear and shared axes)."""

from __future__ import annotations

import numpy as np
import pytest

from figures import style


def _figure():
    fig, axes = style.plt.subplots(2, 2, figsize=(7, 5))
    x = np.geomspace(9, 513, 7)
    for k, ax in enumerate(axes.flat):
        ax.loglog(x, 1e-3 * x ** -(1.0 + k / 3), "o-", label=f"run {k}")
        ax.set_title(f"panel {k}", fontsize=8)
        ax.set_xlabel(r"$N = T + 1$")
    axes[1][1].set_xscale("linear")
    fig.legend(loc="outside right center", title="runs")
    fig.suptitle("a figure")
    return fig


class _Noop:
    def __init__(self, *args):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _texts(fig):
    """Texts of every kind the report's figures have: rotated, multi-line, monospace, math, repeated."""
    ax = fig.axes[0]
    ax.text(0.1, 0.5, "rotated\ntwo lines", rotation=30, transform=ax.transAxes, fontsize=6)
    ax.text(0.5, 0.2, "mono: 1.23\nmono: 4.56", family="monospace", fontsize=5.5, transform=ax.transAxes)
    ax.set_ylabel(r"gap $(f - f^*)/(L R^2)$")
    fig.axes[1].set_ylabel(r"gap $(f - f^*)/(L R^2)$", fontsize=8)
    return fig


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_save_with_ticks_computed_once_gives_the_same_files(tmp_path, monkeypatch):
    """The memos within save (ticks, tick-label boxes; the process's text extents, shapings, text layouts and
    math layouts) leave the PNG and the SVG byte-identical (SVG ids salted, date fixed), with the process's memos
    empty (a) and filled by an earlier figure (c)."""
    import matplotlib

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "test")
    memos = (style._TEXT_EXTENTS, style._SHAPES, style._TEXT_LAYOUTS, style._MATH_PARSES, style._OUTLINES)
    for memo in (*memos, style._GLYPHS):
        memo.clear()  # caches only: emptied, they fill again
    a = style.save(_texts(_figure()), str(tmp_path / "a"))
    verified = tuple(int(v) for v in matplotlib.__version__.split(".")[:2]) in style.MEMO_VERIFIED_MATPLOTLIB
    assert all(memos + (style._GLYPHS,)) == verified  # the memos ran
    from matplotlib.backends.backend_mixed import MixedModeRenderer
    from matplotlib.backends.backend_svg import RendererSVG

    svg = (MixedModeRenderer, RendererSVG)  # the SVG's texts too (savefig draws it through a mixed renderer)
    assert any(k[1] == svg for k in style._TEXT_LAYOUTS) == verified
    assert any(k[1] == svg for k in style._TEXT_EXTENTS) == verified
    c = style.save(_texts(_figure()), str(tmp_path / "c"))  # every text's extent, shaping and layout memoized
    monkeypatch.setattr(style, "_ticks_computed_once", _Noop)
    b = style.save(_texts(_figure()), str(tmp_path / "b"))
    assert a == [str(tmp_path / "a.png"), str(tmp_path / "a.svg"), str(tmp_path / "a.narrow.png")]  # a phone's too
    for ours in (a, c):
        assert open(ours[0], "rb").read() == open(b[0], "rb").read()
        assert open(ours[1], "rb").read() == open(b[1], "rb").read()
        assert open(ours[2], "rb").read() == open(b[2], "rb").read()
    import matplotlib.mathtext as mmath
    import matplotlib.text as mtext
    from matplotlib.axis import Axis
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.textpath import TextToPath

    assert TextToPath.get_glyphs_with_font.__qualname__ == "TextToPath.get_glyphs_with_font"
    assert RendererAgg._draw_text_glyphs_and_boxes.__qualname__ == "RendererAgg._draw_text_glyphs_and_boxes"
    assert Axis._update_ticks.__name__ == "_update_ticks"  # matplotlib's own methods are back after save
    assert Axis._get_ticklabel_bboxes.__name__ == "_get_ticklabel_bboxes"
    assert mtext._get_text_metrics_function.__name__ == "_get_text_metrics_function"
    assert mmath.MathTextParser.parse.__qualname__ == "MathTextParser.parse"
    assert mtext.Text._get_layout.__qualname__ == "Text._get_layout"
    assert RendererAgg._prepare_font.__qualname__ == "RendererAgg._prepare_font"
    assert TextToPath._get_font.__qualname__ == "TextToPath._get_font"
    from matplotlib.axes._base import _AxesBase
    from matplotlib.transforms import BboxBase

    assert Axis.get_tightbbox.__qualname__ == "Axis.get_tightbbox"
    assert _AxesBase._update_title_position.__qualname__ == "_AxesBase._update_title_position"
    assert BboxBase.union.__qualname__ == "BboxBase.union"


def test_no_memo_on_a_matplotlib_not_compared(tmp_path, monkeypatch):
    """On a matplotlib version the memos were not compared with, save patches nothing: matplotlib draws alone."""
    from matplotlib.axis import Axis

    monkeypatch.setattr(style, "MEMO_VERIFIED_MATPLOTLIB", frozenset())
    memos = (style._TEXT_EXTENTS, style._SHAPES, style._TEXT_LAYOUTS, style._MATH_PARSES, style._OUTLINES)
    memos += (style._GLYPHS,)
    for memo in memos:
        memo.clear()
    seen = []
    orig = style._write_laid_out

    def spy(fig, paths, dpi, bbox, mpl):
        seen.append(Axis._update_ticks.__name__)
        orig(fig, paths, dpi, bbox, mpl)

    monkeypatch.setattr(style, "_write_laid_out", spy)
    paths = style.save(_figure(), str(tmp_path / "plain"))
    assert paths[0].endswith("plain.png") and seen and set(seen) == {"_update_ticks"}
    assert not any(memos)


def _with_best_legend(layout):
    fig, ax = style.plt.subplots(figsize=(4, 3), layout=layout)
    x = np.linspace(0.1, 3, 40)
    ax.plot(x, np.sin(x), label="sin")
    ax.plot(x, np.cos(x), label="cos")
    ax.legend(loc="best")
    ax.set_ylabel(r"$f(x)$")
    ax.set_title("a legend placed at draw time")
    return fig


@pytest.mark.slow  # seconds on a cold clone (the default run keeps to 300 s)
def test_save_gives_matplotlibs_own_tight_png(tmp_path):
    # the layout without a dry draw, the tight box from it: the bytes of savefig(bbox_inches="tight")
    for k, make in enumerate((_figure, lambda: _with_best_legend("constrained"), lambda: _with_best_legend(None))):
        ours = style.save(make(), str(tmp_path / f"ours{k}"))[0]
        fig = make()
        fig.savefig(tmp_path / f"mpl{k}.png", dpi=130, bbox_inches="tight", pil_kwargs=style.PNG_PIL_KWARGS)
        style.plt.close(fig)
        assert open(ours, "rb").read() == open(tmp_path / f"mpl{k}.png", "rb").read()


def test_a_wide_figure_gets_a_phone_layout_with_its_panels_stacked(tmp_path):
    """Issue 45: at 390 px a 2 x 2 figure showed its first panel only. save writes ``stem.narrow.png`` too: the
    same panels stacked in one column in reading order, the figure's legend above them, as wide as a 390 px
    phone shows (~370 CSS px, 3.85 in at 96 px per inch); a figure that fits, or one whose axes are no grid (a
    colour bar), gets none."""
    from figures.report import png_css_size

    seen = {}
    orig = style._write_laid_out

    def spy(fig, paths, dpi, bbox, mpl):
        orig(fig, paths, dpi, bbox, mpl)
        if paths[0].endswith(".narrow.png"):
            seen["panels"] = [(a.get_title(), a.get_position()) for a in fig.axes if a.axison]
            seen["legend"] = [a.get_position().y0 for a in fig.axes if not a.axison and a.get_legend()]

    import pytest

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(style, "_write_laid_out", spy)
        paths = style.save(_figure(), str(tmp_path / "wide"))
    assert paths[2] == str(tmp_path / "wide.narrow.png")
    w, h = png_css_size(paths[2])
    assert 340 <= w <= 380 and h > 2.5 * w  # four panels one above the other
    assert png_css_size(paths[0])[0] > 600  # the wide file as it was
    titles = [t for t, _ in seen["panels"]]
    assert titles == ["panel 0", "panel 1", "panel 2", "panel 3"]
    pos = [p for _, p in seen["panels"]]
    assert all(abs(p.x0 - pos[0].x0) < 0.02 and p.width > 0.6 for p in pos)  # one column, each panel wide
    assert all(a.y0 > b.y1 for a, b in zip(pos, pos[1:]))  # in reading order, top to bottom, apart
    assert len(seen["legend"]) == 1 and seen["legend"][0] > pos[0].y1  # the legend, above the panels

    fig, ax = style.plt.subplots(figsize=(3.4, 2.6))  # fits a phone already
    ax.plot([1, 2], [1, 2])
    assert len(style.save(fig, str(tmp_path / "small"))) == 2
    fig, ax = style.plt.subplots(figsize=(8, 3))  # a colour bar: not a grid of panels
    fig.colorbar(ax.imshow(np.eye(3)), ax=ax)
    assert len(style.save(fig, str(tmp_path / "bar"))) == 2 and not (tmp_path / "bar.narrow.png").exists()


def _with_long_legend(label):
    fig, axes = style.plt.subplots(1, 2, figsize=(9, 3))
    for ax in axes:
        ax.plot([1, 2], [1, 2], label=label)
    axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5))
    return fig


def test_a_refused_phone_layout_is_decided_from_the_layout_and_never_drawn(tmp_path):
    """The phone layout is refused from its layout alone (its tight box, its panels' widths), before any file is
    drawn: a refused one makes no savefig (and leaves no file, an earlier run's removed); an accepted one is
    drawn from that same layout."""
    import warnings

    drawn = []
    orig = style._write_laid_out

    def spy(fig, paths, dpi, bbox, mpl):
        drawn.extend(paths)
        orig(fig, paths, dpi, bbox, mpl)

    stale = tmp_path / "long.narrow.png"
    stale.write_bytes(b"an earlier run's")
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("error")
        mp.setattr(style, "_write_laid_out", spy)
        refused = style.save(_with_long_legend("x" * 70), str(tmp_path / "long"))
        accepted = style.save(_with_long_legend("a short one"), str(tmp_path / "short"))
    assert refused == [str(tmp_path / "long.png"), str(tmp_path / "long.svg")] and not stale.exists()
    assert drawn == refused + accepted and accepted[2].endswith("short.narrow.png")


def test_old_objects_are_left_alone_once_and_given_back(monkeypatch):
    """figures_for around save (nested) freezes the heap once and gives it back at the outermost exit; where
    something else froze objects first, theirs stay frozen."""
    import gc

    assert gc.get_freeze_count() == 0
    with style.old_objects_left_alone():
        frozen = gc.get_freeze_count()
        with style.old_objects_left_alone():
            assert gc.get_freeze_count() == frozen > 0
        assert gc.get_freeze_count() == frozen  # the inner exit gives nothing back
    assert gc.get_freeze_count() == 0
    gc.freeze()  # someone else's
    try:
        theirs = gc.get_freeze_count()
        with style.old_objects_left_alone():
            pass
        assert gc.get_freeze_count() == theirs
    finally:
        gc.unfreeze()


def _glyph_figure():
    """Texts at many sub-pixel places, upright, turned and slanted by any angle, plain and math, antialiased and not
    (monochrome bitmaps), several sizes: four groups of twelve (an angle, a place within the pixel each), each
    string four times in a group, whole pixels apart (its glyphs' bitmaps kept from the first, moved)."""
    fig = style.plt.figure(figsize=(3.2, 2.4), layout=None)  # 416 x 312 px at 130 dpi
    for k in range(48):
        group, j = divmod(k, 12)
        x = 20 + 31 * (j % 4) + 101 * group / 37  # px: a fraction of a pixel per group
        y = 15 + 23 * (j // 4) + 67 * group + 0.61 * group
        text = ("gap 0.123 Wy", r"$\mathdefault{10^{-3}}\,\sqrt{x_k}$", "holds")[j % 3]
        fig.text(
            x / 416,
            y / 312,
            text,
            fontsize=(5.5, 8, 10.5)[j % 3],
            rotation=(0, 90, 33, -12)[group],
            antialiased=group != 2,
            family="monospace" if j % 3 == 2 and group % 2 else None,
        )
    return fig


def _rgba(fig, path, memo):
    """``fig`` drawn to the PNG ``path`` (within the save's memos if ``memo``), its pixels."""
    from PIL import Image

    with style._ticks_computed_once() if memo else _Noop():
        fig.savefig(path, dpi=130)
    return np.asarray(Image.open(path).convert("RGBA"))


def test_glyph_bitmaps_kept_for_the_process_draw_matplotlibs_own_pixels(tmp_path):
    """The Agg glyph bitmaps kept by (font, size, dpi, glyph, angle, slant, extend, the translation's sub-pixel
    fractions, flags, mode) and moved by the translation's whole pixels give matplotlib's own pixels: texts at
    many sub-pixel places, angles, sizes, plain and math, antialiased and monochrome, with the memo empty and
    full. A memo off by one pixel is caught (a planted bug)."""
    import matplotlib

    if tuple(int(v) for v in matplotlib.__version__.split(".")[:2]) not in style.MEMO_VERIFIED_MATPLOTLIB:
        pytest.skip("no memo on this matplotlib")
    fig = _glyph_figure()
    try:
        plain = _rgba(fig, tmp_path / "plain.png", memo=False)
        style._GLYPHS.clear()
        first = _rgba(fig, tmp_path / "first.png", memo=True)
        kept = {k: (buffer.copy(), left, top) for k, (buffer, left, top) in style._GLYPHS.items()}
        assert 0 < len(kept) < 48 * 8 / 3  # each string's glyphs met again whole pixels apart: kept, moved
        again = _rgba(fig, tmp_path / "again.png", memo=True)  # every glyph from the memo
        assert np.array_equal(first, plain) and np.array_equal(again, plain)
        assert all(np.array_equal(kept[k][0], v[0]) for k, v in style._GLYPHS.items())  # drawing left them alone
        for k, (buffer, left, top) in kept.items():  # planted: every kept bitmap one pixel to the right
            style._GLYPHS[k] = (buffer, left + 1, top)
        assert not np.array_equal(_rgba(fig, tmp_path / "wrong.png", memo=True), plain)
    finally:
        style._GLYPHS.clear()
        style.plt.close(fig)


def test_ticks_memo_gives_an_axis_its_current_state_after_going_back():
    """The tick memo of one save keeps each axis's last state only: an axis laid out at view A, then at a view B
    with as many ticks, then at A again gets A's ticks and labels (matplotlib updates the Tick objects in place,
    so a result kept for A would have held B's labels)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.set_xlim(0, 10)

        def labels():
            return [(t.get_loc(), t.label1.get_text()) for t in ax.xaxis._update_ticks()]

        want_a = labels()
        ax.set_xlim(100, 110)
        want_b = labels()
        ax.set_xlim(0, 10)
        assert labels() == want_a and len(want_a) == len(want_b) and want_a != want_b
        with style._ticks_computed_once() as memo:
            if not memo.active:
                pytest.skip("the memos run only on the matplotlib versions they were compared with")
            got_a = labels()
            ax.set_xlim(100, 110)
            got_b = labels()
            ax.set_xlim(0, 10)
            got_a2 = labels()
        assert got_a == want_a and got_b == want_b and got_a2 == want_a
    finally:
        plt.close(fig)


def _memo_or_skip(memo):
    if not memo.active:
        pytest.skip("the memos run only on the matplotlib versions they were compared with")


def test_bbox_union_in_one_pass_gives_matplotlibs_boxes():
    """Within a save, Bbox.union (the corners of all the boxes reduced in one pass) gives matplotlib's own box, bit
    for bit: plain and transformed boxes, one box and many, negative and huge sides; a side that is a zero (either
    sign), infinite or not a number goes to matplotlib's own union (which of 0.0 and -0.0 a reduction keeps
    depends on its order), so those are matplotlib's too. A planted union that pads its box by one ulp is caught."""
    from matplotlib.transforms import Affine2D, Bbox, BboxBase, TransformedBbox

    orig = BboxBase.__dict__["union"].__func__
    rng = np.random.default_rng(7)
    cases = [[Bbox([[1.0, 2.0], [3.0, 4.0]])]]
    for n in (2, 3, 9, 40):
        for scale in (1e-300, 1.0, 1e300):
            pts = rng.normal(size=(n, 2, 2)) * scale
            cases.append([Bbox(p) for p in pts])
    cases.append([TransformedBbox(Bbox([[0.2, 0.1], [0.7, 0.9]]), Affine2D().scale(130.0).translate(-3.3, 5.1))] * 2)
    specials = (0.0, -0.0, np.inf, -np.inf, np.nan)
    for v in specials:
        for corner in ((0, 0), (0, 1), (1, 0), (1, 1)):
            pts = rng.normal(size=(4, 2, 2))
            pts[2][corner] = v
            cases.append([Bbox(p) for p in pts])
    cases.append([Bbox([[-0.0, 1.0], [2.0, 3.0]]), Bbox([[0.0, 1.5], [2.5, 3.5]])])
    want = [orig(boxes).get_points() for boxes in cases]
    with style._ticks_computed_once() as memo:
        _memo_or_skip(memo)
        got = [Bbox.union(boxes).get_points() for boxes in cases]
        with pytest.raises(ValueError):
            Bbox.union([])
    assert BboxBase.__dict__["union"].__func__ is orig  # matplotlib's union is back after the save
    for w, g in zip(want, got):
        assert w.tobytes() == g.tobytes() and type(w[0, 0]) is type(g[0, 0])
    planted = [np.nextafter(w, np.inf) for w in want]
    assert any(w.tobytes() != p.tobytes() for w, p in zip(want, planted))


def test_tick_space_kept_is_matplotlibs():
    """style._tick_space (kept by the axes' transAxes, the figure's dpi_scale_trans and the tick label sizes) gives
    each axis its own get_tick_space: panels of several sizes, dpi, label sizes given or from the settings; a
    changed size of the figure or of the labels is seen (a new key), not answered from the memo."""
    import matplotlib

    fig, axes = style.plt.subplots(2, 3, figsize=(9, 5), layout=None)
    try:
        axes[0][1].tick_params(labelsize=5)
        axes[1][2].tick_params(axis="y", labelsize="x-large")
        for dpi, size in ((100, (9, 5)), (130, (9, 5)), (130, (4, 2.5)), (72, (12, 8))):
            fig.set_dpi(dpi)
            fig.set_size_inches(*size)
            for ax in axes.flat:
                for axis in (ax.xaxis, ax.yaxis):
                    assert style._tick_space(axis) == axis.get_tick_space()
            with matplotlib.rc_context({"ytick.labelsize": 3, "font.size": 20}):
                assert [style._tick_space(a.yaxis) for a in axes.flat] == [a.yaxis.get_tick_space() for a in axes.flat]
    finally:
        style.plt.close(fig)


def test_ticks_in_view_are_matplotlibs_ticks_to_draw():
    """style._update_ticks_in_view makes Tick objects for the locations in view only, and gives the ticks matplotlib
    draws: the same locations and labels, majors then minors, on log axes (whose minor locator returns a decade
    beyond each end of the view), linear, inverted and category axes; fewer ticks made on the log axes."""
    from matplotlib.axis import Axis

    def figure():
        fig, axes = style.plt.subplots(2, 2, figsize=(7, 5), layout=None)
        x = np.geomspace(9, 513, 7)
        axes[0][0].loglog(x, 1e-3 * x**-1.5, "o-")
        axes[0][1].semilogy(x, x**0.5)
        axes[0][1].invert_xaxis()
        axes[1][0].plot(x, x)
        axes[1][0].minorticks_on()
        axes[1][1].set_yticks(range(4), ["alpha", "beta", "gamma", "delta"])
        axes[1][1].set_xscale("log")
        axes[1][1].set_xlim(0.5, 2e4)
        return fig

    def drawn(fig, update):
        out, made = [], 0  # (no draw first: it would make matplotlib's ticks)
        for ax in fig.axes:
            for axis in (ax.xaxis, ax.yaxis):
                out.append([(t.get_loc(), t.label1.get_text(), t in axis.majorTicks) for t in update(axis)])
                made += len(axis.majorTicks) + len(axis.minorTicks)
        style.plt.close(fig)
        return out, made

    want, made_all = drawn(figure(), Axis._update_ticks)
    got, made_in_view = drawn(figure(), lambda axis: style._update_ticks_in_view(axis, Axis._update_ticks))
    assert got == want and any(len(w) > 8 for w in want)
    assert made_in_view < made_all


def _titles_over_offset_texts():
    """Titled panels whose y axes have an offset text under a left title (which matplotlib lifts above it), a twin,
    and panels without any offset text."""
    fig, axes = style.plt.subplots(1, 3, figsize=(9, 3))
    x = np.linspace(0, 1, 9)
    axes[0].plot(x, 1e9 + 1e3 * x)
    axes[0].set_title("a long left title over the offset text", loc="left", fontsize=9)
    axes[1].semilogy(x, 10**x)
    axes[1].set_title("log, no offset")
    twin = axes[2].twinx()
    twin.plot(x, 5e7 + 1e2 * x, "r")
    axes[2].plot(x, x)
    axes[2].set_title("twin", loc="left")
    return fig


def test_titles_placed_without_y_boxes_give_matplotlibs_files(tmp_path, monkeypatch):
    """The titles placed without the thrown-away tight boxes of the y axes (where the offset text stays empty) give
    matplotlib's PNG and SVG bytes, offset texts under left titles included; a planted placement that skips the
    box where the offset text has text moves a title (caught)."""
    import matplotlib

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "test")
    with style._ticks_computed_once() as memo:
        _memo_or_skip(memo)
    ours = style.save(_titles_over_offset_texts(), str(tmp_path / "ours"))
    with monkeypatch.context() as mp:
        mp.setattr(style, "_ticks_computed_once", _Noop)
        theirs = style.save(_titles_over_offset_texts(), str(tmp_path / "theirs"))
    for a, b in zip(ours, theirs):
        assert open(a, "rb").read() == open(b, "rb").read()
    from matplotlib.axis import Axis

    real = style._ticks_computed_once._title_places_without_y_boxes

    def planted(self):  # the y axes' boxes skipped whatever the offset text says
        real(self)
        box = Axis.get_tightbbox
        Axis.get_tightbbox = lambda axis, renderer=None, **kw: None if not kw else box(axis, renderer, **kw)

    monkeypatch.setattr(style._ticks_computed_once, "_title_places_without_y_boxes", planted)
    wrong = style.save(_titles_over_offset_texts(), str(tmp_path / "wrong"))
    assert open(wrong[0], "rb").read() != open(theirs[0], "rb").read()


def test_ticks_in_view_leave_placed_ticks_and_move_the_others():
    """A tick that _update_ticks_in_view already put at its location with its label is left alone (its lines'
    data not set again); after the view moves, or for a tick someone else moved (a new tick copies tick 0's
    location but sits at 0), the ticks are moved: the ticks drawn are matplotlib's at every step."""
    from matplotlib.axis import Axis

    fig, ax = style.plt.subplots(layout=None)
    try:
        ax.loglog([1, 1e4], [1, 1e3])
        placed = {}

        def state():
            return [(t.get_loc(), t.tick1line.get_xdata()[0], t.label1.get_text()) for t in ax.xaxis.majorTicks]

        first = style._update_ticks_in_view(ax.xaxis, Axis._update_ticks, placed)
        assert all(loc == x for loc, x, _ in state()[: len(first)]) and len(first) > 3  # new ticks were moved
        lines = [t.tick1line._xorig for t in first]
        again = style._update_ticks_in_view(ax.xaxis, Axis._update_ticks, placed)
        assert again == first and [t.tick1line._xorig for t in again] == lines
        assert all(a is b for a, b in zip(lines, [t.tick1line._xorig for t in again]))  # not set again
        ax.set_xlim(10, 1e6)
        moved = [
            (t.get_loc(), t.label1.get_text())
            for t in style._update_ticks_in_view(ax.xaxis, Axis._update_ticks, placed)
        ]
        want = [(t.get_loc(), t.label1.get_text()) for t in Axis._update_ticks(ax.xaxis)]
        assert moved == want and all(loc == x for loc, x, _ in state()[: len(want)])
    finally:
        style.plt.close(fig)


def _legends():
    fig, axes = style.plt.subplots(1, 2, figsize=(8, 3), layout=None)
    x = np.linspace(0, 1, 5)
    for k in range(5):
        axes[0].plot(x, x * k, label=f"line {k}" + " long" * (k % 2))
    axes[0].legend(title="a title\nof two lines", ncols=2, loc="best")
    axes[1].plot(x, x, "o-", label="one")
    fig.legend(loc="upper right", title="figure", fontsize=7)
    return fig


def test_legend_packed_once_per_draw_gives_matplotlibs_pixels(tmp_path):
    """A legend's packers computed once per draw give matplotlib's pixels (columns, a two-line title, a figure
    legend); the kept packing lasts one draw only: a legend text changed between two draws within one save's
    memos is drawn changed (as matplotlib draws it)."""
    from matplotlib.offsetbox import VPacker
    from PIL import Image

    def pixels(memo):
        fig = _legends()
        try:
            with style._ticks_computed_once() if memo else _Noop():  # both draws within one save's memos
                fig.savefig(tmp_path / "first.png", dpi=130)
                fig.axes[0].get_legend().get_texts()[0].set_text("a much longer first label")
                fig.savefig(tmp_path / "second.png", dpi=130)
        finally:
            style.plt.close(fig)
        return [np.asarray(Image.open(tmp_path / f"{k}.png").convert("RGBA")) for k in ("first", "second")]

    with style._ticks_computed_once() as memo:
        _memo_or_skip(memo)
    theirs, ours = pixels(False), pixels(True)
    assert np.array_equal(theirs[0], ours[0]) and np.array_equal(theirs[1], ours[1])
    assert not np.array_equal(theirs[0], theirs[1])
    assert VPacker._get_bbox_and_child_offsets.__qualname__ == "VPacker._get_bbox_and_child_offsets"
