//! Loss recovery: fast recovery, and the go-back-N pass after a timeout.
//!
//! - `Fast`: fast retransmit / fast recovery entered on DupThresh duplicate
//!   ACKs (RFC 5681 §3.2). Without SACK it is NewReno (RFC 6582: window
//!   inflation, partial ACKs retransmit the next hole). With SACK it is
//!   RFC 6675 (scoreboard, `IsLost`, `pipe`, `NextSeg` rules 1–4: rule 3
//!   resends only holes below the highest SACKed byte, rule 4 is one rescue
//!   retransmission of the highest un-SACKed segment per recovery) with the
//!   sending rate set by Proportional Rate Reduction (RFC 6937), as in Linux
//!   and ns-3; PRR's bound is SSRB or, with `PrrBound::Crb`, CRB (ns-3). A
//!   retransmission is lost when more than (DupThresh − 1)·MSS of data sent
//!   after it is SACKed (Linux `tcp_mark_lost_retrans`, RACK's rule in
//!   transmission order): HighRxt falls back to `snd_una` and the hole is
//!   resent, without an RTO.
//! - `Loss`: after a retransmission timeout (RFC 6298 §5): cwnd = 1 MSS,
//!   go-back-N from `snd_una`, skipping SACKed ranges. Duplicate ACKs start
//!   no fast retransmit (RFC 6582 §4.1), but with SACK the sender still
//!   uses the scoreboard (RFC 6675 §5.1): it logs what the go-back-N pass
//!   sends, in transmission order, and a segment of that pass below
//!   `recover` is lost again once more than (DupThresh − 1)·MSS of data the
//!   pass sent *after* it has been SACKed (IsLost applied to transmission
//!   order). Such segments are retransmitted before the pass continues
//!   (tracked like HighRxt, with the pass position at the time of each
//!   re-retransmission, so these too can be declared lost again) and leave
//!   `pipe`, so a retransmission lost during Loss costs no second timeout.
//!
//! What ssthresh becomes on entry and on a timeout, and cwnd on exit, is
//! congestion control's choice ([`crate::congestion::LossRules`]).
//!
//! ns-3 3.44 departs from this in seven places, each a [`crate::TcpConfig`]
//! option that examples/b1.toml sets (docs/fidelity.md, "B1 against
//! ns-3"): `RtoSsthresh::Pipe`, `FrSsthresh::Pipe` (also PRR's RecoverFS),
//! `PrrBound::Crb`,
//! `LostRetransmission::Timeout` (neither the fast-recovery nor the
//! go-back-N detection of a lost retransmission: the timer repairs it),
//! `rescue_retransmission = false` (no NextSeg rule 4),
//! `PartialAckTimer::Impatient` (RFC 6582 §4.2: only a recovery's first
//! partial ACK restarts the timer) and `partial_ack_retransmit` (a partial
//! ACK whose first unacknowledged segment was not retransmitted sends one
//! segment at once, beyond the window).

use super::{Recovery, TcpSender};
use crate::config::{FrSsthresh, LostRetransmission, PrrBound};
use crate::congestion::Congestion;
use crate::header::TcpHeader;
use lbsim_engine::SimTime;

impl TcpSender {
    /// RFC 6675 §5.1 during Loss: the first byte not deemed lost among the
    /// go-back-N pass's transmissions below `recover` (see the module docs).
    pub(super) fn loss_limit(&self) -> Option<u64> {
        match (self.recovery, self.loss_point) {
            (Recovery::Loss { recover }, Some(l)) if self.cfg.sack => Some(l.min(recover).min(self.nxt).max(self.una)),
            _ => None,
        }
    }

    /// Forgets the go-back-N pass log (a new pass starts, or Loss ends).
    pub(super) fn end_loss_pass(&mut self) {
        self.loss_log.clear();
        self.loss_point = None;
        self.rxt2 = self.una;
        self.rxt2_mark = u64::MAX;
    }

