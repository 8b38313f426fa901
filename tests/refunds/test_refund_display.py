"""What lab 03 shows fits a JupyterLab output area: no printed line wider than WIDTH, and
tables with short labels whose legend names every label."""

from labkit import refunds as R
from labkit.refunds.display import _WIDTH as WIDTH


def test_every_line_of_every_kind_of_episode_fits():
    lab = R.refund_lab()
    episodes = [
        R.refund_episode(request, R.gullible, attack=attack, place=place)
        for request in ("r-ana-blender", "r-chloe-lamp")
        for attack in lab.attacks
        for place in lab.attacks[attack].places
    ]
    episodes += [
        R.refund_episode(request, R.careful, defenses=defense, faults=R.Faults(1))
        for request in lab.requests
        for defense in ("none", "confirmation", "idempotency")
    ]
    for episode in episodes:
        lines = str(episode).splitlines()
        assert max(map(len, lines)) <= WIDTH, max(lines, key=len)
        assert lines[-1].startswith(("ledger", "  rf-", "approvals"))


def test_a_retry_shows_the_same_key_and_a_new_refund_a_new_one():
    text = str(R.refund_episode("r-ana-blender", R.careful, defenses="idempotency", faults=R.Faults(1)))
    assert text.count("idempotency_key='…+idempotency#0'") == 2
    assert "(replayed: no new money)" in text


def test_the_chart_puts_money_on_a_log_scale_with_every_value_labelled():
    import matplotlib

    matplotlib.use("Agg")
    from labkit.core.colours import colour
    from labkit.refunds.charts import utility_security

    figure = utility_security(R.matrix(["gullible", "careful"], ["none", "mediation"]))
    scatter, money = figure.axes
    assert money.get_xscale() == "log"
    labels = [text.get_text() for text in money.texts]
    assert labels == ["33,242", "0", "298", "0"]  # gullible then careful, none then mediation
    colours = {bar.get_facecolor()[:3] for bar in money.patches}
    assert colours == {matplotlib.colors.to_rgb(colour(p)) for p in ("gullible", "careful")}


def test_no_error_bar_runs_through_a_label_of_the_notebooks_chart():
    """Lab 03's chart as the notebook draws it (both policies, every defense, with intervals): each
    point's label inside the axes, crossed by no error bar and overlapping no other label."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.collections import LineCollection
    from matplotlib.transforms import Bbox

    from labkit.refunds.charts import utility_security

    policies = ["gullible", "careful"]
    scatter = utility_security(R.matrix(policies), R.matrix_intervals(policies)).axes[0]
    renderer = scatter.figure.canvas.get_renderer()
    labels = [text.get_window_extent(renderer) for text in scatter.texts]
    bars = [c for c in scatter.collections if isinstance(c, LineCollection)]
    segments = [Bbox(scatter.transData.transform(s)) for c in bars for s in c.get_segments()]
    assert len(labels) == 4 and segments
    for i, label in enumerate(labels):
        name = scatter.texts[i].get_text().replace("\n", ", ")
        assert Bbox.union([label, scatter.bbox]).bounds == scatter.bbox.bounds, (
            f"{name!r} is cut by the frame"
        )
        assert not any(label.overlaps(s) for s in segments), f"an error bar runs through {name!r}"
        assert not any(label.overlaps(other) for other in labels[i + 1 :]), f"{name!r} overlaps a label"
