"""Shared plotting helpers: the Agg backend, verdict colours with their legend handles, saving as PNG
and SVG."""

from __future__ import annotations

import threading

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# constrained layout: axis labels, titles and outside legends are never clipped (tight_layout is not needed)
matplotlib.rcParams["figure.constrained_layout.use"] = True

__all__ = ["plt", "STATUS_COLOR", "status_handles", "save", "d", "narrow_layout", "old_objects_left_alone"]

STATUS_COLOR = {
    "holds": "tab:green",
    "violated": "tab:red",
    "inconclusive": "tab:orange",
    "not-applicable": "tab:gray",
}


def status_handles(statuses) -> list:
    """Legend handles explaining the verdict colours that appear in a figure."""
    return [
        plt.Line2D([], [], marker="o", ls="", color=STATUS_COLOR[s], label=s) for s in STATUS_COLOR if s in statuses
    ]


def d(r):
    """A record as a dict (records may be Claim objects or dicts read from JSON)."""
    return r.to_dict() if hasattr(r, "to_dict") else r


def save(fig, stem, dpi: int = 130) -> list[str]:
    """Write ``fig`` as ``stem.png`` and ``stem.svg`` (``dpi`` for the PNG), cropped to the tight bounding box
    of its artists, and close it. The layout (constrained) and the tight box are computed once, at the PNG's
    dpi, without a dry draw, and both files are drawn from them (``savefig(bbox_inches="tight")`` per file would
    compute both again: a dry draw with the layout, then the drawing, for each format).

    A figure wider than a phone also gets ``stem.narrow.png`` (returned third), the same figure re-laid for a
    390 px screen (:func:`narrow_layout`: its panels stacked in one column, its outside legends below their
    panels, long titles, labels and category tick labels wrapped), which the report shows on a phone instead
    of the wide file; none where that layout cannot keep every panel at least :data:`NARROW_MIN_AXES` of the
    width (e.g. a colour bar, a panel spanning cells)."""
    import matplotlib as mpl

    try:
        with old_objects_left_alone(), _ticks_computed_once():
            paths = [f"{stem}.png", f"{stem}.svg"]
            bbox = _write(fig, paths, dpi, mpl)
        if bbox.width > NARROW_WIDTH_IN * 1.15 and narrow_layout(fig):
            # tick memos of their own: the narrow layout changed formatters and texts
            with old_objects_left_alone(), _ticks_computed_once():
                paths += _write_narrow(fig, f"{stem}.narrow.png", dpi, mpl)
    finally:
        plt.close(fig)
    return paths


# zlib level 3 instead of Pillow's default 6: the same pixels (PNG is lossless), ~1% more bytes, a third less time
# encoding (0.82 -> 0.56 s for a report's 29 PNG files; the encoding was ~10% of the figures' CPU)
PNG_PIL_KWARGS = {"compress_level": 3}
NARROW_WIDTH_IN = 3.8  # a 390 px phone shows ~370 CSS px of the page's width: 3.85 in at 96 CSS px per inch
NARROW_MIN_AXES = 0.35  # the narrowest panel of a narrow layout, as a fraction of its width


def _write(fig, paths, dpi, mpl):
    """Lay ``fig`` out once at ``dpi`` and write it to ``paths`` cropped to its tight box; returns the box."""
    bbox = _lay_out(fig, dpi, mpl)
    _write_laid_out(fig, paths, dpi, bbox, mpl)
    return bbox


def _lay_out(fig, dpi, mpl):
    """Lay ``fig`` out once at ``dpi`` (its layout engine, or a dry draw where it has none); returns its tight
    box, padded as savefig pads it."""
    orig_dpi = fig.dpi
    try:
        fig.set_dpi(dpi)
        engine = fig.get_layout_engine()
        if engine is not None:  # the layout, once (it computes the text extents the box needs) ...
            engine.execute(fig)
        else:  # ... or a dry draw where there is none (what savefig's tight box does)
            fig.draw_without_rendering()
        return fig.get_tightbbox(fig.canvas.get_renderer()).padded(mpl.rcParams["savefig.pad_inches"])
    finally:
        fig.set_dpi(orig_dpi)


def _write_laid_out(fig, paths, dpi, bbox, mpl) -> None:
    """Write ``fig``, laid out by :func:`_lay_out`, to ``paths`` cropped to ``bbox``."""
    # no layout engine while saving: the positions just computed are kept, and savefig makes no dry draw
    # (the rc setting too: savefig restores the engine it found through set_layout_engine, which would
    # otherwise bring the constrained layout back after the first file)
    with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
        for path in paths:
            extra = {"pil_kwargs": PNG_PIL_KWARGS} if path.endswith(".png") else {}
            fig.savefig(path, dpi=dpi, bbox_inches=bbox, **extra)


def _write_narrow(fig, path, dpi, mpl) -> list[str]:
    """Write ``fig``, re-laid by :func:`narrow_layout`, to ``path``: ``[path]``, or ``[]`` (no file) where the
    layout does not fit the phone's width or leaves a panel narrower than :data:`NARROW_MIN_AXES`. Both are
    read from the layout, so a refused layout is never drawn (savefig keeps the positions the layout set)."""
    import os
    import warnings

    fig.set_layout_engine("constrained")
    with warnings.catch_warnings():  # a layout that collapses is refused below, not reported
        warnings.simplefilter("ignore", UserWarning)
        box = _lay_out(fig, dpi, mpl)
        if box.width <= NARROW_WIDTH_IN * 1.25 and _panels_wide_enough(fig):
            _write_laid_out(fig, [path], dpi, box, mpl)
            return [path]
    if os.path.exists(path):  # an earlier run's: the page shows the wide figure, scrolling in its box
        os.remove(path)
    return []


def _panels_wide_enough(fig) -> bool:
    return all(a.get_position().width >= NARROW_MIN_AXES for a in fig.axes if a.get_visible() and a.axison)


