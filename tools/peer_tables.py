#!/usr/bin/env python3
"""Writes the peer comparisons quoted in README.md, docs/ and
bench/hpcc/README.md from the latest records under bench/results/, so that
a number there is always a record's, with its date and commit beside it.

A generated block sits between two markers in a Markdown file:

    <!-- peer-table NAME -->
    ...written by this tool...
    <!-- /peer-table -->

NAME is one of ``BLOCKS`` below; each reads the latest record of its kind
(by the record's date, then its file name). tests/test_peer_tables.py
regenerates every block and fails if a committed file differs.

    python3 tools/peer_tables.py          # rewrite the blocks
    python3 tools/peer_tables.py --check  # exit 1 if one is stale
"""

from __future__ import annotations

import json
import math
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
#: The files that quote peer comparisons.
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "bench" / "hpcc" / "README.md",
         ROOT / "bench" / "htsim" / "README.md"]
BLOCK = re.compile(r"(<!-- peer-table ([\w-]+) -->\n)(.*?)(<!-- /peer-table -->)", re.S)


def latest(pattern: str, results: Path = RESULTS) -> tuple[str, dict | list]:
    """The newest record whose file name matches the regular expression
    ``pattern`` (by its date, `_when`, then its name): (its path relative to
    the repository, its contents)."""
    found = [(json.loads(p.read_text()), p) for p in sorted(results.glob("*.json")) if re.match(pattern, p.name)]
    if not found:
        raise SystemExit(f"no record matching {pattern} under {results}")
    rec, path = max(found, key=lambda rp: (_when(rp[0])["date"], rp[1].name))
    return f"bench/results/{path.name}", rec


def _when(rec: dict | list) -> dict:
    """A record's date, lbsim commit and machine: its own; those its runs
    share (rdma_vs_hpcc keeps them per run); or, for an `lbsim compare`
    output (compare.json, a list of rows), its provenance's. None where not
    recorded."""
    if isinstance(rec, list):
        prov = rec[0]["provenance"]
        return {"date": prov["written_utc"][:10], "commit": prov["git_commit"], "machine": {"cpu": prov["cpu_model"]}}
    if "date" in rec or "runs" not in rec:
        return {k: rec.get(k) for k in ("date", "commit", "machine")}
    runs = list(rec["runs"].values())
    when = {k: runs[0].get(k) for k in ("date", "commit", "machine")}
    if any(r.get(k) != v for r in runs for k, v in when.items()):
        raise SystemExit("the runs of an RDMA record differ in date, commit or machine: quote them one by one")
    return when


def _lbsim_at(commit: str, version: str = "") -> str:
    """"lbsim at commit C", or, when the lbsim that ran (its `--version`)
    was built from another commit than the scripts', both."""
    built = re.search(r"commit ([0-9a-f]{7,40})", version)
    if built and not commit.startswith(built[1][:7]):
        return f"lbsim built at commit {built[1][:7]}, the scripts at {commit[:7]}"
    return f"lbsim at commit {commit[:7]}"


def _num(v: float, digits: int = 0) -> str:
    return f"{v:,.{digits}f}"


def _secs(v: float) -> str:
    return f"{v:,.2f} s" if v < 100 else f"{v:,.0f} s"


def _ratio(a: float, b: float) -> str:
    """lbsim / peer: a fraction 1/N when lbsim is more than 10x below."""
    r = a / b
    return f"1/{b / a:,.0f}" if r < 0.1 else f"{r:.2f}"


def _para(text: str) -> str:
    return textwrap.fill(text, width=76, break_on_hyphens=False, break_long_words=False)


def provenance(path: str, rec: dict) -> str:
    """Where a block's numbers come from: the record, its date, the lbsim
    build, the peer's run, the machine and the commands."""
    ns = rec["ns3"]
    m = rec["machine"]
    cmd = f"`{rec['command']}`"
    if ns.get("command", rec["command"]) != rec["command"]:
        cmd = f"ns-3's side from `{ns['command']}`, lbsim's from {cmd}"
    return (f"Record `{path}` ({rec['date']}): lbsim at commit {rec['commit'][:7]} (model revision "
            f"{rec['model_revision']}), ns-3 {ns['version']} run on {ns['date']}, {m['cores']}-core "
            f"{m['cpu']}; {cmd}.")


def timeout_split(rec: dict) -> str:
    """The FCT gap by where flows timed out, when the record has it."""
    sp = rec.get("timeout_split")
    if not sp:
        return ""
    pair = lambda g: f"{sp[g]['lbsim_mean_fct_ms']:.2f} / {sp[g]['ns3_mean_fct_ms']:.2f} ms"  # noqa: E731
    return (f"Flows that time out in neither simulator ({sp['neither']['flows']:,}) have mean FCTs "
            f"{pair('neither')} (lbsim / ns-3); {sp['ns-3 only']['flows']:,} flows time out in ns-3 only "
            f"({pair('ns-3 only')}), {sp['lbsim only']['flows']:,} in lbsim only ({pair('lbsim only')}) "
            f"and {sp['both']['flows']:,} in both ({pair('both')}).")


def b1_readme(results: Path = RESULTS) -> str:
    """README's B1 summary and table: speed, memory, FCTs, drops, loss response."""
    path, rec = latest(r"b1_vs_ns3_\d", results)
    lb, ns = rec["lbsim"], rec["ns3"]
    rows = [
        ("simulation loop wall", "wall_run_s", _secs),
        ("whole process wall", "wall_total_s", _secs),
        ("peak RSS", "peak_rss_mb", lambda v: f"{_num(v)} MB"),
        ("mean FCT", "mean_fct_ms", lambda v: f"{v:.2f} ms"),
        ("p99 FCT", "p99_fct_ms", lambda v: f"{v:.1f} ms"),
        ("mean FCT < 100 KB", "mean_lt100KB_ms", lambda v: f"{v:.2f} ms"),
        ("mean FCT > 10 MB", "mean_gt10MB_ms", lambda v: f"{v:.1f} ms"),
        ("drops", "drops", _num),
        ("retransmitted segments", "retransmits", _num),
        ("timeouts", "timeouts", _num),
        ("fast recoveries", "fast_recoveries", _num),
    ]
    out = [
        _para(f"On one core, lbsim runs benchmark B1 ({rec['flows']:,} web-search flows on 32 hosts) "
              f"{ns['wall_run_s'] / lb['wall_run_s']:,.0f} times faster than ns-3 {ns['version']} "
              f"(simulation loops) in {lb['peak_rss_mb'] / ns['peak_rss_mb']:.2f} of its peak memory, "
              f"on the same flow list. {provenance(path, rec)}"),
        "",
        f"| | lbsim | ns-3 {ns['version']} | lbsim / ns-3 |",
        "|---|---|---|---|",
    ]
    out += [f"| {name} | {fmt(lb[k])} | {fmt(ns[k])} | {_ratio(lb[k], ns[k])} |" for name, k, fmt in rows]
    out += [
        "",
        _para(f"lbsim processed {lb['events'] / 1e6:.1f} M events ({lb['events_per_s'] / 1e6:.1f} M events/s). "
              "ns-3's timeouts count its data retransmission timeouts (each doubles the RTO); lbsim's "
              f"also count lost SYNs. {timeout_split(rec)}"),
    ]
    return "\n".join(out) + "\n"


