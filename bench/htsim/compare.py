#!/usr/bin/env python3
"""lbsim against htsim on the k = 8 fat-tree: the same flows, the same model.

Writes the flow list with every size rounded up to whole 1,460-byte
segments, as htsim sends them (bench/scale/ws_10000.csv, or an htsim
connection matrix given with `--cm`), runs bench/htsim/k8.toml on it with
`lbsim run` under /usr/bin/time -v, and compares it with htsim's results:

- `--htsim-bin BIN` runs htsim itself, the driver bench/htsim/build.sh
  builds (bench/htsim/k8_driver.cpp over htsim's library), on the same flows
  (written as a connection matrix), also under /usr/bin/time -v, and prints
  both simulators' wall time, CPU time and peak RSS side by side;
- `--htsim DIR` reads a directory of htsim's results instead: `flows.txt`,
  one line per flow `id src dst size start_us finish_us fct_us
  data_pkts_sent retransmits timeouts fast_recoveries` with id = the flow's
  connection-matrix id, and `summary.txt` with `drops_switch=N`.

It prints totals with their ratio, then the flows split by size and by
whether a flow timed out in either simulator, and drops per ToR -> host
port where htsim's `queue_drops.txt` is there. `--record FILE.json` writes
the totals, times, commands, commits (lbsim's; htsim's where build.sh left
it beside the driver) and machine, and the flow-level readings
docs/fidelity.md quotes: counts by size and by where a flow timed out,
flows that lost their handshake, the flows with the most fast recoveries
beyond htsim's, and the ToR -> host ports whose drops differ most with
the flow toward each whose retransmits differ most the same way (bench/results/, rendered by tools/peer_tables.py).

    bench/htsim/build.sh CHECKOUT [--rfc]     # prints the driver's path
    python bench/htsim/compare.py --htsim-bin bench/htsim/build/htsim/htsim_k8
    python bench/htsim/compare.py --htsim-bin bench/htsim/build/htsim-rfc/htsim_k8 --rfc
    python bench/htsim/compare.py --cm PATH/flows.cm --htsim PATH/htsim_inrack_2000
    python bench/htsim/compare.py --set transport.recover=snd_max   # one rule back to the RFC
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from measure import machine, parse_time_v, repo_commit  # noqa: E402

MSS = 1460
# the four loss-response rules back to the RFCs' (htsim's timer scan kept),
# as `build.sh --rfc` changes them in htsim
RFC_RULES = ["transport.fr_ssthresh=flight_size", "transport.rto_ssthresh=flight_size",
             "transport.recovery_exit=ssthresh", "transport.recover=snd_max"]


def segment_list(cm: Path | None, where: Path = HERE) -> Path:
    """The flow list as lbsim reads it, sizes in whole segments, written in `where`."""
    out = where / "ws_10000_segments.csv" if cm is None else where / f"{cm.stem}_segments.csv"
    rows = []
    if cm is None:
        with open(HERE.parent / "scale" / "ws_10000.csv") as f:
            rows = [(r["src"], r["dst"], int(r["size_bytes"]), float(r["start_us"]), r["cm_id"]) for r in csv.DictReader(f)]
    else:
        # htsim's connection matrix: "src->dst id I start T size S", T in ps
        for line in cm.read_text().splitlines():
            p = line.split()
            if len(p) == 7 and "->" in p[0]:
                src, dst = p[0].split("->")
                rows.append((src, dst, int(p[6]), int(p[4]) / 1e6, p[2]))
        if not rows:
            raise SystemExit(f"--cm: no 'src->dst id I start T size S' lines in {cm}")
    with open(out, "w", newline="") as g:
        w = csv.writer(g)
        w.writerow(["src", "dst", "size_bytes", "start_us", "cm_id"])
        for src, dst, size, start, cid in rows:
            w.writerow([src, dst, math.ceil(size / MSS) * MSS, start, cid])
    return out


def write_cm(flow_list: Path, out: Path) -> Path:
    """The flow list as htsim's connection matrix (start in ps)."""
    with open(flow_list) as f:
        rows = list(csv.DictReader(f))
    lines = ["Nodes 128", f"Connections {len(rows)}"]
    for r in rows:
        lines.append(f"{r['src']}->{r['dst']} id {r['cm_id']} start {round(float(r['start_us']) * 1e6)} size {r['size_bytes']}")
    out.write_text("\n".join(lines) + "\n")
    return out


