//! The adaptive duplicate-ACK threshold and undo of spurious reductions
//! (`Reordering::Adaptive`).
//!
//! `Fixed` keeps DupThresh = `dupack_threshold`. `Adaptive` follows Linux
//! before RACK (`tp->reordering`): when a cumulative ACK or a SACK block
//! covers data that was never retransmitted and lies below data already
//! SACKed, that data arrived late, not lost; the reordering degree is the
//! distance from its start to the highest SACKed byte, in segments rounded
//! up, and DupThresh (for fast recovery entry, `IsLost`, `pipe`, `NextSeg`)
//! rises to it, up to `max_pkts` (RFC 4653 and RFC 5827 discuss such
//! thresholds). An RTO puts DupThresh back to `dupack_threshold` (Linux
//! does, so a stale large threshold cannot turn every loss into a timeout).
//!
//! `Adaptive` also undoes spurious reductions: cwnd and ssthresh are saved
//! before a reduction (fast recovery entry, or an RTO from `Open`) and the
//! episode's retransmissions counted; each D-SACK (RFC 2883) reporting a
//! retransmitted segment as a duplicate cancels one (RFC 3708 §3), and once
//! none is left, or when the first ACK advancing `snd_una` echoes a
//! timestamp older than the episode's first retransmission (RFC 3522 Eifel
//! detection), the reduction was spurious: cwnd = max(cwnd, saved),
//! ssthresh = max(ssthresh, saved), back to `Open` (RFC 4015 response,
//! Linux `tcp_undo_cwnd_reduction`), and DupThresh rises to the reordering
//! this revealed. The saved state lives until the next reduction, so a
//! D-SACK arriving after recovery ended still undoes it.

use super::{Recovery, TcpSender};
use crate::header::TcpHeader;
use crate::ranges::RangeSet;
use lbsim_engine::SimTime;

/// What an undo (RFC 4015) restores, and the evidence gathered so far.
#[derive(Clone, Copy, Debug)]
pub(super) struct Undo {
    /// cwnd and ssthresh before the reduction.
    pub(super) cwnd: u64,
    pub(super) ssthresh: u64,
    /// Retransmissions of the episode not yet D-SACKed (RFC 3708 §3).
    pub(super) retrans: u64,
    /// Time and sequence number of the episode's first retransmission.
    pub(super) first_rtx: Option<(SimTime, u64)>,
    /// RFC 3522: the first ACK advancing `snd_una` is still to come.
    pub(super) eifel_pending: bool,
}

impl TcpSender {
    /// `on_sack_info` with `Adaptive`: the scoreboard update, and the
    /// evidence the ACK carries: data that arrived late (never
    /// retransmitted, below data SACKed earlier) raises DupThresh; a D-SACK
    /// (RFC 2883) or an old echoed timestamp (RFC 3522) may undo the last
    /// reduction. Returns the bytes newly SACKed.
    pub(super) fn on_sack_info_adaptive(&mut self, h: &TcpHeader, ack: u64) -> u64 {
        let prior_fack = self.fack;
        // lowest byte found to have arrived late
        let mut late = u64::MAX;
        let mut dsack = None;
        let mut newly_sacked = 0;
        if self.cfg.sack {
            dsack = dsack_block(h);
            for (i, &(a, b)) in h.sack_blocks().iter().enumerate() {
                if i == 0 && dsack.is_some() {
                    continue; // RFC 2883 §5: not SACK information
                }
                let (a, b) = (a.max(ack), b.min(self.max));
                if a < b {
                    if let Some(x) = first_fresh(&self.scoreboard, &self.retx_set, a, b.min(prior_fack)) {
                        late = late.min(x);
                    }
                    self.fack = self.fack.max(b);
                    newly_sacked += self.scoreboard.insert(a, b);
                }
            }
        }
        if ack > self.una {
            // newly acknowledged data that was neither SACKed nor
            // retransmitted, below what had been SACKed: it arrived late
            if let Some(x) = first_fresh(&self.scoreboard, &self.retx_set, self.una, ack.min(prior_fack)) {
                late = late.min(x);
            }
        }
        if late != u64::MAX {
            self.note_reordering(late);
        }
        if let Some((a, b)) = dsack {
            self.on_dsack(a, b);
        }
        if ack > self.una {
            self.eifel(h.ts_ecr);
        }
        newly_sacked
    }

