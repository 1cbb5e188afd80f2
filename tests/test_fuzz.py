"""A fuzz test of the scenario front door (issue 18): a few hundred mutants
of examples/small.toml (fixed seed) through ``validate`` and, when accepted,
``run`` on a small flow count. Every outcome must be a result or one
ScenarioError line that names a key — never another exception, a panic
(RuntimeError from the extension), an abort or a hang."""

from __future__ import annotations

import random
import re

import pytest

import lbsim

# keys that take numbers, with the table they live in
NUMERIC = [
    "topology.leaves", "topology.spines", "topology.links_per_pair", "topology.hosts_per_leaf",
    "topology.host_rate_gbps", "topology.fabric_rate_gbps", "topology.link_delay_us",
    "network.buffer_pkts", "network.ecn_k_pkts", "network.host_jitter_ns",
    "transport.min_rto_ms", "transport.mss_bytes", "transport.init_cwnd_pkts", "transport.delayed_ack",
    "transport.rcv_wnd_bytes", "transport.header_bytes", "transport.max_rto_ms",
    "workload.load", "workload.flows", "workload.size_bytes", "workload.start_us",
    "metrics.utilization_window_ms", "metrics.queue_sample_interval_us", "metrics.flow_rate_window_ms",
    "metrics.scheme_sample_interval_us", "run.stop_ms", "run.stop_after_last_start_ms", "seed",
]
SCHEME_PARAMS = {
    "letflow": ["flowlet_us", "flowlet_table_size"],
    "conga": ["flowlet_us", "tau_us", "q_bits", "metric_age_ms"],
    "drill": ["d", "m"],
    "hula": ["probe_us", "tau_probes", "keepalive_us", "probe_bytes"],
    "hermes": ["ecn_threshold", "change_probability", "aging_rtts", "size_threshold_bytes"],
    "ag": ["sample_interval_us", "window_pkts", "fixed_granularity_pkts"],
    "vms": ["channels", "g", "reseq_timeout_us", "init_window_pkts"],
    "clove_ecn": ["flowlet_gap_rtts", "weight_cut", "paths"],
    "spray": ["reseq_timeout_us", "reseq_buffer_bytes"],
}
BAD_NUMBERS = ["0", "-1", "1e-12", "1e300", "nan", "inf", "-inf", "2.5", "4294967296", "1e9", '"7"', "true", "[]", "{}"]
BAD_STRINGS = ['"nope"', "3", '""', "[1, 2]"]
STRING_KEYS = ["topology.kind", "transport.cc", "workload.kind", "workload.cdf", "workload.pattern", "workload.load_of", "lb.scheme"]
ONE_LINE = re.compile(r"^scenario field `[^`]+`: [^\n]+$")


def mutants(n: int, seed: int = 2026) -> list[list[str]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        r = rnd.random()
        if r < 0.55:
            out.append([f"{rnd.choice(NUMERIC)}={rnd.choice(BAD_NUMBERS)}"])
        elif r < 0.75:
            out.append([f"{rnd.choice(STRING_KEYS)}={rnd.choice(BAD_STRINGS)}"])
        elif r < 0.95:
            scheme = rnd.choice(sorted(SCHEME_PARAMS))
            out.append([f'lb.scheme="{scheme}"', f"lb.params.{rnd.choice(SCHEME_PARAMS[scheme])}={rnd.choice(BAD_NUMBERS)}"])
        else:
            out.append([f"{rnd.choice(['failures', 'drops', 'udp', 'link_overrides'])}=[{{link=\"X\", port=\"Y\", src=0}}]"])
    return out


@pytest.mark.parametrize("batch", range(8))
def test_mutated_scenarios_fail_in_one_line_or_run(batch):
    with open("examples/small.toml") as f:
        base = f.read()
    small = ["workload.flows=15", "run.stop_ms=20"]
    for sets in mutants(400)[batch * 50:(batch + 1) * 50]:
        try:
            lbsim.validate(base, set=sets + small)
        except lbsim.ScenarioError as e:
            msg = str(e)
            assert ONE_LINE.match(msg), f"{sets}: not one line naming a key: {msg!r}"
            assert len(msg) < 300, f"{sets}: {msg!r}"
            continue
        # accepted: it must run, quickly, and conserve packets
        try:
            r = lbsim.run(base, set=sets + small)
        except lbsim.ScenarioError as e:
            assert ONE_LINE.match(str(e)), f"{sets}: run refused what validate took, and not in one line: {e}"
            pytest.fail(f"{sets}: validate accepted what run refused: {e}")
        assert r.summary["conservation"]["ok"], sets
