//! The sending half of a TCP connection, as an I/O-free state machine
//! (after smoltcp's `socket/tcp.rs`): the owner feeds it segments and timer
//! expiries and collects the segments it emits.
//!
//! States (RFC 793 §3.2 names): `Closed` → `SynSent` → `Established`. The
//! closing handshake is not modelled: a flow is complete when its last byte
//! arrives in order at the receiver, which a FIN does not change.
//!
//! Loss recovery states (the RFC text names them; Linux calls them
//! Open/Recovery/Loss):
//! - `Open`: slow start / congestion avoidance (RFC 5681 §3.1);
//! - `Fast`: fast retransmit / fast recovery entered on DupThresh
//!   duplicate ACKs (RFC 5681 §3.2): NewReno (RFC 6582) without SACK,
//!   RFC 6675 with Proportional Rate Reduction (RFC 6937) with it;
//! - `Loss`: after a retransmission timeout (RFC 6298 §5): cwnd = 1 MSS,
//!   go-back-N from `snd_una`, skipping SACKed ranges.
//!
//! The parts live in child modules, each an `impl TcpSender` block over the
//! same state: `scoreboard` (RFC 6675 §4 IsLost, pipe and NextSeg),
//! `recovery` (fast recovery and the go-back-N pass after a timeout) and
//! `undo` (the adaptive duplicate-ACK threshold and undo of spurious
//! reductions). Congestion control (window growth, the ssthresh and cwnd
//! choices on loss, ECN and DCTCP, MPTCP coupling) is [`crate::congestion`]:
//! the sender owns cwnd and ssthresh and calls the [`Congestion`] hooks on
//! ACKs, ECN-Echo, fast-recovery entry and exit, and timeouts.
//!
//! An ACK is processed in the steps of RFC 5681 §3.2 and RFC 6675 §5:
//! update the scoreboard from its SACK blocks, then either advance
//! `snd_una` (congestion control, then the recovery state's rule for a full
//! or partial ACK) or count a duplicate ACK (enter fast recovery, inflate or
//! pace by PRR), then respond to ECN-Echo, then send what the window
//! allows. `recover = SndNxt` records snd.nxt, not snd.max (RFC 6582), as
//! `recover`, as htsim's `TcpSrc` does (docs/fidelity.md).
//!
//! Restart after idle (`restart_after_idle`, RFC 5681 §4.1): when the sender
//! is about to send with nothing in flight and nothing sent for more than an
//! RTO, it does what Linux does (`tcp_cwnd_restart`) rather than the RFC's
//! cwnd = min(IW, cwnd): ssthresh = max(ssthresh, ¾·cwnd), then cwnd is
//! halved once per RTO of idle time, not below min(IW, cwnd).
//!
//! RTT is measured with timestamps (RFC 7323 §4) on every ACK that
//! acknowledges new data; the RTO follows RFC 6298 with exponential backoff.

mod recovery;
mod scoreboard;
mod undo;

use crate::config::{PartialAckTimer, Recover, TcpConfig};
use crate::congestion::{Ack, Congestion, Controller, Lia, Window};
use crate::header::{TcpHeader, ACK, CWR, ECE, SYN};
use crate::ranges::RangeSet;
use crate::rtt::RttEstimator;
use lbsim_engine::SimTime;
use std::collections::VecDeque;
use undo::Undo;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SenderState {
    Closed,
    SynSent,
    Established,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    Open,
    /// Fast recovery until `snd_una >= recover` (RFC 6582 §3.2 step 2).
    Fast {
        recover: u64,
    },
    /// After an RTO, until `snd_una >= recover`.
    Loss {
        recover: u64,
    },
}

/// Counters a sender keeps for the metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits: u64,
    pub fast_recoveries: u64,
    pub timeouts: u64,
    pub ecn_reductions: u64,
    /// Retransmissions found spurious: segments D-SACKed as duplicates of a
    /// retransmission, or all of an episode's on a timestamp (Eifel) undo.
    pub spurious_retransmits: u64,
    /// Congestion-window reductions undone as spurious.
    pub undos: u64,
}

