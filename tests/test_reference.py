"""docs/scenario.md is generated from the scenario parser's source and must
match it; its examples of names must be names the fabric builders make."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GEN = ROOT / "tools" / "scenario_reference.py"


def test_committed_reference_is_current():
    p = subprocess.run([sys.executable, str(GEN), "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_every_key_is_described_and_every_section_present():
    doc = (ROOT / "docs" / "scenario.md").read_text()
    rows = [l for l in doc.splitlines() if l.startswith("| `")]
    assert len(rows) > 100
    for r in rows:
        cells = [c.strip() for c in r.strip("|").split("|")]
        assert cells[-1], f"no description: {r}"
    for key in ["transport.min_rto_ms", "workload.load_of", "topology.k", "failures[].link", "metrics.pcap_ports", "lb.rtt_us"]:
        assert f"| `{key}` |" in doc, key
    # every word of every choice the scenario reads as a word is documented
    src = (ROOT / "crates/lbsim-sim/src/scenario.rs").read_text()
    enums = re.findall(r'#\[serde\(rename_all = "snake_case"\)\]\npub enum (\w+) \{\n(.*?)\n\}', src, re.S)
    assert {"WorkloadKind", "LoadOf", "PatternKind"} <= {name for name, _ in enums}
    for name, body in enums:
        renamed = dict((v, w) for w, v in re.findall(r'#\[serde\(rename = "(\w+)"\)\]\s*(\w+)', body))
        for v in re.findall(r"^    (\w+),$", body, re.M):
            word = renamed.get(v, re.sub(r"(?<!^)([A-Z])", r"_\1", v).lower())
            assert f'"{word}"' in doc, (name, word)


def cli(*args):
    return subprocess.run([sys.executable, "-m", "lbsim.cli", *map(str, args)], capture_output=True, text=True)


@pytest.mark.parametrize(
    "topology,names",
    [
        ('kind = "leaf_spine"\nleaves = 2\nspines = 2\nlinks_per_pair = 2\nhosts_per_leaf = 4\nhost_rate_gbps = 10\nfabric_rate_gbps = 40',
         {"failure": "S1-L1#0", "wildcard": "L0-S*", "port": "L0->S1#0", "nic": "H3->L0#0"}),
        ('kind = "fat_tree"\nk = 4\nhost_rate_gbps = 10\nfabric_rate_gbps = 10',
         {"failure": "A1_1-C3", "wildcard": "T0_0-A0_*", "port": "T0_1->A0_0#0", "nic": "H5->T1_0#0"}),
    ],
)
def test_the_documented_names_exist(tmp_path, topology, names):
    f = tmp_path / "s.toml"
    f.write_text(
        f"[topology]\n{topology}\n[workload]\nflows = 10\n"
        f"[metrics]\nqueue_samplers = [\"{names['port']}\", \"{names['nic']}\"]\n"
        f"[[failures]]\nlink = \"{names['failure']}\"\n[[failures]]\nlink = \"{names['wildcard']}\"\nat_ms = 1\n"
    )
    p = cli("validate", f)
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "b.toml"
    bad.write_text(f.read_text().replace(names["port"], "NOPE->X#0"))
    p = cli("validate", bad)
    assert p.returncode != 0 and "NOPE" in p.stderr, "validate checks sampler names, so the test above means something"
