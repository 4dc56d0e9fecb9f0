"""draw_flow draws the boxes and arrows it is given, and names a box an arrow points to that is not there."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from helpers.core.diagrams import draw_flow  # noqa: E402
from helpers.core.errors import ConfigError  # noqa: E402

BOXES = {"a": (1, 2, "ask", "code"), "b": (5, 2, "server", "server"), "c": (8, 2, "done")}


def test_every_box_and_arrow_is_drawn():
    figure = draw_flow(BOXES, [("a", "b", "request"), ("b", "a", "reply"), ("b", "c", "")], title="t")
    ax = figure.axes[0]
    arrows = [t for t in ax.texts if type(t).__name__ == "Annotation"]
    labels = [t.get_text() for t in ax.texts if t not in arrows]
    assert len(arrows) == 3 and labels == ["ask", "server", "done", "request", "reply"]
    plt.close(figure)


def test_a_request_and_its_reply_are_drawn_apart():
    figure = draw_flow(BOXES, [("a", "b", "request"), ("b", "a", "reply")])
    labels = {t.get_text(): t.get_position() for t in figure.axes[0].texts}
    assert labels["request"][1] != labels["reply"][1]  # two arcs, one above the other
    plt.close(figure)


def test_an_arrow_to_a_missing_box_names_it():
    with pytest.raises(ConfigError, match="'x', which is not one of the boxes"):
        draw_flow(BOXES, [("a", "x", "")])
    plt.close("all")
