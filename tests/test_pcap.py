"""The pcap files written for metrics.pcap_ports are real packets: IPv4 and
TCP headers with options, sequence numbers a protocol analyser follows
without seeing overlaps, valid ACKs, CE where the port marked, and VXLAN
that tshark decodes as VXLAN, with the ECN fields the scheme sets."""

import shutil
import struct
import subprocess
import sys
from collections import defaultdict

import dpkt
import pandas as pd

import lbsim

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


def tshark_protocols(path):
    """tshark's protocol stack per frame, or None without tshark."""
    tool = shutil.which("tshark")
    if tool is None:
        return None
    out = subprocess.run([tool, "-r", str(path), "-T", "fields", "-e", "frame.protocols"], capture_output=True, text=True, check=True).stdout
    return out.split()


def vxlan_frames(path):
    """(outer IP, outer UDP, inner IP, inner TCP or None, payload length) per frame."""
    rows = []
    with open(path, "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            outer = dpkt.ethernet.Ethernet(buf).data
            assert outer.p == 17
            udp = dpkt.udp.UDP(buf[14 + 20:14 + 28])
            inner = dpkt.ip.IP(buf[14 + 28 + 8 + 14:])
            tcp = dpkt.tcp.TCP(buf[14 + 28 + 8 + 14 + 20:]) if inner.p == 6 else None
            plen = inner.len - 20 - tcp.off * 4 if tcp else 0
            rows.append((outer, udp, inner, tcp, plen))
    return rows


def test_vxlan_captures_decode_as_vxlan_with_the_schemes_ecn_and_echoed_timestamps(tmp_path):
    # Clove-ECN and Hermes make every packet they encapsulate ECT(0), pure ACKs
    # included; Presto copies the transport's field. The outer source
    # ports are in RFC 7348's range, so no frame decodes as another
    # protocol; data segments echo the receiver's TSval
    for scheme, acks_ect in (("clove_ecn", True), ("hermes", True), ("presto", False)):
        out = tmp_path / scheme
        run(out, "--set", f"lb.scheme={scheme}", "--set", "workload.flows=60")
        for p in ("L0->S1#0", "H0->L0#0"):
            rows = vxlan_frames(out / FILES[p])
            assert len(rows) > 500
            assert all(49152 <= u.sport <= 65535 and u.dport == 4789 for _, u, *_ in rows)
            tcp = [r for r in rows if r[3] is not None]
            acks = [r for r in tcp if r[4] == 0 and not r[3].flags & dpkt.tcp.TH_SYN]
            data = [r for r in tcp if r[4] > 0]
            assert acks and data
            # outer: as the scheme sets it; inner: as DCTCP sets it, never CE
            assert all((o.tos & 3 != 0) == acks_ect for o, *_ in acks), (scheme, p)
            assert all(i.tos & 3 == 0 for _, _, i, *_ in acks)
            assert all(i.tos & 3 == 2 and o.tos & 3 in (2, 3) for o, _, i, *_ in data)
            # TSecr: the newest TSval of the peer, never 0 after the handshake
            for _, _, _, t, _ in data:
                val, ecr = struct.unpack("!II", dict(dpkt.tcp.parse_opts(t.opts))[dpkt.tcp.TCP_OPT_TIMESTAMP])
                assert 0 < ecr <= val
            stacks = tshark_protocols(out / FILES[p])
            if stacks is not None:
                assert len(stacks) == len(rows)
                assert all(s.startswith("eth:ethertype:ip:udp:vxlan:eth:ethertype:ip:") for s in stacks), \
                    {s for s in stacks if ":vxlan:" not in s}
                w = tshark_warnings(out / FILES[p])
                assert "malformed" not in w.lower(), w
        # the scheme's own ports: many below 49152 (traceroute draws them
        # from 1024-65023), moved into the range by the writer
        caught = lbsim.run("examples/small.toml", set=[*BASE[1::2], f"lb.scheme={scheme}", "workload.flows=60"]).tables["pcap"]
        sports = caught.column("outer_sport").to_pylist()
        assert min(s for s in sports if s >= 0) < 49152


def test_rdma_captures_decode_as_rocev2_with_pfc_frames(tmp_path):
    # a 16-to-1 incast of 3 MB each at line rate over PFC (each ingress
    # pauses near 1/24 of the 32 MB buffer, as the Rust incast test): the
    # receiver's leaf pauses its hosts, so the senders' access links carry
    # PFC frames toward them, data and (toward the senders) ACKs
    flows = tmp_path / "flows.csv"
    flows.write_text("src,dst,size_bytes,start_us\n" + "".join(f"{s},0,3000000,0\n" for s in range(1, 17)))
    sc = tmp_path / "incast.toml"
    sc.write_text(
        '[topology]\nkind = "leaf_spine"\nleaves = 2\nspines = 1\nhosts_per_leaf = 17\nhost_rate_gbps = 100\n'
        'fabric_rate_gbps = 100\nlink_delay_us = 1\n[transport]\nkind = "rdma"\n[rdma]\nrate_control = "none"\n'
        f'[workload]\nkind = "flow_list"\nflow_list = "{flows}"\n[metrics]\npcap_ports = ["L0->H1#0", "L0->H0#0", "H0->L0#0"]\n'
    )
    out = tmp_path / "out"
    lbsim.run(sc).write(out)
    kinds = lbsim.run(sc).tables["pcap"].column("kind").to_pylist()
    assert {"rdma", "pfc"} <= set(kinds)
    with open(out / "L0-H1_0.pcap", "rb") as f:
        frames = [dpkt.ethernet.Ethernet(buf) for _, buf in dpkt.pcap.Reader(f)]
    pfc = [e for e in frames if e.type == 0x8808]
    acks = [e for e in frames if e.type == 0x0800]
    assert pfc and acks
    # PAUSE frames: MAC control opcode 0x0101, class 3, maximum quanta
    opcode, classes, *quanta = struct.unpack("!HH8H", bytes(pfc[0].data)[:20])
    assert (opcode, classes, quanta[3]) == (0x0101, 8, 0xFFFF)
    # toward the sender: RoCEv2 ACKs (UDP 4791, opcode 0x11, AETH)
    udp = acks[0].data.data
    assert udp.dport == 4791 and bytes(udp.data)[0] == 0x11
    for name in ("L0-H1_0.pcap", "L0-H0_0.pcap"):
        stacks = tshark_protocols(out / name)
        if stacks is not None:
            roce = [s for s in stacks if ":udp:" in s]
            assert roce and all(s.endswith("udp:infiniband") or "infiniband" in s for s in roce), set(roce)
            assert "malformed" not in tshark_warnings(out / name).lower()
