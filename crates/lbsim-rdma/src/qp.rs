//! The RoCEv2 reliable connection (IBA Annex A17; the HPCC simulator's
//! `RdmaQueuePair` and `RdmaHw::ReceiveUdp/ReceiveAck`): one queue pair per
//! flow, data in one direction.
//!
//! - Sequence numbers count bytes; each packet carries
//!   min(MTU, bytes left) of payload.
//! - The receiver acknowledges every in-order packet with the next byte it
//!   expects (cumulative). A packet above it (a gap) is discarded and
//!   answered with a NACK carrying the expected byte, at most once per
//!   `nack_interval` for the same expected byte; a duplicate is discarded
//!   silently (as the reference does). Any reply to a CE-marked packet
//!   carries the CNP flag.
//! - The sender goes back to the NACKed byte and resends from there
//!   (go-back-N, as ConnectX NICs do); it paces packets at its current
//!   rate from the start of the previous one; a window, if set, bounds the
//!   bytes outstanding; a retransmission timeout, if set, goes back to the
//!   first unacknowledged byte when nothing was acknowledged for that long.

use crate::config::RdmaConfig;
use crate::dcqcn::Dcqcn;
use lbsim_engine::{BitsPerSec, Bytes, SimTime};

/// What an acknowledgement says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AckKind {
    /// Everything below `seq` arrived.
    Ack,
    /// Everything below `seq` arrived and a later packet came first: go
    /// back to `seq`.
    Nack,
}

/// The receiver's answer to a data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub kind: AckKind,
    /// The next byte expected.
    pub seq: u64,
    /// The data packet was CE-marked: the reply is a CNP for DCQCN.
    pub cnp: bool,
}

/// A sender's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpStats {
    pub packets: u64,
    /// Payload bytes sent again after going back.
    pub resent_bytes: u64,
    pub nacks: u64,
    pub cnps: u64,
    pub timeouts: u64,
}

/// The sending side of a queue pair.
#[derive(Clone, Debug)]
pub struct QpSender {
    size: u64,
    snd_una: u64,
    snd_nxt: u64,
    /// Highest byte ever sent (beyond it nothing is a resend).
    snd_max: u64,
    line: BitsPerSec,
    /// The earliest the next packet may start (pacing).
    next_avail: SimTime,
    /// The last send or acknowledgement (the timeout counts from it).
    last_progress: SimTime,
    pub dcqcn: Dcqcn,
    pub dctcp: crate::DctcpRate,
    pub stats: QpStats,
}