    /// Loss with SACK: recomputes which bytes of the go-back-N pass are lost
    /// again: walking the pass log from its latest transmission back, the
    /// point above which more than (DupThresh − 1)·MSS bytes were SACKed.
    pub(super) fn update_loss_pass(&mut self) {
        if !self.cfg.sack || !matches!(self.recovery, Recovery::Loss { .. }) || self.cfg.lost_retransmission == LostRetransmission::Timeout {
            return;
        }
        while matches!(self.loss_log.front(), Some(&(_, e)) if e <= self.una) {
            self.loss_log.pop_front();
        }
        self.rxt2 = self.rxt2.max(self.una);
        let thr = self.lost_threshold();
        let mut acc = 0;
        self.loss_point = None;
        for &(s, e) in self.loss_log.iter().rev() {
            match self.scoreboard.nth_covered_from_top(s.max(self.una), e, thr - acc) {
                Ok(x) => {
                    self.loss_point = Some(x);
                    break;
                }
                Err(c) => acc += c,
            }
        }
        if matches!(self.loss_point, Some(l) if self.rxt2_mark <= l) {
            // data sent after the latest re-retransmission has been SACKed
            // beyond DupThresh: the re-retransmissions are lost as well
            self.rxt2 = self.una;
            self.rxt2_mark = u64::MAX;
        }
    }

    /// Fast recovery with SACK: a retransmission is lost when more than
    /// (DupThresh − 1)·MSS of data sent after it has been SACKed (IsLost in
    /// transmission order, as Linux's `tcp_mark_lost_retrans` and RACK
    /// decide). Then every retransmitted byte still un-SACKed is lost:
    /// HighRxt goes back to `snd_una`, those bytes leave `pipe` and NextSeg
    /// rule 1 resends them, instead of an RTO.
    pub(super) fn detect_lost_retransmissions(&mut self) {
        if !self.cfg.sack
            || self.rxt_mark == u64::MAX
            || !matches!(self.recovery, Recovery::Fast { .. })
            || self.cfg.lost_retransmission == LostRetransmission::Timeout
        {
            return;
        }
        if matches!(self.scoreboard.loss_point(self.lost_threshold()), Some(l) if l >= self.rxt_mark) {
            self.high_rxt = self.una;
            self.rxt_mark = u64::MAX;
        }
    }

    /// ns-3 3.44 on a partial ACK in SACK recovery whose first
    /// unacknowledged segment has not been retransmitted: one segment goes
    /// out at once, whatever the window: NextSeg rule 1 (a lost hole), else
    /// rule 2 (new data), else the first unacknowledged segment.
    pub(super) fn partial_ack_retransmit(&mut self) {
        let mss = self.cfg.mss as u64;
        let (s, e) = match self.lost_hole() {
            Some(h) => h,
            None if self.max < self.app_end => (self.max, self.app_end),
            None => (self.una, self.max),
        };
        let len = (e - s).min(mss).min(self.mapping_end(s) - s) as u32;
        if len > 0 {
            self.force = Some((s, len));
        }
    }

    /// RFC 6675 NextSeg rule 4, once per fast recovery with SACK: when
    /// rules 1-3 have nothing to send, resend the segment holding the
    /// highest un-SACKed byte (a lost tail gets no SACK to reveal it).
    /// HighRxt is not updated.
    pub(super) fn rescue(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if !self.cfg.sack || !self.cfg.rescue_retransmission || self.rescued || !matches!(self.recovery, Recovery::Fast { .. }) || self.next_segment().is_some()
        {
            return;
        }
        // the hole holding the highest un-SACKed byte: [start, end)
        let sb = self.scoreboard.as_slice();
        let mut end = self.max;
        let mut i = sb.len();
        while i > 0 && sb[i - 1].1 >= end && sb[i - 1].0 < end {
            end = sb[i - 1].0;
            i -= 1;
        }
        let start = if i > 0 { sb[i - 1].1.max(self.una) } else { self.una };
        if end <= start || end <= self.una {
            return;
        }
        let mss = self.cfg.mss as u64;
        // one segment ending there, inside the hole and one MPTCP mapping
        let mapping = self.dsn_map.iter().rev().map(|&(s, _)| s).find(|&s| s < end).unwrap_or(0);
        let seq = end.saturating_sub(mss).max(start).max(mapping);
        let len = (end - seq) as u32;
        if self.pipe() + len as u64 > self.cwnd || self.tx_budget == 0 {
            return;
        }
        self.rescued = true;
        let high_rxt = self.high_rxt;
        self.emit(seq, len, true, now, out);
        self.high_rxt = high_rxt;
    }

