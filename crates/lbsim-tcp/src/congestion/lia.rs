//! MPTCP's Linked Increases Algorithm (RFC 6356): the subflows of one
//! connection share congestion avoidance so that together they take no
//! more than one TCP would on the best path (§3). Each subflow's increase
//! per ACK becomes min(α·bytes_acked·MSS / cwnd_total, bytes_acked·MSS /
//! cwnd_i); slow start and the loss response stay uncoupled. The owner of
//! the subflows computes α with [`lia_alpha`] and hands it to each
//! subflow's sender (`TcpSender::set_coupling`).

use lbsim_engine::SimTime;

/// The coupling a subflow's congestion avoidance uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lia {
    /// RFC 6356 §3 α.
    pub alpha: f64,
    /// Sum of the subflows' cwnd, bytes (at least 1).
    pub cwnd_total: u64,
}

impl Lia {
    pub fn new(alpha: f64, cwnd_total: u64) -> Lia {
        Lia { alpha, cwnd_total: cwnd_total.max(1) }
    }

    /// RFC 6356 §3: the increase, in bytes, for `acked` bytes acknowledged
    /// on a subflow whose window is `cwnd`: the coupled increase, capped at
    /// what an uncoupled TCP would add (RFC 5681 eq. (3) per byte).
    pub fn increase(&self, acked: u64, mss: u64, cwnd: u64) -> f64 {
        let a = acked as f64 * mss as f64;
        (self.alpha * a / self.cwnd_total as f64).min(a / cwnd as f64)
    }
}

/// RFC 6356 §3: alpha = cwnd_total · max_i(cwnd_i / rtt_i²) / (Σ_i cwnd_i / rtt_i)²
/// over the subflows' (cwnd in bytes, smoothed RTT), and cwnd_total. `None`
/// until some subflow has an RTT sample.
pub fn lia_alpha(subflows: impl IntoIterator<Item = (u64, SimTime)>) -> Option<(f64, u64)> {
    let (mut total, mut best, mut sum) = (0u64, 0.0f64, 0.0f64);
    for (cwnd, rtt) in subflows {
        let (w, r) = (cwnd as f64, rtt.as_secs_f64().max(1e-9));
        total += cwnd;
        best = best.max(w / (r * r));
        sum += w / r;
    }
    (sum > 0.0).then(|| (total as f64 * best / (sum * sum), total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_increase_is_the_coupled_one_capped_at_renos() {
        // two subflows of 10 MSS each, alpha 1: half of Reno's MSS²/cwnd
        let lia = Lia::new(1.0, 20_000);
        assert_eq!(lia.increase(1000, 1000, 10_000), 50.0);
        // a large alpha cannot exceed what an uncoupled flow adds
        let lia = Lia::new(50.0, 20_000);
        assert_eq!(lia.increase(1000, 1000, 10_000), 100.0);
        // scales with the bytes acknowledged
        assert_eq!(Lia::new(1.0, 20_000).increase(2000, 1000, 10_000), 100.0);
    }

    #[test]
    fn an_empty_total_is_one_byte() {
        assert_eq!(Lia::new(1.0, 0).cwnd_total, 1);
    }
}