def b1_rules(results: Path = RESULTS) -> str:
    """docs/fidelity.md's B1 ablation: lbsim / ns-3 with all of b1.toml's
    ns-3 rules, with each put back to lbsim's default, and with none."""
    path, rec = latest(r"b1_vs_ns3_\d", results)
    lb, ns = rec["lbsim"], rec["ns3"]
    if not rec.get("ablation"):
        raise SystemExit(f"{path}: no ablation (run b1_compare.py with --ablate)")
    cols = [("mean FCT", "mean_fct_ms"), ("p99 FCT", "p99_fct_ms"), ("drops", "drops"),
            ("retransmits", "retransmits"), ("timeouts", "timeouts"), ("fast recoveries", "fast_recoveries")]
    out = [
        _para(f"lbsim / ns-3 {ns['version']} on B1's {rec['flows']:,} flows, one run each. {provenance(path, rec)}"),
        "",
        "| lbsim run | " + " | ".join(c for c, _ in cols) + " |",
        "|---" * (len(cols) + 1) + "|",
        "| b1.toml (all of ns-3's rules) | " + " | ".join(_ratio(lb[k], ns[k]) for _, k in cols) + " |",
    ]
    for row in rec["ablation"]:
        label = "none: every rule at lbsim's default" if row["defaults"] == ["all"] else f"`{row['defaults'][0]}` at lbsim's default"
        out.append(f"| {label} | " + " | ".join(_ratio(row[k], ns[k]) for _, k in cols) + " |")
    single = [row for row in rec["ablation"] if row["defaults"] != ["all"]]
    if single:
        top = max(single, key=lambda row: abs(row["timeouts"] / lb["timeouts"] - 1))
        out += ["", _para(f"One rule at a time, `{top['defaults'][0]}` moves the timeouts most: with lbsim's default "
                          f"they are {top['timeouts'] / ns['timeouts']:.2f} of ns-3's (against "
                          f"{lb['timeouts'] / ns['timeouts']:.2f} with all rules) and the mean FCT "
                          f"{top['mean_fct_ms'] / ns['mean_fct_ms']:.2f} of ns-3's.")]
    return "\n".join(out) + "\n"


def b1_speed(results: Path = RESULTS) -> str:
    """docs/performance.md's B1 row against ns-3: speed and memory."""
    path, rec = latest(r"b1_vs_ns3_\d", results)
    lb, ns = rec["lbsim"], rec["ns3"]
    out = [
        "| run | lbsim | ns-3 | lbsim / ns-3 |",
        "|---|---|---|---|",
        f"| B1, {rec['flows']:,} flows, simulation loop | {_secs(lb['wall_run_s'])} ({lb['events'] / 1e6:.1f} M events) "
        f"| {_secs(ns['wall_run_s'])} | {_ratio(lb['wall_run_s'], ns['wall_run_s'])} |",
        f"| same, whole process | {_secs(lb['wall_total_s'])} | {_secs(ns['wall_total_s'])} "
        f"| {_ratio(lb['wall_total_s'], ns['wall_total_s'])} |",
        f"| same, peak RSS | {_num(lb['peak_rss_mb'])} MB | {_num(ns['peak_rss_mb'])} MB (most of it the Python bindings) "
        f"| {_ratio(lb['peak_rss_mb'], ns['peak_rss_mb'])} |",
        "",
        _para(provenance(path, rec)),
    ]
    return "\n".join(out) + "\n"


def htsim_table(path: str, rec: dict) -> list[str]:
    """One htsim record: both simulators' counts, time and memory."""
    lb, hs = rec["lbsim"], rec["htsim"]
    fmt = lambda v: f"{v:,.1f}" if isinstance(v, float) else f"{v:,}"  # noqa: E731
    out = ["| | lbsim | htsim | lbsim / htsim |", "|---|---|---|---|"]
    out += [f"| {k} | {fmt(lb['counts'][k])} | {fmt(hs['counts'][k])} | {lb['counts'][k] / hs['counts'][k]:.2f} |"
            for k in lb["counts"]]
    for name, key, unit in [("wall", "wall_s", "s"), ("CPU", "cpu_s", "s"), ("peak RSS", "max_rss_mb", "MB")]:
        a, b = lb["time"][key], hs["time"][key]
        out.append(f"| {name} | {a:,.1f} {unit} | {b:,.1f} {unit} | {_ratio(a, b)} |")
    out.append(f"| events | {lb['events'] / 1e6:.1f} M | {hs['events'] / 1e6:.1f} M | {lb['events'] / hs['events']:.2f} |")
    m = rec["machine"]
    sets = f" with `{' '.join(rec['lbsim_sets'])}`" if rec["lbsim_sets"] else ""
    out += ["", _para(f"Record `{path}` ({rec['date']}): lbsim seed {rec['seed']} at commit {rec['commit'][:7]}{sets}, "
                      f"{m['cores']}-core {m['cpu']}; `{rec['command']}`.")]
    return out


def htsim_k8(results: Path = RESULTS) -> str:
    """docs/fidelity.md: the latest htsim records, htsim's rules and the RFC's."""
    out = []
    for title, pattern in [("htsim's rules in both", r"htsim_k8_\d"), ("the RFC rules in both (`--rfc`)", r"htsim_k8_rfc_\d")]:
        path, rec = latest(pattern, results)
        out += ([""] if out else []) + [f"With {title}, web-search list:", "", *htsim_table(path, rec)]
    return "\n".join(out) + "\n"


def htsim_speed(results: Path = RESULTS) -> str:
    """docs/performance.md: the latest htsim record's time and memory."""
    path, rec = latest(r"htsim_k8_\d", results)
    lb, hs = rec["lbsim"], rec["htsim"]
    out = ["| run | lbsim | htsim | lbsim / htsim |", "|---|---|---|---|"]
    for name, key, unit in [("wall", "wall_s", "s"), ("CPU", "cpu_s", "s"), ("peak RSS", "max_rss_mb", "MB")]:
        a, b = lb["time"][key], hs["time"][key]
        out.append(f"| k = 8, 10,000 flows, {name} | {a:,.1f} {unit} | {b:,.1f} {unit} | {_ratio(a, b)} |")
    out.append(f"| same, events | {lb['events'] / 1e6:.1f} M | {hs['events'] / 1e6:.1f} M | {lb['events'] / hs['events']:.2f} |")
    m = rec["machine"]
    out += ["", _para(f"Record `{path}` ({rec['date']}): lbsim at commit {rec['commit'][:7]}, {m['cores']}-core "
                      f"{m['cpu']}; `{rec['command']}`.")]
    return "\n".join(out) + "\n"


