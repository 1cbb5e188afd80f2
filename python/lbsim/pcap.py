"""Writes the packets captured on ``metrics.pcap_ports`` as classic pcap
files (nanosecond timestamps, Ethernet), one per port, readable by
Wireshark, tshark, tcpdump, dpkt or scapy. docs/pcap.md describes the
format: the address plan, the file names, how lbsim's sequence numbers and
TCP options are written.

In short: each record holds the packet's headers (Ethernet, IPv4, TCP with
its options, or the VXLAN encapsulation and the inner packet); the payload
bytes are cut as by a short snap length (captured length < original length),
while every length field in the headers is the packet's real one. TCP
sequence numbers are lbsim's byte offsets + 1 (the SYN takes the initial
sequence number 0, both directions), modulo 2^32;
timestamps (TSval/TSecr) are in microseconds of simulated time, modulo 2^32.
RoCEv2 packets (RDMA runs) are UDP to port 4791 with the InfiniBand base
transport header (and an AETH on ACKs and NACKs); PFC frames are MAC
control frames (EtherType 0x8808). An encapsulated packet's outer header carries the ECN field the network
sees, its inner header the transport's; the outer UDP source port is the
scheme's, moved into RFC 7348's 49152-65535 (``vxlan_sport``).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd

_SYN, _ACK, _ECE, _CWR = 1, 2, 4, 8  # lbsim's flag bits
_TCP_FLAGS = {_SYN: 0x02, _ACK: 0x10, _ECE: 0x40, _CWR: 0x80}
ISN = 0  # the SYN's sequence number, both directions of every connection
VXLAN_PORT = 4789
ROCE_PORT = 4791
_M32 = 0xFFFFFFFF
#: RC opcodes (IBA Table 38): SEND Only for a data packet, Acknowledge
#: for ACKs and NACKs
_RC_SEND_ONLY, _RC_ACK = 0x04, 0x11
#: AETH syndromes (IBA §9.7.5.1.1): an ACK (credits invalid), a NAK for a
#: PSN sequence error
_AETH_ACK, _AETH_NAK_SEQ = 0x1F, 0x60


def _ip(host: int) -> bytes:
    h = host + 1
    return bytes([10, (h >> 16) & 255, (h >> 8) & 255, h & 255])


def _mac(host: int) -> bytes:
    return bytes([2, 0, 0, (host >> 16) & 255, (host >> 8) & 255, host & 255])


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _ipv4(src: int, dst: int, proto: int, total: int, ttl: int, tos: int) -> bytes:
    h = struct.pack("!BBHHHBBH4s4s", 0x45, tos, min(total, 65535), 0, 0x4000, max(ttl, 1), proto, 0, _ip(src), _ip(dst))
    return h[:10] + struct.pack("!H", _csum(h)) + h[12:]


#: RFC 7348 §5: the outer UDP source port (the flow entropy) lies in the
#: dynamic range 49152-65535
VXLAN_SPORT_MIN = 49152


def vxlan_sport(port: int) -> int:
    """A scheme's outer source port as the capture writes it: its low 14
    bits in RFC 7348's range (ports already there are unchanged)."""
    return VXLAN_SPORT_MIN | (int(port) & 0x3FFF)


def wire_seq(seq: int) -> int:
    """lbsim's byte offset `seq` (0 = first payload byte) as a TCP sequence
    number: the SYN takes ISN, so payload byte 0 is ISN + 1."""
    return (ISN + 1 + seq) & _M32