def timed(cmd: list[str], out: Path, what: str) -> dict:
    """Runs cmd under /usr/bin/time -v, its output kept in out/; the time report."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stdout.txt", "w") as so:
        done = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=so, stderr=subprocess.PIPE, text=True)
    (out / "time.txt").write_text(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed ({done.returncode}): {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ''}")
    return parse_time_v(done.stderr)



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--htsim-bin", type=Path, help="htsim's k = 8 driver (bench/htsim/build.sh): run it on the same flows")
    src.add_argument("--htsim", type=Path, help="directory of htsim's results (flows.txt, summary.txt)")
    ap.add_argument("--cm", type=Path, help="htsim connection matrix to run instead of bench/scale/ws_10000.csv")
    ap.add_argument("--rfc", action="store_true", help="lbsim with the RFC loss-response rules (against htsim built with --rfc)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="scenario override")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=HERE / "out", help="where both runs write (default bench/htsim/out)")
    ap.add_argument("--record", type=Path, help="write the comparison as JSON here (bench/results/)")
    a = ap.parse_args()
    flow_list = segment_list(a.cm)
    flows = pd.read_csv(flow_list)
    sets = (RFC_RULES if a.rfc else []) + a.set
    times = {}
    if a.htsim_bin is not None:
        if not a.htsim_bin.is_file():
            raise SystemExit(f"--htsim-bin: {a.htsim_bin} is not a file (build it with bench/htsim/build.sh CHECKOUT)")
        cm = a.cm.resolve() if a.cm else write_cm(flow_list, HERE / f"{flow_list.stem}.cm")
        a.htsim = a.out / "htsim"
        a.htsim.mkdir(parents=True, exist_ok=True)
        times["htsim"] = timed([str(a.htsim_bin.resolve()), str(cm), str(a.htsim), "--seed", str(a.seed)], a.htsim, "htsim")
        commit = a.htsim_bin.resolve().parent / "htsim_commit.txt"  # written by build.sh
        if commit.exists():  # kept with the results, for a later --htsim DIR
            shutil.copy(commit, a.htsim / "htsim_commit.txt")
    exe = shutil.which("lbsim") or sys.exit("lbsim is not installed (pip install .)")
    cmd = [exe, "run", str(HERE / "k8.toml"), "--seed", str(a.seed), "--set", f"workload.flow_list={flow_list}"]
    for kv in sets:
        cmd += ["--set", kv]
    ldir = a.out / "lbsim"
    times["lbsim"] = timed(cmd + ["--out", str(ldir), "--force", "--quiet"], ldir, "lbsim")
    s = json.loads((ldir / "summary.json").read_text())
    f = pd.read_parquet(ldir / "flows.parquet")
    ports = pd.read_parquet(ldir / "ports.parquet")
    f["cm_id"] = flows["cm_id"].values
    t = s["transport"]
    ours = {"drops": s["network"]["drops"]["total"], "retransmits": t["retransmits"], "timeouts": t["timeouts"],
            "fast recoveries": t["fast_recoveries"], "mean FCT ms": s["fct_us"]["mean"] / 1e3}
    record = {"date": datetime.date.today().isoformat(),
              "command": " ".join(["bench/htsim/compare.py", *(Path(x).name if "/" in x else x for x in sys.argv[1:])]),
              "commit": repo_commit(), "machine": machine(),
              "lbsim_version": subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip(),
              "flows": (a.cm.name if a.cm else "bench/scale/ws_10000.csv"), "seed": a.seed, "lbsim_sets": sets,
              "lbsim": {"time": times["lbsim"], "counts": ours, "events": s.get("events")}}
    if a.htsim is None:
        print("lbsim: " + ", ".join(f"{k} {v:,.1f}" if isinstance(v, float) else f"{k} {v:,}" for k, v in ours.items()))
        print(f"lbsim: wall {times['lbsim']['wall_s']} s, CPU {times['lbsim']['cpu_s']} s, peak RSS {times['lbsim']['max_rss_mb']} MB")
        write_record(a.record, record)
        return
    cols = "id src dst size start_us finish_us fct_us data_pkts_sent retransmits timeouts fast_recoveries".split()
    h = pd.read_csv(a.htsim / "flows.txt", sep=" ", comment="#", header=None, names=cols)
    m = f.merge(h, left_on="cm_id", right_on="id", suffixes=("", "_h"))
    if len(m) != len(f):
        raise SystemExit(f"--htsim: {len(m)} of {len(f)} flows matched by id")
    summary = dict(x.split("=", 1) for x in (a.htsim / "summary.txt").read_text().split() if "=" in x)
    theirs = {"drops": int(summary["drops_switch"]), "retransmits": int(h.retransmits.sum()), "timeouts": int(h.timeouts.sum()),
              "fast recoveries": int(h.fast_recoveries.sum()), "mean FCT ms": h.fct_us.mean() / 1e3}
    commit = a.htsim / "htsim_commit.txt"  # the build's, copied here when compare.py ran htsim
    record["htsim"] = {"counts": theirs, "completed": int(h.fct_us.notna().sum()), "events": int(summary["events"]) if "events" in summary else None,
                       "commit": commit.read_text().strip() if commit.exists() else None}
    if "htsim" in times:
        record["htsim"]["time"] = times["htsim"]
        record["htsim"]["command"] = "htsim_k8 FLOWS.cm OUT --seed " + str(a.seed)
        print("| run | wall s | CPU s | peak RSS MB | events |")
        print("|---|---|---|---|---|")
        for name, ev in (("lbsim", s.get("events")), ("htsim", record["htsim"]["events"])):
            tt = times[name]
            print(f"| {name} | {tt['wall_s']:.1f} | {tt['cpu_s']:.1f} | {tt['max_rss_mb']:.0f} | {ev:,} |" if ev else
                  f"| {name} | {tt['wall_s']:.1f} | {tt['cpu_s']:.1f} | {tt['max_rss_mb']:.0f} | |")
        print(f"\nlbsim / htsim: wall {times['lbsim']['wall_s'] / times['htsim']['wall_s']:.2f}, "
              f"peak RSS {times['lbsim']['max_rss_mb'] / times['htsim']['max_rss_mb']:.2f}\n")
    print("| count | lbsim | htsim | lbsim / htsim |")
    print("|---|---|---|---|")
    for k, v in ours.items():
        ratio = v / theirs[k] if theirs[k] else math.nan
        mark = "" if abs(ratio - 1) <= 0.1 else " (off by more than 10 %)"
        print(f"| {k} | {v:,.1f} | {theirs[k]:,.1f} | {ratio:.3f}{mark} |" if isinstance(v, float) else f"| {k} | {v:,} | {theirs[k]:,} | {ratio:.3f}{mark} |")
    record.update(flow_readings(m, f))
    hs = record["lost_handshakes"]
    print(f"\nflows whose handshake timed out (FCT >= the 3 s initial RTO): lbsim {hs['lbsim']['flows']:,}, "
          f"htsim {hs['htsim']['flows']:,}; mean FCT of the others {hs['lbsim']['others_mean_fct_ms']:.1f} / "
          f"{hs['htsim']['others_mean_fct_ms']:.1f} ms")
    print("\n| flows | n | retransmits (lbsim / htsim) | timeouts | fast recoveries | mean FCT ms |")
    print("|---|---|---|---|---|---|")
    for name, r in record["by_flow"].items():
        cells = [f"{r['lbsim'][k]:,} / {r['htsim'][k]:,}" for k in ("retransmits", "timeouts", "fast_recoveries")]
        print(f"| {name} | {r['flows']:,} | " + " | ".join(cells) + f" | {r['lbsim']['mean_fct_ms']:.1f} / {r['htsim']['mean_fct_ms']:.1f} |")
    print("\n| flow (cm id) | size | fast recoveries (lbsim / htsim) | retransmits | timeouts |")
    print("|---|---|---|---|---|")
    for r in record["fast_recovery_excess"]["flows"]:
        print(f"| {r['cm_id']} | {r['size_bytes']:,} | {r['lbsim']['fast_recoveries']} / {r['htsim']['fast_recoveries']} "
              f"| {r['lbsim']['retransmits']:,} / {r['htsim']['retransmits']:,} | {r['lbsim']['timeouts']} / {r['htsim']['timeouts']} |")
    record["receiver_drops"] = receiver_drops(ports, a.htsim / "queue_drops.txt", m)
    write_record(a.record, record)


def _side(x: pd.DataFrame, suffix: str) -> dict:
    """One simulator's counts over the flows x (suffix "" lbsim, "_h" htsim)."""
    return {"retransmits": int(x["retransmits" + suffix].sum()), "timeouts": int(x["timeouts" + suffix].sum()),
            "fast_recoveries": int(x["fast_recoveries" + suffix].sum()),
            "mean_fct_ms": float(x["fct_us" + suffix].mean() / 1e3) if len(x) else None}