    /// The pipe at fast-recovery entry as ns-3 3.44 counts it (called in
    /// `Fast` with nothing retransmitted yet): RFC 6675's pipe, less the
    /// first segment when IsLost has not already counted it lost.
    fn entry_pipe(&self) -> u64 {
        let head_lost = self.is_lost(self.una);
        let head = match self.hole_at_or_after(self.una, self.max) {
            Some((s, e)) if !head_lost => (e - s).min(self.cfg.mss as u64),
            _ => 0,
        };
        self.pipe() - head
    }

    /// Fast retransmit and fast recovery entry (RFC 5681 §3.2 steps 2–3,
    /// RFC 6582 §3.2 step 2, RFC 6675 §5 step 4, RFC 6937 initialisation).
    pub(super) fn enter_fast_recovery(&mut self) {
        let mss = self.cfg.mss as u64;
        if self.adaptive() {
            self.start_undo_episode();
        }
        let flight = self.max - self.una;
        self.recovery = Recovery::Fast { recover: self.recover_point() };
        self.stats.fast_recoveries += 1;
        self.high_rxt = self.una;
        // what ssthresh and PRR's RecoverFS measure: FlightSize, or ns-3's pipe
        let measure = if self.cfg.fr_ssthresh == FrSsthresh::Pipe { self.entry_pipe() } else { flight };
        // congestion control sets ssthresh (RFC 5681 eq. (4) or a variant)
        self.congestion(|cc, w| cc.on_fast_recovery(w, measure));
        self.rxt_mark = u64::MAX;
        self.rescued = false;
        self.partial_acked = false;
        if self.cfg.sack {
            // RFC 6937 initialisation
            self.prr_delivered = 0;
            self.prr_out = 0;
            self.recover_fs = measure;
        } else {
            self.cwnd = self.ssthresh + 3 * mss;
        }
        // Retransmit the first unacknowledged segment now (RFC 6675 §5 step 4.3,
        // RFC 6582 §3.2 step 2), whatever the window says; `poll` sends it.
        let (s, e) = self.hole_at_or_after(self.una, self.max).unwrap_or((self.una, self.max));
        let len = (e - s).min(mss) as u32;
        self.force = Some((s, len));
        self.high_rxt = s + len as u64;
        if self.cfg.sack {
            // PRR starts from what is in flight once that segment is resent
            self.cwnd = self.pipe();
        }
    }

    /// RFC 6937 §3: on each ACK in recovery, send `sndcnt` more bytes.
    pub(super) fn prr_update(&mut self, delivered: u64) {
        let mss = self.cfg.mss as u64;
        self.prr_delivered += delivered;
        let pipe = self.pipe();
        let sndcnt = if pipe > self.ssthresh {
            // proportional part
            let target = (self.prr_delivered as u128 * self.ssthresh as u128).div_ceil(self.recover_fs.max(1) as u128) as u64;
            target.saturating_sub(self.prr_out)
        } else {
            // slow-start (PRR-SSRB) or conservative (PRR-CRB) reduction bound
            let extra = if self.cfg.prr_bound == PrrBound::Ssrb { mss } else { 0 };
            let limit = (self.prr_delivered.saturating_sub(self.prr_out)).max(delivered) + extra;
            (self.ssthresh - pipe).min(limit)
        };
        self.cwnd = pipe + sndcnt;
    }
}