def htsim_readme(results: Path = RESULTS) -> str:
    """README's sentence on htsim's speed."""
    path, rec = latest(r"htsim_k8_\d", results)
    lb, hs = rec["lbsim"]["time"], rec["htsim"]["time"]
    return _para(f"On the k = 8 fat-tree's 10,000 web-search flows with htsim's model, lbsim took "
                 f"{lb['wall_s']:,.1f} s and {lb['max_rss_mb']:,.0f} MB where htsim took {hs['wall_s']:,.1f} s and "
                 f"{hs['max_rss_mb']:,.0f} MB (record `{path}`, {rec['date']}, lbsim at commit {rec['commit'][:7]}; "
                 "docs/fidelity.md compares their results).") + "\n"


def _htsim_source(rec: dict) -> str:
    """Where a record's htsim side comes from."""
    h = rec["htsim"]
    commit = f" at commit {h['commit'][:7]}" if h.get("commit") else " (commit not recorded)"
    if "command" not in h:
        return f"htsim's results{commit} read from an earlier run's directory"
    return f"htsim{commit} run by the same command"


def _htsim_provenance(path: str, rec: dict) -> str:
    m = rec["machine"]
    sets = f" with `{' '.join(rec['lbsim_sets'])}`" if rec["lbsim_sets"] else ""
    side = f"; {_htsim_source(rec)}" if "htsim" in rec else ""
    return (f"Record `{path}` ({rec['date']}): lbsim seed {rec['seed']}{sets}; "
            f"{_lbsim_at(rec['commit'], rec.get('lbsim_version', ''))}{side}, "
            f"{m['cores']}-core {m['cpu']}; `{rec['command']}`.")


_COUNTS = ["drops", "retransmits", "timeouts", "fast recoveries", "mean FCT ms"]


def _fmt(v) -> str:
    return f"{v:,.1f}" if isinstance(v, float) else f"{v:,}"


def _same_htsim(recs: list[tuple[str, dict]]) -> None:
    """Refuses records whose htsim side is not the first record's run."""
    hs = recs[0][1]["htsim"]["counts"]
    for path, rec in recs[1:]:
        if rec["htsim"]["counts"] != hs:
            raise SystemExit(f"{path}: another htsim run than {recs[0][0]}'s (rerun it with --htsim OUT/htsim)")


def _seed_records(results: Path) -> list[tuple[str, dict]]:
    """The web-search record (htsim's rules) and those of lbsim's other seeds."""
    seeds = sorted({int(p.name.split("_seed")[1].split("_")[0]) for p in results.glob("htsim_k8_seed*_*.json")})
    recs = [latest(r"htsim_k8_\d", results)] + [latest(rf"htsim_k8_seed{s}_\d", results) for s in seeds]
    _same_htsim(recs)
    return recs


def _worst(recs: list[tuple[str, dict]], keys: list[str]) -> int:
    """The whole per cent every lbsim / htsim ratio of ``keys`` is within."""
    return _within(max(abs(r["lbsim"]["counts"][k] / r["htsim"]["counts"][k] - 1) for _, r in recs for k in keys))


def htsim_seeds(results: Path = RESULTS) -> str:
    """docs/fidelity.md: lbsim's seeds (ECMP salts) against one htsim run."""
    recs = _seed_records(results)
    hs = recs[0][1]["htsim"]["counts"]
    names = " / ".join(str(r["seed"]) for _, r in recs)
    out = [f"| count | lbsim seed {names} | htsim | lbsim / htsim |", "|---|---|---|---|"]
    for k in _COUNTS:
        vals = [r["lbsim"]["counts"][k] for _, r in recs]
        lo, hi = min(vals) / hs[k], max(vals) / hs[k]
        out.append(f"| {k} | {' / '.join(_fmt(v) for v in vals)} | {_fmt(hs[k])} | {lo:.2f}-{hi:.2f} |")
    out += ["", _para(f"Drops, retransmits, timeouts and fast recoveries are within {_worst(recs, _COUNTS[:4])} % of "
                      f"htsim's in every seed, the mean FCT within {_worst(recs, _COUNTS[4:])} %. Records: "
                      + ", ".join(f"`{p}` ({r['date']}, commit {r['commit'][:7]})" for p, r in recs) + ".")]
    return "\n".join(out) + "\n"


def _ratios(a: dict, b: dict, keys=_COUNTS) -> str:
    return ", ".join(f"{k} {a[k] / b[k]:.2f}" for k in keys)


#: htsim's departures as lbsim's transport options, in the order of
#: docs/fidelity.md's table (records htsim_k8_without_<option>_DATE.json).
HTSIM_RULES = ("fr_ssthresh", "rto_ssthresh", "recovery_exit", "recover", "rto_tick_ms")


def htsim_defaults(results: Path = RESULTS) -> str:
    """docs/fidelity.md: htsim's rules put back to lbsim's defaults, all
    together and one at a time, each against htsim's own rules."""
    k8 = latest(r"htsim_k8_\d", results)
    d = latest(r"htsim_k8_defaults_\d", results)
    one = [(rule, latest(rf"htsim_k8_without_{rule}_\d", results)) for rule in HTSIM_RULES]
    _same_htsim([k8, d, *(r for _, r in one)])
    pr, r = latest(r"htsim_k8_rfc_\d", results)
    hs = k8[1]["htsim"]["counts"]

    def row(label: str, rec: dict) -> str:
        c = rec["lbsim"]["counts"]
        return f"| {label} | " + " | ".join(f"{_fmt(c[k])} ({c[k] / hs[k]:.2f})" for k in _COUNTS) + " |"

    fr = {rule: rec["lbsim"]["counts"]["fast recoveries"] for rule, (_, rec) in one}
    most = max(fr, key=lambda rule: abs(fr[rule] - k8[1]["lbsim"]["counts"]["fast recoveries"]))
    out = [
        "| lbsim run (ratio to htsim with its rules) | " + " | ".join(_COUNTS) + " |",
        "|---" * (len(_COUNTS) + 1) + "|",
        row("all of htsim's rules (bench/htsim/k8.toml)", k8[1]),
        *(row(f"`{rule}` back to lbsim's default", rec) for rule, (_, rec) in one),
        row("none: lbsim's RFC defaults", d[1]),
        "",
        _para(f"Of the five, `{most}` alone moves lbsim's fast recoveries most ({k8[1]['lbsim']['counts']['fast recoveries']:,} "
              f"with all five, {fr[most]:,} without it). Against htsim built with `--rfc` (record `{pr}`), lbsim with the "
              f"same RFC rules and htsim's 10 ms timer scan gives {_ratios(r['lbsim']['counts'], r['htsim']['counts'])}: "
              "with the loss response the same in both, the counts agree again, so the gap in the last row is the TCP's "
              "loss response, not the fabric or the host model. Records (lbsim seed 1, each against the htsim run of "
              f"`{k8[0]}`): " + ", ".join(f"`{p}`" for p, _ in [d, *(x for _, x in one)])
              + f", {d[1]['date']}, commit {d[1]['commit'][:7]}; `{d[1]['command']}` and the like."),
    ]
    return "\n".join(out) + "\n"