impl std::ops::AddAssign<&SenderStats> for SenderStats {
    fn add_assign(&mut self, o: &SenderStats) {
        let SenderStats { segments_sent, retransmits, fast_recoveries, timeouts, ecn_reductions, spurious_retransmits, undos } = *o;
        self.segments_sent += segments_sent;
        self.retransmits += retransmits;
        self.fast_recoveries += fast_recoveries;
        self.timeouts += timeouts;
        self.ecn_reductions += ecn_reductions;
        self.spurious_retransmits += spurious_retransmits;
        self.undos += undos;
    }
}

#[derive(Clone, Debug)]
pub struct TcpSender {
    cfg: TcpConfig,
    state: SenderState,
    /// Oldest unacknowledged byte.
    una: u64,
    /// Next byte to send (rewound to `una` after an RTO).
    nxt: u64,
    /// Highest byte ever sent + 1.
    max: u64,
    /// End of the data the application has written.
    app_end: u64,
    cwnd: u64,
    pub(crate) ssthresh: u64,
    /// Congestion control: grows and cuts `cwnd` and `ssthresh`.
    cc: Controller,
    peer_wnd: u64,
    dupacks: u32,
    recovery: Recovery,
    /// RFC 6675 HighRxt: highest byte retransmitted in this recovery + 1.
    high_rxt: u64,
    scoreboard: RangeSet,
    // RFC 6937 state
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
    cwnd_limited: bool,
    rtt: RttEstimator,
    backoff: u32,
    rto_deadline: Option<SimTime>,
    syn_time: SimTime,
    syn_retx: u32,
    /// ECN (RFC 3168 §6.1.2): no further reduction until `snd_una`
    /// reaches this; CWR goes out on the next segment.
    cwr_until: u64,
    cwr_pending: bool,
    /// MPTCP: (subflow seq, data seq) at the start of each mapped chunk.
    dsn_map: VecDeque<(u64, u64)>,
    /// A retransmission that goes out regardless of cwnd (fast retransmit,
    /// NewReno partial ACK): (seq, len).
    force: Option<(u64, u32)>,
    /// Segments the host's NIC can take now (u32::MAX: unlimited).
    tx_budget: u32,
    nic_blocked: bool,
    /// Current DupThresh (Linux `tp->reordering`), segments.
    reordering: u32,
    /// Highest SACKed byte + 1 ever reported (Linux "fack").
    fack: u64,
    /// `Adaptive`: byte ranges retransmitted in the current loss episode.
    retx_set: RangeSet,
    undo: Option<Undo>,
    /// Loss with SACK: what the go-back-N pass sent, in transmission order
    /// (contiguous sends merged).
    loss_log: VecDeque<(u64, u64)>,
    /// Loss with SACK: un-SACKed pass bytes below this are lost again.
    loss_point: Option<u64>,
    /// Loss with SACK: highest byte re-retransmitted + 1 (HighRxt of the
    /// pass), and `snd_nxt` when the latest of them was sent.
    rxt2: u64,
    rxt2_mark: u64,
    /// Fast recovery with SACK: `snd_nxt` when the latest retransmission
    /// went out (u64::MAX: none yet). Once more than (DupThresh − 1)·MSS
    /// of data sent after it is SACKed, the retransmissions still
    /// un-SACKed below it are lost too.
    rxt_mark: u64,
    /// Fast recovery with SACK: the rescue retransmission (RFC 6675 NextSeg
    /// rule 4) went out in this recovery.
    rescued: bool,
    /// Fast recovery: a partial ACK has restarted the timer in this
    /// recovery (`PartialAckTimer::Impatient` restarts it only then).
    partial_acked: bool,
    /// When data was last sent (restart after idle).
    last_send: SimTime,
    /// RFC 7323 §4.3 TS.Recent: the newest TSval the peer sent, echoed in
    /// the TSecr of every segment (as Linux's `ts_recent`).
    ts_recent: SimTime,
    pub stats: SenderStats,
}

