//! RFC 6675 §4 over the SACK scoreboard: `IsLost`, `pipe` (SetPipe) and
//! `NextSeg`, and the go-back-N choice after a timeout. Each answers the
//! common state (nothing SACKed, no recovery, one MPTCP mapping) inline and
//! the rest in a separate function.

use super::{Recovery, TcpSender};

impl TcpSender {
    /// RFC 6675 IsLost: more than (DupThresh − 1)·MSS bytes SACKed above.
    pub(super) fn lost_threshold(&self) -> u64 {
        (self.reordering.saturating_sub(1)) as u64 * self.cfg.mss as u64
    }

    pub(super) fn is_lost(&self, seq: u64) -> bool {
        matches!(self.scoreboard.loss_point(self.lost_threshold()), Some(l) if seq < l)
    }
    /// Bytes in flight. In SACK fast recovery this is RFC 6675 `SetPipe`:
    /// every un-SACKed byte not deemed lost, plus every retransmitted byte.
    /// Otherwise: bytes sent since `snd_una` (or since the RTO rewound
    /// `snd_nxt`) that are not SACKed.
    #[inline]
    pub(super) fn pipe(&self) -> u64 {
        // the common case, asked several times per ACK: nothing SACKed, no
        // recovery (what `pipe_slow` returns then, without the call)
        if self.recovery == Recovery::Open && self.scoreboard.is_empty() {
            debug_assert_eq!(self.nxt - self.una, self.pipe_slow());
            return self.nxt - self.una;
        }
        self.pipe_slow()
    }

    /// The full computation; [`TcpSender::pipe`] answers the common state
    /// inline.
    #[inline(never)]
    fn pipe_slow(&self) -> u64 {
        if self.cfg.sack {
            if let Recovery::Fast { .. } = self.recovery {
                let sacked = self.scoreboard.covered_in(self.una, self.max);
                let holes = (self.max - self.una) - sacked;
                let th = self.lost_threshold();
                let lp = self.scoreboard.loss_point(th);
                let l = lp.unwrap_or(self.una).clamp(self.una, self.max);
                // Exactly th + 1 SACKed bytes lie at or above the loss point,
                // so when the scoreboard is inside [una, max) the bytes below
                // it need no scan.
                let inside = self.scoreboard.as_slice().first().is_some_and(|r| r.0 >= self.una) && self.scoreboard.max_end().is_some_and(|e| e <= self.max);
                let sacked_below = match lp {
                    Some(x) if inside && x == l => sacked - (th + 1),
                    _ => self.scoreboard.covered_in(self.una, l),
                };
                debug_assert_eq!(sacked_below, self.scoreboard.covered_in(self.una, l));
                let lost = (l - self.una) - sacked_below;
                let hr = self.high_rxt.clamp(self.una, self.max);
                let rtx = (hr - self.una) - self.scoreboard.covered_in(self.una, hr);
                return holes - lost + rtx;
            }
        }
        let flight = (self.nxt - self.una) - self.scoreboard.covered_in(self.una, self.nxt);
        if let Some(lim) = self.loss_limit() {
            // Loss with SACK: bytes lost again leave the pipe until resent
            let lost = (lim - self.una) - self.scoreboard.covered_in(self.una, lim);
            let hr = self.rxt2.clamp(self.una, lim);
            let rtx = (hr - self.una) - self.scoreboard.covered_in(self.una, hr);
            return flight - lost + rtx;
        }
        flight
    }

    /// RFC 6675 NextSeg rule 1's hole: the first un-SACKed range at or
    /// after HighRxt that IsLost deems lost.
    pub(super) fn lost_hole(&self) -> Option<(u64, u64)> {
        let l = self.scoreboard.loss_point(self.lost_threshold())?;
        self.hole_at_or_after(self.high_rxt.max(self.una), l.min(self.max))
    }

    /// The first un-SACKed range at or after `x` and below `limit`.
    pub(super) fn hole_at_or_after(&self, x: u64, limit: u64) -> Option<(u64, u64)> {
        let mut s = x;
        if let Some((_, e)) = self.scoreboard.containing(s) {
            s = e;
        }
        if s >= limit {
            return None;
        }
        let e = match self.scoreboard.next_at_or_after(s) {
            Some((ns, _)) => ns.min(limit),
            None => limit,
        };
        Some((s, e))
    }

    /// Chooses the next segment to send: (seq, len, is_retransmission).
    #[inline]
    pub(super) fn next_segment(&self) -> Option<(u64, u32, bool)> {
        if self.recovery == Recovery::Open && self.nxt >= self.max && self.dsn_map.len() < 2 {
            // the common case: nothing to resend, one mapping; new data if
            // any (what `next_segment_slow` returns then, without the call)
            let from = self.nxt;
            let next = (from < self.app_end).then(|| (from, (self.app_end - from).min(self.cfg.mss as u64) as u32, false));
            debug_assert_eq!(next, self.next_segment_slow());
            return next;
        }
        self.next_segment_slow()
    }

    /// The full choice; [`TcpSender::next_segment`] answers the common
    /// state inline.
    #[inline(never)]
    fn next_segment_slow(&self) -> Option<(u64, u32, bool)> {
        let mss = self.cfg.mss as u64;
        let seg = |s: u64, e: u64| (s, (e.min(self.mapping_end(s)) - s).min(mss) as u32);
        if let (Recovery::Fast { .. }, true) = (self.recovery, self.cfg.sack) {
            // RFC 6675 NextSeg (rule 1): the first lost hole at or after HighRxt.
            let from = self.high_rxt.max(self.una);
            if let Some((s, e)) = self.lost_hole() {
                let (s, n) = seg(s, e);
                return Some((s, n, true));
            }
            // (rule 2): new data
            if self.nxt < self.app_end {
                let (s, n) = seg(self.nxt, self.app_end);
                return Some((s, n, false));
            }
            // (rule 3): any hole at or after HighRxt below the highest
            // SACKed byte (above it, data is in flight, not missing)
            let top = self.scoreboard.max_end().unwrap_or(self.una).min(self.max);
            if let Some((s, e)) = self.hole_at_or_after(from, top) {
                let (s, n) = seg(s, e);
                return Some((s, n, true));
            }
            return None;
        }
        if let Some(lim) = self.loss_limit() {
            // RFC 6675 §5.1: first, what the go-back-N pass sent and lost again
            if let Some((s, e)) = self.hole_at_or_after(self.rxt2.max(self.una), lim) {
                let (s, n) = seg(s, e);
                return Some((s, n, true));
            }
        }
        if self.nxt < self.max {
            // go-back-N after an RTO, skipping what the receiver has SACKed
            if let Some((s, e)) = self.hole_at_or_after(self.nxt, self.max) {
                let (s, n) = seg(s, e);
                return Some((s, n, true));
            }
        }
        let from = self.nxt.max(self.max);
        if from < self.app_end {
            let (s, n) = seg(from, self.app_end);
            return Some((s, n, false));
        }
        None
    }
}