    /// `Adaptive`: saves what an undo restores, before a reduction.
    pub(super) fn start_undo_episode(&mut self) {
        self.undo = Some(Undo { cwnd: self.cwnd, ssthresh: self.ssthresh, retrans: 0, first_rtx: None, eifel_pending: true });
        self.retx_set.remove_below(self.una);
    }

    /// Raises DupThresh to the reordering that data arriving late at `late`
    /// reveals: the distance to the highest SACKed byte, in segments.
    pub(super) fn note_reordering(&mut self, late: u64) {
        let crate::config::Reordering::Adaptive { max_pkts } = self.cfg.reordering else {
            return;
        };
        if self.fack > late {
            let degree = (self.fack - late).div_ceil(self.cfg.mss as u64).min(max_pkts as u64) as u32;
            self.reordering = self.reordering.max(degree);
        }
    }

    /// RFC 3708 §3: a D-SACK for a retransmitted range cancels one
    /// retransmission of the episode; with none left, undo.
    pub(super) fn on_dsack(&mut self, a: u64, b: u64) {
        if self.retx_set.covered_in(a, b) == 0 {
            return; // a duplicate of an original transmission (the network)
        }
        let Some(u) = self.undo.as_mut() else {
            return;
        };
        if u.retrans == 0 {
            return;
        }
        let segs = (b - a).div_ceil(self.cfg.mss as u64).min(u.retrans);
        u.retrans -= segs;
        self.stats.spurious_retransmits += segs;
        if u.retrans == 0 {
            self.undo_reduction();
        }
    }

    /// RFC 3522 §3: the first ACK advancing `snd_una` in the episode echoes
    /// a timestamp older than the first retransmission: the original arrived.
    pub(super) fn eifel(&mut self, ts_ecr: SimTime) {
        let Some(u) = self.undo.as_mut() else {
            return;
        };
        if !u.eifel_pending {
            return;
        }
        u.eifel_pending = false;
        if let Some((t, _)) = u.first_rtx {
            if ts_ecr > SimTime::ZERO && ts_ecr < t {
                self.stats.spurious_retransmits += u.retrans;
                self.undo_reduction();
            }
        }
    }

    /// RFC 4015 §3 (Linux `tcp_undo_cwnd_reduction`): restore the window,
    /// leave recovery, and raise DupThresh to the reordering now evident.
    pub(super) fn undo_reduction(&mut self) {
        let Some(u) = self.undo.take() else {
            return;
        };
        self.cwnd = self.cwnd.max(u.cwnd);
        self.ssthresh = self.ssthresh.max(u.ssthresh);
        if let Recovery::Loss { .. } = self.recovery {
            // the go-back-N pass stops: what it has not reached is in flight
            self.nxt = self.max;
            self.end_loss_pass();
        }
        self.recovery = Recovery::Open;
        self.force = None;
        if let Some((_, low)) = u.first_rtx {
            if self.cfg.sack {
                self.note_reordering(low);
            } else if let crate::config::Reordering::Adaptive { max_pkts } = self.cfg.reordering {
                // without SACK: each duplicate ACK was one segment above the hole
                self.reordering = self.reordering.max((self.dupacks + 1).min(max_pkts));
            }
        }
        self.dupacks = 0;
        self.stats.undos += 1;
    }
}

/// RFC 2883 §4 / RFC 3708 §2: the first SACK block is a D-SACK when it lies
/// below the cumulative ACK or inside the second block.
fn dsack_block(h: &TcpHeader) -> Option<(u64, u64)> {
    let blocks = h.sack_blocks();
    let &(a, b) = blocks.first()?;
    let inside_second = blocks.get(1).is_some_and(|&(s, e)| s <= a && b <= e);
    (a < b && (b <= h.ack || inside_second)).then_some((a, b))
}

/// The lowest byte in `[a, b)` covered by neither set.
fn first_fresh(x: &RangeSet, y: &RangeSet, a: u64, b: u64) -> Option<u64> {
    let mut p = a;
    while p < b {
        let q = y.skip(x.skip(p));
        if q == p {
            return Some(p);
        }
        p = q;
    }
    None
}
