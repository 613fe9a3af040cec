"""A policy's charts (`leaderboard.charts`): well-formed SVG whose marks stand where their
values say, each with its values in words."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from leaderboard.charts import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, nice_ticks, rating_chart, task_chart

SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed, or this raises
    assert root.tag == f"{SVG}svg" and root.get("role") == "img" and root.get("aria-label")
    return root


def grid(root: ET.Element) -> dict[float, float]:
    """The y axis's labels -> the height of their grid line."""
    lines = [e for e in root if e.tag == f"{SVG}line" and e.get("x1") == str(LEFT) and e.get("x2") == str(WIDTH - RIGHT)]
    labels = [e for e in root if e.tag == f"{SVG}text" and e.get("text-anchor") == "end" and e.get("x") == str(LEFT - 6)]
    return {float(label.text): float(line.get("y1")) for line, label in zip(lines, labels)}


def test_nice_ticks_cover_the_range_in_round_equal_steps():
    rng = random.Random(3)
    for _ in range(500):
        low = rng.uniform(-100, 100)
        high = low + 10 ** rng.uniform(-3, 3)
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high and 3 <= len(ticks) <= 9, (low, high, ticks)
        steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
        assert len(steps) == 1, ticks
        mantissa = f"{steps.pop():e}".split("e")[0]
        assert float(mantissa) in (1.0, 2.0, 5.0), ticks
    assert nice_ticks(float("nan"), 1.0) == []


def test_the_rating_chart_puts_each_rating_at_its_height_and_names_it():
    trajectory = pd.DataFrame({"time": pd.date_range("2026-03-01", periods=6, freq="h"),
                               "mu": [25.0, 26.5, 27.0, 28.25, 27.5, 29.0], "sigma": [8.0, 6.0, 4.0, 3.0, 2.5, 2.0]})
    root = parsed(rating_chart(trajectory))
    heights = grid(root)
    low, high = min(heights), max(heights)
    assert low <= 25.0 - 24.0 and high >= 29.0  # the y axis holds mu and mu - 3 sigma
    assert heights[high] == TOP and heights[low] == HEIGHT - BOTTOM

    def y_of(value: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (high - value) / (high - low)

    marks = root.findall(f"{SVG}circle")
    assert len(marks) == 6
    xs = [float(m.get("cx")) for m in marks]
    assert xs == sorted(xs) and xs[0] == LEFT and xs[-1] == WIDTH - RIGHT  # time runs left to right, end to end
    for mark, mu, sigma in zip(marks, trajectory["mu"], trajectory["sigma"]):
        assert float(mark.get("cy")) == pytest.approx(y_of(mu), abs=0.06)
        assert f"mu {mu:.2f}, mu - 3 sigma {mu - 3 * sigma:.2f}" in mark.find(f"{SVG}title").text
    dashed, solid = root.findall(f"{SVG}polyline")
    assert dashed.get("stroke-dasharray") and not solid.get("stroke-dasharray")
    assert [float(p.split(",")[1]) for p in dashed.get("points").split()] == pytest.approx(
        [y_of(m - 3 * s) for m, s in zip(trajectory["mu"], trajectory["sigma"])], abs=0.06)
    assert "from 25.00 to 29.00 over 6 points" in root.get("aria-label")


def test_a_single_rating_is_drawn_in_the_middle_and_no_rating_draws_nothing():
    one = pd.DataFrame({"time": [pd.Timestamp("2026-03-01T12:00:00Z")], "mu": [25.0], "sigma": [8.333]})
    (mark,) = parsed(rating_chart(one)).findall(f"{SVG}circle")
    assert float(mark.get("cx")) == pytest.approx(LEFT + (WIDTH - LEFT - RIGHT) / 2)
    assert rating_chart(one.iloc[0:0]) == "" and task_chart(pd.DataFrame(columns=["track", "task", "points"])) == ""


def test_the_task_chart_draws_one_bar_per_track_and_task_against_the_tiers():
    tasks = pd.DataFrame({"track": ["pve"] * 4 + ["pvp"] * 3, "task": ["travel", "forage", "equipment", "eliminate",
                                                                       "travel", "forage", "equipment"],
                          "points": [21.0, 10.0, 4.0, 0.0, 2.5, 12.25, 30.0]})
    root = parsed(task_chart(tasks))
    assert sorted(grid(root)) == [0.0, 4.0, 10.0, 21.0]  # the tiers' points
    floor, plot_h = HEIGHT - BOTTOM, HEIGHT - TOP - BOTTOM
    bars = {tuple(b.find(f"{SVG}title").text.split(":")[0].split(", ")): b for b in root.findall(f"{SVG}rect")}
    assert len(bars) == 7 and ("eliminate", "pvp") not in bars  # a task not played in a track has no bar
    for (track, task, points) in tasks.itertuples(index=False):
        bar = bars[(task, track)]
        assert float(bar.get("y")) + float(bar.get("height")) == pytest.approx(floor)
        assert float(bar.get("height")) == pytest.approx(plot_h * min(points, 21.0) / 21.0, abs=0.06)  # capped at the top tier
        assert f"{points:.2f} points a match" in bar.find(f"{SVG}title").text
    assert float(bars[("travel", "pve")].get("x")) < float(bars[("travel", "pvp")].get("x")) < float(bars[("forage", "pve")].get("x"))
    assert "pve travel 21.0, forage 10.0" in root.get("aria-label")


def test_names_are_escaped():
    tasks = pd.DataFrame({"track": ["<b>x</b>"], "task": ["travel"], "points": [4.0]})
    root = parsed(task_chart(tasks, title='a "quoted" <title>'))
    assert root.get("aria-label").startswith('a "quoted" <title>') and root.find(f"{SVG}rect/{SVG}title").text.endswith(
        "<b>x</b>: 4.00 points a match")