def htsim_inrack(results: Path = RESULTS) -> str:
    """docs/fidelity.md: the in-rack list, both rule sets, the flows with
    the most extra fast recoveries and the ports whose drops differ."""
    p1, a = latest(r"htsim_inrack_\d", results)
    p2, b = latest(r"htsim_inrack_rfc_\d", results)
    out = ["| count | htsim's rules: lbsim / htsim | ratio | RFC rules: lbsim / htsim | ratio |", "|---|---|---|---|---|"]
    for k in _COUNTS:
        x, y = a["lbsim"]["counts"][k], a["htsim"]["counts"][k]
        u, v = b["lbsim"]["counts"][k], b["htsim"]["counts"][k]
        out.append(f"| {k} | {_fmt(x)} / {_fmt(y)} | {x / y:.2f} | {_fmt(u)} / {_fmt(v)} | {u / v:.2f} |")
    ex = a["fast_recovery_excess"]
    extra = a["lbsim"]["counts"]["fast recoveries"] - a["htsim"]["counts"]["fast recoveries"]
    flows = "; ".join(f"`.cm` id {f['cm_id']} ({f['size_bytes'] / 1e6:.1f} MB): {f['lbsim']['fast_recoveries']} against "
                      f"{f['htsim']['fast_recoveries']}, retransmits {f['lbsim']['retransmits']:,} against "
                      f"{f['htsim']['retransmits']:,}" for f in ex["flows"])
    rd = a["receiver_drops"]
    def flow(f: dict) -> str:
        return (f" (`.cm` id {f['cm_id']}, {f['size_bytes'] / 1e6:.1f} MB, retransmits / timeouts "
                f"{f['lbsim']['retransmits']:,} / {f['lbsim']['timeouts']} in lbsim, {f['htsim']['retransmits']:,} / "
                f"{f['htsim']['timeouts']} in htsim)")

    ports = "; ".join(f"toward host {r['host']}, {r['lbsim']:,} against {r['htsim']:,}" + (flow(r["flow"]) if r["flow"] else "")
                      for r in rd["top"])
    top_diff = sum(r["htsim"] - r["lbsim"] for r in rd["top"])
    all_diff = a["htsim"]["counts"]["drops"] - a["lbsim"]["counts"]["drops"]
    rest = rd["rest"]
    out += [
        "",
        _para(f"With htsim's rules, lbsim has {extra:,} more fast recoveries; the {len(ex['flows'])} flows with the most "
              f"extra account for {ex['of_top']:,}: {flows}. The drops differ most at {len(rd['top'])} ToR -> host ports "
              f"({top_diff:,} of the {all_diff:,} difference), each named with the flow toward it whose retransmits "
              f"differ most the same way: {ports}. At the other {rest['ports']} ports: "
              f"{rest['lbsim']:,} against {rest['htsim']:,} ({rest['lbsim'] / rest['htsim']:.2f})."),
        "",
        _para(f"{_htsim_provenance(p1, a)} {_htsim_provenance(p2, b)}"),
    ]
    return "\n".join(out) + "\n"


def htsim_handshakes(results: Path = RESULTS) -> str:
    """docs/fidelity.md: how many flows lost a handshake, and what that does to the mean."""
    rows = [("in-rack, RFC rules", *latest(r"htsim_inrack_rfc_\d", results)),
            ("in-rack, htsim's rules", *latest(r"htsim_inrack_\d", results)),
            ("web search, htsim's rules", *latest(r"htsim_k8_\d", results))]
    out = ["| list, rules | flows over 3 s: lbsim / htsim | their share of all FCT | mean FCT: lbsim / htsim | the others' mean FCT |",
           "|---|---|---|---|---|"]
    for name, path, rec in rows:
        h, c = rec["lost_handshakes"], (rec["lbsim"]["counts"], rec["htsim"]["counts"])
        out.append(f"| {name} | {h['lbsim']['flows']:,} / {h['htsim']['flows']:,} | {h['lbsim']['fct_share'] * 100:.0f} % / "
                   f"{h['htsim']['fct_share'] * 100:.0f} % | {c[0]['mean FCT ms']:.1f} / {c[1]['mean FCT ms']:.1f} ms "
                   f"| {h['lbsim']['others_mean_fct_ms']:.1f} / {h['htsim']['others_mean_fct_ms']:.1f} ms |")
    out += ["", _para("Records: " + ", ".join(f"`{p}` ({r['date']}, commit {r['commit'][:7]})" for _, p, r in rows) + ".")]
    return "\n".join(out) + "\n"


def htsim_flows(results: Path = RESULTS) -> str:
    """docs/fidelity.md: flow by flow on the web-search list."""
    path, rec = latest(r"htsim_k8_\d", results)
    bf = rec["by_flow"]
    ne, n = bf["no timeout in either"], bf["all"]["flows"]
    cell = lambda k, f="{:,}": f"{f.format(ne['lbsim'][k])} / {f.format(ne['htsim'][k])}"  # noqa: E731
    return _para(
        f"Flows without a timeout in either simulator ({ne['flows'] / n * 100:.0f} % of the web-search list; lbsim with "
        f"htsim's rules, seed {rec['seed']}): retransmits {cell('retransmits')}, fast recoveries {cell('fast_recoveries')}, "
        f"mean FCT {cell('mean_fct_ms', '{:.1f}')} ms. Which flows time out differs "
        f"({bf['timeout in lbsim only']['flows']:,} time out in lbsim only, {bf['timeout in htsim only']['flows']:,} in "
        f"htsim only): path choice differs, and a timeout is a threshold event. Per-flow ECMP reorders nothing: "
        f"`reordered_segments` sums to {rec['reordered_segments']:,} over the {n:,} flows. Record `{path}` "
        f"({rec['date']}, commit {rec['commit'][:7]}).") + "\n"


def htsim_hostnic(results: Path = RESULTS) -> str:
    """docs/fidelity.md: Linux-like hosts against the unbounded NIC FIFO."""
    ph, h = latest(r"htsim_k8_hostnic_\d", results)
    pd_, d = latest(r"htsim_k8_defaults_\d", results)
    a, b = h["lbsim"]["counts"], d["lbsim"]["counts"]
    factors = ", ".join(f"{k} {a[k] / b[k]:.2f}x" for k in _COUNTS)
    return _para(
        f"The same flows with Linux-like hosts (`--set network.host_nic=backpressure --set network.host_buffer_pkts=100`: "
        f"TCP waits instead of queueing thousands of packets in the NIC; lbsim's RFC defaults) give {a['drops']:,} drops, "
        f"{a['retransmits']:,} retransmits, {a['timeouts']:,} timeouts, {a['fast recoveries']:,} fast recoveries and a "
        f"mean FCT of {a['mean FCT ms']:.1f} ms, against {b['drops']:,}, {b['retransmits']:,}, {b['timeouts']:,}, "
        f"{b['fast recoveries']:,} and {b['mean FCT ms']:.1f} ms with the unbounded NIC FIFO both simulators use "
        f"(record `{pd_}`): {factors} of those. {_htsim_provenance(ph, h)}") + "\n"


