"""The pcap files written for metrics.pcap_ports are real packets: IPv4 and
TCP headers with options, sequence numbers a protocol analyser follows
without seeing overlaps, valid ACKs, and CE where the port marked."""

import shutil
import subprocess
import sys
from collections import defaultdict

import dpkt
import pandas as pd

PORTS = ["L0->S1#0", "H0->L0#0", "L0->H0#0"]
FILES = {"L0->S1#0": "L0-S1_0.pcap", "H0->L0#0": "H0-L0_0.pcap", "L0->H0#0": "L0-H0_0.pcap"}
# DCTCP with ECN and a 2:1 oversubscribed fabric (one 10G uplink per spine),
# so L0's uplinks queue and mark
BASE = ["--set", "workload.flows=100", "--set", 'transport.cc="dctcp"', "--set", "network.ecn_k_pkts=10",
        "--set", "topology.links_per_pair=1", "--set", "topology.fabric_rate_gbps=10",
        "--set", "metrics.pcap_ports=" + "[" + ",".join(f'"{p}"' for p in PORTS) + "]"]


def run(out, *extra):
    subprocess.run([sys.executable, "-m", "lbsim.cli", "run", "examples/small.toml", "--out", str(out), "--quiet", *BASE, *extra], check=True)
    return pd.read_parquet(out / "ports.parquet").set_index("port")


def read(path):
    """(time, captured length, IP, TCP, {option kind: data}, payload length,
    option kinds in order) per TCP frame."""
    rows = []
    with open(path, "rb") as f:
        r = dpkt.pcap.Reader(f)
        for ts, buf in r:
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            assert isinstance(ip, dpkt.ip.IP) and ip.v == 4 and ip.hl == 5
            if ip.p == 6:
                raw = buf[14 + 20:]  # the TCP header as written (the payload is cut)
                tcp = dpkt.tcp.TCP(raw)
                assert tcp.off >= 5 and len(raw) == tcp.off * 4, "headers only, the options whole"
                opts = dpkt.tcp.parse_opts(raw[20:])
                plen = ip.len - 20 - tcp.off * 4
                assert plen >= 0 and len(buf) == 14 + 20 + tcp.off * 4
                rows.append((ts, len(buf), ip, tcp, dict(opts), plen, [k for k, _ in opts]))
    return rows


def flow_key(ip, tcp):
    return (bytes(ip.src), bytes(ip.dst), tcp.sport, tcp.dport)


def check_segments(rows, gaps_allowed):
    """Per direction of each connection: SYN options, data continuity, no
    overlap; returns {key: (syn seq, highest seq end)}."""
    state = {}
    data = 0
    for _, _, ip, tcp, opts, plen, kinds in rows:
        k = flow_key(ip, tcp)
        syn = bool(tcp.flags & dpkt.tcp.TH_SYN)
        assert dpkt.tcp.TCP_OPT_TIMESTAMP in opts and len(opts[dpkt.tcp.TCP_OPT_TIMESTAMP]) == 8
        if syn:
            assert dpkt.tcp.TCP_OPT_WSCALE in opts and dpkt.tcp.TCP_OPT_SACKOK in opts, kinds
            assert plen == 0
            state[k] = [tcp.seq, tcp.seq + 1]
            continue
        if plen == 0:
            continue
        data += 1
        if k not in state:
            state[k] = [tcp.seq - 1, tcp.seq]  # SYN before the capture's packet budget or elsewhere
        nxt = state[k][1]
        if tcp.seq == nxt:
            state[k][1] = tcp.seq + plen
        elif tcp.seq + plen <= nxt:
            pass  # a retransmission of bytes already seen
        else:
            assert gaps_allowed and tcp.seq > nxt, ("overlapping or missing", k, tcp.seq, plen, nxt)
            state[k][1] = tcp.seq + plen
    assert data > 0
    return state


