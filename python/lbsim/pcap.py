"""Writes the packets captured on ``metrics.pcap_ports`` as classic pcap
files (nanosecond timestamps, Ethernet), one per port, readable by
Wireshark, tshark, tcpdump, dpkt or scapy.

Only headers are written (the capture length stops after the TCP/UDP
header; the original length is the packet's size on the wire plus 14
bytes of Ethernet). Addresses: host index h is IPv4 10.(h>>16).(h>>8).(h&255)
+ 1 in the last byte's space (10.0.0.1 is host 0) and MAC 02:00:00:xx:xx:xx.
A packet a scheme encapsulated (outer source port set) is written as
outer IPv4 / UDP to port 4789 / VXLAN / inner Ethernet / inner IPv4 / TCP,
as Clove and Presto's overlays put it on the wire. TCP sequence numbers are
lbsim's byte offsets modulo 2^32; windows are capped at 65,535 (no window
scale option is written); ECN is in the IP header's two low TOS bits.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd

_TCP_FLAGS = {1: 0x02, 2: 0x10, 4: 0x40, 8: 0x80}  # lbsim SYN, ACK, ECE, CWR


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


def _frame(r) -> tuple[bytes, int]:
    """Header bytes of one captured packet and its original length."""
    tos = (2 if r.ect else 0) | (3 if r.ce else 0)
    eth = _mac(r.dst) + _mac(r.src) + b"\x08\x00"
    if r.kind == "tcp":
        flags = sum(v for k, v in _TCP_FLAGS.items() if r.flags & k)
        l4 = struct.pack("!HHIIBBHHH", r.sport, r.dport, r.seq & 0xFFFFFFFF, r.ack & 0xFFFFFFFF, 5 << 4, flags, min(r.wnd, 65535), 0, 0)
        proto = 6
    else:
        l4 = struct.pack("!HHHH", r.sport, r.dport, max(r.size - 20, 8) & 0xFFFF, 0)
        proto = 17
    inner = _ipv4(r.src, r.dst, proto, r.size, r.ttl, tos) + l4
    if r.outer_sport >= 0:
        vxlan = struct.pack("!II", 0x08000000, 1 << 8)
        outer_total = r.size + 14 + 8 + 8 + 20
        udp = struct.pack("!HHHH", r.outer_sport, 4789, (outer_total - 20) & 0xFFFF, 0)
        hdr = eth + _ipv4(r.src, r.dst, 17, outer_total, r.ttl, tos) + udp + vxlan + eth + inner
        return hdr, outer_total + 14
    return eth + inner, r.size + 14


def write_pcaps(table: pd.DataFrame, out_dir: Path) -> list[Path]:
    """One ``<port>.pcap`` per captured port in `out_dir` (``>`` and ``#``
    in port names become ``-`` and ``_``)."""
    written = []
    for port, g in table.groupby("port", sort=True):
        path = out_dir / (port.replace(">", "").replace("#", "_") + ".pcap")
        with open(path, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))  # ns timestamps, Ethernet
            for r in g.itertuples(index=False):
                hdr, orig = _frame(r)
                sec, ns = divmod(int(r.t_ps) // 1000, 1_000_000_000)
                f.write(struct.pack("<IIII", sec, ns, len(hdr), orig))
                f.write(hdr)
        written.append(path)
    return written