def htsim_within(results: Path = RESULTS) -> str:
    """README: how close lbsim with htsim's rules comes, over the seeds recorded."""
    recs = _seed_records(results)
    return _para(f"with them, lbsim's drops, retransmits, timeouts and fast recoveries are within "
                 f"{_worst(recs, _COUNTS[:4])} % of htsim's on its 10,000-flow reference in each of lbsim's seeds "
                 f"{', '.join(str(r['seed']) for _, r in recs)}, and its mean FCT within {_worst(recs, _COUNTS[4:])} % "
                 f"(how many handshakes a burst hits decides it; docs/fidelity.md) (records "
                 + ", ".join(f"`{p}`" for p, _ in recs) + f", {recs[0][1]['date']}).") + "\n"


def htsim_check(results: Path = RESULTS) -> str:
    """bench/htsim/README.md: the driver's totals on the in-rack list."""
    p1, a = latest(r"htsim_inrack_\d", results)
    p2, b = latest(r"htsim_inrack_rfc_\d", results)
    tot = lambda r: ", ".join(f"{k} {_fmt(r['htsim']['counts'][k])}" for k in _COUNTS[:4])  # noqa: E731
    return _para(
        f"On the in-rack list (the first 2,000 web-search flows with each destination in its source's rack, one path "
        f"per flow, so path choice plays no part) the driver gives {tot(a)} ({_htsim_source(a)}; record `{p1}`, "
        f"{a['date']}), and with `--rfc` {tot(b)} (record `{p2}`, {b['date']}).") + "\n"


# RDMA against the HPCC project's simulator (bench/hpcc/): docs/rdma.md,
# README.md and bench/hpcc/README.md.

#: The speed-up over the HPCC simulator that lbsim's RDMA model was aimed at.
RDMA_SPEED_TARGET = 30
#: fct_stats.py's size buckets as the docs write them.
HPCC_BUCKETS = {"<10KB": "< 10 KB", "10-100KB": "10-100 KB", "100KB-1MB": "100 KB-1 MB", ">1MB": "> 1 MB"}


def _hpcc_commit(rec: dict) -> str | None:
    """The HPCC checkout's commit, wherever the record keeps it."""
    if rec.get("hpcc_commit"):
        return rec["hpcc_commit"]
    sides = [rec.get("hpcc")] + [r.get("hpcc") for r in rec.get("runs", {}).values()]
    found = {s["time"]["hpcc_commit"] for s in sides if s and s.get("time", {}).get("hpcc_commit")}
    return found.pop() if len(found) == 1 else None


def _rdma_machine(m: dict | None) -> str:
    if not m:
        return "machine not recorded"
    if m.get("cores"):
        return f"{m['cores']}-core {m['cpu']}"
    return f"{m['cpu']} ({m['system']}), core count not recorded" if m.get("system") else f"{m['cpu']}, core count not recorded"


def rdma_provenance(path: str, rec: dict) -> str:
    """Record, date, lbsim commit, HPCC commit, machine and command."""
    w = _when(rec)
    commit = _lbsim_at(w["commit"], rec.get("lbsim_version", "")) if w["commit"] else "lbsim commit not recorded"
    hpcc = _hpcc_commit(rec)
    hpcc = f"HPCC at commit {hpcc[:7]}" if hpcc else "HPCC commit not recorded"
    cmd = rec.get("command") or rec.get("reproduce")
    return (f"Record `{path}` ({w['date']}): {commit}, {hpcc}, {_rdma_machine(w['machine'])}"
            + (f"; `{cmd}`." if cmd else "."))


def _load_label(run: str) -> str:
    """"30 %" for a run named websearch_30pct or a flow file flows_ws30.txt."""
    m = re.search(r"(\d+)pct|ws(\d+)", run)
    return f"{m[1] or m[2]} %" if m else run


def _buckets(side: dict) -> dict:
    return {b["bucket"]: b for b in side["slowdown"]["slowdown"]}


def _pct(x: float, digits: int = 2) -> str:
    return f"{100 * x:.{digits}f} %"


def _within(x: float) -> int:
    """The whole per cent a relative gap is within."""
    return math.ceil(round(100 * x, 6))


def rdma_gaps(rec: dict) -> dict:
    """Per bucket and load, lbsim / HPCC - 1 of the median and the p99."""
    gaps: dict = {"median": [], "p99": []}
    for run, r in rec["runs"].items():
        lb, hp = _buckets(r["lbsim"]), _buckets(r["hpcc"])
        for b, name in HPCC_BUCKETS.items():
            for k in gaps:
                gaps[k].append((lb[b][k] / hp[b][k] - 1, f"{name} at {_load_label(run)}", run))
    return gaps


def rdma_hpcc(results: Path = RESULTS) -> str:
    """docs/rdma.md: slowdown per bucket against the HPCC simulator, the
    largest gaps, the flows below the standalone FCT and the PFC frames."""
    path, rec = latest(r"rdma_vs_hpcc_\d", results)
    runs = rec["runs"]
    out = ["| load | bucket | flows | median | p99 |", "|---|---|---|---|---|"]
    for run, r in runs.items():
        lb, hp = _buckets(r["lbsim"]), _buckets(r["hpcc"])
        for b, name in HPCC_BUCKETS.items():
            a, h = lb[b], hp[b]
            n = f"{a['count']:,}" if a["count"] == h["count"] else f"{a['count']:,} / {h['count']:,}"
            out.append(f"| {_load_label(run)} | {name} | {n} | {a['median']:.3f} / {h['median']:.3f} "
                       f"| {a['p99']:.2f} / {h['p99']:.2f} |")
    gaps = rdma_gaps(rec)
    (gm, wm, _), (gp, wp, _) = (max(gaps[k], key=lambda g: abs(g[0])) for k in ("median", "p99"))
    text = (f"Every median is within {_within(abs(gm))} % and every p99 within {_within(abs(gp))} %: the largest "
            f"median gap is {_pct(abs(gm))} ({wm}), the largest p99 gap {_pct(abs(gp))} ({wp}).")
    higher = sum(g > 0 for g, _, _ in gaps["median"])
    means = ", ".join(f"{_pct(sum(g for g, _, r in gaps['median'] if r == run) / len(HPCC_BUCKETS))} at {_load_label(run)}"
                      for run in runs)
    text += f" lbsim's median is the higher in {higher} of {len(gaps['median'])} buckets; lbsim / HPCC - 1 averages {means}."
    done = [(r["lbsim"]["slowdown"]["completed"], r["hpcc"]["slowdown"]["completed"], _buckets(r["lbsim"])["all"]["count"])
            for r in runs.values()]
    if all(a == h == n for a, h, n in done):
        text += f" All {done[0][2]:,} flows completed in both simulators at every load."
    small = [(run, _buckets(r["hpcc"])["<10KB"].get("below_1"), _buckets(r["lbsim"])["<10KB"].get("below_1"))
             for run, r in runs.items()]
    small = [s for s in small if s[1] is not None and s[2] is not None]
    if small:
        text += (" Flows under 10 KB that finished below the standalone FCT (unclamped slowdown < 1): "
                 + "; ".join(f"at {_load_label(run)}, {_pct(h, 0)} in the reference against {_pct(a, 0)} here"
                             for run, h, a in small) + ".")
    pauses = [(run, r["lbsim"]["slowdown"]["pfc"]["pause_frames"],
               r["hpcc"]["slowdown"]["pfc"]["host"]["pause"] + r["hpcc"]["slowdown"]["pfc"]["switch"]["pause"])
              for run, r in runs.items()]
    if all(a == h == 0 for _, a, h in pauses):
        text += " No PAUSE frame was sent in any of these runs."
    else:
        text += " PAUSE frames (lbsim / HPCC): " + "; ".join(f"{a:,} / {h:,} at {_load_label(run)}" for run, a, h in pauses) + "."
    return "\n".join(out + ["", _para(text + " " + rdma_provenance(path, rec))]) + "\n"