def tshark_warnings(path):
    tool = shutil.which("tshark")
    if tool is None:
        return None
    out = subprocess.run([tool, "-r", str(path), "-q", "-z", "expert,warn"], capture_output=True, text=True, check=True).stdout
    return out


def test_captures_are_tcp_a_protocol_analyser_follows(tmp_path):
    out = tmp_path / "run"
    ports = run(out)
    frames = {p: read(out / FILES[p]) for p in PORTS}
    for p in PORTS:
        assert abs(len(frames[p]) - ports.tx_pkts[p]) <= 5
        check_segments(frames[p], gaps_allowed=False)
    # the first data segments acknowledge the SYN-ACK (ISN + 1), not 0
    first = next(tcp for _, _, _, tcp, _, plen, _ in frames["H0->L0#0"] if plen > 0)
    assert first.flags & dpkt.tcp.TH_ACK and first.ack == 1 and first.seq == 1
    # ACKs: both directions of H0's connections are captured (H0->L0, L0->H0)
    both = sorted(frames["H0->L0#0"] + frames["L0->H0#0"], key=lambda r: r[0])
    seen = defaultdict(lambda: 0)  # highest sequence number sent + 1, per direction
    acks = 0
    for _, _, ip, tcp, _, plen, _ in both:
        k = flow_key(ip, tcp)
        syn = bool(tcp.flags & dpkt.tcp.TH_SYN)
        seen[k] = max(seen[k], tcp.seq + plen + (1 if syn else 0))
        if tcp.flags & dpkt.tcp.TH_ACK:
            rev = (k[1], k[0], k[3], k[2])
            assert 1 <= tcp.ack, "ACK flag with ack 0"
            if rev in seen:
                assert tcp.ack <= seen[rev], ("acks bytes never sent", k, tcp.ack, seen[rev])
                acks += 1
    assert acks > 100
    # CE where the port marked: L0's uplinks get packets only from hosts,
    # which never mark, so every CE on it is this port's mark
    ce = {p: sum(1 for _, _, ip, *_ in frames[p] if ip.tos & 3 == 3) for p in PORTS}
    assert ce["L0->S1#0"] == ports.ecn_marks["L0->S1#0"] > 100, (ce, ports.ecn_marks[PORTS])
    assert ce["H0->L0#0"] == 0 == ports.ecn_marks["H0->L0#0"]
    assert ce["L0->H0#0"] >= ports.ecn_marks["L0->H0#0"]
    for p in PORTS:
        w = tshark_warnings(out / FILES[p])
        if w is None:
            continue  # tshark is not installed: the dpkt checks above only
        for bad in ("not captured", "overlap", "out-of-order", "Malformed", "Bad"):
            assert bad.lower() not in w.lower(), (p, w)


def test_sack_blocks_and_losses(tmp_path):
    # a 20-packet buffer drops, so receivers SACK and senders retransmit
    out = tmp_path / "run"
    ports = run(out, "--set", "network.buffer_pkts=20")
    assert ports.drops.sum() > 0
    sacks = 0
    for p in PORTS:
        rows = read(out / FILES[p])
        check_segments(rows, gaps_allowed=True)  # a drop here or upstream leaves a gap, never an overlap
        for _, _, ip, tcp, opts, plen, kinds in rows:
            if dpkt.tcp.TCP_OPT_SACK in opts:
                raw = opts[dpkt.tcp.TCP_OPT_SACK]
                assert len(raw) % 8 == 0 and 1 <= len(raw) // 8 <= 3 and tcp.off * 4 == 20 + 12 + 4 + len(raw)
                blocks = [(int.from_bytes(raw[i:i + 4], "big"), int.from_bytes(raw[i + 4:i + 8], "big")) for i in range(0, len(raw), 8)]
                for i, (s, e) in enumerate(blocks):
                    assert s < e
                    # above the cumulative ACK, or a D-SACK block (first) below it
                    assert s > tcp.ack or (i == 0 and e <= tcp.ack), (blocks, tcp.ack)
                sacks += 1
    assert sacks > 0