impl TcpSender {
    pub fn new(cfg: TcpConfig) -> Self {
        let mss = cfg.mss as u64;
        TcpSender {
            state: SenderState::Closed,
            una: 0,
            nxt: 0,
            max: 0,
            app_end: 0,
            cwnd: cfg.init_cwnd_pkts as u64 * mss,
            ssthresh: cfg.init_ssthresh,
            cc: Controller::new(&cfg),
            peer_wnd: cfg.rcv_wnd as u64,
            dupacks: 0,
            recovery: Recovery::Open,
            high_rxt: 0,
            scoreboard: RangeSet::new(),
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            cwnd_limited: false,
            rtt: RttEstimator::new(cfg.initial_rto, cfg.min_rto, cfg.max_rto),
            backoff: 0,
            rto_deadline: None,
            syn_time: SimTime::ZERO,
            syn_retx: 0,
            cwr_until: 0,
            cwr_pending: false,
            dsn_map: VecDeque::new(),
            force: None,
            tx_budget: u32::MAX,
            nic_blocked: false,
            reordering: cfg.dupack_threshold,
            fack: 0,
            retx_set: RangeSet::new(),
            undo: None,
            loss_log: VecDeque::new(),
            loss_point: None,
            rxt2: 0,
            rxt2_mark: u64::MAX,
            rxt_mark: u64::MAX,
            rescued: false,
            partial_acked: false,
            last_send: SimTime::ZERO,
            ts_recent: SimTime::ZERO,
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// A connection that is already established (persistent connections
    /// opened before the measurement starts: no handshake).
    pub fn new_established(cfg: TcpConfig) -> Self {
        let mut s = TcpSender::new(cfg);
        s.state = SenderState::Established;
        s
    }

    // ----------------------------------------------------------- accessors
    pub fn state(&self) -> SenderState {
        self.state
    }
    pub fn recovery(&self) -> Recovery {
        self.recovery
    }
    pub fn cwnd(&self) -> u64 {
        self.cwnd
    }
    pub fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    pub fn snd_una(&self) -> u64 {
        self.una
    }
    pub fn snd_max(&self) -> u64 {
        self.max
    }
    pub fn app_end(&self) -> u64 {
        self.app_end
    }
    pub fn srtt(&self) -> Option<SimTime> {
        self.rtt.srtt()
    }
    pub fn rto(&self) -> SimTime {
        self.current_rto()
    }
    pub fn dctcp_alpha(&self) -> f64 {
        self.cc.dctcp_alpha()
    }
    pub fn config(&self) -> &TcpConfig {
        &self.cfg
    }
    /// The current duplicate-ACK threshold (DupThresh), segments.
    pub fn reordering(&self) -> u32 {
        self.reordering
    }
    /// Everything written has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.una >= self.app_end
    }
    /// Bytes the window would let this sender put out now (MPTCP scheduler).
    pub fn window_space(&self) -> u64 {
        if self.state != SenderState::Established {
            return 0;
        }
        let wnd = self.cwnd.min(self.peer_wnd.max(self.cfg.mss as u64));
        wnd.saturating_sub(self.pipe())
    }
    /// Bytes written but not yet sent for the first time.
    pub fn unsent(&self) -> u64 {
        self.app_end - self.max.min(self.app_end)
    }
    /// The earliest time `on_timer` has work to do.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.rto_deadline
    }

    // ----------------------------------------------------------- app side
    /// Opens the connection: sends a SYN (RFC 793 §3.4).
    pub fn connect(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        debug_assert_eq!(self.state, SenderState::Closed);
        self.state = SenderState::SynSent;
        self.syn_time = now;
        self.send_syn(now, out);
    }

    /// Appends `bytes` to the send buffer.
    pub fn write(&mut self, bytes: u64) {
        self.app_end += bytes;
    }

    /// Appends `bytes` whose MPTCP data sequence starts at `dsn`.
    pub fn write_mapped(&mut self, bytes: u64, dsn: u64) {
        self.dsn_map.push_back((self.app_end, dsn));
        self.app_end += bytes;
    }

    /// MPTCP LIA (RFC 6356 §3): in congestion avoidance, increase by
    /// min(alpha·acked·MSS/cwnd_total, acked·MSS/cwnd) per ACK; `alpha`
    /// from [`crate::lia_alpha`].
    pub fn set_coupling(&mut self, alpha: f64, cwnd_total: u64) {
        self.cc.set_coupling(Lia::new(alpha, cwnd_total));
    }

    /// Local back-pressure (Linux: a full qdisc makes `tcp_transmit_skb`
    /// fail, the segment stays unsent; TSQ): the number of segments the
    /// host's NIC queue accepts now. Unlimited unless set.
    pub fn set_tx_budget(&mut self, segments: u32) {
        self.tx_budget = segments;
        self.nic_blocked = false;
    }

