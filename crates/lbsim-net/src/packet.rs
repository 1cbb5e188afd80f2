//! Packets: a lean, typed record (htsim's `Route`-carrying packet rather
//! than a catch-all). Addressing is by host index; the transport header and
//! each load-balancing scheme's header extension are typed.

use crate::ids::NodeId;
use lbsim_engine::{mix64, SimTime};
use lbsim_tcp::TcpHeader;

/// UDP destination port of the encapsulation (the STT/VXLAN outer header);
/// fixed, so only the outer source port varies.
pub const ENCAP_DPORT: u16 = 4789;

/// UDP destination port of RoCEv2 (IBA Annex A17.2.1).
pub const ROCE_DPORT: u16 = 4791;

/// What a RoCEv2 packet of a queue pair is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RdmaKind {
    /// Payload `len` bytes from byte `seq`.
    Data,
    /// Every byte below `seq` arrived.
    Ack,
    /// Every byte below `seq` arrived and a later one came first.
    Nack,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Tcp = 6,
    Udp = 17,
}

/// What the packet carries.
#[derive(Clone, Copy, Debug)]
pub enum Payload {
    /// A TCP segment of connection `conn`; `to_receiver` is true for data
    /// and SYN (sender→receiver), false for ACKs and SYN-ACKs.
    Tcp { conn: u32, to_receiver: bool, hdr: TcpHeader },
    /// A UDP datagram of constant-rate source `source`.
    Udp { source: u32 },
    /// A packet a load-balancing scheme created (probes, feedback).
    Control { tag: u32 },
    /// ICMP time-exceeded (RFC 792): sent back to the source by switch
    /// `from` when a packet's TTL runs out there; `tag` copies the expired
    /// packet's control tag, `in_port` is where it entered `from`.
    TimeExceeded { tag: u32, from: NodeId, in_port: crate::ids::PortId },
    /// A RoCEv2 packet of queue pair `qp` (data from its sender, or an
    /// ACK/NACK from its receiver carrying the CNP flag `cnp`).
    Rdma { qp: u32, kind: RdmaKind, seq: u64, len: u32, cnp: bool },
    /// A PFC frame (IEEE 802.1Qbb MAC control): pause or resume the data
    /// class of the link it crosses.
    Pfc { pause: bool },
}

/// A load-balancing scheme's header extension (the overlay header fields
/// it reads and writes). One variant per scheme that needs one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LbHeader {
    #[default]
    None,
    /// CONGA (§3.1): LBTag, CE, FB_LBTag, FB_Metric.
    Conga { lbtag: u8, ce: u8, fb_valid: bool, fb_lbtag: u8, fb_metric: u8 },
    /// Clove (§3.2, §4): the path-state relay in the encapsulation header:
    /// a source port the receiver reports on, with its ECN bit or the max
    /// utilisation seen; `int_util` is the INT path-max field switches update.
    Clove { fb_valid: bool, fb_port: u16, fb_ce: bool, fb_util: u16, int_util: u16 },
    /// Presto (Clove §5 adaptation): flowcell id and the flow's hash.
    Presto { flowcell: u32 },
    /// A HULA probe (HULA §3): the ToR (rack index) it advertises and the
    /// utilisation of the best path to it so far, in 1/4096 of capacity.
    Hula { tor: u16, util: u16 },
    /// AG (§V, Algorithm 1): a probe stamped with the source leaf's clock,
    /// or feedback carrying a measured one-way delay, both in ns (wrapping
    /// u32), and the leaf that wrote it.
    /// `bytes` is simulator-only (not on the wire): on feedback, the size
    /// of the packet whose delay it carries, so the truth reported beside a
    /// measurement is for a packet of that size (AG Fig. 12).
    Ag { probe: bool, feedback: bool, ns: u32, leaf: u16, bytes: u16 },
    /// VMS (§III-B, Fig. 3): the channel (reserved TCP bits), the sticky SIN
    /// flag, and on ACKs the feedback option (channel, RCE, received bytes,
    /// feedback number: 8 bytes on the wire).
    Vms { channel: u8, sin: bool, fb: Option<(u8, bool, u32, u32)> },
    /// The Expeditus tag (Expeditus §3.2, Fig. 6): SF (false = first stage,
    /// Exp-request; true = second stage, Exp-response), NoE entries, and the
    /// congestion data: 4-bit entries (3-bit metrics), entry i in bits
    /// 4(i mod 8).. of `cd[i / 8]`.
    Expeditus { sf: bool, noe: u8, cd: [u32; 2] },
}

/// Entry `i` of an Expeditus tag's congestion data.
#[inline]
pub fn cd_get(cd: &[u32; 2], i: usize) -> u8 {
    ((cd[i / 8] >> (4 * (i % 8))) & 0xF) as u8
}

