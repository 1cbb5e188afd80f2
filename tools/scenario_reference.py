#!/usr/bin/env python3
"""Writes docs/scenario.md, the scenario-file reference, from the code that
reads scenario files (crates/lbsim-sim/src/scenario.rs and its sections in
scenario/): every key, its type, unit, default and the field's doc comment.
The `[transport]` defaults are lbsim-tcp's (`TcpConfig::default()` in
crates/lbsim-tcp/src/config.rs), read through `TransportCfg::default()`,
and its enums are strings of their snake_case variant names (a Rust test,
`transport_defaults_in_the_reference_are_the_parsers`, checks what this
reads there). tests/test_reference.py regenerates it and fails if the
committed file differs, so it cannot go stale.

    python3 tools/scenario_reference.py          # rewrite docs/scenario.md
    python3 tools/scenario_reference.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "crates/lbsim-sim/src/scenario.rs"
SECTION_DIR = ROOT / "crates/lbsim-sim/src/scenario"
TCP_CONFIG = ROOT / "crates/lbsim-tcp/src/config.rs"
RDMA_CONFIG = ROOT / "crates/lbsim-rdma/src/config.rs"
OUT = ROOT / "docs/scenario.md"

# (heading, struct, how the table is written, note)
SECTIONS = [
    ("Top level", "Scenario", "", ""),
    ('`[topology]` with `kind = "leaf_spine"`', "LeafSpineCfg", "[topology]", "Leaves L0.., spines S0.., hosts H0.. numbered leaf by leaf."),
    ('`[topology]` with `kind = "clos3"`', "Clos3Cfg", "[topology]", "A 3-tier Clos: ToRs T<pod>_<i>, aggregation switches A<pod>_<i>, cores C<i>, hosts H0.. numbered ToR by ToR."),
    ('`[topology]` with `kind = "fat_tree"`', "FatTreeCfg", "[topology]", "A k-ary fat-tree (Al-Fares et al. 2008): the clos3 fabric with k pods of k/2 ToRs and k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per ToR; same names as clos3."),
    ('`[topology]` with `kind = "explicit"`', "ExplicitCfg", "[topology]", "Any graph: `[[topology.nodes]]` and `[[topology.links]]` below; names are yours."),
    ('`[topology]` with `kind = "hpcc"`', "HpccTopoCfg", "[topology]", "The HPCC simulator's topology file (docs/rdma.md, \"Formats\"): node ids are kept, hosts numbered in id order and named H0.., switches S<id>. `--set topology.kind=hpcc` starts `[topology]` afresh: set `topology.file` after it."),
    ("`[[topology.nodes]]` (explicit)", "ExplicitNodeCfg", "[[topology.nodes]]", ""),
    ("`[[topology.links]]` (explicit)", "ExplicitLinkCfg", "[[topology.links]]", ""),
    ("`[network]`", "NetworkCfg", "[network]", ""),
    ("`[transport]`", "TransportCfg", "[transport]", ""),
    ("`[rdma]`", "RdmaCfg", "[rdma]", "RoCEv2, DCQCN, the switches' shared buffer, PFC and ECN, with `transport.kind = \"rdma\"` (docs/rdma.md). The defaults are the HPCC simulator's `run.py --cc dcqcn --bw 100`; the DCQCN paper's timers are `dcqcn_alpha_interval_us = 50`, `dcqcn_decrease_interval_us = 50`, `dcqcn_increase_interval_us = 55`."),
    ("`[workload]`", "WorkloadCfg", "[workload]", ""),
    ("`workload.pareto` (and a class's `pareto`)", "ParetoCfg", "[workload.pareto]", "An inline table, e.g. `pareto = { shape = 1.5, mean_bytes = 20000 }`."),
    ("`[[workload.classes]]`", "ClassCfg", "[[workload.classes]]", "A flow mixture, e.g. VMS §V-E: `classes = [{ name = \"small\", fraction = 0.99, pareto = { shape = 1.5, mean_bytes = 20000 } }, { name = \"large\", fraction = 0.01, pareto = { shape = 1.5, mean_bytes = 50e6 } }]`."),
    ("`[workload.incast]`", "IncastCfg", "[workload.incast]", ""),
    ("`[lb]`", "LbCfg", "[lb]", "Each scheme's own parameters go in `[lb.params]`: `lbsim schemes` lists them with units and defaults."),
    ("`[[failures]]`", "FailureCfg", "[[failures]]", ""),
    ("`[[random_failures]]`", "RandomFailureCfg", "[[random_failures]]", ""),
    ("`[[link_overrides]]`", "LinkOverrideCfg", "[[link_overrides]]", ""),
    ("`[[drops]]`", "DropCfg", "[[drops]]", ""),
    ("`[[udp]]`", "UdpCfg", "[[udp]]", ""),
    ("`[[jobs]]`", "JobCfg", "[[jobs]]", "Collective jobs (training traffic), beside any workload or alone with `workload.kind = \"collective\"`: each rank starts a step's flows when it has received the earlier steps' data (not on a clock); jobs.parquet and steps.parquet report each iteration and step (docs/metrics.md)."),
    ("`[metrics]`", "MetricsCfg", "[metrics]", ""),
    ("`[run]`", "RunCfg", "[run]", ""),
]

NAMING = """\
## Names of nodes, ports and links

