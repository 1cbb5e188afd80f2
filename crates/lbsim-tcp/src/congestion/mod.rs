//! Congestion control behind one trait, one file per algorithm (the layout
//! of smoltcp's `socket/tcp/congestion/`).
//!
//! The split follows RFC 6937 §1 and RFC 5681 §3: congestion control decides
//! how the window grows on ACKs, what ssthresh becomes on a congestion
//! signal (fast-recovery entry, a retransmission timeout, ECN-Echo) and what
//! cwnd becomes when recovery ends; loss recovery (which segment to send,
//! the RFC 6675 scoreboard and pipe, PRR's pacing of the reduction towards
//! ssthresh, RFC 6582 window inflation, undo of spurious reductions) stays
//! in [`crate::sender`]. The sender owns cwnd and ssthresh and lends them to
//! the controller as a [`Window`] on each hook.
//!
//! - [`NewReno`] (`newreno.rs`): slow start and congestion avoidance
//!   (RFC 5681 §3.1, RFC 3465 byte counting), RFC 3168 §6.1.2 ECN response;
//! - [`Dctcp`] (`dctcp.rs`): RFC 8257 §3.3 α estimate and window cut, with
//!   NewReno's growth and loss response (RFC 8257 §3.4, §3.5);
//! - [`Lia`] (`lia.rs`): the MPTCP coupled increase (RFC 6356 §3) that
//!   replaces congestion avoidance on the subflows of one connection;
//! - [`LossRules`] (`loss.rs`): the ssthresh and cwnd choices on loss, the
//!   RFC rules and the variants of ns-3 and htsim's `TcpSrc`.
//!
//! Hooks have standard (RFC 5681) or do-nothing defaults. [`Controller`]
//! dispatches by `match`: no trait object, no allocation. Another
//! algorithm is a new file here and a `Controller` variant; the sender's
//! loss recovery does not change.

mod dctcp;
mod lia;
mod loss;
mod newreno;

pub use dctcp::Dctcp;
pub use lia::{lia_alpha, Lia};
pub use loss::LossRules;
pub use newreno::NewReno;

use crate::config::{CongestionControl, TcpConfig};
use crate::sender::Recovery;

/// The sender's window state as a controller sees it: cwnd and ssthresh to
/// read and set, and the facts the RFC formulas need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Sender maximum segment size, bytes.
    pub mss: u64,
    /// FlightSize (RFC 5681 §2): bytes sent and not cumulatively
    /// acknowledged, snd.max − snd.una.
    pub flight: u64,
}

/// An ACK that advanced snd.una, as congestion control sees it.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// Bytes newly acknowledged cumulatively.
    pub acked: u64,
    /// The ACK carries ECN-Echo (RFC 3168).
    pub ece: bool,
    /// snd.una after this ACK.
    pub snd_una: u64,
    /// Highest byte sent + 1.
    pub snd_max: u64,
    /// The sender's loss-recovery state when the ACK arrived.
    pub recovery: Recovery,
    /// The window was in use (RFC 7661): growth is allowed.
    pub cwnd_limited: bool,
}

/// A congestion-control algorithm. The sender calls the hooks in this
/// order on an ACK advancing snd.una: [`on_ack`](Congestion::on_ack), then
/// [`on_recovery_exit`](Congestion::on_recovery_exit) if it ends fast
/// recovery, then [`on_ece`](Congestion::on_ece) if it echoes ECN.
pub trait Congestion {
    /// An ACK advanced snd.una: per-ACK accounting and window growth (slow
    /// start and congestion avoidance, RFC 5681 §3.1). During fast recovery
    /// cwnd is loss recovery's (RFC 6937, RFC 6582), so growth waits.
    fn on_ack(&mut self, _w: &mut Window, _ack: &Ack) {}

    /// A segment went out; `snd_max` is the highest byte sent + 1.
    fn on_send(&mut self, _snd_max: u64) {}

    /// ECN-Echo outside recovery, at most once per window of data (the
    /// sender enforces RFC 3168 §6.1.2's rule and sets CWR). Returns
    /// whether the window was reduced. Default: no response.
    fn on_ece(&mut self, _w: &mut Window) -> bool {
        false
    }

    /// Fast-recovery entry (RFC 5681 §3.2 step 2, RFC 6675 §5 step 4.2):
    /// sets ssthresh, the target of the reduction. cwnd then follows loss
    /// recovery (PRR from the pipe, or RFC 6582 inflation from ssthresh +
    /// 3·MSS). `pipe` is the RFC 6675 pipe at entry with SACKed and lost
    /// bytes (the first segment at least) excluded. Default: RFC 5681 eq.
    /// (4), max(FlightSize / 2, 2·MSS).
    fn on_fast_recovery(&mut self, w: &mut Window, _pipe: u64) {
        w.ssthresh = (w.flight / 2).max(2 * w.mss);
    }

