"""Box-and-arrow diagrams for the notebooks, drawn with matplotlib from a few lines of data.

A notebook cell names the boxes (where each sits and what it says) and the arrows between them (with a
label); ``draw_flow`` draws them. The picture is code, so it changes with the lesson and needs no image file.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from helpers.core.errors import ConfigError

# box colours by kind: what the learner writes, what the workshop provides, what answers from elsewhere
COLOURS = {"code": "#dbeafe", "helper": "#e5e7eb", "server": "#fde68a", "data": "#dcfce7", "stop": "#fecaca"}


def draw_flow(boxes: Mapping[str, tuple[float, float, str] | tuple[float, float, str, str]],
              arrows: Sequence[tuple[str, str, str]], *, title: str = "", size: tuple[float, float] = (10, 3.2),
              width: float = 10, height: float = 4):
    """Draw ``boxes`` ({name: (x, y, text[, kind])} on a ``width`` × ``height`` canvas, kind a key of COLOURS)
    joined by ``arrows`` ([(from, to, label)], label may be ""); return the figure (shown by the notebook).

    Raises ConfigError naming the box when an arrow starts or ends at a box that is not drawn.
    """
    import matplotlib.pyplot as plt  # only when a diagram is drawn

    fig, ax = plt.subplots(figsize=size)
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    drawn = {}
    for name, (x, y, text, *kind) in boxes.items():
        colour = COLOURS[kind[0] if kind else "helper"]
        drawn[name] = ax.text(x, y, text, ha="center", va="center", fontsize=9, zorder=3,
                              bbox=dict(boxstyle="round,pad=0.45", facecolor=colour, edgecolor="#374151"))
    pairs = {(start, end) for start, end, _ in arrows}
    for start, end, label in arrows:
        for name in (start, end):
            if name not in drawn:
                raise ConfigError(f"the arrow {start!r} -> {end!r} names {name!r}, which is not one of the boxes "
                               f"{sorted(drawn)}")
        source, target = drawn[start], drawn[end]
        bend = -0.3 if (end, start) in pairs else 0.0  # a request and its reply: two arcs, not one line
        ax.annotate("", xy=target.get_position(), xytext=source.get_position(), zorder=2,
                    arrowprops=dict(arrowstyle="-|>", color="#374151", lw=1.3, connectionstyle=f"arc3,rad={bend}",
                                    patchA=source.get_bbox_patch(), patchB=target.get_bbox_patch(),
                                    shrinkA=2, shrinkB=5))
        if label:
            (x0, y0), (x1, y1) = source.get_position(), target.get_position()
            # the middle of the arc: halfway from the chord's middle to arc3's control point
            x, y = (x0 + x1) / 2 + bend * (y1 - y0) / 2, (y0 + y1) / 2 - bend * (x1 - x0) / 2
            upright = not bend and abs(x1 - x0) < abs(y1 - y0)  # beside an upright arrow, above a level one
            ax.text(x + 0.15 if upright else x, y if bend or upright else y + 0.25, label,
                    ha="left" if upright else "center", va="center", fontsize=8, color="#1f2937", zorder=4,
                    bbox=dict(boxstyle="square,pad=0.1", facecolor="white", edgecolor="none", alpha=0.9))
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
