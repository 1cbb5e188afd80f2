//! DCTCP's control law driving a queue pair's rate (the HPCC simulator's
//! `CC_MODE 8`, `RdmaHw::HandleAckDctcp`): DCTCP (RFC 8257 §3.3) with the
//! window replaced by the NIC's pacing rate.
//!
//! Per ACK: CE echoes are counted; once per window of sequence space (an ACK
//! beyond the sequence recorded at the last update) α ← (1 − g)α +
//! g·min(1, marked / packets in that window); an echo outside CWR cuts the
//! rate to max(min, R(1 − α/2)) and enters CWR until the ACK passes the
//! sequence sent at the cut; outside CWR each new window adds R_AI, up to
//! line rate. A flow starts at line rate with α = 1.

use lbsim_engine::BitsPerSec;

/// The DCTCP-as-rate parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DctcpRateConfig {
    pub g: f64,
    /// Rate added per window of sequence space outside CWR.
    pub rate_ai: BitsPerSec,
}

/// One QP's DCTCP-as-rate state.
#[derive(Clone, Debug)]
pub struct DctcpRate {
    rate: BitsPerSec,
    line: BitsPerSec,
    alpha: f64,
    last_update_seq: u64,
    marked: u64,
    batch: u64,
    in_cwr: bool,
    high_seq: u64,
    pub cuts: u64,
}

impl DctcpRate {
    pub fn new(line: BitsPerSec) -> DctcpRate {
        DctcpRate { rate: line, line, alpha: 1.0, last_update_seq: 0, marked: 0, batch: 1, in_cwr: false, high_seq: 0, cuts: 0 }
    }

    #[inline]
    pub fn rate(&self) -> BitsPerSec {
        self.rate
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// An ACK of byte `ack` with echo `ce` reached the sender, which has sent
    /// up to `snd_nxt` with packets of `mtu` bytes.
    pub fn on_ack(&mut self, ack: u64, ce: bool, snd_nxt: u64, mtu: u64, min_rate: BitsPerSec, cfg: &DctcpRateConfig) {
        self.marked += ce as u64;
        let new_batch = ack > self.last_update_seq;
        if new_batch {
            if self.last_update_seq == 0 {
                self.batch = snd_nxt / mtu + 1;
            } else {
                let frac = (self.marked as f64 / self.batch as f64).min(1.0);
                self.alpha = (1.0 - cfg.g) * self.alpha + cfg.g * frac;
                self.marked = 0;
                self.batch = snd_nxt.saturating_sub(ack) / mtu + 1;
            }
            self.last_update_seq = snd_nxt;
        }
        if self.in_cwr && ack > self.high_seq {
            self.in_cwr = false;
        }
        if ce && !self.in_cwr {
            let cut = (self.rate.0 as f64 * (1.0 - self.alpha / 2.0)) as u64;
            self.rate = BitsPerSec(cut.max(min_rate.0));
            self.in_cwr = true;
            self.high_seq = snd_nxt;
            self.cuts += 1;
        }
        if !self.in_cwr && new_batch {
            self.rate = BitsPerSec((self.rate.0 + cfg.rate_ai.0).min(self.line.0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cut_per_window_alpha_tracks_the_marked_fraction_and_recovery_is_additive() {
        let cfg = DctcpRateConfig { g: 1.0 / 16.0, rate_ai: BitsPerSec(615_000_000) };
        let line = BitsPerSec::gbps(100);
        let min = BitsPerSec::gbps(1);
        let mut d = DctcpRate::new(line);
        // the first ACK starts a window of snd_nxt / MTU + 1 = 11 packets
        d.on_ack(1000, false, 10_000, 1000, min, &cfg);
        assert_eq!(d.rate(), line);
        // a marked ACK inside the window: cut by α/2 = 1/2, once
        d.on_ack(2000, true, 11_000, 1000, min, &cfg);
        assert_eq!(d.rate(), BitsPerSec::gbps(50));
        d.on_ack(3000, true, 12_000, 1000, min, &cfg);
        assert_eq!((d.rate(), d.cuts), (BitsPerSec::gbps(50), 1), "CWR holds until the ACK passes 11,000");
        // the next window (ACK beyond 10,000): α from 2 marks of 11 packets
        d.on_ack(10_001, false, 20_000, 1000, min, &cfg);
        let alpha = 15.0 / 16.0 + (2.0 / 11.0) / 16.0;
        assert!((d.alpha() - alpha).abs() < 1e-12);
        assert_eq!(d.rate(), BitsPerSec::gbps(50), "still in CWR: 10,001 has not passed 11,000");
        // the next window's first ACK passes 11,000: CWR ends, + R_AI
        d.on_ack(20_001, false, 30_000, 1000, min, &cfg);
        assert_eq!(d.rate(), BitsPerSec(50_615_000_000));
        assert!(d.alpha() < alpha, "an unmarked window decays α");
        d.on_ack(30_001, false, 40_000, 1000, min, &cfg);
        assert_eq!(d.rate(), BitsPerSec(51_230_000_000));
    }
}