def ts_us(ps: int) -> int:
    """A simulated time in picoseconds as a TSval/TSecr: microseconds mod 2^32."""
    return (int(ps) // 1_000_000) & _M32


def window_shift(max_wnd: int) -> int:
    """The window-scale shift all SYNs of a capture announce: the smallest
    that fits the largest advertised window in 16 bits (at most 14)."""
    s = 0
    while s < 14 and (max_wnd >> s) > 0xFFFF:
        s += 1
    return s


def _tcp_options(r, wscale: int) -> bytes:
    ts = struct.pack("!BBII", 8, 10, ts_us(r.ts_val), ts_us(r.ts_ecr))
    if r.flags & _SYN:
        # 16 bytes, Linux's order without the MSS option
        syn = (struct.pack("!BB", 4, 2) + ts) if r.sack_ok else (b"\x01\x01" + ts)
        return syn + struct.pack("!BBBB", 1, 3, 3, wscale)
    opts = b"\x01\x01" + ts
    n = int(r.n_sack)
    if n:
        blocks = [(r.sack1_start, r.sack1_end), (r.sack2_start, r.sack2_end), (r.sack3_start, r.sack3_end)][:n]
        opts += struct.pack("!BBBB", 1, 1, 5, 2 + 8 * n)
        opts += b"".join(struct.pack("!II", wire_seq(s), wire_seq(e)) for s, e in blocks)
    return opts


def _tcp(r, wscale: int) -> bytes:
    opts = _tcp_options(r, wscale)
    flags = sum(v for k, v in _TCP_FLAGS.items() if r.flags & k)
    seq = ISN if r.flags & _SYN else wire_seq(r.seq)
    ack = wire_seq(r.ack) if r.flags & _ACK else 0
    # RFC 7323 §2.2: a SYN's window is never scaled
    wnd = min(r.wnd if r.flags & _SYN else r.wnd >> wscale, 0xFFFF)
    off = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", r.sport, r.dport, seq, ack, off << 4, flags, wnd, 0, 0) + opts


def _roce(r) -> bytes:
    """UDP, the BTH and (ACK/NACK) the AETH of a RoCEv2 packet: PSN in
    ``seq``, 0 data / 1 ACK / 2 NACK in ``flags``, the CNP flag in ``ack``
    (shown as the BTH's BECN bit), the queue pair in ``wnd``."""
    ack = int(r.flags) != 0
    qp, psn = int(r.wnd), int(r.seq)
    opcode = _RC_ACK if ack else _RC_SEND_ONLY
    becn = 0x40 if r.ack else 0
    bth = struct.pack("!BBHBBHBBH", opcode, 0, 0xFFFF, becn, (qp >> 16) & 0xFF, qp & 0xFFFF, 0, (psn >> 16) & 0xFF, psn & 0xFFFF)
    aeth = struct.pack("!BBH", _AETH_NAK_SEQ if int(r.flags) == 2 else _AETH_ACK, 0, 0) if ack else b""
    udp_len = int(r.size) - 14 - 20
    return struct.pack("!HHHH", r.sport, ROCE_PORT, max(udp_len, 8) & 0xFFFF, 0) + bth + aeth


def _pfc(r) -> bytes:
    """An 802.1Qbb PFC frame: MAC control, class 3 enabled, its pause
    quanta the maximum (PAUSE) or 0 (RESUME)."""
    quanta = [0] * 8
    quanta[3] = 0xFFFF if r.flags else 0
    return bytes.fromhex("0180c2000001") + _mac(0) + b"\x88\x08" + struct.pack("!HH8H", 0x0101, 1 << 3, *quanta)


def _frame(r, wscale: int) -> tuple[bytes, int]:
    """Header bytes of one captured packet and its original length."""
    if r.kind == "pfc":
        return _pfc(r), max(int(r.size), 60)
    tos = (2 if r.ect else 0) | (3 if r.ce else 0)
    eth = _mac(r.dst) + _mac(r.src) + b"\x08\x00"
    encap = r.outer_sport >= 0
    # the inner header of an encapsulated packet: as its transport sent it
    inner_tos = (2 if r.inner_ect else 0) if encap else tos
    if r.kind == "tcp":
        l4 = _tcp(r, wscale)
        total = 20 + len(l4) + int(r.len)
        proto = 6
    elif r.kind == "rdma":
        # lbsim's sizes count the 14-byte Ethernet header
        l4 = _roce(r)
        total = int(r.size) - 14
        proto = 17
    else:
        total = int(r.size)
        l4 = struct.pack("!HHHH", r.sport, r.dport, max(total - 20, 8) & 0xFFFF, 0)
        proto = 17
    inner = _ipv4(r.src, r.dst, proto, total, r.ttl, inner_tos) + l4
    if encap:
        vxlan = struct.pack("!II", 0x08000000, 1 << 8)
        outer_total = total + 14 + 8 + 8 + 20
        udp = struct.pack("!HHHH", vxlan_sport(r.outer_sport), VXLAN_PORT, (outer_total - 20) & 0xFFFF, 0)
        hdr = eth + _ipv4(r.src, r.dst, 17, outer_total, r.ttl, tos) + udp + vxlan + eth + inner
        return hdr, outer_total + 14
    return eth + inner, total + 14


def file_name(port: str) -> str:
    """The pcap file of a port: ``L0->S1#0`` is ``L0-S1_0.pcap``."""
    return port.replace(">", "").replace("#", "_") + ".pcap"


def write_pcaps(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One pcap file per captured port in `out_dir` (see `file_name`)."""
    written = []
    tcp = table[table.kind == "tcp"] if len(table) else table
    wscale = window_shift(int(tcp.wnd.max())) if len(tcp) else 0
    for port, g in table.groupby("port", sort=True):
        path = out_dir / file_name(port)
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # ns timestamps, Ethernet
            for r in g.itertuples(index=False):
                hdr, orig = _frame(r, wscale)
                sec, ns = divmod(int(r.t_ps) // 1000, 1_000_000_000)
                f.write(struct.pack("<IIII", sec, ns, len(hdr), orig))
                f.write(hdr)
        written.append(path)
    return written