def _outside(leg, ax) -> bool:
    """Whether axes legend ``leg`` is anchored outside ``ax`` (beside or above it, by ``bbox_to_anchor``)."""
    if leg._bbox_to_anchor is None:
        return False
    x, y = ax.transAxes.inverted().transform(leg.get_bbox_to_anchor().p0)
    return not (-0.005 <= x <= 1.005 and -0.005 <= y <= 1.005)


def _legend_spec(leg) -> dict:
    import math

    labels = [t.get_text() for t in leg.get_texts()]
    size = leg.prop.get_size_in_points()
    title = leg.get_title().get_text()
    # a column: its longest label, the handle, the pad and the spacing (2, 0.8 and 2 font sizes)
    col_in = (max(map(len, labels), default=1) * 0.6 * size + 4.8 * size) / 72
    ncols = max(1, min(len(labels), int(0.92 * NARROW_WIDTH_IN / col_in)))
    rows = math.ceil(len(labels) / ncols)
    height = (rows * 1.45 * size + (1.8 * size if title else 0.0)) / 72 + 0.12
    return {
        "handles": list(leg.legend_handles),
        "labels": labels,
        "title": title,
        "fontsize": size,
        "ncols": ncols,
        "height": height,
    }


def _wrap(text, width_in, size) -> str:
    import textwrap

    chars = max(12, int(width_in * 72 / (0.55 * size)))
    return "\n".join(textwrap.fill(line, chars) if len(line) > chars else line for line in text.split("\n"))


def _categories(axis) -> bool:
    """Whether ``axis`` has category ticks: fixed places labelled with words (set by ``set_yticks(..., labels)``)."""
    from matplotlib import ticker

    if not isinstance(axis.get_major_locator(), ticker.FixedLocator):
        return False
    return any(c.isalpha() for t in axis.get_ticklabels() for c in t.get_text())


def narrow_layout(fig) -> bool:
    """Re-lay ``fig`` in place for a phone (:data:`NARROW_WIDTH_IN` wide): its panels (the axes of one grid,
    one cell each, twins with their host) stacked in one column in reading order, each keeping its height;
    each legend anchored outside its panel moved into a row of its own below the panel, each figure legend into
    one above the panels; the suptitle, the panels' titles and axis labels, and category tick labels
    of the y axis (fixed ones, e.g. record names) wrapped to the width, slanted ones of the x axis set upright;
    hidden tick labels of shared axes shown. Returns False,
    the figure unchanged, when its axes are not such a grid (a colour bar, an inset, a panel spanning cells)."""

    axes = [a for a in fig.axes if a.get_visible()]
    cells, grid = {}, None
    for a in axes:
        ss = a.get_subplotspec()
        if ss is None:
            return False
        if grid is None:
            grid = ss.get_gridspec()
        if ss.get_gridspec() is not grid or len(ss.rowspan) != 1 or len(ss.colspan) != 1:
            return False
        cells.setdefault((ss.rowspan.start, ss.colspan.start), []).append(a)
    if not cells:
        return False
    nrows, _ = grid.get_geometry()
    w, h = fig.get_size_inches()
    panel_h = h if nrows == 1 else min(max(h / nrows, 2.4), 4.2)
    rows, heights = [], []  # (axes of the cell, or a legend spec), height in inches
    for key in sorted(cells):
        rows.append(("axes", cells[key]))
        height = panel_h
        for a in cells[key]:
            if _categories(a.yaxis):  # category labels (record names): wrapped to a third of the width, and
                labels = a.yaxis.get_ticklabels()  # the panel as tall as their lines need
                size = labels[0].get_fontsize() if labels else 8
                wrapped = [_wrap(t.get_text(), NARROW_WIDTH_IN / 3, size) for t in labels]
                a.yaxis.set_ticklabels(wrapped)
                lines = max((t.count("\n") + 1 for t in wrapped), default=1)
                height = max(height, len(wrapped) * (lines + 0.6) * 1.2 * size / 72 + 1.2)
        heights.append(height)
        for a in cells[key]:
            leg = a.get_legend()
            if leg is not None and _outside(leg, a):
                spec = _legend_spec(leg)
                leg.remove()
                rows.append(("legend", spec))
                heights.append(spec["height"])
    for leg in list(reversed(fig.legends)):  # a figure's legend explains every panel: read first, above them
        spec = _legend_spec(leg)
        leg.remove()
        rows.insert(0, ("legend", spec))
        heights.insert(0, spec["height"])
    title_h = 0.0
    if fig._suptitle is not None and fig._suptitle.get_text():
        t = fig._suptitle
        t.set_text(_wrap(t.get_text(), NARROW_WIDTH_IN, t.get_fontsize()))
        title_h = (t.get_text().count("\n") + 1) * 1.4 * t.get_fontsize() / 72
    fig.set_size_inches(NARROW_WIDTH_IN, sum(heights) + title_h + 0.2)
    gs = fig.add_gridspec(len(rows), 1, height_ratios=heights)
    for k, (kind, what) in enumerate(rows):
        if kind == "legend":
            lax = fig.add_subplot(gs[k])
            lax.axis("off")
            lax.legend(
                handles=what["handles"],
                labels=what["labels"],
                title=what["title"] or None,
                fontsize=what["fontsize"],
                title_fontsize=what["fontsize"],
                ncols=what["ncols"],
                loc="upper center",
                frameon=False,
                borderaxespad=0.0,
            )
            continue
        for a in what:
            a.set_subplotspec(gs[k])
            if a.yaxis.get_label_position() == "left":
                a.yaxis.set_tick_params(which="both", labelleft=True)
            if a.xaxis.get_label_position() == "bottom":
                a.xaxis.set_tick_params(which="both", labelbottom=True)
            for t in (a.title, a._left_title, a._right_title, a.xaxis.label):
                if t.get_text():
                    t.set_text(_wrap(t.get_text(), NARROW_WIDTH_IN * 0.9, t.get_fontsize()))
            if a.yaxis.label.get_text():
                a.yaxis.label.set_text(_wrap(a.yaxis.label.get_text(), heights[k] * 0.9, a.yaxis.label.get_fontsize()))
            if _categories(a.xaxis):  # slanted category labels: upright
                for t in a.xaxis.get_ticklabels():
                    if t.get_rotation():
                        t.set_rotation(90)
                        t.set_horizontalalignment("center")
    return True