def _flow(r: pd.Series) -> dict:
    keys = ("retransmits", "timeouts", "fast_recoveries")
    return {"cm_id": int(r["cm_id"]), "size_bytes": int(r["size_bytes"]),
            "lbsim": {k: int(r[k]) for k in keys}, "htsim": {k: int(r[k + "_h"]) for k in keys}}


def flow_readings(m: pd.DataFrame, f: pd.DataFrame, top: int = 3) -> dict:
    """What the record keeps flow by flow (m: lbsim's flows merged with
    htsim's, htsim's columns suffixed _h): counts by size and by where a
    flow timed out, the flows whose handshake timed out, and the flows with
    the most fast recoveries beyond htsim's."""
    lt, ht = m["timeouts"] > 0, m["timeouts_h"] > 0
    groups = {"all": m}
    for lo, hi, name in [(0, 1e5, "< 100 KB"), (1e5, 1e7, "100 KB-10 MB"), (1e7, math.inf, "> 10 MB")]:
        groups[name] = m[(m["size_bytes"] >= lo) & (m["size_bytes"] < hi)]
    groups.update({"no timeout in either": m[~lt & ~ht], "timeout in lbsim only": m[lt & ~ht],
                   "timeout in htsim only": m[~lt & ht], "timeout in both": m[lt & ht]})
    by_flow = {name: {"flows": len(x), "lbsim": _side(x, ""), "htsim": _side(x, "_h")} for name, x in groups.items()}

    def handshakes(col: str) -> dict:
        # a lost SYN or SYN-ACK costs the 3 s initial RTO (k8.toml, as htsim)
        slow = m[col] >= 3e6
        return {"flows": int(slow.sum()), "fct_share": float(m[col][slow].sum() / m[col].sum()),
                "others_mean_fct_ms": float(m[col][~slow].mean() / 1e3)}

    excess = (m["fast_recoveries"] - m["fast_recoveries_h"]).sort_values(ascending=False)
    extra = int(m["fast_recoveries"].sum() - m["fast_recoveries_h"].sum())
    return {"by_flow": by_flow,
            "lost_handshakes": {"lbsim": handshakes("fct_us"), "htsim": handshakes("fct_us_h")},
            "fast_recovery_excess": {"total": extra, "flows": [_flow(m.loc[i]) for i in excess.index[:top]],
                                     "of_top": int(excess.iloc[:top].sum())},
            "reordered_segments": int(f["reordered_segments"].sum())}