def rdma_incast(results: Path = RESULTS) -> str:
    """docs/rdma.md: PFC on the incast against the HPCC simulator."""
    path, rec = latest(r"rdma_pfc_incast_vs_hpcc_\d", results)
    h, lb = rec["ecn_off"]["hpcc"], rec["ecn_off"]["lbsim"]
    drops = "with no drop" if lb["ingress_drops"] == 0 else f"with {lb['ingress_drops']:,} drops"
    sw = h.get("pause_frames_received_by_switches", 0)
    sw = f" (its switches {sw:,} PAUSE frames)" if sw else ""
    lsw = lb["switch_port_paused_us"]
    lsw = f" and its switch ports {lsw / 1e3:.1f} ms" if lsw else ""
    text = (f"With ECN off, the reference's hosts received {h['pause_frames_received_by_hosts']:,} PAUSE and "
            f"{h['resume_frames_received_by_hosts']:,} RESUME frames{sw} and its {h['ports_paused']} paused ports spent "
            f"{h['paused_port_time_us'] / 1e3:.1f} ms paused in all; lbsim's switches sent {lb['pause_frames']:,} PAUSE "
            f"and {lb['resume_frames']:,} RESUME frames and its hosts spent {lb['host_paused_us'] / 1e3:.1f} ms paused{lsw}, "
            f"{drops}; slowdown {lb['slowdown_median']:.2f} here against {h['slowdown_median']:.2f} there (median; "
            f"max {lb['slowdown_max']:.2f} / {h['slowdown_max']:.2f}).")
    h, lb = rec["dcqcn_on"]["hpcc"], rec["dcqcn_on"]["lbsim"]
    hp = h["pause_frames_received_by_hosts"] + h.get("pause_frames_received_by_switches", 0)
    paused = ("neither pauses" if hp == lb["pause_frames"] == 0
              else f"the reference's ports receive {hp:,} PAUSE frames and lbsim's switches send {lb['pause_frames']:,}")
    text += (f" With DCQCN on, {paused} and the slowdown is {lb['slowdown_median']:.2f} / {h['slowdown_median']:.2f} "
             f"(median, lbsim / HPCC; max {lb['slowdown_max']:.2f} / {h['slowdown_max']:.2f}).")
    return _para(text + " " + rdma_provenance(path, rec)) + "\n"


def _events(side: dict) -> dict:
    """A run's event mix: all, link arrivals, port_free, timers and NIC
    wake-ups, CPU per event (ns)."""
    k = side["events_by_kind"]
    timers = sum(v for name, v in k.items() if name.endswith("_timer") or name == "nic_ready")
    return {"events": side["events"], "arrive": k["arrive"], "port_free": k.get("port_free"), "timers": timers,
            "nic": "nic_ready" in k, "ns": side["time"]["cpu_s"] / side["events"] * 1e9}


def rdma_cost(rec: dict) -> dict:
    """The cost record's derived numbers: events and arrivals of RDMA over
    TCP, the floor (RDMA's link arrivals at TCP's CPU per event) and the
    reference's CPU over that floor."""
    rd, tc = _events(rec["lbsim"]), _events(rec["lbsim_tcp"])
    floor = rd["arrive"] * rec["lbsim_tcp"]["time"]["cpu_s"] / rec["lbsim_tcp"]["events"]
    return {"rdma": rd, "tcp": tc, "events_x": rd["events"] / tc["events"], "arrive_x": rd["arrive"] / tc["arrive"],
            "floor_s": floor, "hpcc_over_floor": rec["hpcc"]["time"]["cpu_s"] / floor}


def _event_cost(ns_rdma: float, ns_tcp: float) -> str:
    r = ns_rdma / ns_tcp
    return "costs what a TCP event does" if abs(r - 1) < 0.05 else f"costs {r:.2f}x a TCP event"


def rdma_speed(results: Path = RESULTS) -> str:
    """docs/rdma.md "Speed": CPU and memory against the HPCC simulator, the
    event mix against lbsim's TCP, and the floor it sets."""
    path, rec = latest(r"rdma_vs_hpcc_\d", results)
    cpath, crec = latest(r"rdma_cost_vs_tcp_hpcc_\d", results)
    runs = list(rec["runs"].items())
    loads = " and ".join(_load_label(r) for r, _ in runs)
    t = [(r["hpcc"]["time"], r["lbsim"]["time"]) for _, r in runs]
    c = rdma_cost(crec)
    rd, tc = c["rdma"], c["tcp"]
    h, lb, lt = crec["hpcc"]["time"], crec["lbsim"]["time"], crec["lbsim_tcp"]["time"]
    where = "on the same machine" if _when(crec)["machine"] == _when(rec)["machine"] else "on another machine"
    started = [r["hpcc"]["time"].get("started_utc") for _, r in runs]
    when = (" (started " + " and ".join(s.replace("T", " ")[:16] + " UTC" for s in started) + ")") if all(started) else ""
    out = [
        _para(f"The comparison's runs above: the reference's runs were read from its own run directories{when}, "
              "not timed beside lbsim's; they took "
              + " and ".join(f"{hp['cpu_s']:,.0f} s" for hp, _ in t) + f" of CPU ({loads}) and "
              + " / ".join(f"{hp['max_rss_mb']:,.0f}" for hp, _ in t) + " MB; lbsim "
              + " and ".join(f"{l['cpu_s']:.1f} s" for _, l in t) + " of CPU and "
              + " / ".join(f"{l['max_rss_mb']:,.0f}" for _, l in t) + " MB. That is "
              + " and ".join(f"{hp['cpu_s'] / l['cpu_s']:.1f}x" for hp, l in t) + " faster"
              + (f", short of the {RDMA_SPEED_TARGET}x aimed for" if all(hp["cpu_s"] / l["cpu_s"] < RDMA_SPEED_TARGET for hp, l in t)
                 else "") + f". {rdma_provenance(path, rec)}"),
        "",
        _para(f"The {_load_label(crec['flows'])} case again, {where}, both simulators run one after the other by one "
              "command, with lbsim's TCP on the same flows and fabric: "
              f"the reference {h['cpu_s']:,.0f} s of CPU, lbsim {lb['cpu_s']:.1f} s ({h['cpu_s'] / lb['cpu_s']:.1f}x), "
              f"lbsim's TCP {lt['cpu_s']:.1f} s. {rdma_provenance(cpath, crec)}"),
        "",
        "What the time is made of (`events_by_kind` in summary.json, the second record):",
        "",
        "| run | events | link arrivals | `port_free` | timers | CPU per event |",
        "|---|---|---|---|---|---|",
    ]
    for name, e in (("RDMA (DCQCN, PFC)", rd), ("TCP, same flows", tc)):
        pf = f"{e['port_free'] / 1e6:.1f} M" if e["port_free"] is not None else "—"
        nic = " (incl. NIC wake-ups)" if e["nic"] else ""
        out.append(f"| {name} | {e['events'] / 1e6:.1f} M | {e['arrive'] / 1e6:.1f} M | {pf} | {e['timers'] / 1e6:.2f} M{nic} "
                   f"| {e['ns']:.0f} ns |")
    out += ["", _para(
        f"An RDMA event {_event_cost(rd['ns'], tc['ns'])}; the RDMA run has {c['events_x']:.1f}x the events and "
        f"{c['arrive_x']:.2f}x the link arrivals. The floor, the link arrivals alone at TCP's CPU per event, is "
        f"{c['floor_s']:.1f} s: {c['hpcc_over_floor']:.1f}x faster than the reference on that machine. "
        + (f"{RDMA_SPEED_TARGET}x would need events {RDMA_SPEED_TARGET / c['hpcc_over_floor']:.1f}x cheaper than "
           "the TCP path's as well as no `port_free` at all: out of reach for a per-packet model of this "
           "configuration on this hardware." if c["hpcc_over_floor"] < RDMA_SPEED_TARGET else
           f"The {RDMA_SPEED_TARGET}x aimed for is within that floor."))]
    return "\n".join(out) + "\n"