impl QpSender {
    /// A queue pair for `size` bytes starting at `now` at line rate.
    pub fn new(size: u64, line: BitsPerSec, now: SimTime) -> QpSender {
        QpSender {
            size,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            line,
            next_avail: now,
            last_progress: now,
            dcqcn: Dcqcn::new(line),
            dctcp: crate::DctcpRate::new(line),
            stats: QpStats::default(),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }

    /// Every byte acknowledged.
    pub fn done(&self) -> bool {
        self.snd_una >= self.size
    }

    /// The rate the NIC paces this QP at.
    #[inline]
    pub fn rate(&self, cfg: &RdmaConfig) -> BitsPerSec {
        match cfg.rate_control {
            crate::RateControl::Dcqcn => self.dcqcn.rate(),
            crate::RateControl::Dctcp => self.dctcp.rate(),
            crate::RateControl::None => self.line,
        }
    }

    /// Has bytes to send and the window allows it (pacing aside).
    #[inline]
    pub fn has_data(&self, cfg: &RdmaConfig) -> bool {
        self.snd_nxt < self.size && cfg.window.is_none_or(|w| self.snd_nxt - self.snd_una < w)
    }

    /// When pacing lets the next packet start.
    #[inline]
    pub fn next_avail(&self) -> SimTime {
        self.next_avail
    }

    /// Takes the next packet: (first byte, payload bytes). The next may
    /// start one packet time at the current rate after this one starts.
    pub fn send(&mut self, now: SimTime, cfg: &RdmaConfig) -> (u64, u32) {
        debug_assert!(self.has_data(cfg));
        let seq = self.snd_nxt;
        let len = (self.size - seq).min(cfg.mtu_bytes as u64) as u32;
        if seq < self.snd_max {
            self.stats.resent_bytes += len as u64;
        }
        self.snd_nxt += len as u64;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        self.stats.packets += 1;
        self.next_avail = now + self.rate(cfg).tx_time(Bytes((len + cfg.header_bytes) as u64));
        self.last_progress = now;
        (seq, len)
    }

    /// An ACK or NACK arrived; true when it completes the flow.
    pub fn on_ack(&mut self, kind: AckKind, seq: u64, cnp: bool, now: SimTime, cfg: &RdmaConfig) -> bool {
        self.snd_una = self.snd_una.max(seq);
        self.snd_nxt = self.snd_nxt.max(self.snd_una);
        self.last_progress = now;
        if kind == AckKind::Nack {
            self.stats.nacks += 1;
            self.snd_nxt = self.snd_una;
        }
        if cnp {
            self.stats.cnps += 1;
            if cfg.rate_control == crate::RateControl::Dcqcn {
                self.dcqcn.on_cnp(now, &cfg.dcqcn);
            }
        }
        if cfg.rate_control == crate::RateControl::Dctcp {
            self.dctcp.on_ack(seq, cnp, self.snd_nxt, cfg.mtu_bytes as u64, cfg.dcqcn.min_rate, &cfg.dctcp);
        }
        self.done()
    }

    /// When the retransmission timeout fires if nothing happens first.
    pub fn rto_due(&self, cfg: &RdmaConfig) -> Option<SimTime> {
        match cfg.rto {
            Some(rto) if self.snd_nxt > self.snd_una => Some(self.last_progress + rto),
            _ => None,
        }
    }

    /// The earliest of the timeout and DCQCN's timers.
    pub fn next_timer(&self, cfg: &RdmaConfig) -> Option<SimTime> {
        let d = if cfg.rate_control == crate::RateControl::Dcqcn { self.dcqcn.next_due() } else { None };
        match (d, self.rto_due(cfg)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Runs what is due at `now`: DCQCN's steps, and a timeout (go back to
    /// snd_una).
    pub fn on_timer(&mut self, now: SimTime, cfg: &RdmaConfig) {
        if cfg.rate_control == crate::RateControl::Dcqcn {
            self.dcqcn.on_timer(now, &cfg.dcqcn);
        }
        if self.rto_due(cfg).is_some_and(|t| t <= now) {
            self.stats.timeouts += 1;
            self.snd_nxt = self.snd_una;
            self.last_progress = now;
        }
    }
}

/// The receiving side of a queue pair.
#[derive(Clone, Debug, Default)]
pub struct QpReceiver {
    /// The next byte expected.
    expected: u64,
    /// No NACK for the same expected byte before this.
    nack_quiet_until: SimTime,
    last_nack: Option<u64>,
    /// Packets that arrived above the expected byte / below it.
    pub out_of_order: u64,
    pub duplicates: u64,
}

impl QpReceiver {
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// A data packet of `len` bytes at `seq` arrived (CE-marked if `ce`);
    /// the reply to send, if any.
    pub fn on_data(&mut self, seq: u64, len: u32, ce: bool, now: SimTime, cfg: &RdmaConfig) -> Option<Reply> {
        if seq == self.expected {
            self.expected += len as u64;
            return Some(Reply { kind: AckKind::Ack, seq: self.expected, cnp: ce });
        }
        if seq < self.expected {
            self.duplicates += 1;
            return None;
        }
        self.out_of_order += 1;
        if now >= self.nack_quiet_until || self.last_nack != Some(self.expected) {
            self.nack_quiet_until = now + cfg.nack_interval;
            self.last_nack = Some(self.expected);
            return Some(Reply { kind: AckKind::Nack, seq: self.expected, cnp: ce });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RateControl;

    fn cfg() -> RdmaConfig {
        RdmaConfig { rate_control: RateControl::None, ..RdmaConfig::default() }
    }

    #[test]
    fn packets_are_paced_at_the_rate_from_the_previous_start() {
        let c = cfg();
        let mut s = QpSender::new(2_500, BitsPerSec::gbps(100), SimTime::ZERO);
        assert_eq!(s.send(SimTime::ZERO, &c), (0, 1000));
        // 1048 B at 100 Gb/s: 83.84 ns
        assert_eq!(s.next_avail(), SimTime(83_840));
        assert_eq!(s.send(SimTime(83_840), &c), (1000, 1000));
        assert_eq!(s.send(SimTime(200_000), &c), (2000, 500));
        assert_eq!(s.next_avail(), SimTime(200_000 + 43_840));
        assert!(!s.has_data(&c));
        assert!(!s.on_ack(AckKind::Ack, 2000, false, SimTime(300_000), &c));
        assert!(s.on_ack(AckKind::Ack, 2500, false, SimTime(300_100), &c));
    }

    #[test]
    fn a_lost_packet_is_nacked_once_and_the_sender_goes_back() {
        let c = cfg();
        let mut s = QpSender::new(5_000, BitsPerSec::gbps(100), SimTime::ZERO);
        let mut r = QpReceiver::default();
        let pkts: Vec<_> = (0..5).map(|i| s.send(SimTime(i * 100_000), &c)).collect();
        let mut replies = vec![];
        for (i, &(seq, len)) in pkts.iter().enumerate() {
            if i == 1 {
                continue; // lost
            }
            replies.push(r.on_data(seq, len, i == 3, SimTime(1_000_000 + i as u64), &c));
        }
        // ACK 1000, then one NACK for 1000 (the CE of the packet that set
        // it off rides on it), then silence inside the NACK interval
        assert_eq!(
            replies,
            vec![Some(Reply { kind: AckKind::Ack, seq: 1000, cnp: false }), Some(Reply { kind: AckKind::Nack, seq: 1000, cnp: false }), None, None,]
        );
        assert_eq!(r.out_of_order, 3);
        s.on_ack(AckKind::Ack, 1000, false, SimTime(2_000_000), &c);
        s.on_ack(AckKind::Nack, 1000, false, SimTime(2_000_001), &c);
        assert_eq!((s.snd_una(), s.snd_nxt()), (1000, 1000));
        // it resends 1000.. (four packets, 4000 bytes counted as resent)
        let mut t = SimTime(3_000_000);
        while s.has_data(&c) {
            let (seq, len) = s.send(t, &c);
            if let Some(rep) = r.on_data(seq, len, false, t, &c) {
                s.on_ack(rep.kind, rep.seq, rep.cnp, t, &c);
            }
            t += SimTime(100_000);
        }
        assert!(s.done());
        assert_eq!(s.stats.resent_bytes, 4000);
        assert_eq!(s.stats.nacks, 1);
        // a packet already received is a duplicate: no reply
        assert_eq!(r.on_data(0, 1000, false, t, &c), None);
        assert_eq!(r.duplicates, 1);
    }

    #[test]
    fn the_nack_interval_repeats_a_nack_for_the_same_hole() {
        let c = cfg();
        let mut r = QpReceiver::default();
        let at = |us| SimTime::from_us(us);
        assert_eq!(r.on_data(1000, 1000, false, at(0), &c).map(|x| x.kind), Some(AckKind::Nack));
        assert_eq!(r.on_data(2000, 1000, false, at(499), &c), None);
        assert_eq!(r.on_data(3000, 1000, true, at(500), &c), Some(Reply { kind: AckKind::Nack, seq: 0, cnp: true }));
    }

    #[test]
    fn window_and_timeout() {
        let c = RdmaConfig { window: Some(2000), rto: Some(SimTime::from_us(100)), ..cfg() };
        let mut s = QpSender::new(10_000, BitsPerSec::gbps(100), SimTime::ZERO);
        s.send(SimTime::ZERO, &c);
        s.send(SimTime::ZERO, &c);
        assert!(!s.has_data(&c), "two packets fill a 2000-byte window");
        assert_eq!(s.next_timer(&c), Some(SimTime::from_us(100)));
        s.on_timer(SimTime::from_us(100), &c);
        assert_eq!((s.snd_nxt(), s.stats.timeouts), (0, 1));
        assert!(s.has_data(&c));
        assert_eq!(s.rto_due(&c), None, "nothing outstanding after going back");
    }

    #[test]
    fn a_cnp_reaches_dcqcn() {
        let c = RdmaConfig::default();
        let mut s = QpSender::new(1_000_000, BitsPerSec::gbps(100), SimTime::ZERO);
        s.send(SimTime::ZERO, &c);
        s.on_ack(AckKind::Ack, 1000, true, SimTime::from_us(5), &c);
        s.on_ack(AckKind::Ack, 1000, true, SimTime::from_us(6), &c);
        assert_eq!(s.stats.cnps, 2);
        let due = s.next_timer(&c).unwrap();
        s.on_timer(due, &c);
        assert!(s.rate(&c) < BitsPerSec::gbps(100));
        assert_eq!(s.dcqcn.cuts, 1);
    }
}
