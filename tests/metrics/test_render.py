"""The PNG renderer's own logic, without Prometheus: what counts as data, axis units, and
legends that name every line."""

from __future__ import annotations

from typing import Any

import matplotlib
import pytest

from odradek_monitoring.render import PanelData, draw_timeseries, format_value

matplotlib.use("Agg")


def _range(metric: dict[str, str], *values: str) -> dict[str, Any]:
    return {"metric": metric, "values": [[1_700_000_000 + i, v] for i, v in enumerate(values)]}


def _panel(*series: dict[str, Any], legend: str = "{{topic}}") -> PanelData:
    return PanelData({"title": "t", "type": "timeseries"}, [(legend, list(series))])


def test_a_panel_whose_every_value_is_nan_has_no_data() -> None:
    assert not _panel(_range({"topic": "a"}, "NaN", "NaN"), _range({"topic": "b"}, "NaN")).has_data
    assert not _panel().has_data
    assert _panel(_range({"topic": "a"}, "NaN", "0.5")).has_data
    instant = PanelData({"title": "s", "type": "stat"},
                        [("", [{"metric": {}, "value": [1_700_000_000, "NaN"]}])])
    assert not instant.has_data


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (1000.0, "Bps", "1 kB/s"),
    (999.7, "Bps", "1000 B/s"),
    (2_500_000.0, "Bps", "2.5 MB/s"),
    (512.0, "Bps", "512 B/s"),
    (1536.0, "bytes", "1.5 KiB"),
    (3 * 1024**3, "bytes", "3 GiB"),
    (1000.0, "short", "1 k"),
    (42.0, "short", "42"),
    (0.25, "short", "0.25"),
    (0.00001, "short", "0.00001"),
    (1200.0, "ops", "1.2 kops/s"),
    (0.004, "s", "4 ms"),
    (1500.0, "s", "1500 s"),
    (0.125, "percentunit", "12.5%"),
])
def test_axis_values_read_in_human_units(value: float, unit: str, shown: str) -> None:
    assert format_value(value, unit) == shown
    assert "e+" not in format_value(value * 1000, unit) and "e-" not in format_value(value, unit)


def test_the_legend_names_every_line_even_internal_topics() -> None:
    import matplotlib.pyplot as plt

    topics = ["__consumer_offsets", "__transaction_state", "compacted", "events"]
    data = _panel(*(_range({"topic": topic}, "1", "2") for topic in topics))
    fig, ax = plt.subplots()
    try:
        draw_timeseries(ax, data, "Bps")
        assert len(ax.get_lines()) == 4
        legend = ax.get_legend()
        assert legend is not None
        assert [text.get_text() for text in legend.get_texts()] == topics
        fig.canvas.draw()
        ticks = [label.get_text() for label in ax.yaxis.get_ticklabels()]
        assert ticks and all("e+" not in tick for tick in ticks), ticks
    finally:
        plt.close(fig)