_GC_LOCK = threading.Lock()
_GC_STATE = {"depth": 0, "froze": False}


class old_objects_left_alone:
    """While figures are drawn, the objects that existed before are left out of the garbage collector's passes
    (:func:`gc.freeze`), which then go through what the drawing made only. Drawing makes many objects (ticks,
    texts, paths), so the collector ran its full pass a few times per report, each over the whole heap of the
    process (the checks' records and caches: ~1.2 s of the serial report's ~10.6 s of figures); afterwards
    the frozen objects go back to the oldest generation (:func:`gc.unfreeze`). A collection decides only
    when memory is freed, never what is drawn: the files are the same. Nested uses (figures_for around save)
    and threads freeze once, the outermost exit unfreezes; where something else froze objects
    (``gc.get_freeze_count() > 0``) it does nothing, so theirs stay frozen."""

    def __enter__(self):
        import gc

        with _GC_LOCK:
            if _GC_STATE["depth"] == 0:
                _GC_STATE["froze"] = gc.get_freeze_count() == 0
                if _GC_STATE["froze"]:
                    gc.freeze()
            _GC_STATE["depth"] += 1
        return self

    def __exit__(self, *exc):
        import gc

        with _GC_LOCK:
            _GC_STATE["depth"] -= 1
            if _GC_STATE["depth"] == 0 and _GC_STATE["froze"]:
                _GC_STATE["froze"] = False
                gc.unfreeze()
        return False


_PATCH_LOCK = threading.Lock()
_MATH_PARSES: dict = {}  # (parser kind, string, dpi, font, antialiased, hinting, mathtext rc) -> parse
# (the text settings, renderer kind, text, font, math?, dpi, the renderer's dpi) -> (width, height, descent)
_TEXT_EXTENTS: dict = {}
# (FT2Font, its size, string, load flags, features, language) -> FT2Font._layout's glyphs (libraqm's shaping)
_SHAPES: dict = {}
# (the text settings, renderer kind, its dpi, the figure's dpi, string, font, ...) -> Text._get_layout's layout
_TEXT_LAYOUTS: dict = {}
_MEMO_MAX = 8192  # entries kept per memo; past it the memo starts again (a report makes ~1,000 of each)
# (FT2Font, its size, glyph) -> [the glyph's id in an SVG file, its outline (vertices, codes) or None, not yet loaded]
_OUTLINES: dict = {}
_GLYPH_KW = frozenset({"features", "language"})  # TextToPath.get_glyphs_with_font's keywords the memo knows
# (FT2Font, size, dpi, glyph, angle, slant, extend, the 26.6 translation's fractions, load flags, render mode)
# -> (the glyph's bitmap, its left and top less the translation's whole pixels): RendererAgg's glyph rasterizations
_GLYPHS: dict = {}
_GLYPHS_MAX = 32768  # a report renders ~19,000 glyphs, ~12,500 of them distinct (bitmaps of ~200 bytes each)
_MATHTEXT_RC = (
    "mathtext.fontset",
    "mathtext.default",
    "mathtext.fallback",
    "mathtext.rm",
    "mathtext.it",
    "mathtext.bf",
    "mathtext.bfit",
    "mathtext.sf",
    "mathtext.tt",
    "mathtext.cal",
)


MEMO_VERIFIED_MATPLOTLIB = frozenset({(3, 11)})
"""The matplotlib versions (major, minor) on which :func:`save` memoizes ticks, text extents, shapings and layouts,
the Agg glyph bitmaps and the SVG glyph outlines, makes ticks for the locations in view only, unions boxes in one
pass, places titles without the thrown-away y-axis boxes and packs a legend once per draw, through matplotlib's
private methods (the files compared byte for byte with matplotlib's own drawing, the PNG glyphs pixel for pixel);
on any other version the figures are drawn by matplotlib alone (the same files, more slowly)."""