    /// A full ACK ends fast recovery (RFC 6582 §3.2 step 3): sets cwnd.
    /// Default: option 2, cwnd = ssthresh (at least one MSS).
    fn on_recovery_exit(&mut self, w: &mut Window) {
        w.cwnd = w.ssthresh.max(w.mss);
    }

    /// A retransmission timeout (RFC 5681 §3.1, RFC 6298 §5) while in
    /// `recovery`; `pipe` is the RFC 6675 pipe just before it. Default:
    /// ssthresh = max(FlightSize / 2, 2·MSS), cwnd = LW = 1 MSS.
    fn on_timeout(&mut self, w: &mut Window, _recovery: Recovery, _pipe: u64) {
        w.ssthresh = (w.flight / 2).max(2 * w.mss);
        w.cwnd = w.mss;
    }

    /// MPTCP: the coupled increase to use in congestion avoidance
    /// (RFC 6356 §3). Default: ignored (no coupled form).
    fn set_coupling(&mut self, _lia: Lia) {}
}

/// The configured algorithm, dispatched by `match`.
#[derive(Clone, Debug)]
pub enum Controller {
    NewReno(NewReno),
    Dctcp(Dctcp),
}

impl Controller {
    /// The algorithm `cfg.cc` names, with `cfg`'s growth and loss rules.
    pub fn new(cfg: &TcpConfig) -> Controller {
        let reno = NewReno::new(cfg);
        match cfg.cc {
            CongestionControl::NewReno => Controller::NewReno(reno),
            CongestionControl::Dctcp { g } => Controller::Dctcp(Dctcp::new(reno, g)),
        }
    }

    /// DCTCP's α (RFC 8257 §3.3); 1 for an algorithm without one.
    pub fn dctcp_alpha(&self) -> f64 {
        match self {
            Controller::Dctcp(d) => d.alpha(),
            Controller::NewReno(_) => 1.0,
        }
    }
}

/// Forwards a hook to the variant's implementation.
macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::NewReno($c) => $e,
            Controller::Dctcp($c) => $e,
        }
    };
}

impl Congestion for Controller {
    #[inline]
    fn on_ack(&mut self, w: &mut Window, ack: &Ack) {
        dispatch!(self, c => c.on_ack(w, ack))
    }
    #[inline]
    fn on_send(&mut self, snd_max: u64) {
        dispatch!(self, c => c.on_send(snd_max))
    }
    fn on_ece(&mut self, w: &mut Window) -> bool {
        dispatch!(self, c => c.on_ece(w))
    }
    fn on_fast_recovery(&mut self, w: &mut Window, pipe: u64) {
        dispatch!(self, c => c.on_fast_recovery(w, pipe))
    }
    fn on_recovery_exit(&mut self, w: &mut Window) {
        dispatch!(self, c => c.on_recovery_exit(w))
    }
    fn on_timeout(&mut self, w: &mut Window, recovery: Recovery, pipe: u64) {
        dispatch!(self, c => c.on_timeout(w, recovery, pipe))
    }
    fn set_coupling(&mut self, lia: Lia) {
        dispatch!(self, c => c.set_coupling(lia))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_algorithm_is_chosen() {
        let cfg = TcpConfig::default();
        assert!(matches!(Controller::new(&cfg), Controller::NewReno(_)));
        let dctcp = TcpConfig { cc: CongestionControl::Dctcp { g: 1.0 / 16.0 }, ..cfg };
        let c = Controller::new(&dctcp);
        assert!(matches!(c, Controller::Dctcp(_)));
        assert_eq!(c.dctcp_alpha(), 1.0, "RFC 8257 §3.3: α starts at 1");
    }

    #[test]
    fn defaults_are_rfc_5681() {
        struct Plain;
        impl Congestion for Plain {}
        let mut w = Window { cwnd: 20_000, ssthresh: u64::MAX, mss: 1000, flight: 9_000 };
        Plain.on_fast_recovery(&mut w, 0);
        assert_eq!(w.ssthresh, 4_500, "eq. (4): FlightSize / 2");
        Plain.on_recovery_exit(&mut w);
        assert_eq!(w.cwnd, 4_500, "RFC 6582 §3.2 step 3 option 2");
        w.flight = 3_000;
        Plain.on_timeout(&mut w, Recovery::Open, 0);
        assert_eq!((w.ssthresh, w.cwnd), (2_000, 1_000), "at least 2·MSS; LW = 1 MSS");
        assert!(!Plain.on_ece(&mut w));
    }
}