    /// Whether the last `poll` stopped because the NIC budget ran out.
    pub fn nic_blocked(&self) -> bool {
        self.nic_blocked
    }

    /// Sends whatever the windows allow.
    pub fn poll(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.state != SenderState::Established {
            return;
        }
        self.cwnd_limited = false;
        if self.cfg.restart_after_idle {
            self.restart_after_idle(now);
        }
        if let Some((seq, len)) = self.force {
            if self.tx_budget == 0 {
                self.nic_blocked = true;
                return;
            }
            self.force = None;
            if seq >= self.una {
                // (new data only from `partial_ack_retransmit`)
                let len = if seq < self.max { (len as u64).min(self.max - seq) as u32 } else { len };
                if len > 0 {
                    self.emit(seq, len, seq < self.max, now, out);
                }
            }
        }
        if self.tso_defer() {
            self.cwnd_limited = true;
            return;
        }
        while let Some((seq, len, retx)) = self.next_segment() {
            let pipe = self.pipe();
            if pipe + len as u64 > self.cwnd {
                self.cwnd_limited = true;
                break;
            }
            let new_data = seq >= self.max;
            if new_data && seq + len as u64 > self.una + self.peer_wnd && self.una < self.max {
                break; // receiver window (a lone segment always goes: persist behaviour)
            }
            if self.tx_budget == 0 {
                self.nic_blocked = true;
                break;
            }
            self.emit(seq, len, retx, now, out);
        }
        if self.recovery != Recovery::Open {
            self.rescue(now, out);
        }
        // RFC 7661: the window counts as used when it is (nearly) full, even
        // if the application had no more to send right now (MPTCP's scheduler
        // hands subflows one segment at a time); skipped when the loop
        // already stopped at the window
        if !self.cwnd_limited && self.pipe() + self.cfg.mss as u64 > self.cwnd {
            self.cwnd_limited = true;
        }
    }

    // ----------------------------------------------------------- input
    /// Processes a segment from the receiver.
    pub fn on_segment(&mut self, h: &TcpHeader, now: SimTime, out: &mut Vec<TcpHeader>) {
        if self.state != SenderState::Closed {
            // the peer's clock only moves forward: the newest TSval wins
            // (an ACK overtaken by a later one does not set it back)
            self.ts_recent = self.ts_recent.max(h.ts_val);
        }
        match self.state {
            SenderState::Closed => return,
            SenderState::SynSent => {
                if h.has(SYN) && h.has(ACK) {
                    self.state = SenderState::Established;
                    if self.syn_retx == 0 {
                        // RFC 6298 §2: the SYN exchange gives the first sample
                        self.rtt.sample(now - self.syn_time);
                    }
                    self.backoff = 0;
                    self.rto_deadline = None;
                    self.peer_wnd = h.wnd as u64;
                    self.poll(now, out);
                }
                return;
            }
            SenderState::Established => {}
        }
        if !h.has(ACK) || h.has(SYN) {
            return;
        }
        let ack = h.ack.min(self.max);
        self.peer_wnd = h.wnd as u64;
        let newly_sacked = self.on_sack_info(h, ack);
        let ece = h.has(ECE);
        if ack > self.una {
            self.on_new_ack(h, ack, newly_sacked, ece, now);
        } else if h.len == 0 && ack == self.una && self.una < self.max && (!self.cfg.sack || newly_sacked > 0) {
            self.on_dupack(newly_sacked);
        }
        if ece {
            self.on_ece();
        }
        self.update_loss_pass();
        self.detect_lost_retransmissions();
        self.poll(now, out);
    }

    /// The ACK's SACK blocks update the scoreboard (RFC 2018, RFC 6675
    /// §5); with `Adaptive`, the ACK is also evidence of reordering and of
    /// spurious retransmissions (see `undo`). Returns the bytes newly SACKed.
    fn on_sack_info(&mut self, h: &TcpHeader, ack: u64) -> u64 {
        if self.adaptive() {
            return self.on_sack_info_adaptive(h, ack);
        }
        let mut newly_sacked = 0;
        if self.cfg.sack {
            for &(a, b) in h.sack_blocks() {
                let (a, b) = (a.max(ack), b.min(self.max));
                if a < b {
                    newly_sacked += self.scoreboard.insert(a, b);
                }
            }
        }
        newly_sacked
    }

