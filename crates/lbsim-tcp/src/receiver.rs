//! The receiving half of a TCP connection, as an I/O-free state machine.
//!
//! States (RFC 793 §3.2): `Listen` → `SynReceived` → `Established`.
//! - Delayed ACKs (RFC 5681 §4.2, RFC 1122 §4.2.3.2): an ACK for every
//!   `delack_count` full-sized segments or after `delack_timeout`; an
//!   immediate ACK for an out-of-order segment, a duplicate, or a segment
//!   that fills a hole.
//! - SACK (RFC 2018 §4): up to 3 blocks, the first holding the most
//!   recently received segment.
//! - D-SACK (RFC 2883 §4), with `dsack`: a segment entirely below `rcv_nxt`
//!   (or the part of one below it), or entirely inside data already held
//!   out of order, is reported as the first block of the next ACK (sent at
//!   once), followed by the usual blocks; the block holding an out-of-order
//!   duplicate comes second (§4 rule 4).
//! - Timestamps (RFC 7323 §4.3): echo the timestamp of the oldest in-order
//!   segment not yet acknowledged, so delayed ACKs inflate the RTT sample
//!   exactly as in a real stack.
//! - ECN: DCTCP's two-state CE echo (RFC 8257 §3.2: on a CE change, ACK what
//!   arrived before at once with the old state); classic ECN latches ECE
//!   until a CWR arrives (RFC 3168 §6.1.3).

