"""Shared plotting helpers: the Agg backend, verdict colours with their legend handles, saving as PNG
and SVG."""

from __future__ import annotations

import threading

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# constrained layout: axis labels, titles and outside legends are never clipped (tight_layout is not needed)
matplotlib.rcParams["figure.constrained_layout.use"] = True

__all__ = ["plt", "STATUS_COLOR", "status_handles", "save", "d"]

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
    compute both again: a dry draw with the layout, then the drawing, for each format)."""
    import matplotlib as mpl

    with _ticks_computed_once():
        return _save(fig, stem, dpi, mpl)


def _save(fig, stem, dpi, mpl) -> list[str]:
    orig_dpi = fig.dpi
    try:
        fig.set_dpi(dpi)
        engine = fig.get_layout_engine()
        if engine is not None:  # the layout, once (it computes the text extents the box needs) ...
            engine.execute(fig)
        else:  # ... or a dry draw where there is none (what savefig's tight box does)
            fig.draw_without_rendering()
        bbox = fig.get_tightbbox(fig.canvas.get_renderer()).padded(mpl.rcParams["savefig.pad_inches"])
    finally:
        fig.set_dpi(orig_dpi)
    paths = []
    # no layout engine while saving: the positions just computed are kept, and savefig makes no dry draw
    # (the rc setting too: savefig restores the engine it found through set_layout_engine, which would
    # otherwise bring the constrained layout back after the first file)
    with mpl.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        fig.set_layout_engine(None)
        for ext in ("png", "svg"):
            path = f"{stem}.{ext}"
            fig.savefig(path, dpi=dpi, bbox_inches=bbox)
            paths.append(path)
    plt.close(fig)
    return paths


_PATCH_LOCK = threading.Lock()
_MATH_PARSES: dict = {}  # (parser kind, string, dpi, font, antialiased, hinting, mathtext rc) -> parse
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


class _ticks_computed_once:
    """Within one :func:`save`: an axis's ticks (locations, labels, the ticks to draw) are computed once per
    state instead of at every layout pass, tight-box query and draw (matplotlib recomputes them there ~15
    times per axis and figure). The state is everything the computation reads: the view interval, the tick
    space (axis length over font size), the locators and formatters and their settings; equal state,
    equal ticks, so the figures are the same (checked: the PNG files are byte-identical)."""

    def __enter__(self):
        from matplotlib.axis import Axis

        _PATCH_LOCK.acquire()  # the patch is on the class: one save at a time patches it (threads included)
        self.cls, self.orig, memo = Axis, Axis._update_ticks, {}
        orig = self.orig

        def update_ticks(axis):
            try:
                key = (
                    id(axis),
                    tuple(axis.get_view_interval()),
                    axis.get_tick_space(),
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
            got = memo.get(key)
            if got is None:
                got = memo[key] = orig(axis)
            return got

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
                    tuple(id(t) for t in ticks),
                    tuple(t.get_loc() for t in ticks),
                    tuple(t.label1.get_text() for t in ticks),
                    tuple(t.label2.get_text() for t in ticks),
                    tuple((t.label1.get_visible(), t.label2.get_visible()) for t in ticks),
                    tuple((t.label1.get_rotation(), t.label1.get_fontsize()) for t in ticks),
                    tuple((t.label2.get_rotation(), t.label2.get_fontsize()) for t in ticks),
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
        # text extents shared by the Agg renderers of one save (the layout's, then the PNG's, which savefig
        # makes anew at the cropped size), and math layouts shared by all parsers of a kind for the whole
        # process: matplotlib keeps them per renderer (parser) instance, in a cache of 50 parses, so each
        # string was measured, and each math string parsed, once per renderer and figure (57 distinct math
        # parses in a report, 163 made); they depend only on the string, the font properties, the dpi, the
        # antialiasing, hinting and mathtext settings, not on the renderer
        import matplotlib as mpl
        import matplotlib.mathtext as mmath
        import matplotlib.text as mtext
        from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag

        self.mtext, self.orig_metrics_fn = mtext, mtext._get_text_metrics_function
        self.mmath, self.orig_parse = mmath, mmath.MathTextParser.parse
        orig_metrics_fn, orig_parse, extents = self.orig_metrics_fn, self.orig_parse, {}

        def metrics_function(renderer, *args):
            if type(renderer) is not RendererAgg or args:
                return orig_metrics_fn(renderer, *args)

            def metrics(text, fontprop, ismath, dpi):
                key = (text, fontprop, ismath, dpi, renderer.dpi)
                got = extents.get(key)
                if got is None:
                    got = extents[key] = renderer.get_text_width_height_descent(text, fontprop, ismath)
                return got

            return metrics

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

    def __exit__(self, *exc):
        try:
            self.cls._update_ticks = self.orig
            self.cls._get_ticklabel_bboxes = self.orig_boxes
            self.mtext._get_text_metrics_function = self.orig_metrics_fn
            self.mmath.MathTextParser.parse = self.orig_parse
        finally:
            _PATCH_LOCK.release()
        return False