    /// An ACK that advances `snd_una` (RFC 5681 §3.2 step 6, RFC 6582 §3.2
    /// steps 3–4): the RTT sample, congestion control, then what the
    /// recovery state does with a full or a partial ACK, then the timer.
    fn on_new_ack(&mut self, h: &TcpHeader, ack: u64, newly_sacked: u64, ece: bool, now: SimTime) {
        let mss = self.cfg.mss as u64;
        let acked = ack - self.una;
        // RFC 6937 DeliveredData: bytes newly acknowledged cumulatively that
        // were not SACKed before, plus bytes newly SACKed
        let delivered = acked - self.scoreboard.covered_in(self.una, ack) + newly_sacked;
        // RFC 7323 §4.1: RTT from the echoed timestamp of the segment that
        // caused this ACK; valid for retransmissions too.
        if h.ts_ecr > SimTime::ZERO && now >= h.ts_ecr {
            self.rtt.sample(now - h.ts_ecr);
        }
        self.una = ack;
        self.scoreboard.remove_below(ack);
        if self.nxt < ack {
            self.nxt = ack;
        }
        if self.high_rxt < ack {
            self.high_rxt = ack;
        }
        while self.dsn_map.len() > 1 && self.dsn_map[1].0 <= ack {
            self.dsn_map.pop_front();
        }
        self.backoff = 0;
        // RFC 6582 §4.2 Impatient: in fast recovery, only the first partial
        // ACK restarts the timer
        let keep_timer = self.cfg.partial_ack_timer == PartialAckTimer::Impatient
            && matches!(self.recovery, Recovery::Fast { recover } if ack < recover)
            && std::mem::replace(&mut self.partial_acked, true);
        let info = Ack { acked, ece, snd_una: ack, snd_max: self.max, recovery: self.recovery, cwnd_limited: self.cwnd_limited };
        self.congestion(|cc, w| cc.on_ack(w, &info));
        match self.recovery {
            Recovery::Fast { recover } => {
                if ack >= recover {
                    // RFC 6582 §3.2 step 3 / RFC 6937: congestion control sets cwnd
                    self.congestion(|cc, w| cc.on_recovery_exit(w));
                    self.recovery = Recovery::Open;
                    self.dupacks = 0;
                } else if self.cfg.sack {
                    self.prr_update(delivered);
                    if self.cfg.partial_ack_retransmit && self.high_rxt <= ack {
                        self.partial_ack_retransmit();
                    }
                } else {
                    // RFC 6582 §3.2 step 4: partial ACK — retransmit the first
                    // unacknowledged segment, deflate by the amount acked.
                    let len = mss.min(self.max - self.una) as u32;
                    self.force = Some((self.una, len));
                    self.cwnd = self.cwnd.saturating_sub(acked) + mss;
                    self.cwnd = self.cwnd.max(mss);
                }
            }
            Recovery::Loss { recover } => {
                if ack >= recover {
                    self.recovery = Recovery::Open;
                    self.end_loss_pass();
                }
                self.dupacks = 0;
            }
            Recovery::Open => self.dupacks = 0,
        }
        // RFC 6298 (5.2)/(5.3)
        if !keep_timer {
            self.rto_deadline = if self.una < self.max { Some(self.rto_expiry(now)) } else { None };
        }
    }

    /// A duplicate ACK (RFC 5681 §2; with SACK, one that SACKs new data,
    /// RFC 6675 §2): RFC 5681 §3.2 steps 2–4.
    fn on_dupack(&mut self, newly_sacked: u64) {
        self.dupacks += 1;
        match self.recovery {
            Recovery::Open => {
                let lost = self.cfg.sack && self.is_lost(self.una);
                if self.dupacks >= self.reordering || lost {
                    self.enter_fast_recovery();
                }
            }
            Recovery::Fast { .. } => {
                if self.cfg.sack {
                    self.prr_update(newly_sacked);
                } else {
                    self.cwnd += self.cfg.mss as u64; // RFC 6582 §3.2 step 3 (inflation)
                }
            }
            // RFC 6582 §4.1: no new fast retransmit for losses of the
            // window that timed out.
            Recovery::Loss { .. } => {}
        }
    }