use crate::config::{CongestionControl, TcpConfig};
use crate::header::{TcpHeader, ACK, CWR, ECE, MAX_SACK_BLOCKS, SYN};
use crate::ranges::RangeSet;
use lbsim_engine::SimTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiverState {
    Listen,
    SynReceived,
    Established,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ReceiverStats {
    /// Data segments that arrived above `rcv_nxt` (reordering or loss).
    pub out_of_order: u64,
    /// Data segments entirely below `rcv_nxt` (spurious retransmissions).
    pub duplicates: u64,
    pub acks_sent: u64,
    /// ACKs that carried a D-SACK block.
    pub dsacks: u64,
}

#[derive(Clone, Debug)]
pub struct TcpReceiver {
    delack_count: u32,
    delack_timeout: SimTime,
    sack: bool,
    dsack: bool,
    /// RFC 2883: the duplicate range the next ACK reports first.
    dsack_block: Option<(u64, u64)>,
    dctcp: bool,
    ecn: bool,
    wnd: u32,
    state: ReceiverState,
    rcv_nxt: u64,
    ooo: RangeSet,
    last_ooo: u64,
    /// Sequence numbers inside recently reported blocks, most recent first.
    reported: Vec<u64>,
    pending: u32,
    delack_deadline: Option<SimTime>,
    ts_recent: SimTime,
    ce_state: bool,
    ece_latched: bool,
    pub stats: ReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> Self {
        TcpReceiver {
            delack_count: cfg.delack_count.max(1),
            delack_timeout: cfg.delack_timeout,
            sack: cfg.sack,
            dsack: cfg.sack && cfg.dsack,
            dsack_block: None,
            dctcp: matches!(cfg.cc, CongestionControl::Dctcp { .. }),
            ecn: cfg.ecn,
            wnd: cfg.rcv_wnd,
            state: ReceiverState::Listen,
            rcv_nxt: 0,
            ooo: RangeSet::new(),
            last_ooo: 0,
            reported: Vec::new(),
            pending: 0,
            delack_deadline: None,
            ts_recent: SimTime::ZERO,
            ce_state: false,
            ece_latched: false,
            stats: ReceiverStats::default(),
        }
    }

    pub fn new_established(cfg: &TcpConfig) -> Self {
        let mut r = TcpReceiver::new(cfg);
        r.state = ReceiverState::Established;
        r
    }

    pub fn state(&self) -> ReceiverState {
        self.state
    }
    /// Next byte expected: every byte below it has been delivered in order.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo.total()
    }
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.delack_deadline
    }

    /// Processes a segment from the sender; `ce` is the IP CE mark it arrived
    /// with. Returns the number of bytes newly delivered in order.
    pub fn on_segment(&mut self, h: &TcpHeader, ce: bool, now: SimTime, out: &mut Vec<TcpHeader>) -> u64 {
        if h.has(SYN) {
            if self.state == ReceiverState::Listen {
                self.state = ReceiverState::SynReceived;
            }
            self.ts_recent = h.ts_val;
            out.push(TcpHeader { flags: SYN | ACK, wnd: self.wnd, ts_val: now, ts_ecr: h.ts_val, ..Default::default() });
            self.stats.acks_sent += 1;
            return 0;
        }
        if self.state != ReceiverState::Established {
            self.state = ReceiverState::Established;
        }
        if h.has(CWR) {
            self.ece_latched = false;
        }
        if h.len == 0 {
            return 0;
        }
        if self.dctcp && ce != self.ce_state {
            if self.pending > 0 {
                self.send_ack(now, out);
            }
            self.ce_state = ce;
        }
        if self.ecn && ce {
            self.ece_latched = true;
        }
        let end = h.seq + h.len as u64;
        if end <= self.rcv_nxt {
            self.stats.duplicates += 1;
            if self.dsack {
                self.dsack_block = Some((h.seq, end)); // RFC 2883 §4.1.1
            }
            self.send_ack(now, out);
            return 0;
        }
        if h.seq <= self.rcv_nxt {
            let had_hole = !self.ooo.is_empty();
            if self.pending == 0 {
                self.ts_recent = h.ts_val;
            }
            let before = self.rcv_nxt;
            if self.dsack && h.seq < before {
                // RFC 2883 §4 rule 3: the block spans the duplicated bytes only
                self.dsack_block = Some((h.seq, before));
            }
            self.rcv_nxt = end;
            // absorb every out-of-order range now reached
            while let Some((s, e)) = self.ooo.next_at_or_after(0) {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove_below(self.rcv_nxt);
            }
            self.pending += 1;
            if had_hole || self.pending >= self.delack_count || self.dsack_block.is_some() {
                self.send_ack(now, out);
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack_timeout);
            }
            self.rcv_nxt - before
        } else {
            self.stats.out_of_order += 1;
            if self.ooo.insert(h.seq, end) == 0 && self.dsack {
                // RFC 2883 §4.1.3; the block holding it follows (§4 rule 4)
                self.dsack_block = Some((h.seq, end));
            }
            self.last_ooo = h.seq;
            self.send_ack(now, out);
            0
        }
    }

    /// Handles the delayed-ACK timer.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if matches!(self.delack_deadline, Some(d) if now >= d) {
            self.delack_deadline = None;
            if self.pending > 0 {
                self.send_ack(now, out);
            }
        }
    }

    fn send_ack(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        let mut h = TcpHeader { ack: self.rcv_nxt, flags: ACK, wnd: self.wnd, ts_val: now, ts_ecr: self.ts_recent, ..Default::default() };
        let ece = if self.dctcp { self.ce_state } else { self.ece_latched };
        if ece {
            h.flags |= ECE;
        }
        // RFC 2883 §4 rule 1: the D-SACK block goes first, in this ACK only
        let first = match self.dsack_block.take() {
            Some(d) => {
                h.sack[0] = d;
                h.n_sack = 1;
                self.stats.dsacks += 1;
                1
            }
            None => 0,
        };
        if self.sack && !self.ooo.is_empty() {
            // RFC 2018 §4: the block holding the latest segment first, then
            // the blocks reported most recently, then the highest others
            let mut n = first;
            let latest = std::iter::once(self.last_ooo);
            let recent = self.reported.iter().copied();
            let cands = latest.chain(recent).filter_map(|x| self.ooo.containing(x)).chain(self.ooo.as_slice().iter().rev().copied());
            for b in cands {
                if n == MAX_SACK_BLOCKS {
                    break;
                }
                if !h.sack[first..n].contains(&b) {
                    h.sack[n] = b;
                    n += 1;
                }
            }
            h.n_sack = n as u8;
            self.reported.clear();
            self.reported.extend(h.sack[first..n].iter().map(|b| b.0));
        }
        self.pending = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        out.push(h);
    }
}