class _ticks_computed_once:
    """Within one :func:`save`: an axis's ticks (locations, labels, the ticks to draw) are computed once per
    state instead of at every layout pass, tight-box query and draw (matplotlib recomputes them there ~15
    times per axis and figure). The state is everything the computation reads: the view interval, the tick
    space (axis length over font size), the locators and formatters and their settings; equal state,
    equal ticks, so the figures are the same (checked: the PNG files are byte-identical). Tick objects are made
    for the locations in view only (:func:`_update_ticks_in_view`).

    The other patches of the save (each a method below, each undone on exit): text extents, shapings and layouts
    and math layouts kept for the process, the Agg glyph bitmaps and the SVG glyph outlines kept, ``Bbox.union``
    in one pass, titles placed without the y-axis boxes matplotlib throws away, a legend's packers once per draw.
    What the newest (the union, the tick space kept, ticks in view, titles, legends) saved, measured by
    ``benchmarks/bench_figures.py --baseline e6b9630`` on a whole report's figures (44 files, PNG and SVG bytes
    identical), host load 2.3-5.3: the median of 17 interleaved pairs' ratios 0.88 (0.76-1.02; medians of the
    three runs 0.87, 0.85, 0.92), ~1 s of ~8.5 s of figure CPU.

    ``extents``: the memo of text extents to use (a dict; by default :data:`_TEXT_EXTENTS`, the process's, so
    the texts every figure repeats, tick labels and legend entries, are measured once per process)."""

    def __init__(self, extents: dict | None = None):
        self.extents = _TEXT_EXTENTS if extents is None else extents
        self.active = False

    def __enter__(self):
        import matplotlib as mpl
        from matplotlib.axis import Axis

        # the memos replace private methods of matplotlib: only on the versions whose files they were compared
        # with (byte for byte: tests/test_figures_save.py); any other version draws as it is, unpatched
        if tuple(int(v) for v in mpl.__version__.split(".")[:2]) not in MEMO_VERIFIED_MATPLOTLIB:
            return self
        self.active = True
        _PATCH_LOCK.acquire()  # the patch is on the class: one save at a time patches it (threads included)
        self.cls, self.orig, memo, placed = Axis, Axis._update_ticks, {}, {}
        orig = self.orig

        def update_ticks(axis):
            try:
                key = (
                    id(axis),
                    tuple(axis.get_view_interval()),
                    _tick_space(axis),
                    id(axis.get_major_locator()),
                    id(axis.get_minor_locator()),
                    id(axis.major.formatter),
                    id(axis.minor.formatter),
                    repr(axis._major_tick_kw),
                    repr(axis._minor_tick_kw),
                    len(axis.majorTicks),
                    len(axis.minorTicks),
                )
            except Exception:  # noqa: BLE001  (an axis of another kind: no memo)
                return orig(axis)
            # the last state of each axis only: orig updates the axis's Tick objects in place, so a result kept
            # for an older state (A, then B with as many ticks, then A again) would return ticks holding B's
            got = memo.get(id(axis))
            if got is None or got[0] != key or got[1] is not axis:
                ticks = _update_ticks_in_view(axis, orig, placed)
                # kept under the state it leaves (the ticks it made counted): the next query finds it
                got = memo[id(axis)] = (key[:-2] + (len(axis.majorTicks), len(axis.minorTicks)), axis, ticks)
            return got[2]

        Axis._update_ticks = update_ticks
        # the tick labels' boxes: matplotlib computes them twice in a row for every tight-box query and draw
        # of an axis (for the axis label's position, then for the axis itself); the last result per axis is
        # reused when nothing they depend on moved (renderer, dpi, the axes' place, the view, the ticks and
        # their labels and visibility)
        self.orig_boxes, last = Axis._get_ticklabel_bboxes, {}
        orig_boxes = self.orig_boxes

        def ticklabel_bboxes(axis, ticks, renderer):
            try:
                key = (
                    id(renderer),
                    type(renderer),
                    axis.get_figure(root=True).dpi,
                    tuple(axis.axes.bbox.bounds),
                    tuple(axis.get_view_interval()),
                    tuple(map(_tick_label_state, ticks)),
                    axis.get_scale(),
                )
            except Exception:  # noqa: BLE001  (no memo)
                return orig_boxes(axis, ticks, renderer)
            got = last.get(id(axis))
            if got is None or got[0] != key or got[1] is not axis:
                got = last[id(axis)] = (key, axis, orig_boxes(axis, ticks, renderer))
            a, b = got[2]
            return list(a), list(b)

        Axis._get_ticklabel_bboxes = ticklabel_bboxes
        # text extents shared by the Agg renderers of one figure (the layout's, then the PNG's, which savefig
        # makes anew at the cropped size; then the phone layout's), and math layouts shared by all parsers of a
        # kind for the whole process: matplotlib keeps them per renderer (parser) instance, in a cache of 50
        # parses, so each string was measured, and each math string parsed, once per renderer and figure (57
        # distinct math parses in a report, 163 made); they depend only on the string, the font properties,
        # the dpi, the antialiasing, hinting and mathtext settings, not on the renderer (nor on the layout)
        import matplotlib as mpl
        import matplotlib.mathtext as mmath
        import matplotlib.text as mtext
        from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag

        self.mtext, self.orig_metrics_fn = mtext, mtext._get_text_metrics_function
        self.mmath, self.orig_parse = mmath, mmath.MathTextParser.parse
        orig_metrics_fn, orig_parse, extents = self.orig_metrics_fn, self.orig_parse, self.extents
        # the settings a text's extent also depends on (its font's resolution, hinting, kerning, mathtext),
        # read once per save: the process-wide memo is keyed by them
        text_rc = tuple((k, repr(v)) for k, v in mpl.rcParams.items() if k.startswith(("font.", "text.", "mathtext.")))

        def metrics_function(renderer, *args):
            # the SVG renderer measures with its TextToPath at its own 72 dpi (no renderer dpi); matplotlib keeps
            # those per renderer, made anew for every SVG file, so each text was measured again in every SVG
            # (savefig's SVG renderer is a mixed one around it: :func:`_renderer_kind`; until this was seen, the
            # SVG files' texts were measured and laid out unmemoized, 1,320 layouts a report)
            if args or _renderer_kind(renderer) is None:
                return orig_metrics_fn(renderer, *args)

            def metrics(text, fontprop, ismath, dpi):
                # the kind read at each call: an SVG file's renderer switches to Agg while it rasterizes an artist
                kind = _renderer_kind(renderer)
                if ismath == "TeX" or kind is None:  # a TeX installation's extents: not memoized
                    return renderer.get_text_width_height_descent(text, fontprop, ismath)
                rdpi = renderer.dpi if kind is RendererAgg else None
                key = (text_rc, kind, text, fontprop, ismath, dpi, rdpi)
                got = extents.get(key)
                if got is None:  # kept under a copy of the font properties: a Text may change its own later
                    got = renderer.get_text_width_height_descent(text, fontprop, ismath)
                    if len(extents) > _MEMO_MAX:
                        extents.clear()
                    extents[(text_rc, kind, text, fontprop.copy(), ismath, dpi, rdpi)] = got
                return got

            return metrics

        self._memoize_shapes_and_layouts(text_rc)
        self._memoize_glyph_bitmaps()
        self._bbox_union_in_one_pass()
        self._title_places_without_y_boxes()
        self._legend_packed_once_per_draw()

        def parse(parser, s, dpi=72, prop=None, *, antialiased=None):
            try:
                key = (
                    parser._output_type,
                    s,
                    dpi,
                    None if prop is None else prop.copy(),
                    mpl._val_or_rc(antialiased, "text.antialiased"),
                    get_hinting_flag(),
                    tuple((k, repr(mpl.rcParams[k])) for k in _MATHTEXT_RC),
                )
                hash(key)
            except Exception:  # noqa: BLE001  (no memo)
                return orig_parse(parser, s, dpi, prop, antialiased=antialiased)
            got = _MATH_PARSES.get(key)
            if got is None:
                if len(_MATH_PARSES) > 1024:
                    _MATH_PARSES.clear()
                got = _MATH_PARSES[key] = orig_parse(parser, s, dpi, prop, antialiased=antialiased)
            return got

        mtext._get_text_metrics_function = metrics_function
        mmath.MathTextParser.parse = parse
        return self

    def _memoize_shapes_and_layouts(self, text_rc) -> None:
        """Within the save: the shaping of strings and the layout of texts kept for the process (below); undone
        by :meth:`__exit__`. ``text_rc``: the text settings the memos are keyed by."""
        from collections import OrderedDict

        import matplotlib.text as mtext
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.ft2font import LoadFlags
        from matplotlib.textpath import TextToPath

        # a string's glyphs and their places (FT2Font._layout, libraqm's shaping: ~0.7 ms a string, the most of
        # what drawing a text costs) kept for the process: the Agg renderer shapes every text it draws, the SVG
        # one every text it draws as paths, again in every file (the wide PNG, the SVG, the phone's PNG). The
        # shaping depends only on the font (the FT2Font object: its files, hinting and kerning factors), its
        # size and dpi, the string, the load flags, features and language; the glyphs drawn from it are the same
        self.orig_prepare, self.orig_get_font = RendererAgg._prepare_font, TextToPath._get_font
        orig_prepare, orig_get_font = self.orig_prepare, self.orig_get_font

        def prepare_font(renderer, font_prop):
            return _ShapedFont(orig_prepare(renderer, font_prop), (font_prop.get_size_in_points(), renderer.dpi))

        def get_font(text2path, prop):
            return _ShapedFont(orig_get_font(text2path, prop), (text2path.FONT_SCALE, text2path.DPI))

        RendererAgg._prepare_font = prepare_font
        TextToPath._get_font = get_font
        self.agg, self.text2path = RendererAgg, TextToPath
        # an SVG text's glyphs (TextToPath.get_glyphs_with_font: each glyph's id and place, the outline of each
        # glyph its file has not defined yet): matplotlib loads every glyph of every text of every SVG file again
        # (~11,000 loads a report), only to take the outlines of the glyphs new to the file. Here the places come
        # from the shaping (kept above), the ids and the outlines (unhinted, at TextToPath's one size) are kept for
        # the process, read-only (the files share them); which glyphs are new is decided as matplotlib decides it
        self.orig_glyphs_with_font = orig_glyphs_with_font = TextToPath.get_glyphs_with_font

        def glyphs_with_font(text2path, font, s, glyph_map=None, return_new_glyphs_only=False, **kw):
            if not isinstance(font, _ShapedFont) or type(text2path) is not TextToPath or set(kw) - _GLYPH_KW:
                return orig_glyphs_with_font(text2path, font, s, glyph_map, return_new_glyphs_only, **kw)
            glyph_map = OrderedDict() if glyph_map is None else glyph_map
            new = OrderedDict() if return_new_glyphs_only else glyph_map
            info = []
            for item in font._layout(s, LoadFlags.NO_HINTING, **kw):
                key = (item.ft_object, font._size, item.glyph_index)
                got = _OUTLINES.get(key)
                if got is None:
                    if len(_OUTLINES) > _MEMO_MAX:
                        _OUTLINES.clear()
                    got = _OUTLINES[key] = [text2path._get_glyph_repr(item.ft_object, item.glyph_index), None]
                info.append((got[0], item.x, item.y, 1.0))
                if got[0] not in glyph_map:
                    if got[1] is None:
                        item.ft_object.load_glyph(item.glyph_index, flags=LoadFlags.NO_HINTING)
                        got[1] = item.ft_object.get_path()
                        for array in got[1]:
                            array.setflags(write=False)
                    new[got[0]] = got[1]
            return info, new, []

        TextToPath.get_glyphs_with_font = glyphs_with_font
        # a text's layout (its lines' extents and places relative to its anchor, the rotated box: Text._get_layout)
        # kept for the process: matplotlib computes it anew at every extent query and draw of the text (~7,000
        # times a report), from the string, the font, the figure's dpi, the renderer's kind (and dpi), line
        # spacing, alignments, rotation and its mode, and the text settings; never the text's position. Texts
        # wrapped to the figure's width or set with TeX are laid out as matplotlib does. Each caller gets a box
        # and list of its own.
        from matplotlib.transforms import Bbox

        self.orig_layout = mtext.Text._get_layout
        orig_layout = self.orig_layout

        def get_layout(text, renderer):
            kind = _renderer_kind(renderer)
            if kind is None or text._wrap or text.get_usetex():
                return orig_layout(text, renderer)
            try:
                key = (
                    text_rc,
                    kind,
                    renderer.dpi if kind is RendererAgg else None,
                    text.get_figure(root=True).dpi,
                    text._text,
                    text._fontproperties,
                    text.get_parse_math(),
                    text._linespacing,
                    text._multialignment,
                    text._horizontalalignment,
                    text._verticalalignment,
                    text.get_rotation(),
                    text.get_rotation_mode(),
                )
                got = _TEXT_LAYOUTS.get(key)
            except Exception:  # noqa: BLE001  (no memo)
                return orig_layout(text, renderer)
            if got is None:
                got = orig_layout(text, renderer)
                if len(_TEXT_LAYOUTS) > _MEMO_MAX:
                    _TEXT_LAYOUTS.clear()
                _TEXT_LAYOUTS[key[:5] + (key[5].copy(),) + key[6:]] = got = (got[0].frozen(), tuple(got[1]), got[2])
            return Bbox(got[0].get_points().copy()), list(got[1]), got[2]

        mtext.Text._get_layout = get_layout

    def _memoize_glyph_bitmaps(self) -> None:
        """Within the save: the Agg renderer's glyph bitmaps kept for the process (below); undone by
        :meth:`__exit__`."""
        import math

        import numpy as np
        from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag
        from matplotlib.ft2font import RenderMode

        # RendererAgg draws each glyph of a text (plain or math) by FreeType: the font sized (size, dpi), a 16.16
        # matrix (the text's angle, the glyph's slant and extend) and a 26.6 translation (where the glyph's origin
        # falls, in 1/64 pixels) set, the glyph loaded and rasterized (~40 us: the most of drawing a text), its
        # bitmap blended into the canvas at the bitmap's left and top. FreeType transforms the loaded (hinted)
        # outline, then rasterizes it in cells relative to its whole-pixel origin: moved by whole pixels, the same
        # outline gives the same bitmap, moved as many pixels. So a bitmap is kept by everything it depends on but
        # the translation's whole pixels, and drawn again moved by them (checked: tests/test_figures_save.py,
        # every glyph of a report's figures, ~1/3 of them found). Here the glyphs (what matplotlib's
        # _draw_text_glyphs_and_boxes does with them), then its own method for the boxes (a math text's rules).
        self.orig_glyphs = orig_glyphs = RendererAgg._draw_text_glyphs_and_boxes
        matrices: dict = {}

        def draw_glyphs_and_boxes(renderer, gc, x, y, angle, glyphs, boxes):
            cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
            flags = get_hinting_flag()
            mono = not gc.get_antialiased()
            mode = RenderMode.MONO if mono else RenderMode.NORMAL
            dpi, height = renderer.dpi, renderer.height
            draw = renderer._renderer.draw_text_image
            for font, size, index, slant, extend, dx, dy in glyphs:  # dy upwards, FreeType's y upwards
                matrix = matrices.get((angle, slant, extend))
                if matrix is None:
                    rotate = np.array([[cos, -sin], [sin, cos]])
                    matrix = (0x10000 * rotate @ [[extend, extend * slant], [0, 1]]).round().astype(int)
                    matrices[(angle, slant, extend)] = matrix
                tx = round(0x40 * (x + dx * cos - dy * sin))
                ty = round(0x40 * (height - y + dx * sin + dy * cos))
                key = (font, size, dpi, index, angle, slant, extend, tx & 63, ty & 63, flags, mode)
                got = _GLYPHS.get(key)
                if got is None:
                    font.set_size(size, dpi)
                    font._set_transform(matrix, [tx, ty])
                    bitmap = font._render_glyph(index, flags, mode)
                    buffer = bitmap.buffer  # the bitmap's own array (a copy FreeType's next glyph leaves alone)
                    if mono:
                        buffer *= 0xFF
                    if len(_GLYPHS) > _GLYPHS_MAX:
                        _GLYPHS.clear()
                    got = _GLYPHS[key] = (buffer, bitmap.left - (tx >> 6), bitmap.top - (ty >> 6))
                buffer, left, top = got
                # draw_text_image's y downwards, at the bitmap's bottom side
                draw(buffer, left + (tx >> 6), int(height) - (top + (ty >> 6)) + buffer.shape[0], 0, gc)
            orig_glyphs(renderer, gc, x, y, angle, (), boxes)

        RendererAgg._draw_text_glyphs_and_boxes = draw_glyphs_and_boxes

    def _bbox_union_in_one_pass(self) -> None:
        """Within the save: :meth:`Bbox.union <matplotlib.transforms.BboxBase.union>` reads its boxes' corners in one
        array (below); undone by :meth:`__exit__`."""
        import math

        import numpy as np
        from matplotlib.transforms import Bbox, BboxBase

        # matplotlib's union takes each box's xmin, xmax, ymin and ymax, each a numpy reduction over the box's two
        # corners (~3 us), then the min or max of each list: ~29,000 boxes a report in ~3,300 unions (tick labels,
        # spines, axis labels at every layout pass, tight-box query and draw): 5.7% of the figures' py-spy samples
        # (1.5% after). Here the corners of all the boxes are read once (get_points, what those properties read)
        # and reduced in one call per side. The min
        # of the same numbers is the same number, except where it is a zero (which of 0.0 and -0.0 a reduction
        # keeps depends on its order) or not a number: those unions (and any of other arrays) are matplotlib's own
        self.bboxbase, self.orig_union = BboxBase, BboxBase.__dict__["union"]
        union = self.orig_union.__func__

        def fast_union(bboxes):
            if len(bboxes) < 2:
                return union(bboxes)
            points = np.concatenate([b.get_points() for b in bboxes])  # the corners, two rows per box
            if points.dtype != np.float64 or points.shape != (2 * len(bboxes), 2):
                return union(bboxes)
            lo, hi = points.min(axis=0), points.max(axis=0)
            sides = (*lo.tolist(), *hi.tolist())
            if not all(v != 0.0 and math.isfinite(v) for v in sides):
                return union(bboxes)
            return Bbox([[lo[0], lo[1]], [hi[0], hi[1]]])

        BboxBase.union = staticmethod(fast_union)

    def _title_places_without_y_boxes(self) -> None:
        """Within the save: an Axes' titles placed without the tight boxes of its y axes (below); undone by
        :meth:`__exit__`."""
        from matplotlib.axes._base import _AxesBase
        from matplotlib.axis import YAxis

        # matplotlib places an Axes' titles (_update_title_position: at every layout pass, tight-box query and draw,
        # ~1,100 times a report) after computing the tight box of the y axis of the Axes and its twins for each title
        # with text ("update offsetText"), a box it throws away (4.6% of the figures' py-spy samples: the labels'
        # places, the tick labels' boxes, the spines); what it reads then is the y axis's offset text, when it is shown
        # and has text. That call's other effects (the axis label's and the offset text's places) are made again from
        # the same state by every later reader before it reads them (the axis's own tight box and its draw), so where
        # the offset text has no text and gets none (the formatter's offset, once the ticks are updated as the call
        # updates them, is empty) the call stops there; otherwise it is matplotlib's
        self.axes_cls, self.orig_title = _AxesBase, _AxesBase._update_title_position
        self.orig_axis_box = orig_box = self.cls.get_tightbbox
        orig_title, now = self.orig_title, threading.local()  # each thread's titles being placed

        def update_title_position(axes, renderer):
            now.placing = getattr(now, "placing", 0) + 1
            try:
                return orig_title(axes, renderer)
            finally:
                now.placing -= 1

        def get_tightbbox(axis, renderer=None, **kw):
            lean = getattr(now, "placing", 0) and not kw and type(axis) is YAxis and renderer is not None
            if not (lean and axis.get_visible()):
                return orig_box(axis, renderer, **kw)
            axis._update_ticks()
            if axis.offsetText.get_text() or axis.major.formatter.get_offset():
                return orig_box(axis, renderer)
            return None  # (thrown away by the caller)

        _AxesBase._update_title_position = update_title_position
        self.cls.get_tightbbox = get_tightbbox

    def _legend_packed_once_per_draw(self) -> None:
        """Within the save: a legend's boxes packed once per draw of the legend (below); undone by
        :meth:`__exit__`."""
        from matplotlib.legend import Legend
        from matplotlib.offsetbox import HPacker, VPacker
        from matplotlib.transforms import Bbox

        # a legend is a tree of packers (a VPacker of the title and an HPacker of columns, each a VPacker of rows,
        # each an HPacker of a handle and a text); a packer's box and its children's offsets come from its
        # children's boxes (their texts measured by the renderer), never from where it is drawn. Legend.draw asks
        # the tree for its box, then draws it, each packer asking its subtree again before drawing its children:
        # every packer computed once per level above it. Within one Legend.draw (one renderer, nothing of the
        # legend changed meanwhile) each packer's result is kept: its first computation, each caller a copy
        self.legend_cls, self.orig_legend_draw = Legend, Legend.draw
        self.orig_packs = {VPacker: VPacker._get_bbox_and_child_offsets, HPacker: HPacker._get_bbox_and_child_offsets}
        orig_draw, now = self.orig_legend_draw, threading.local()  # each thread's legends being drawn

        def draw(legend, renderer):
            drawing = now.__dict__.setdefault("drawing", [])
            drawing.append(({}, renderer))
            try:
                return orig_draw(legend, renderer)
            finally:
                drawing.pop()

        def packed(orig_pack):
            def pack(box, renderer):
                drawing = getattr(now, "drawing", None)
                if not drawing or drawing[-1][1] is not renderer:
                    return orig_pack(box, renderer)
                kept = drawing[-1][0]
                got = kept.get(id(box))
                if got is None or got[0] is not box:
                    got = kept[id(box)] = (box, *orig_pack(box, renderer))
                return Bbox(got[1].get_points().copy()), list(got[2])

            return pack

        Legend.draw = draw
        for packer, orig_pack in self.orig_packs.items():
            packer._get_bbox_and_child_offsets = packed(orig_pack)

    def __exit__(self, *exc):
        if not self.active:
            return False
        self.active = False
        try:
            self.cls._update_ticks = self.orig
            self.cls._get_ticklabel_bboxes = self.orig_boxes
            self.mtext._get_text_metrics_function = self.orig_metrics_fn
            self.mmath.MathTextParser.parse = self.orig_parse
            self.agg._prepare_font = self.orig_prepare
            self.text2path._get_font = self.orig_get_font
            self.text2path.get_glyphs_with_font = self.orig_glyphs_with_font
            self.agg._draw_text_glyphs_and_boxes = self.orig_glyphs
            self.mtext.Text._get_layout = self.orig_layout
            self.bboxbase.union = self.orig_union
            self.axes_cls._update_title_position = self.orig_title
            self.cls.get_tightbbox = self.orig_axis_box
            self.legend_cls.draw = self.orig_legend_draw
            for packer, orig_pack in self.orig_packs.items():
                packer._get_bbox_and_child_offsets = orig_pack
        finally:
            _PATCH_LOCK.release()
        return False