    /// Handles the retransmission timer.
    pub fn on_timer(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        self.rto_deadline = None;
        match self.state {
            SenderState::Closed => {}
            SenderState::SynSent => {
                self.syn_retx += 1;
                self.backoff = (self.backoff + 1).min(30);
                self.stats.timeouts += 1;
                self.send_syn(now, out);
            }
            SenderState::Established => {
                if self.una >= self.max {
                    return;
                }
                self.stats.timeouts += 1;
                if self.adaptive() {
                    if self.recovery == Recovery::Open {
                        self.start_undo_episode();
                    }
                    // Linux (`tcp_enter_loss`): a timeout resets DupThresh
                    self.reordering = self.reordering.min(self.cfg.dupack_threshold);
                }
                // congestion control: ssthresh (RFC 5681 §3.1 eq. (4) or a
                // variant) and cwnd = LW = 1 MSS
                let (recovery, pipe) = (self.recovery, self.pipe());
                self.congestion(|cc, w| cc.on_timeout(w, recovery, pipe));
                self.recovery = Recovery::Loss { recover: self.recover_point() };
                self.nxt = self.una;
                self.high_rxt = self.una;
                self.dupacks = 0;
                self.end_loss_pass();
                // RFC 6298 (5.5): back off the timer
                self.backoff = (self.backoff + 1).min(30);
                if self.next_segment().is_none() {
                    // everything outstanding is SACKed yet unacknowledged: the
                    // receiver reneged (RFC 2018 §8): forget the scoreboard
                    self.scoreboard.clear();
                }
                self.poll(now, out);
            }
        }
    }

    // ----------------------------------------------------------- internals
    /// When a timer armed now expires: now + RTO, or with `rto_tick` the
    /// first multiple of the tick after that.
    fn rto_expiry(&self, now: SimTime) -> SimTime {
        let d = now + self.current_rto();
        let tick = self.cfg.rto_tick.0;
        if tick == 0 {
            return d;
        }
        SimTime((d.0 / tick + 1).saturating_mul(tick))
    }

    fn current_rto(&self) -> SimTime {
        let base = self.rtt.rto();
        let shifted = base.0.saturating_mul(1u64.checked_shl(self.backoff).unwrap_or(u64::MAX));
        SimTime(shifted.min(self.rtt.max_rto().0.max(base.0)))
    }

    fn send_syn(&mut self, now: SimTime, out: &mut Vec<TcpHeader>) {
        out.push(TcpHeader { flags: SYN, wnd: self.cfg.rcv_wnd, ts_val: now, ..Default::default() });
        self.rto_deadline = Some(self.rto_expiry(now));
    }

    /// TSO deferral: with data in flight, wait until a whole burst fits.
    fn tso_defer(&self) -> bool {
        let tso = self.cfg.tso_bytes as u64;
        if tso == 0 || self.recovery != Recovery::Open || self.nxt < self.max {
            return false;
        }
        let pipe = self.pipe();
        if pipe == 0 {
            return false;
        }
        let mss = self.cfg.mss as u64;
        let unsent = self.app_end.saturating_sub(self.max);
        let burst = tso.min((self.cwnd / 2).max(mss)).min(unsent);
        let wnd = self.cwnd.min(self.peer_wnd.max(mss));
        burst > 0 && wnd.saturating_sub(pipe) < burst
    }

    /// `recover` for a new fast recovery or timeout: snd.max (RFC 6582), or
    /// snd.nxt without SACK where `Recover::SndNxt` asks for it.
    fn recover_point(&self) -> u64 {
        match self.cfg.recover {
            Recover::SndNxt if !self.cfg.sack => self.nxt,
            _ => self.max,
        }
    }

    fn adaptive(&self) -> bool {
        matches!(self.cfg.reordering, crate::config::Reordering::Adaptive { .. })
    }