def write_record(path: Path | None, record: dict) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"wrote {path}")


def receiver_drops(ports: pd.DataFrame, queue_drops: Path, m: pd.DataFrame, top: int = 3) -> dict | None:
    """Drops per ToR -> host port side by side (htsim names them
    `LS<tor>->DST<host>(0)` in queue_drops.txt), the ports that differ most
    first, each with the flow toward it whose retransmits differ most the
    same way (more in the simulator that drops more there): a drop difference that
    sits at a few receivers comes from a few flows, not from the model."""
    if not queue_drops.exists():
        return None
    theirs = {}
    for line in queue_drops.read_text().splitlines():
        name, _, n = line.rpartition(" ")
        if name.startswith("LS") and "->DST" in name:
            theirs[int(name.split("->DST")[1].split("(")[0])] = int(n)
    to_host = ports[ports.port.str.contains(r"->H\d+#", regex=True)]
    ours = dict(zip(to_host.port.str.extract(r"->H(\d+)#")[0].astype(int), to_host.drops))
    hosts = sorted(set(ours) | set(theirs), key=lambda h: -abs(ours.get(h, 0) - theirs.get(h, 0)))
    dropping = [h for h in hosts if ours.get(h, 0) or theirs.get(h, 0)]
    rows = []
    for h in hosts[:top]:
        to_h = m[m["dst"].astype(int) == h]
        # the flow whose retransmits differ most in the direction the port's drops do
        sign = 1 if theirs.get(h, 0) >= ours.get(h, 0) else -1
        gap = sign * (to_h["retransmits_h"] - to_h["retransmits"])
        flow = _flow(to_h.loc[gap.idxmax()]) if len(to_h) else None
        rows.append({"host": h, "lbsim": int(ours.get(h, 0)), "htsim": int(theirs.get(h, 0)), "flow": flow})
    rest = hosts[top:]
    out = {"ports_dropping": {"lbsim": sum(1 for h in dropping if ours.get(h, 0)), "htsim": sum(1 for h in dropping if theirs.get(h, 0))},
           "top": rows, "rest": {"ports": len(rest), "lbsim": int(sum(ours.get(h, 0) for h in rest)),
                                 "htsim": int(sum(theirs.get(h, 0) for h in rest))}}
    print("\n| ToR -> host port | drops (lbsim / htsim) | flow toward it whose retransmits differ most the same way (cm id, size) |")
    print("|---|---|---|")
    for r in rows:
        fl = r["flow"]
        print(f"| -> H{r['host']} | {r['lbsim']:,} / {r['htsim']:,} | {fl['cm_id']}, {fl['size_bytes']:,} B |" if fl else
              f"| -> H{r['host']} | {r['lbsim']:,} / {r['htsim']:,} | |")
    print(f"| the other {out['rest']['ports']} | {out['rest']['lbsim']:,} / {out['rest']['htsim']:,} | |")
    return out

if __name__ == "__main__":
    main()
