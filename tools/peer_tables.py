#!/usr/bin/env python3
"""Writes the peer comparisons quoted in README.md and docs/ from the latest
records under bench/results/, so that a number there is always a record's,
with its date and commit beside it.

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
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
#: The files that quote peer comparisons.
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- peer-table ([\w-]+) -->\n)(.*?)(<!-- /peer-table -->)", re.S)


def latest(pattern: str, results: Path = RESULTS) -> tuple[str, dict]:
    """The newest record whose file name matches the regular expression
    ``pattern``: (its path relative to the repository, its contents)."""
    found = [(json.loads(p.read_text()), p) for p in sorted(results.glob("*.json")) if re.match(pattern, p.name)]
    if not found:
        raise SystemExit(f"no record matching {pattern} under {results}")
    rec, path = max(found, key=lambda rp: (rp[0]["date"], rp[1].name))
    return f"bench/results/{path.name}", rec


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


#: Block name -> the function that writes it.
BLOCKS = {"b1": b1_readme, "b1-rules": b1_rules, "b1-speed": b1_speed, "htsim-readme": htsim_readme, "htsim-k8": htsim_k8,
          "htsim-speed": htsim_speed}


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
