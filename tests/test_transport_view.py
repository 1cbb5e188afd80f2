"""Schemes that change what the hosts' transport receives say so: `lbsim
schemes` lists the change, and `validate`, `run` and `compare` print one
note when a scheme clears CE before an ECN-driven transport (DCTCP) sees it.
Hermes lets the marks through by default (its authors' simulator), so DCTCP
reacts to them; with `guest_sees_ce = false` it never does."""

import importlib
import json
import subprocess
import sys

cmp = importlib.import_module("lbsim.compare")  # the module (lbsim.compare is also the function)

DCTCP = ["transport.cc=dctcp", "network.ecn_k_pkts=20", "workload.flows=400", "workload.load=0.8"]


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "lbsim.cli", *map(str, args)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p


def sets(extra):
    return [x for kv in [*DCTCP, *extra] for x in ("--set", kv)]


def test_schemes_list_what_they_change_for_the_transport():
    rows = {s["name"]: s for s in json.loads(cli("schemes", "--json").stdout)}
    assert rows["hermes"]["clears_ce_unless"] == rows["clove_ecn"]["clears_ce_unless"] == rows["vms"]["clears_ce_unless"] == "guest_sees_ce"
    assert rows["ecmp"]["clears_ce_unless"] is None and rows["ecmp"]["transport_sees"] == []
    assert any("resequences" in c for c in rows["vms"]["transport_sees"])
    assert any("flowcells back in order" in c for c in rows["presto"]["transport_sees"])
    assert [p["default"] for p in rows["hermes"]["params"] if p["name"] == "guest_sees_ce"] == ["true"]
    assert [p["default"] for p in rows["clove_ecn"]["params"] if p["name"] == "guest_sees_ce"] == ["false"]
    text = cli("schemes").stdout
    assert "changes what the transport receives: with guest_sees_ce = false, the receiving edge clears CE" in text


def test_a_hermes_run_with_dctcp_reacts_to_marks_unless_they_are_hidden_and_says_so(tmp_path, small):
    note = "note: hermes clears CE before DCTCP sees it"
    runs = {}
    for hide in (False, True):
        extra = ["lb.scheme=hermes"] + (["lb.params.guest_sees_ce=false"] if hide else [])
        out = tmp_path / str(hide)
        p = cli("run", small, "--out", out, *sets(extra))
        runs[hide] = json.loads((out / "summary.json").read_text())
        assert (note in p.stdout) == hide, p.stdout
        assert sum(line.startswith(note) for line in p.stdout.splitlines()) == int(hide)
        v = cli("validate", small, *sets(extra)).stdout
        assert (note in v) == hide and (not hide or "set lb.params.guest_sees_ce = true to let the marks reach DCTCP" in v)
    seen, hidden = runs[False], runs[True]
    assert seen["network"]["ecn_marks"] > 0 and hidden["network"]["ecn_marks"] > 0
    assert seen["transport"]["ecn_reductions"] > 0, "DCTCP reacts to the marks Hermes lets through"
    assert hidden["transport"]["ecn_reductions"] == 0, "no mark reaches DCTCP"


def test_compare_notes_the_arms_that_hide_marks(small):
    arms = [cmp._parse_arm(a) for a in ("ecmp", "clove_ecn", "hermes", "hermes+lb.params.guest_sees_ce=false")]
    notes = cmp.arm_notes(small, arms, DCTCP)
    assert [n.split(":")[0] for n in notes] == ["clove_ecn", "hermes+lb.params.guest_sees_ce=false"]
    assert notes[1].startswith("hermes+lb.params.guest_sees_ce=false: hermes clears CE before DCTCP sees it: ")
    assert cmp.arm_notes(small, arms, []) == [], "NewReno without ECN: nothing to note"