def rdma_readme(results: Path = RESULTS) -> str:
    """README's paragraph on the HPCC comparison: agreement, speed, the cap."""
    path, rec = latest(r"rdma_vs_hpcc_\d", results)
    cpath, crec = latest(r"rdma_cost_vs_tcp_hpcc_\d", results)
    gaps = rdma_gaps(rec)
    gm, gp = (max(abs(g) for g, _, _ in gaps[k]) for k in ("median", "p99"))
    (r1, first), *rest = rec["runs"].items()
    nflows = _buckets(first["lbsim"])["all"]["count"]
    hp, lb = first["hpcc"]["time"], first["lbsim"]["time"]
    others = ", ".join(f"{r['hpcc']['time']['cpu_s'] / r['lbsim']['time']['cpu_s']:.1f}x at {_load_label(run)}"
                       for run, r in rest)
    c = rdma_cost(crec)
    w = _when(rec)
    return _para(
        f"Against that simulator on its 320-host fat-tree with {nflows:,} web-search flows, DCQCN at "
        + " and ".join(_load_label(r) for r in rec["runs"]) + " load, every size bucket's median slowdown agrees "
        f"within {_within(gm)} % and its 99th percentile within {_within(gp)} % (docs/rdma.md has the table and the "
        f"one mechanism named for the difference). lbsim ran the {_load_label(r1)} case in {lb['cpu_s']:.0f} s of CPU "
        f"and {lb['max_rss_mb']:.0f} MB where the reference's own run, timed apart, took {hp['cpu_s']:.0f} s and {hp['max_rss_mb']:.0f} MB: "
        f"{hp['cpu_s'] / lb['cpu_s']:.1f}x" + (f" ({others})" if others else "") + f", short of the "
        f"{RDMA_SPEED_TARGET}x aimed for (record `{path}`, {w['date']}, lbsim at commit {w['commit'][:7]}, "
        f"{_rdma_machine(w['machine'])}). An RDMA event {_event_cost(c['rdma']['ns'], c['tcp']['ns'])}, but 1000-byte "
        f"packets each with its own ACK make {c['arrive_x']:.2f}x TCP's packet arrivals, which caps a per-packet model "
        f"at about {c['hpcc_over_floor']:.0f}x (record `{cpath}`, {_when(crec)['date']}, lbsim at commit "
        f"{_when(crec)['commit'][:7]}, {_rdma_machine(_when(crec)['machine'])}; docs/rdma.md, \"Speed\").") + "\n"