def _renderer_kind(renderer):
    """The kind of ``renderer`` that the text memos key by: :class:`RendererAgg`, :class:`RendererSVG`, or an SVG
    file's renderer (savefig draws an SVG through a ``MixedModeRenderer`` around a ``RendererSVG``, which measures
    and lays out texts as that ``RendererSVG`` does: every call goes through to it); None (no memo) for any other
    renderer, and for the mixed one while it rasterizes (its inner renderer an Agg one at the image's dpi)."""
    global _RENDERERS
    if _RENDERERS is None:  # imported once (the function runs at every text measured and laid out)
        from matplotlib.backends.backend_agg import RendererAgg
        from matplotlib.backends.backend_mixed import MixedModeRenderer
        from matplotlib.backends.backend_svg import RendererSVG

        _RENDERERS = (RendererAgg, RendererSVG, MixedModeRenderer)
    agg, svg, mixed = _RENDERERS
    kind = type(renderer)
    if kind is agg or kind is svg:
        return kind
    if kind is mixed and type(renderer._renderer) is svg:
        return (mixed, svg)
    return None


_RENDERERS: tuple | None = None


def _update_ticks_in_view(axis, orig, placed: dict | None = None) -> list:
    """Matplotlib's ``Axis._update_ticks`` (3.11: the locations and labels of the major and minor ticks, each
    location's ``Tick`` moved there and labelled, the ticks in view returned, majors first), except that ``Tick``
    objects are made and updated for the locations in view only: matplotlib makes one for every location its
    locators return, and a log axis's minor locator returns a decade beyond each end of the view (a report's
    figures made ~1,650 ticks, ~440 never drawn, 1,316 now; the ticks' making was 0.83 s of a report's 8.1 s of
    figure CPU: five artists a tick, three marker styles copied). The labels are formatted from all the
    locations, as matplotlib formats them (a formatter reads them all: the offset, the decades labelled); the
    ticks in view get the same locations and labels in the same order, and a tick's drawing reads nothing else
    of it. ``orig`` (matplotlib's) for any other axis: not an x or a y axis
    of a 2D Axes, or fixed tick locations (category labels: :func:`narrow_layout` reads every tick's label in
    location order).

    ``placed``: ``{id(axis): (axis, {id(tick): (tick, (location, label))})}``, where each tick of the axis was put
    by this function (kept by the caller for one save). A tick already at its location with its label is left
    as it is: moving it there again (``Tick.update_position``) sets its five artists' places anew and marks its
    lines' data as new (their paths made again at the next draw); most of a report's 209 tick updates follow a
    layout pass that changed the tick space but not the ticks. An axis that goes to ``orig`` loses its entry
    (orig moves the ticks)."""
    from matplotlib import ticker
    from matplotlib import transforms as mtransforms
    from matplotlib.axis import XAxis, YAxis

    placed = {} if placed is None else placed
    if type(axis) not in (XAxis, YAxis) or getattr(axis.axes, "name", None) != "rectilinear":
        placed.pop(id(axis), None)
        return orig(axis)
    groups = []
    for kw, locator, formatter, locs_of, ticks_of in (
        (axis._major_tick_kw, axis.get_major_locator(), axis.major.formatter, axis.get_majorticklocs,
         axis.get_major_ticks),
        (axis._minor_tick_kw, axis.get_minor_locator(), axis.minor.formatter, axis.get_minorticklocs,
         axis.get_minor_ticks),
    ):  # fmt: skip
        if isinstance(locator, ticker.FixedLocator):
            placed.pop(id(axis), None)
            return orig(axis)
        if axis._tick_group_visible(kw) and not isinstance(locator, ticker.NullLocator):
            groups.append((formatter, locs_of, ticks_of))
    view_low, view_high = axis.get_view_interval()
    if view_low > view_high:
        view_low, view_high = view_high, view_low
    transform = axis.get_transform()
    interval_t = transform.transform([view_low, view_high])
    ticks_to_draw = []
    entry = placed.get(id(axis))
    if entry is None or entry[0] is not axis:
        entry = placed[id(axis)] = (axis, {})
    put = entry[1]
    for formatter, locs_of, ticks_of in groups:
        locs = locs_of()
        labels = formatter.format_ticks(locs)
        shown = []
        for loc, label in zip(locs, labels):
            try:  # as matplotlib decides it, from the location a tick there would have
                loc_t = transform.transform(loc)
            except AssertionError:  # a masked value some scales make
                continue
            if mtransforms._interval_contains_close(interval_t, loc_t):
                shown.append((loc, label))
        for tick, (loc, label) in zip(ticks_of(len(shown)), shown):
            at = (float(loc).hex(), label)  # the location by its bits (-0.0 is not 0.0 here)
            was = put.get(id(tick))
            if was is None or was[0] is not tick or was[1] != at:
                tick.update_position(loc)
                tick.label1.set_text(label)
                tick.label2.set_text(label)
                put[id(tick)] = (tick, at)
            ticks_to_draw.append(tick)
    return ticks_to_draw