Failures, samplers, drops, pcap and link overrides name the fabric's parts:

- **Nodes**: hosts `H0`, `H1`, ... (host index order, the numbers used by
  flow lists); leaf-spine: leaves `L0`.., spines `S0`..; clos3 and fat_tree:
  ToRs `T<pod>_<i>`, aggregation switches `A<pod>_<i>`, cores `C<i>`.
- **Egress ports**: `<from>-><to>#<k>`, `k` counting parallel links between
  the pair from 0 (`L0->S1#0`, `H3->L0#0`, `T0_1->A0_0#0`).
- **Links**: `<a>-<b>#<k>` in either order (`S1-L1#0` is `L1-S1#0`); `*`
  matches any run of characters and `#k` may be left out to mean every
  parallel link (`L0-S*`).
"""

UNITS = {"_us": "µs", "_ms": "ms", "_ns": "ns", "_gbps": "Gb/s", "_mbps": "Mb/s", "_pkts": "packets", "_bytes": "bytes"}


def rust_type(t: str, words: dict[str, list[str]] | None = None) -> tuple[str, bool]:
    """(words, optional) for a Rust field type; `words` maps the enums read
    as a word (lbsim-tcp's) to their words."""
    t = t.strip()
    m = re.fullmatch(r"Option<(.+)>", t)
    if m:
        return rust_type(m.group(1), words)[0], True
    m = re.fullmatch(r"Vec<(.+)>", t)
    if m:
        inner = rust_type(m.group(1), words)[0]
        return ("list of tables" if inner == "table" else f"list of {inner}s"), False
    if words and t in words:
        return "string", False
    return {
        "u8": "integer", "u16": "integer", "u32": "integer", "u64": "integer", "usize": "integer",
        "f64": "number", "bool": "boolean", "String": "string", "toml::Table": "table",
        "HostsPerLeaf": "integer or list of integers",
        "Ranks": "integer or list of integers",
    }.get(t, "table"), False


def snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def read_tcp(src: str) -> dict:
    """What `TransportCfg::default()` reads in lbsim-tcp's config.rs: the
    fields of `TcpConfig::default()` (`d.<field>`), the associated consts
    (`Type::NAME`) and each enum's words, in variant order (a variant's
    `#[serde(rename = "...")]`, wherever it is given, else its snake_case
    name)."""
    _, _, defaults = parse(src)
    consts = {}
    for m in re.finditer(r"\nimpl (\w+) \{(.*?)\n\}", src, re.S):
        for c in re.finditer(r"pub const (\w+): [^=]+ = ([^;]+);", m.group(2)):
            consts[f"{m.group(1)}::{c.group(1)}"] = c.group(2)
    return {"fields": defaults["TcpConfig"], "consts": consts, "words": enum_words(src)}


def enum_words(src: str, head: str = "") -> dict[str, dict[str, str]]:
    """Each `pub enum`'s words (only those whose declaration follows the
    attribute line `head`, when given), in variant order: a variant's
    `#[serde(rename = "...")]`, wherever it is given, else its snake_case
    name."""
    renamed = {m.group(2): m.group(1) for m in re.finditer(r'#\[serde\(rename = "(\w+)"\)\]\s*(\w+)', src)}
    words = {}
    for m in re.finditer(re.escape(head) + r"\npub enum (\w+) \{\n(.*?)\n\}", src, re.S):
        variants = re.findall(r"^    (\w+)(?: \{[^}]*\})?,$", m.group(2), re.M)
        words[m.group(1)] = {v: renamed.get(v, snake(v)) for v in variants}
    return words


def tcp_value(v: str, tcp: dict) -> str:
    """A `TransportCfg::default()` expression that reads lbsim-tcp's
    defaults, as Rust source of the plain value ("" if it reads none)."""
    m = re.fullmatch(r"d\.(\w+)\.as_(ms|us)_f64\(\)", v)
    if m:
        t = re.fullmatch(r"SimTime::(?:from_(ms|us|ns)\((.+)\)|ZERO)", tcp["fields"][m.group(1)])
        ps = 0 if t.group(1) is None else eval(t.group(2).replace("_", ""), {"__builtins__": {}}) * {"ms": 10**9, "us": 10**6, "ns": 10**3}[t.group(1)]
        return repr(ps / {"ms": 1e9, "us": 1e6}[m.group(2)])
    m = re.fullmatch(r"(\w+)::of\(d\.(\w+)\)", v)  # a flag as its enum: the first variant when set
    if m:
        return f"{m.group(1)}::{list(tcp['words'][m.group(1)])[0 if tcp['fields'][m.group(2)] == 'true' else 1]}"
    m = re.fullmatch(r"d\.(\w+)", v)
    if m:
        return tcp["fields"][m.group(1)]
    return tcp["consts"].get(v, "")


def value_text(v: str, fns: dict[str, str], tcp: dict | None = None) -> str:
    """A Rust default expression as TOML-ish text."""
    v = v.strip()
    if v in fns:
        v = fns[v]
    if tcp and tcp_value(v, tcp):
        v = tcp_value(v, tcp)
    if v == "None":
        return ""
    m = re.fullmatch(r's\("(.*)"\)', v) or re.fullmatch(r'"(.*)"\.to_string\(\)', v)
    if m:
        return f'"{m.group(1)}"'
    m = re.fullmatch(r"(\w+)::(\w+)(?: \{.*\})?", v)
    if tcp and m and m.group(1) in tcp["words"]:
        return f'"{tcp["words"][m.group(1)][m.group(2)]}"'
    m = re.fullmatch(r"vec!\[(.*)\]", v, re.S)
    if m:
        items = [value_text(x, fns) for x in m.group(1).split(",") if x.strip()]
        return "[" + ", ".join(items) + "]"
    if v in ("true", "false"):
        return v
    try:
        x = eval(v.replace("_", ""), {"__builtins__": {}})  # numeric literals and arithmetic only
        return repr(x) if isinstance(x, int) else f"{x:g}"
    except Exception:
        return ""


def parse(src: str):
    fns = {m.group(1): m.group(2) for m in re.finditer(r"fn (\w+)\(\) -> \w+ \{\s*([^{}]*?)\s*\}", src)}
    structs = {}
    for m in re.finditer(r"((?:#\[[^\n]*\]\s*)+)pub struct (\w+) \{\n(.*?)\n\}", src, re.S):
        attrs, name, body = m.groups()
        container_default = bool(re.search(r"#\[serde\([^)]*\bdefault\b", attrs))
        fields, doc, fdefault = [], [], None
        for line in body.split("\n"):
            s = line.strip()
            if s.startswith("///"):
                doc.append(s[3:].strip())
            elif s.startswith("#[serde("):
                d = re.search(r'default(?: = "(\w+)")?', s)
                if d:
                    fdefault = d.group(1) or "Default"
            elif s.startswith("pub "):
                fm = re.match(r"pub (\w+): (.+),$", s)
                if fm:
                    fields.append((fm.group(1), fm.group(2), " ".join(doc), fdefault))
                doc, fdefault = [], None
        structs[name] = (container_default, fields)
    defaults = {}
    for m in re.finditer(r"impl Default for (\w+) \{\s*(?:///[^\n]*\s*)*fn default\(\) -> Self \{\s*(?:let [^;]*;\s*)*\w+ \{(.*?)\}\s*\}\s*\}", src, re.S):
        name, body = m.groups()
        vals, depth, cur = {}, 0, ""
        for ch in body + ",":
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if ch == "," and depth == 0:
                if ":" in cur:
                    k, _, v = cur.partition(":")
                    vals[k.strip()] = v.strip()
                cur = ""
            else:
                cur += ch
        defaults[name] = vals
    return fns, structs, defaults


def render(src: str, tcp_src: str) -> str:
    fns, structs, defaults = parse(src)
    tcp = read_tcp(tcp_src)
    # the scenario's own choices (`Connections`), read as words
    tcp["words"].update(enum_words(src, '#[serde(rename_all = "snake_case")]'))
    tcp["words"].update(enum_words(RDMA_CONFIG.read_text(), '#[serde(rename_all = "snake_case")]'))
    out = [
        "# Scenario file reference",
        "",
        "<!-- Generated by tools/scenario_reference.py from crates/lbsim-sim/src/scenario.rs, scenario/ and lbsim-tcp's config.rs; do not edit. -->",
        "",
        "A scenario is a TOML file; every key below can also be set from the",
        "command line with `--set key=value` (e.g. `--set transport.min_rto_ms=1`);",
        "a list of tables is set whole (`--set 'failures=[{link=\"L1-S1#0\"}]'`).",
        "Units are in the key's name (`_us` µs, `_ms` ms, `_ns` ns, `_gbps` Gb/s,",
        "`_pkts` packets, `_bytes` bytes); every value is checked after conversion",
        "to the engine's integer picoseconds and bits per second, and an error names",
        "the key. *Required* keys have no default; an empty default means absent",
        "(the description says what absence means). `lbsim validate FILE` checks a",
        "file without running it and explains it: sizes, load, the estimated events,",
        "wall time and memory, and one warning line per known trap, each naming its key",
        "(`lbsim run` prints the same before its first event). Work estimated above ten",
        "minutes of wall time is warned about naming the key that decides it, and above",
        "a day refused; `--allow-long` (`allow_long=True`) runs it without either.",
        "",
    ]
    for heading, struct, table, note in SECTIONS:
        container_default, fields = structs[struct]
        dv = defaults.get(struct, {})
        out += [f"## {heading}", ""]
        if note:
            out += [note, ""]
        out += ["| key | type | unit | default | description |", "|---|---|---|---|---|"]
        for name, ty, doc, fdefault in fields:
            words, optional = rust_type(ty, tcp["words"])
            if struct == "Scenario" and (words == "table" or words == "list of tables"):
                continue  # a section of its own
            if name == "incast":
                continue
            unit = next((u for suf, u in UNITS.items() if name.endswith(suf)), "")
            if name in dv:
                default = value_text(dv[name], fns, tcp)
            elif fdefault and fdefault != "Default":
                default = value_text(fdefault, fns, tcp)
            elif fdefault == "Default" or container_default or optional:
                default = {"boolean": "false", "number": "0", "string": '""'}.get(words, "[]" if words.startswith("list") else "")
                if optional:
                    default = ""
            else:
                default = "*required*"
            key = name if not table else (f"{table[1:-1]}.{name}" if not table.startswith("[[") else f"{table[2:-2]}[].{name}")
            if struct == "Scenario" and name in ("name", "seed"):
                key = name
            out.append(f"| `{key}` | {words}{' (optional)' if optional else ''} | {unit} | {default} | {doc.replace('|', '/')} |")
        out.append("")
    out.append(NAMING)
    return "\n".join(out)


def main() -> None:
    src = "\n".join(p.read_text() for p in [SOURCE, *sorted(SECTION_DIR.glob("*.rs"))])
    text = render(src, TCP_CONFIG.read_text())
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python3 tools/scenario_reference.py", file=sys.stderr)
            sys.exit(1)
        return
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