def hpcc_reference(results: Path = RESULTS) -> str:
    """bench/hpcc/README.md: the reference runs, time, memory, slowdown, PFC."""
    path, rec = latest(r"hpcc_reference_\d", results)
    m = rec["machine"]
    nice = {re.search(r"nice -n (\d+)", r["time"]["command"])[1] for r in rec["runs"].values() if "nice -n" in r["time"]["command"]}
    head = (f"HPCC commit `{rec['hpcc_commit']}`, built by `build.sh` with {m.get('compiler', 'a compiler not recorded')}, "
            f"on a {_rdma_machine(m)}" + (f"; runs at nice {nice.pop()}, one at a time" if len(nice) == 1 else "")
            + f". Record: [`../results/{Path(path).name}`](../results/{Path(path).name}) ({rec['date']}; "
            + (f"this repository at commit {rec['commit'][:7]}" if rec.get("commit") else "this repository's commit not recorded")
            + (f"; `{rec.get('command') or rec['reproduce']}`)."))
    out = [_para(head), "", "| run | flows | completed | last completion | wall | CPU | peak RSS |", "|---|---|---|---|---|---|---|"]
    for name, r in rec["runs"].items():
        t, s = r["time"], r["stats"]
        label = re.match(r".*load ([\d.]+).*?(\d+) ms", r["workload"])
        label = f" ({float(label[1]) * 100:.0f} %, {label[2]} ms)" if label else ""
        out.append(f"| {name}{label} | {s['flows']:,} | {s['completed']:,} | {s['last_finish_ns'] / 1e9:.6f} s "
                   f"| {t['wall_s']:.1f} s | {t['cpu_s']:.1f} s | {t['max_rss_mb']:.0f} MiB |")
    out += ["", "Slowdown (clamped at 1; the last column is the share of flows below 1", "before clamping):", "",
            "| run | bucket | count | median | p95 | p99 | mean | mean unclamped | below 1 |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, r in rec["runs"].items():
        for b in r["stats"]["slowdown"]:
            out.append(f"| {name} | {b['bucket']} | {b['count']:,} | {b['median']:.3f} | {b['p95']:.3f} | {b['p99']:.3f} "
                       f"| {b['mean']:.3f} | {b['mean_unclamped']:.3f} | {_pct(b['below_1'], 1)} |")
    pfc = [(name, r["stats"]["pfc"]) for name, r in rec["runs"].items()]
    frames = [p["switch"]["pause"] + p["switch"]["resume"] + p["host"]["pause"] + p["host"]["resume"] for _, p in pfc]
    out += ["", "PFC: no PAUSE or RESUME frame at all in any run (`pfc.txt` is empty)." if not any(frames) else
            _para("PFC frames received (PAUSE / RESUME, switches; hosts): " + "; ".join(
                f"{name} {p['switch']['pause']:,} / {p['switch']['resume']:,}; {p['host']['pause']:,} / {p['host']['resume']:,}, "
                f"{p['ports_paused']} ports paused {p['paused_port_time_ns'] / 1e6:.1f} ms" for name, p in pfc) + ".")]
    return "\n".join(out) + "\n"


def _scale_rows(results: Path) -> tuple[str, dict, dict]:
    path, rec = latest(r"scale_\d", results)
    rows = {r["scenario"]: r for r in rec["rows"] if r["build"] == next(iter(rec["builds"]))}
    return path, rec, rows


def _scale_provenance(path: str, rec: dict) -> str:
    m = rec["machine"]
    return (f"Record `{path}` ({rec['date']}): lbsim at commit {rec['commit'][:7]}, the `lbsim-run` release binary, "
            f"fastest of {rec['repeat']} run(s), {m['cores']}-core {m['cpu']}; `{rec['command']}`.")


def lbsim_speed(results: Path = RESULTS) -> str:
    """README: lbsim's own speed on B1 and the largest fabric, from bench/scale.py's latest record."""
    path, rec, rows = _scale_rows(results)
    b1, big = rows["b1"], rows[max((n for n in rows if n.startswith("k")), key=lambda n: int(n[1:].split("x")[0]))]
    return _para(f"On the run loop alone, lbsim runs B1 at {b1['events_per_s'] / 1e6:.1f} M events/s in "
                 f"{b1['peak_rss_mb']:.0f} MB, and a {big['what'].split(', ')[0]} at {big['events_per_s'] / 1e6:.1f} M "
                 f"events/s in {big['peak_rss_mb']:.0f} MB. {_scale_provenance(path, rec)} The same build's speed varies "
                 "between days on these shared VMs: compare builds within one invocation (bench/README.md).") + "\n"


def lbsim_standings(results: Path = RESULTS) -> str:
    """docs/performance.md: bench/scale.py's latest record as a table."""
    path, rec, rows = _scale_rows(results)
    out = ["| run | what | events | M events/s (loop) | M packets/s (loop) | wall | peak RSS | flows_digest |",
           "|---|---|---|---|---|---|---|---|"]
    for n, r in rows.items():
        out.append(f"| {n} | {r['what']} | {r['events']:,} | {r['events_per_s'] / 1e6:.2f} | {r['packets_per_s'] / 1e6:.2f} "
                   f"| {_secs(r['wall_s'])} | {r['peak_rss_mb']:.0f} MB | `{r['flows_digest']}` |")
    return "\n".join(out + ["", _para(_scale_provenance(path, rec))]) + "\n"


def _compare_record(results: Path, pattern: str) -> tuple[str, list[dict], dict]:
    """The newest `lbsim compare` output (compare.json, its out folder
    written OUT) matching ``pattern``: (path, rows, provenance)."""
    path, rows = latest(pattern, results)
    return path, rows, rows[0]["provenance"]


def _compare_provenance(path: str, prov: dict) -> str:
    start, end = prov["runs_started_utc"][0], prov["written_utc"]
    return (f"Record `{path}` ({end[:10]}): lbsim at commit {prov['git_commit'][:7]}"
            + (" with local changes" if prov.get("git_dirty") else "") + f", {prov['cpu_model']}, runs from "
            f"{start[11:16]} to {end[11:16]} UTC; `{prov['command_line']}`.")


def _arm_findings(rows: list[dict]) -> dict[str, list[str]]:
    """Per arm, the verdicts that found a difference (compare's own sentences)."""
    out: dict[str, list[str]] = {}
    for r in rows:
        found = out.setdefault(r["scheme"], [])
        if not r["verdict"].split(": ", 1)[-1].startswith("no difference detectable"):
            found.append(r["verdict"])
    return out


def rdma_schemes(results: Path = RESULTS) -> str:
    """docs/rdma.md: the schemes compared on the RDMA example, from the
    latest committed compare.json."""
    path, rows, prov = _compare_record(results, r"compare_rdma_dcqcn_\d")
    seeds = max(r["seeds"] for r in rows)
    out = []
    for arm, found in _arm_findings(rows).items():
        metrics = sum(r["scheme"] == arm for r in rows)
        out += [f"- {v}" for v in found] or [f"- {arm}: no difference from {rows[0]['baseline']} detectable with {seeds} "
                                             f"seeds on any of the {metrics} metrics"]
    return "\n".join(out + ["", _para(_compare_provenance(path, prov))]) + "\n"


def rdma_schemes_readme(results: Path = RESULTS) -> str:
    """README: one line per arm of the same record, the first difference found."""
    path, rows, prov = _compare_record(results, r"compare_rdma_dcqcn_\d")
    parts = []
    for arm, found in _arm_findings(rows).items():
        parts.append(found[0] if found else f"{arm}: no difference from {rows[0]['baseline']} detectable")
    return _para(f"Over {max(r['seeds'] for r in rows)} seeds on the k = 8 example: " + "; ".join(parts)
                 + f" (record `{path}`, {prov['written_utc'][:10]}, lbsim at commit {prov['git_commit'][:7]}; docs/rdma.md).") + "\n"


#: Block name -> the function that writes it.
BLOCKS = {"b1": b1_readme, "b1-rules": b1_rules, "b1-speed": b1_speed, "htsim-readme": htsim_readme, "htsim-k8": htsim_k8,
          "htsim-speed": htsim_speed, "htsim-seeds": htsim_seeds, "htsim-defaults": htsim_defaults,
          "htsim-inrack": htsim_inrack, "htsim-handshakes": htsim_handshakes, "htsim-flows": htsim_flows,
          "htsim-hostnic": htsim_hostnic, "htsim-check": htsim_check, "htsim-within": htsim_within,
          "rdma-hpcc": rdma_hpcc, "rdma-incast": rdma_incast, "rdma-speed": rdma_speed, "rdma-readme": rdma_readme,
          "hpcc-reference": hpcc_reference, "lbsim-speed": lbsim_speed, "lbsim-standings": lbsim_standings,
          "rdma-schemes": rdma_schemes, "rdma-schemes-readme": rdma_schemes_readme}


def render(text: str, results: Path = RESULTS) -> str:
    """``text`` with every peer-table block rewritten from the records."""

    def one(m: re.Match) -> str:
        name = m[2]
        if name not in BLOCKS:
            raise SystemExit(f"unknown peer-table block `{name}` (known: {', '.join(BLOCKS)})")
        return m[1] + BLOCKS[name](results) + m[4]

    return BLOCK.sub(one, text)


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for f in FILES:
        text = f.read_text()
        new = render(text)
        if new != text:
            stale.append(f.relative_to(ROOT).as_posix())
            if not check:
                f.write_text(new)
    if check and stale:
        print(f"stale peer tables in {', '.join(stale)}: run python3 tools/peer_tables.py", file=sys.stderr)
        return 1
    if not check:
        print("rewrote " + (", ".join(stale) if stale else "nothing (all current)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