def _tick_label_state(tick) -> tuple:
    """What the boxes of ``tick``'s labels are read from besides the axes' place (the tick-label box memo's key): the
    tick itself, its location, and each label's text, visibility, rotation and size, read as their getters read them
    (``get_loc``, ``get_text``, ``get_visible``, ``get_fontsize``: the attributes; ``get_rotation``: the attribute
    unless the text's transform rotates it), one tuple per tick: the memo asked for seven tuples over the ticks
    through their getters at each of a report's ~1,500 queries (2.0% -> 1.1% of the figures' py-spy samples)."""
    out = [tick, tick._loc]
    for label in (tick.label1, tick.label2):
        rotation = label.get_rotation() if label._transform_rotates_text else label._rotation
        out += (label._text, label._visible, rotation, label._fontproperties.get_size_in_points())
    return tuple(out)


_TICK_SPACES: dict = {}  # (axis kind, its axes' transAxes and its figure's dpi_scale_trans, sizes) -> tick space
_AXIS_KINDS: tuple | None = None


def _tick_space(axis) -> int:
    """``axis.get_tick_space()`` (how many ticks fit: the locators' bins), kept for the process by what
    matplotlib's computes it from. ``XAxis.get_tick_space``/``YAxis.get_tick_space`` map the unit box through
    ``axes.transAxes - figure.dpi_scale_trans`` (two affine matrices) and divide its width or height by the tick
    labels' size (a new ``FontProperties`` from the axis's ``labelsize`` or the ``xtick.labelsize``/``ytick.labelsize``
    setting, relative sizes scaled by ``font.size``); :func:`save`'s tick memo asks for it at each of the ~3,000
    tick queries of a report (3.5% of the figures' py-spy samples: the composite transform, its inverse, the
    font properties), where the axes' place changes only between layout passes and files. Any other kind of
    axis is asked itself."""
    global _AXIS_KINDS
    if _AXIS_KINDS is None:
        from matplotlib.axis import XAxis, YAxis

        _AXIS_KINDS = (XAxis, YAxis)
    kind, to_axes = type(axis), axis.axes.transAxes
    if kind not in _AXIS_KINDS or not to_axes.is_affine:
        return axis.get_tick_space()
    import matplotlib as mpl

    name, kw = "x" if kind is _AXIS_KINDS[0] else "y", axis._major_tick_kw
    key = (
        kind,
        to_axes.get_matrix().tobytes(),
        axis.get_figure(root=False).dpi_scale_trans.get_matrix().tobytes(),
        "labelsize" in kw,
        repr(kw.get("labelsize")),
        repr(mpl.rcParams[f"{name}tick.labelsize"]),
        repr(mpl.rcParams["font.size"]),
    )
    got = _TICK_SPACES.get(key)
    if got is None:
        if len(_TICK_SPACES) > _MEMO_MAX:
            _TICK_SPACES.clear()
        got = _TICK_SPACES[key] = axis.get_tick_space()
    return got


class _ShapedFont:
    """An FT2Font (``font``, sized ``size``: (points, dpi)) whose :meth:`_layout` (libraqm's shaping of a string)
    is kept in :data:`_SHAPES`; everything else is the font's own (its glyphs are loaded and drawn from it)."""

    __slots__ = ("_font", "_size")

    def __init__(self, font, size):
        self._font, self._size = font, size

    def _layout(self, string, flags, *, features=None, language=None):
        font = self._font
        try:
            key = (font, self._size, string, flags, features, language)
            got = _SHAPES.get(key)
        except TypeError:  # an unhashable features or language: shaped as matplotlib shapes it
            return font._layout(string, flags, features=features, language=language)
        if got is None:
            if len(_SHAPES) > _MEMO_MAX:
                _SHAPES.clear()
            got = _SHAPES[key] = tuple(font._layout(string, flags, features=features, language=language))
        return got

    def __getattr__(self, name):
        return getattr(self._font, name)