    /// Restart after idle (RFC 5681 §4.1 in Linux's form, `tcp_cwnd_restart`).
    fn restart_after_idle(&mut self, now: SimTime) {
        if self.max == 0 || self.una < self.max || self.app_end <= self.max {
            return; // never sent, data in flight, or nothing new to send
        }
        let rto = self.current_rto();
        let mut idle = now.0.saturating_sub(self.last_send.0);
        if idle <= rto.0 {
            return;
        }
        let restart = (self.cfg.init_cwnd_pkts as u64 * self.cfg.mss as u64).min(self.cwnd);
        self.ssthresh = self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4);
        while idle > rto.0 && self.cwnd > restart {
            self.cwnd /= 2;
            idle -= rto.0;
        }
        self.cwnd = self.cwnd.max(restart);
        self.last_send = now; // once per idle period
    }

    /// The start of the next MPTCP mapping above `seq` (u64::MAX if none):
    /// a segment never spans two mappings, since it carries one DSN.
    fn mapping_end(&self, seq: u64) -> u64 {
        if self.dsn_map.len() < 2 {
            return u64::MAX;
        }
        let i = self.dsn_map.partition_point(|&(s, _)| s <= seq);
        self.dsn_map.get(i).map_or(u64::MAX, |&(s, _)| s)
    }

    fn emit(&mut self, seq: u64, len: u32, retx: bool, now: SimTime, out: &mut Vec<TcpHeader>) {
        let end = seq + len as u64;
        match self.recovery {
            Recovery::Fast { .. } => {
                if seq >= self.nxt {
                    self.nxt = end;
                } else {
                    self.high_rxt = self.high_rxt.max(end);
                    self.rxt_mark = self.nxt;
                }
                if self.cfg.sack {
                    self.prr_out += len as u64;
                }
            }
            Recovery::Loss { .. } if self.cfg.sack => {
                if seq >= self.nxt {
                    // the go-back-N pass (or new data) at its cursor
                    match self.loss_log.back_mut() {
                        Some(last) if last.1 == seq => last.1 = end,
                        _ => self.loss_log.push_back((seq, end)),
                    }
                    self.nxt = end;
                } else {
                    // a re-retransmission of what the pass lost again
                    self.rxt2 = self.rxt2.max(end);
                    self.rxt2_mark = self.nxt;
                }
            }
            _ => {
                if end > self.nxt {
                    self.nxt = end;
                }
            }
        }
        if self.nxt > self.max {
            self.max = self.nxt;
        }
        self.cc.on_send(self.max);
        let mut flags = ACK;
        if self.cwr_pending {
            flags |= CWR;
            self.cwr_pending = false;
        }
        self.stats.segments_sent += 1;
        if self.tx_budget != u32::MAX {
            self.tx_budget -= 1;
        }
        if retx {
            self.stats.retransmits += 1;
            if self.adaptive() {
                self.retx_set.insert(seq, end);
                if let Some(u) = self.undo.as_mut() {
                    u.retrans += 1;
                    u.first_rtx.get_or_insert((now, seq));
                }
            }
        }
        self.last_send = now;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(self.rto_expiry(now));
        }
        out.push(TcpHeader { seq, len, flags, wnd: self.cfg.rcv_wnd, ts_val: now, ts_ecr: self.ts_recent, dsn: self.dsn_of(seq), ..Default::default() });
    }

    fn dsn_of(&self, seq: u64) -> u64 {
        if self.dsn_map.is_empty() {
            return seq;
        }
        let i = self.dsn_map.partition_point(|&(s, _)| s <= seq);
        let (s, d) = self.dsn_map[i.max(1) - 1];
        d + (seq - s)
    }

    /// Lends cwnd and ssthresh to congestion control as a [`Window`].
    #[inline]
    fn congestion<R>(&mut self, f: impl FnOnce(&mut Controller, &mut Window) -> R) -> R {
        let mut w = Window { cwnd: self.cwnd, ssthresh: self.ssthresh, mss: self.cfg.mss as u64, flight: self.max - self.una };
        let r = f(&mut self.cc, &mut w);
        self.cwnd = w.cwnd;
        self.ssthresh = w.ssthresh;
        r
    }

    /// ECN-Echo (RFC 3168 §6.1.2, RFC 8257 §3.3): at most one reduction per
    /// window of data and none during loss recovery; congestion control
    /// chooses the reduction, and CWR tells the receiver.
    fn on_ece(&mut self) {
        if self.una < self.cwr_until || self.recovery != Recovery::Open {
            return;
        }
        if !self.congestion(|cc, w| cc.on_ece(w)) {
            return;
        }
        self.stats.ecn_reductions += 1;
        self.cwr_until = self.max;
        self.cwr_pending = true;
    }
}
