"""``lbsim plot``: the figures a researcher draws first, for one run or to
compare several (folders written by ``lbsim run --out`` or sweep runs):

- ``fct_cdf.png``: the CDF of flow completion times (completed flows), one
  line per run, log time axis;
- ``slowdown_by_size.png``: mean slowdown (FCT / ideal FCT) per size bucket
  (< 100 KB, 100 KB - 10 MB, > 10 MB), bars per run;
- ``link_utilisation.png``: per sampled link, utilisation over time (first
  run with link samplers), when ``metrics.link_samplers`` was set;
- ``flow_goodput.png``: per-flow receive-side goodput over time (first run
  with ``metrics.flow_rate_window_ms``).

Each figure's numbers are also written as CSV beside it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

BUCKETS = [(0, 100_000, "< 100 KB"), (100_000, 10_000_000, "100 KB - 10 MB"), (10_000_000, float("inf"), "> 10 MB")]


def _label(run: Path) -> str:
    s = run / "summary.json"
    if s.exists():
        j = json.loads(s.read_text())
        scheme = j.get("scheme", {}).get("name", "")
        return f"{run.name} ({scheme})" if scheme else run.name
    return run.name


def plot_runs(runs: list[Path], out: Path) -> list[Path]:
    """Draws the figures for `runs` into `out`; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for r in runs:
        if not (r / "flows.parquet").exists():
            raise FileNotFoundError(f"{r}: no flows.parquet (not a folder written by lbsim run --out)")
    out.mkdir(parents=True, exist_ok=True)
    written = []

    def save(fig, name: str, table: pd.DataFrame) -> None:
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=120)
        plt.close(fig)
        table.to_csv(out / f"{name}.csv", index=False)
        written.append(out / f"{name}.png")

    # FCT CDF
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    rows = []
    for r in runs:
        f = pd.read_parquet(r / "flows.parquet")
        v = np.sort(f[f.completed].fct_us.to_numpy())
        if len(v):
            ax.plot(v / 1e3, np.arange(1, len(v) + 1) / len(v), label=_label(r))
            rows += [{"run": r.name, "quantile": q, "fct_ms": float(np.quantile(v, q)) / 1e3} for q in (0.5, 0.9, 0.99)]
    ax.set_xscale("log")
    ax.set_xlabel("flow completion time (ms)")
    ax.set_ylabel("CDF")
    ax.legend(fontsize=7)
    save(fig, "fct_cdf", pd.DataFrame(rows))

    # slowdown by size bucket
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    rows = []
    width = 0.8 / max(len(runs), 1)
    for i, r in enumerate(runs):
        f = pd.read_parquet(r / "flows.parquet")
        f = f[f.completed]
        ys = []
        for lo, hi, name in BUCKETS:
            g = f[(f.size_bytes >= lo) & (f.size_bytes < hi)]
            ys.append(float(g.slowdown.mean()) if len(g) else np.nan)
            rows.append({"run": r.name, "bucket": name, "mean_slowdown": ys[-1], "flows": len(g)})
        ax.bar(np.arange(len(BUCKETS)) + i * width, ys, width, label=_label(r))
    ax.set_xticks(np.arange(len(BUCKETS)) + 0.4 - width / 2, [b[2] for b in BUCKETS])
    ax.set_ylabel("mean slowdown (FCT / ideal)")
    ax.legend(fontsize=7)
    save(fig, "slowdown_by_size", pd.DataFrame(rows))

    # link utilisation over time
    with_links = [r for r in runs if (r / "links.parquet").exists()]
    if with_links:
        r = with_links[0]
        l = pd.read_parquet(r / "links.parquet")
        fig, ax = plt.subplots(figsize=(5.2, 3.6))
        for port, g in l.groupby("port"):
            ax.plot(g.t_ms, g.utilisation, lw=1, label=port)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("utilisation")
        ax.set_title(_label(r), fontsize=8)
        ax.legend(fontsize=6, ncol=2)
        save(fig, "link_utilisation", l)

    # per-flow goodput over time
    with_rates = [r for r in runs if (r / "flow_rates.parquet").exists()]
    if with_rates:
        r = with_rates[0]
        fr = pd.read_parquet(r / "flow_rates.parquet")
        fig, ax = plt.subplots(figsize=(5.2, 3.6))
        for fid, g in list(fr.groupby("flow_id"))[:20]:
            ax.plot(g.t_ms, g.gbps, lw=1, label=f"flow {fid}")
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("goodput (Gb/s)")
        ax.set_title(_label(r) + (" (first 20 flows)" if fr.flow_id.nunique() > 20 else ""), fontsize=8)
        ax.legend(fontsize=6, ncol=2)
        save(fig, "flow_goodput", fr)
    return written