/// Sets entry `i` (values above 15 are stored as 15).
#[inline]
pub fn cd_set(cd: &mut [u32; 2], i: usize, v: u8) {
    let sh = 4 * (i % 8);
    cd[i / 8] = (cd[i / 8] & !(0xF << sh)) | ((v.min(15) as u32) << sh);
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Source and destination hosts (node ids).
    pub src: NodeId,
    pub dst: NodeId,
    pub sport: u16,
    pub dport: u16,
    pub proto: Proto,
    /// Encapsulation: the outer source port chosen by the sending host's
    /// edge; `None` for an unencapsulated packet.
    pub outer_sport: Option<u16>,
    /// The key switches hash for ECMP: the outer 5-tuple when encapsulated,
    /// the inner one otherwise.
    pub hash: u64,
    /// Bytes on the wire.
    pub size: u32,
    pub ttl: u8,
    /// ECN-capable transport and congestion experienced (RFC 3168).
    pub ect: bool,
    pub ce: bool,
    pub payload: Payload,
    pub lb: LbHeader,
    /// When the sending host created it.
    pub created: SimTime,
    /// Switch hops taken so far.
    pub hops: u8,
    /// A TCP data segment's send serial (the low 32 bits of its connection's
    /// count of data segments sent before it; simulator truth for telling
    /// reordering from loss, not on the wire). 0 otherwise.
    pub serial: u32,
}

/// Hash of a 5-tuple (the ECMP key before a switch's salt is mixed in).
#[inline]
pub fn tuple_hash(src: NodeId, dst: NodeId, sport: u16, dport: u16, proto: Proto) -> u64 {
    let a = ((src.0 as u64) << 32) | dst.0 as u64;
    let b = ((sport as u64) << 24) | ((dport as u64) << 8) | proto as u64;
    mix64(mix64(a) ^ b)
}

impl Packet {
    /// One packet from its header fields, each named at the call site.
    #[allow(clippy::too_many_arguments)]
    pub fn new(src: NodeId, dst: NodeId, sport: u16, dport: u16, proto: Proto, size: u32, payload: Payload, now: SimTime) -> Self {
        Packet {
            src,
            dst,
            sport,
            dport,
            proto,
            outer_sport: None,
            hash: tuple_hash(src, dst, sport, dport, proto),
            size,
            ttl: 64,
            ect: false,
            ce: false,
            payload,
            lb: LbHeader::None,
            created: now,
            hops: 0,
            serial: 0,
        }
    }

    /// A control packet from switch `src` to switch `dst` (a neighbour, or
    /// any switch the scheme forwards it to hop by hop): `size` bytes on the
    /// wire, the scheme's header `lb`. Routing never sees it; see
    /// `LoadBalancer::on_switch_control`.
    pub fn to_switch(src: NodeId, dst: NodeId, size: u32, tag: u32, lb: LbHeader, now: SimTime) -> Self {
        let mut p = Packet::new(src, dst, 0, 0, Proto::Udp, size, Payload::Control { tag }, now);
        p.lb = lb;
        p
    }

    /// Rewrites the real (inner) source port, as VMS's channels do: switches
    /// hash the new 5-tuple.
    pub fn set_sport(&mut self, p: u16) {
        self.sport = p;
        if self.outer_sport.is_none() {
            self.hash = tuple_hash(self.src, self.dst, p, self.dport, self.proto);
        }
    }

    /// Encapsulates with outer source port `p` (UDP to [`ENCAP_DPORT`]):
    /// switches now hash the outer header.
    pub fn set_outer_sport(&mut self, p: u16) {
        self.outer_sport = Some(p);
        self.hash = tuple_hash(self.src, self.dst, p, ENCAP_DPORT, Proto::Udp);
    }

    /// The inner 5-tuple hash (what an edge uses to pick a default outer port).
    pub fn inner_hash(&self) -> u64 {
        tuple_hash(self.src, self.dst, self.sport, self.dport, self.proto)
    }

    pub fn tcp(&self) -> Option<&TcpHeader> {
        match &self.payload {
            Payload::Tcp { hdr, .. } => Some(hdr),
            _ => None,
        }
    }

    /// True for TCP segments carrying payload.
    pub fn is_data(&self) -> bool {
        matches!(&self.payload, Payload::Tcp { hdr, .. } if hdr.len > 0)
            || matches!(self.payload, Payload::Udp { .. } | Payload::Rdma { kind: RdmaKind::Data, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expeditus_tag_entries_and_packet_stays_small() {
        let mut cd = [0u32; 2];
        for i in 0..16 {
            cd_set(&mut cd, i, (i % 8) as u8);
        }
        cd_set(&mut cd, 9, 20);
        assert_eq!((0..16).map(|i| cd_get(&cd, i)).collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5, 6, 7, 0, 15, 2, 3, 4, 5, 6, 7]);
        // the tag does not grow the scheme header (VMS's feedback option is
        // as large), so the packet record stays at its size before Expeditus
        assert!(std::mem::size_of::<LbHeader>() <= 16, "{}", std::mem::size_of::<LbHeader>());
        assert!(std::mem::size_of::<Packet>() <= 176, "{}", std::mem::size_of::<Packet>());
    }
}
