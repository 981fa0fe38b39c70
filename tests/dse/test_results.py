"""Tables, per-configuration totals, the Pareto front and its plot, the result store."""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pytest

from vta.dse.results import (
    config_totals,
    draw_pareto,
    pareto_front,
    plot_pareto,
    read_jsonl,
    write_csv,
    write_jsonl,
)
from vta.dse.store import ResultStore


def _brute_front(points):
    """Indices not dominated, by the definition, written independently of the library."""
    out = []
    for i, p in enumerate(points):
        if not any(np.all(np.asarray(q) <= np.asarray(p)) and np.any(np.asarray(q) < np.asarray(p))
                   for j, q in enumerate(points) if j != i):
            out.append(i)
    return out


def test_pareto_front_matches_the_definition():
    rng = np.random.default_rng(0)
    for _ in range(20):
        pts = [tuple(int(v) for v in rng.integers(1, 6, size=3)) for _ in range(15)]
        records = [{"cycles": a, "mac_count": b, "sram_bits": c, "complete": True} for a, b, c in pts]
        assert pareto_front(records) == _brute_front(pts)


def test_incomplete_configurations_are_never_on_the_front():
    records = [{"cycles": 1, "mac_count": 1, "sram_bits": 1, "complete": False},
               {"cycles": 5, "mac_count": 5, "sram_bits": 5, "complete": True}]
    assert pareto_front(records) == [1]


def _row(block, acc, workload, status="ok", cycles=100):
    row = {"LOG_BLOCK": block, "LOG_ACC_BUFF_SIZE": acc, "workload": workload, "status": status,
           "sram_bits": 1000 * acc, "mac_count": 1 << (2 * block), "key": "ab"}
    if status == "ok":
        row.update(cycles=cycles, macs=10 * cycles, bytes_moved=7)
    else:
        row["reason"] = "does not fit"
    return row


def test_config_totals_sum_over_workloads_and_mark_incomplete_ones():
    rows = [_row(4, 17, "a", cycles=100), _row(4, 17, "b", cycles=50), _row(5, 17, "a", cycles=30),
            _row(5, 17, "b", status="infeasible")]
    totals = {(t["LOG_BLOCK"], t["LOG_ACC_BUFF_SIZE"]): t for t in config_totals(rows)}
    assert totals[(4, 17)]["cycles"] == 150 and totals[(4, 17)]["complete"]
    assert totals[(4, 17)]["macs_per_cycle"] == pytest.approx(10.0)
    assert not totals[(5, 17)]["complete"] and totals[(5, 17)]["reason"] == "does not fit"


def test_csv_and_jsonl_round_trip(tmp_path):
    rows = [_row(b, a, w) for b, a, w in itertools.product([4, 5], [16, 17], ["x", "y"])]
    rows[0]["macs_per_cycle"] = 1.0 / 3.0
    write_jsonl(rows, tmp_path / "p.jsonl")
    assert read_jsonl(tmp_path / "p.jsonl") == rows
    write_csv(rows, tmp_path / "p.csv")
    with open(tmp_path / "p.csv") as f:
        back = list(csv.DictReader(f))
    assert len(back) == len(rows) and back[1]["workload"] == "y" and back[0]["LOG_BLOCK"] == "4"
    (tmp_path / "bad.jsonl").write_text("[1]\n")
    with pytest.raises(ValueError, match="bad.jsonl:1"):
        read_jsonl(tmp_path / "bad.jsonl")


def test_plot_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [_row(b, a, "x", cycles=1000 // (b + a)) for b in (3, 4, 5) for a in (15, 16, 17)]
    path = plot_pareto(config_totals(rows), tmp_path / "pareto.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _tick_numbers(axis):
    """The numbers written on an axis's ticks inside its view (labels parsed as a reader would)."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for tick in axis.get_major_ticks() + axis.get_minor_ticks():
        label = tick.label1.get_text().replace(",", "").replace("\N{MINUS SIGN}", "-")
        if label and lo <= tick.get_loc() <= hi and tick.label1.get_visible():
            out.append(float(label))  # raises if a label is not a plain number
    return out


@pytest.mark.parametrize("spans", ["narrow", "wide"])
def test_every_plot_axis_reads_as_numbers(spans):
    """SRAM sizes within one decade (and cycles within a few percent) still get numbered ticks."""
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    if spans == "narrow":  # LOG_ACC_BUFF_SIZE 16..17: 48..52 KiB; cycles 1000..1040
        records = [{"LOG_BLOCK": 4, "complete": True, "cycles": 1000 + 10 * i, "mac_count": 256,
                    "sram_bits": (48 + i) * 8192, "cells": 90_000 + 500 * i} for i in range(5)]
    else:
        records = [{"complete": True, "cycles": 10 ** (3 + i), "mac_count": 4 ** (i + 1),
                    "sram_bits": 2 ** (17 + 2 * i), "cells": 2000 * 4 ** i} for i in range(4)]
    fig = draw_pareto(records)
    try:
        fig.canvas.draw()
        assert len(fig.axes) == 3  # MACs, cells (synthesis), SRAM
        assert len(_tick_numbers(fig.axes[0].yaxis)) >= 2  # the shared cycles axis, labelled on the left
        for ax in fig.axes:
            assert len(_tick_numbers(ax.xaxis)) >= 2, (ax.get_xlabel(), _tick_numbers(ax.xaxis))
        sram = fig.axes[2]
        lo, hi = sram.get_xlim()
        kib = [r["sram_bits"] / 8192 for r in records]
        assert lo <= min(kib) and max(kib) <= hi
        assert len(_tick_numbers(sram.xaxis)) >= 2
    finally:
        plt.close(fig)


def test_plot_without_synthesis_has_two_panels():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    rows = [_row(b, a, "x", cycles=1000 // (b + a)) for b in (3, 4, 5) for a in (15, 16)]
    fig = draw_pareto(config_totals(rows))
    try:
        fig.canvas.draw()
        assert [ax.get_xlabel().split()[0] for ax in fig.axes] == ["MAC", "on-chip"]
        assert len(_tick_numbers(fig.axes[0].yaxis)) >= 2
        for ax in fig.axes:
            assert len(_tick_numbers(ax.xaxis)) >= 2
    finally:
        plt.close(fig)


def test_store_keeps_rows_but_not_errors(tmp_path):
    store = ResultStore(tmp_path)
    assert store.get("abcd") is None
    assert store.put({"key": "abcd", "status": "ok", "cycles": 5})
    assert not store.put({"key": "abce", "status": "error", "reason": "x"})
    assert store.get("abcd")["cycles"] == 5 and "abce" not in store and len(store) == 1
    (tmp_path / "ab" / "abcf.json").write_text("{torn")
    assert store.get("abcf") is None  # a torn file is evaluated again, not trusted
    (tmp_path / "ab" / "abd0.json").write_text(json.dumps({"key": "other"}))
    assert store.get("abd0") is None
    with pytest.raises(ValueError, match="hex digest"):
        store.get("../x")
