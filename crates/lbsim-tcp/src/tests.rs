//! Behaviour tests of the state machines over a tiny loopback "wire": a
//! sender→receiver pipe serialising at a fixed rate with a fixed delay, a
//! receiver→sender pipe with the same delay, a per-segment drop/mark
//! rule, and an optional hold rule that reorders a segment behind later
//! ones. No network model involved.

// Each test reads as "the default configuration, then the one setting it is
// about", which a struct literal with `..Default::default()` would hide.
#![allow(clippy::field_reassign_with_default)]

use crate::header::{ECE, SYN};
use crate::*;
use lbsim_engine::{BitsPerSec, Bytes, SimTime};
use std::collections::BTreeMap;

/// Decides (drop, mark) for the k-th data segment sent.
type Rule = Box<dyn FnMut(usize, &TcpHeader) -> (bool, bool)>;
/// How many later data segments overtake the k-th one (0: none).
type Hold = Box<dyn FnMut(usize, &TcpHeader) -> u32>;

struct Wire {
    s: TcpSender,
    r: TcpReceiver,
    /// (time, seq) -> (to_receiver, header, ce)
    q: BTreeMap<(SimTime, u64), (bool, TcpHeader, bool)>,
    seq: u64,
    now: SimTime,
    link_free: SimTime,
    rate: BitsPerSec,
    delay: SimTime,
    delivered: u64,
    data_sent: Vec<(u64, u32)>,
    acks: u64,
    /// decides (drop, mark) for the k-th data segment sent
    rule: Rule,
    /// how many later data segments overtake the k-th one (0: none)
    hold: Hold,
    /// segments held back: (later segments still to overtake, header, ce)
    held: Vec<(u32, TcpHeader, bool)>,
    /// sender state after each sender event, if enabled
    trace: Option<Vec<Snap>>,
}

/// The sender after one of its events.
#[derive(Clone, Copy, Debug)]
struct Snap {
    cwnd: u64,
    ssthresh: u64,
    recovery: Recovery,
    stats: SenderStats,
}

impl Wire {
    fn new(cfg: TcpConfig, rule: Rule) -> Wire {
        Wire {
            s: TcpSender::new(cfg.clone()),
            r: TcpReceiver::new(&cfg),
            q: BTreeMap::new(),
            seq: 0,
            now: SimTime::ZERO,
            link_free: SimTime::ZERO,
            rate: BitsPerSec::gbps(10),
            delay: SimTime::from_us(10),
            delivered: 0,
            data_sent: vec![],
            acks: 0,
            rule,
            hold: Box::new(|_, _| 0),
            held: vec![],
            trace: None,
        }
    }

    fn with_hold(mut self, hold: Hold) -> Wire {
        self.hold = hold;
        self
    }

    fn traced(mut self) -> Wire {
        self.trace = Some(vec![]);
        self
    }

    fn snap(&mut self) {
        if let Some(t) = self.trace.as_mut() {
            t.push(Snap { cwnd: self.s.cwnd(), ssthresh: self.s.ssthresh(), recovery: self.s.recovery(), stats: self.s.stats });
        }
    }

    fn push_out(&mut self, to_rcv: bool, out: Vec<TcpHeader>) {
        for h in out {
            let (t, ce) = if to_rcv {
                let size = Bytes(52 + h.len as u64);
                let start = self.link_free.max(self.now);
                self.link_free = start + self.rate.tx_time(size);
                let k = self.data_sent.len();
                self.data_sent.push((h.seq, h.len));
                let (drop, mark) = if h.len > 0 { (self.rule)(k, &h) } else { (false, false) };
                if drop {
                    continue;
                }
                let t = self.link_free + self.delay;
                if h.len > 0 {
                    let n = (self.hold)(k, &h);
                    if n > 0 {
                        self.held.push((n, h, mark));
                        continue;
                    }
                }
                (t, mark)
            } else {
                self.acks += 1;
                (self.now + self.delay, false)
            };
            self.seq += 1;
            self.q.insert((t, self.seq), (to_rcv, h, ce));
            if to_rcv && h.len > 0 {
                // held segments arrive right after their n-th overtaker
                for x in self.held.iter_mut() {
                    x.0 -= 1;
                }
                while let Some(i) = self.held.iter().position(|x| x.0 == 0) {
                    let (_, hh, ce) = self.held.remove(i);
                    self.seq += 1;
                    self.q.insert((t, self.seq), (true, hh, ce));
                }
            }
        }
    }

    fn run(&mut self, bytes: u64, limit: SimTime) -> SimTime {
        let mut out = vec![];
        self.s.write(bytes);
        self.s.connect(self.now, &mut out);
        self.push_out(true, std::mem::take(&mut out));
        while self.delivered < bytes {
            // next event: a segment or a timer
            let next_pkt = self.q.keys().next().map(|k| k.0);
            let next_t = [next_pkt, self.s.next_wakeup(), self.r.next_wakeup()].into_iter().flatten().min();
            let Some(t) = next_t else { panic!("stalled at {} with {} delivered", self.now, self.delivered) };
            assert!(t <= limit, "did not finish by {limit}");
            self.now = t;
            if next_pkt == Some(t) {
                let (&k, _) = self.q.iter().next().unwrap();
                let (to_rcv, h, ce) = self.q.remove(&k).unwrap();
                if to_rcv {
                    self.delivered += self.r.on_segment(&h, ce, t, &mut out);
                    self.push_out(false, std::mem::take(&mut out));
                } else {
                    self.s.on_segment(&h, t, &mut out);
                    self.snap();
                    self.push_out(true, std::mem::take(&mut out));
                }
            } else if self.s.next_wakeup() == Some(t) {
                self.s.on_timer(t, &mut out);
                self.snap();
                self.push_out(true, std::mem::take(&mut out));
            } else {
                self.r.on_timer(t, &mut out);
                self.push_out(false, std::mem::take(&mut out));
            }
        }
        self.now
    }
}

fn no_loss() -> Rule {
    Box::new(|_, _| (false, false))
}

#[test]
fn clean_transfer_completes_at_line_rate_without_retransmissions() {
    let mut w = Wire::new(TcpConfig::default(), no_loss());
    let bytes = 10_000_000;
    let t = w.run(bytes, SimTime::from_ms(100));
    assert_eq!(w.s.stats.retransmits, 0);
    assert_eq!(w.s.stats.timeouts, 0);
    // 10 MB of payload in 1500-byte packets at 10 Gb/s takes 8.29 ms; the
    // handshake and slow start add well under a millisecond.
    let ideal = BitsPerSec::gbps(10).tx_time(Bytes(bytes * 1500 / 1448));
    assert!(t < ideal + SimTime::from_us(500), "took {t}, ideal {ideal}");
    assert!(w.s.srtt().unwrap() >= SimTime::from_us(20));
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    let mut w = Wire::new(TcpConfig::default(), no_loss());
    w.run(1448 * 1000, SimTime::from_ms(100));
    let segs = w.s.stats.segments_sent;
    // one SYN-ACK + one ACK per two segments (+ a few timer-driven ones)
    assert!(w.acks <= segs / 2 + 20 && w.acks >= segs / 2, "acks {} segs {}", w.acks, segs);
    let mut cfg = TcpConfig::default();
    cfg.delack_count = 1;
    let mut w = Wire::new(cfg, no_loss());
    w.run(1448 * 1000, SimTime::from_ms(100));
    assert_eq!(w.acks, w.s.stats.segments_sent + 1);
}

#[test]
fn data_segments_echo_the_newest_tsval_of_the_peer() {
    // RFC 7323 §4.3, as Linux: each data segment's TSecr is the TSval of
    // the newest ACK (the first ones: the SYN-ACK's), sent at least one
    // one-way delay (10 us) before, and never moves back
    let seen = std::rc::Rc::new(std::cell::RefCell::new(vec![]));
    let log = seen.clone();
    let mut w = Wire::new(
        TcpConfig::default(),
        Box::new(move |_, h| {
            log.borrow_mut().push((h.ts_val, h.ts_ecr));
            (false, false)
        }),
    );
    w.run(1448 * 200, SimTime::from_ms(100));
    let seen = seen.borrow();
    assert_eq!(seen.len(), 200);
    for (i, &(val, ecr)) in seen.iter().enumerate() {
        assert!(ecr > SimTime::ZERO && ecr + SimTime::from_us(10) <= val, "segment {i}: TSval {val} TSecr {ecr}");
        assert!(i == 0 || ecr >= seen[i - 1].1, "segment {i}: TSecr moved back");
    }
    assert!(seen.last().unwrap().1 > seen[0].1, "later segments echo later ACKs");
}

fn single_drop(at: usize) -> Rule {
    Box::new(move |k, _| (k == at, false))
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_with_sack() {
    let mut w = Wire::new(TcpConfig::default(), single_drop(30));
    w.run(1448 * 200, SimTime::from_ms(100));
    assert_eq!(w.s.stats.fast_recoveries, 1);
    assert_eq!(w.s.stats.retransmits, 1, "only the lost segment is resent");
    assert_eq!(w.s.stats.timeouts, 0);
    assert!(w.r.stats.out_of_order >= 3);
}

#[test]
fn one_loss_is_repaired_by_fast_retransmit_newreno() {
    let mut cfg = TcpConfig::default();
    cfg.sack = false;
    let mut w = Wire::new(cfg, single_drop(30));
    w.run(1448 * 200, SimTime::from_ms(100));
    assert_eq!(w.s.stats.fast_recoveries, 1);
    assert_eq!(w.s.stats.retransmits, 1);
    assert_eq!(w.s.stats.timeouts, 0);
}

#[test]
fn several_losses_in_one_window_need_one_recovery_with_sack() {
    let drops = [40usize, 43, 47, 52];
    let mut w = Wire::new(TcpConfig::default(), Box::new(move |k, _| (drops.contains(&k), false)));
    w.run(1448 * 300, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 0);
    assert_eq!(w.s.stats.fast_recoveries, 1);
    assert_eq!(w.s.stats.retransmits, 4);
}

#[test]
fn tail_loss_needs_a_timeout_and_rto_respects_the_minimum() {
    // 5 segments, the last one lost: no dupacks can follow it.
    let mut w = Wire::new(TcpConfig::default(), single_drop(4));
    let t = w.run(1448 * 5, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 1);
    assert_eq!(w.s.stats.retransmits, 1);
    // min RTO 10 ms dominates the tiny RTT
    assert!(t >= SimTime::from_ms(10) && t < SimTime::from_ms(11), "{t}");
}

#[test]
fn lost_syn_is_retransmitted_after_the_initial_rto() {
    let mut w = Wire::new(TcpConfig::default(), no_loss());
    // drop the SYN by hand: do the connect ourselves
    let mut out = vec![];
    w.s.write(1448);
    w.s.connect(SimTime::ZERO, &mut out);
    assert!(out[0].has(SYN));
    assert_eq!(w.s.next_wakeup(), Some(SimTime::from_ms(10)));
    out.clear();
    w.s.on_timer(SimTime::from_ms(10), &mut out);
    assert!(out[0].has(SYN));
    // backed off: next SYN after 20 ms more
    assert_eq!(w.s.next_wakeup(), Some(SimTime::from_ms(30)));
}

#[test]
fn rto_backs_off_exponentially() {
    let mut s = TcpSender::new_established(TcpConfig::default());
    let mut out = vec![];
    s.write(1448);
    s.poll(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 1);
    let mut t = SimTime::ZERO;
    for k in 0..4 {
        let d = s.next_wakeup().unwrap();
        assert_eq!(d - t, SimTime::from_ms(10 << k), "timeout {k}");
        t = d;
        out.clear();
        s.on_timer(t, &mut out);
        assert_eq!(out.len(), 1, "one retransmission per timeout");
    }
    assert_eq!(s.stats.timeouts, 4);
}

#[test]
fn receiver_sends_sack_blocks_newest_first() {
    let cfg = TcpConfig::default();
    let mut r = TcpReceiver::new_established(&cfg);
    let mut out = vec![];
    let seg = |seq: u64| TcpHeader { seq, len: 100, flags: crate::header::ACK, ..Default::default() };
    r.on_segment(&seg(0), false, SimTime(1), &mut out);
    r.on_segment(&seg(200), false, SimTime(2), &mut out);
    r.on_segment(&seg(400), false, SimTime(3), &mut out);
    let last = out.last().unwrap();
    assert_eq!(last.ack, 100);
    assert_eq!(last.sack_blocks(), &[(400, 500), (200, 300)]);
    // filling the first hole is acknowledged at once and merges
    out.clear();
    let d = r.on_segment(&seg(100), false, SimTime(4), &mut out);
    assert_eq!(d, 200);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, 300);
    assert_eq!(out[0].sack_blocks(), &[(400, 500)]);
}

#[test]
fn dctcp_alpha_tracks_the_marked_fraction() {
    let mut cfg = TcpConfig::default();
    cfg.cc = CongestionControl::Dctcp { g: 1.0 / 16.0 };
    // ACK every segment: with cwnd cut to one segment a delayed ACK would
    // wait for its timer each round trip
    cfg.delack_count = 1;
    // every data segment marked: alpha stays at 1 and cwnd is cut every window
    let mut w = Wire::new(cfg.clone(), Box::new(|_, _| (false, true)));
    w.run(1448 * 2000, SimTime::from_ms(200));
    assert!(w.s.dctcp_alpha() > 0.99, "{}", w.s.dctcp_alpha());
    assert!(w.s.stats.ecn_reductions > 10);
    assert_eq!(w.s.stats.retransmits, 0);
    // no marks: alpha decays geometrically from its initial 1, by (1 - g)
    // per window; a 10-segment receive window makes ~200 windows
    cfg.rcv_wnd = 10 * 1448;
    let mut w = Wire::new(cfg, no_loss());
    w.run(1448 * 2000, SimTime::from_ms(200));
    assert!(w.s.dctcp_alpha() < 1e-3, "{}", w.s.dctcp_alpha());
    assert_eq!(w.s.stats.ecn_reductions, 0);
}

#[test]
fn dctcp_receiver_acks_immediately_when_ce_state_changes() {
    let mut cfg = TcpConfig::default();
    cfg.cc = CongestionControl::Dctcp { g: 1.0 / 16.0 };
    let mut r = TcpReceiver::new_established(&cfg);
    let mut out = vec![];
    let seg = |seq: u64| TcpHeader { seq, len: 1000, flags: crate::header::ACK, ..Default::default() };
    r.on_segment(&seg(0), false, SimTime(1), &mut out);
    assert!(out.is_empty(), "first segment is delayed");
    r.on_segment(&seg(1000), true, SimTime(2), &mut out);
    // the CE change flushes an ACK for byte 1000 without ECE; the marked
    // segment starts a new delayed ACK, which carries ECE
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, 1000);
    assert!(!out[0].has(ECE));
    let d = r.next_wakeup().unwrap();
    r.on_timer(d, &mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1].ack, 2000);
    assert!(out[1].has(ECE));
}

#[test]
fn sender_honours_the_advertised_window() {
    let mut cfg = TcpConfig::default();
    cfg.rcv_wnd = 3 * 1448;
    let mut s = TcpSender::new_established(cfg);
    let mut out = vec![];
    s.write(1448 * 10);
    s.poll(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 3, "IW is 10 but the peer allows 3");
}

#[test]
fn lia_coupling_limits_the_increase() {
    // Congestion avoidance from w0 segments after N one-segment ACKs gives
    // w^2 - w0^2 ~= 2N for Reno. With alpha = 1 and cwnd_total = 4 cwnd the
    // LIA increase is a quarter of Reno's per ACK, so w^2 - w0^2 ~= N/2.
    let mut cfg = TcpConfig::default();
    cfg.init_cwnd_pkts = 10;
    let run = |coupled: bool| {
        let mut s = TcpSender::new_established(cfg.clone());
        s.ssthresh = 0; // congestion avoidance from the start
        let mut out = vec![];
        s.write(1 << 40);
        let mut t = SimTime::ZERO;
        s.poll(t, &mut out);
        for _ in 0..4000 {
            if coupled {
                let c = s.cwnd();
                s.set_coupling(1.0, 4 * c);
            }
            t += SimTime::from_us(1);
            let h = TcpHeader { ack: s.snd_una() + 1448, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
            out.clear();
            s.on_segment(&h, t, &mut out);
        }
        let w = s.cwnd() as f64 / 1448.0;
        w * w - 100.0
    };
    let (plain, coupled) = (run(false), run(true));
    let ratio = coupled / plain;
    assert!((ratio - 0.25).abs() < 0.02, "plain {plain} coupled {coupled}");
    assert!((plain - 8000.0).abs() < 400.0, "{plain}");
}

#[test]
fn lia_alpha_follows_rfc_6356() {
    let us = SimTime::from_us;
    // n equal subflows: alpha = n·w·(w/r²) / (n·w/r)² = 1/n
    let (a, total) = crate::lia_alpha([(10_000, us(100)); 4]).unwrap();
    assert!((a - 0.25).abs() < 1e-12, "{a}");
    assert_eq!(total, 40_000);
    // equal windows, RTTs r and 2r: alpha = 2w·(w/r²) / (1.5·w/r)² = 2/2.25
    let (a, _) = crate::lia_alpha([(10_000, us(100)), (10_000, us(200))]).unwrap();
    assert!((a - 2.0 / 2.25).abs() < 1e-12, "{a}");
    // one subflow: alpha = 1 (plain Reno)
    let (a, _) = crate::lia_alpha([(7_000, us(30))]).unwrap();
    assert!((a - 1.0).abs() < 1e-12, "{a}");
    assert!(crate::lia_alpha(std::iter::empty()).is_none());
}

#[test]
fn lia_increase_is_capped_at_renos() {
    // RFC 6356 §3: the coupled increase never exceeds acked·MSS/cwnd_i, so
    // an alpha far above 1 gives exactly Reno's per-ACK growth (RFC 5681)
    let mut cfg = TcpConfig::default();
    cfg.init_cwnd_pkts = 10;
    cfg.byte_counting = false;
    let run = |alpha: Option<f64>| {
        let mut s = TcpSender::new_established(cfg.clone());
        s.ssthresh = 0;
        let mut out = vec![];
        s.write(1 << 40);
        let mut t = SimTime::ZERO;
        s.poll(t, &mut out);
        for _ in 0..2000 {
            if let Some(a) = alpha {
                let c = s.cwnd();
                s.set_coupling(a, 2 * c);
            }
            t += SimTime::from_us(1);
            let h = TcpHeader { ack: s.snd_una() + 1448, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
            out.clear();
            s.on_segment(&h, t, &mut out);
        }
        s.cwnd()
    };
    assert_eq!(run(Some(50.0)), run(None));
    assert!(run(Some(1.0)) < run(None));
}

#[test]
fn a_burst_of_losses_is_repaired_without_a_timeout_with_sack() {
    // every other segment of a 300-segment stretch lost (a queue overflowing
    // under slow start): SACK + PRR must repair it in one recovery.
    let mut w = Wire::new(TcpConfig::default(), Box::new(|k, _| ((300..600).contains(&k) && k % 2 == 1, false)));
    w.run(1448 * 3000, SimTime::from_ms(500));
    assert_eq!(w.s.stats.timeouts, 0, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.fast_recoveries, 1, "{:?}", w.s.stats);
}

#[test]
fn nic_budget_backpressures_without_loss() {
    let mut s = TcpSender::new_established(TcpConfig::default());
    let mut out = vec![];
    s.write(1448 * 10);
    s.set_tx_budget(3);
    s.poll(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 3);
    assert!(s.nic_blocked());
    s.set_tx_budget(100);
    s.poll(SimTime(1), &mut out);
    assert_eq!(out.len(), 10, "the rest of the initial window follows");
    assert!(!s.nic_blocked());
    assert_eq!(s.stats.retransmits, 0);
}

#[test]
fn slow_start_growth_per_ack_or_per_byte() {
    // ten ACKs each acknowledging two segments (delayed ACKs)
    let grow = |byte_counting: bool| {
        let mut cfg = TcpConfig::default();
        cfg.byte_counting = byte_counting;
        let mut s = TcpSender::new_established(cfg);
        let mut out = vec![];
        s.write(1 << 30);
        s.poll(SimTime::ZERO, &mut out);
        for i in 0..10u64 {
            let h = TcpHeader { ack: (i + 1) * 2 * 1448, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
            s.on_segment(&h, SimTime(1 + i), &mut out);
        }
        (s.cwnd() - 10 * 1448) / 1448
    };
    assert_eq!(grow(false), 10, "RFC 5681: one MSS per ACK");
    assert_eq!(grow(true), 20, "RFC 3465: the bytes acknowledged (L = 2)");
}

#[test]
fn tso_deferral_sends_in_bursts() {
    // With 64 KB TSO a steady flow leaves the sender in bursts separated by
    // idle gaps; without it, segments are spread out by the ACK clock.
    let gaps = |tso: u32| {
        let mut cfg = TcpConfig::default();
        cfg.tso_bytes = tso;
        cfg.rcv_wnd = 128 * 1024; // window-limited: a steady state with idle time
        let mut w = Wire::new(cfg, no_loss());
        w.run(1448 * 4000, SimTime::from_ms(500));
        w.s.stats.segments_sent
    };
    assert_eq!(gaps(0), gaps(65536), "same data, no loss either way");
    // the burst structure: after the first RTT every transmission opportunity
    // sends at least burst/2 bytes at once
    let mut cfg = TcpConfig::default();
    cfg.tso_bytes = 65536;
    let mut s = TcpSender::new_established(cfg);
    let mut out = vec![];
    s.write(1 << 30);
    s.poll(SimTime::ZERO, &mut out);
    assert_eq!(out.len(), 10, "IW");
    // one ACK for 2 segments: window room 2 segments < burst (cwnd/2 = 6): defer
    out.clear();
    let ack = |a: u64| TcpHeader { ack: a, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
    s.on_segment(&ack(2 * 1448), SimTime(1), &mut out);
    assert!(out.is_empty(), "deferred, got {}", out.len());
    s.on_segment(&ack(6 * 1448), SimTime(2), &mut out);
    assert!(out.len() >= 6, "a burst once the window allows: {}", out.len());
}

#[test]
fn a_subflow_fed_one_segment_at_a_time_still_grows_its_window() {
    // MPTCP's scheduler writes one MSS per call; RFC 7661 still counts the
    // window as used when it is full
    let mut s = TcpSender::new_established(TcpConfig::default());
    let mut out = vec![];
    let mut dsn = 0;
    let mut t = SimTime::ZERO;
    let mut acked = 0u64;
    for _ in 0..200 {
        while s.window_space() >= 1448 {
            s.write_mapped(1448, dsn);
            dsn += 1448;
            s.poll(t, &mut out);
        }
        t += SimTime::from_us(1);
        acked += 1448;
        let h = TcpHeader { ack: acked, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
        s.on_segment(&h, t, &mut out);
    }
    assert!(s.cwnd() > 50 * 1448, "cwnd {}", s.cwnd() / 1448);
}

#[test]
fn no_segment_spans_two_mptcp_mappings_even_when_retransmitted() {
    let mut s = TcpSender::new_established(TcpConfig::default());
    let mut out = vec![];
    s.write_mapped(500, 0); // the short tail of one flow ...
    s.write_mapped(1448, 100_000); // ... and the next flow's first chunk
    s.poll(SimTime::ZERO, &mut out);
    let segs: Vec<(u64, u32, u64)> = out.iter().map(|h| (h.seq, h.len, h.dsn)).collect();
    assert_eq!(segs, vec![(0, 500, 0), (500, 1448, 100_000)]);
    // both lost: the go-back-N retransmissions keep the same boundaries
    out.clear();
    let d = s.next_wakeup().unwrap();
    s.on_timer(d, &mut out);
    assert_eq!((out[0].seq, out[0].len, out[0].dsn), (0, 500, 0));
}

#[test]
fn an_in_order_segment_absorbs_every_out_of_order_range_it_reaches() {
    let cfg = TcpConfig::default();
    let mut r = TcpReceiver::new_established(&cfg);
    let mut out = vec![];
    let seg = |seq: u64, len: u32| TcpHeader { seq, len, flags: crate::header::ACK, ..Default::default() };
    r.on_segment(&seg(200, 200), false, SimTime(1), &mut out);
    r.on_segment(&seg(600, 1400), false, SimTime(2), &mut out);
    // [0, 1448) reaches past the start of [600, 2000)
    let d = r.on_segment(&seg(0, 1448), false, SimTime(3), &mut out);
    assert_eq!(r.rcv_nxt(), 2000);
    assert_eq!(d, 2000);
    assert_eq!(r.ooo_bytes(), 0);
}

#[test]
fn sack_blocks_repeat_the_most_recently_reported_ones() {
    let cfg = TcpConfig::default();
    let mut r = TcpReceiver::new_established(&cfg);
    let mut out = vec![];
    let seg = |seq: u64| TcpHeader { seq, len: 100, flags: crate::header::ACK, ..Default::default() };
    // four blocks arriving high to low (e.g. retransmissions filling in)
    for s in [800u64, 600, 400, 200] {
        r.on_segment(&seg(s), false, SimTime(s), &mut out);
    }
    // latest first, then those reported just before (400, 600) — not the
    // highest (800), which was reported longest ago
    assert_eq!(out.last().unwrap().sack_blocks(), &[(200, 300), (400, 500), (600, 700)]);
    r.on_segment(&seg(1000), false, SimTime(1000), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks(), &[(1000, 1100), (200, 300), (400, 500)]);
}

#[test]
fn prr_does_not_burst_after_a_cumulative_ack_over_sacked_data() {
    // two losses in one window; when the first hole is repaired the ACK
    // jumps over ~10 segments already SACKed: PRR must count them only once
    let drops = [20usize, 30];
    let mut w = Wire::new(TcpConfig::default(), Box::new(move |k, _| (drops.contains(&k), false)));
    w.run(1448 * 200, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 0);
    assert_eq!(w.s.stats.retransmits, 2);
}

/// Drops the first transmission of segments `first..last` (by segment
/// index) and the `nth` transmissions of segment `again`.
fn drop_tail_and_a_retransmission(first: u64, last: u64, again: u64, nth: std::ops::RangeInclusive<u32>) -> Rule {
    let mut sent: BTreeMap<u64, u32> = BTreeMap::new();
    Box::new(move |_, h| {
        let i = h.seq / 1448;
        let n = sent.entry(i).or_insert(0);
        *n += 1;
        (((first..last).contains(&i) && *n == 1) || (i == again && nth.contains(n)), false)
    })
}

#[test]
fn a_retransmission_lost_after_a_timeout_is_repaired_without_a_second_timeout() {
    // 20 segments, the last five lost: too few SACKs follow for fast
    // retransmit, so an RTO repairs them; the first retransmission of
    // segment 16 is lost as well. The go-back-N pass then sends 17, 18, 19,
    // whose SACKs show 16 lost again (RFC 6675 §5.1): no second timeout.
    let mut w = Wire::new(TcpConfig::default(), drop_tail_and_a_retransmission(15, 20, 16, 2..=2));
    let t = w.run(1448 * 20, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 1, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.retransmits, 6, "five after the RTO, 16 once more: {:?}", w.s.stats);
    assert!(t < SimTime::from_ms(15), "{t}");
    // without SACK nothing tells the sender, and a second RTO is needed
    let cfg = TcpConfig { sack: false, ..TcpConfig::default() };
    let mut w = Wire::new(cfg, drop_tail_and_a_retransmission(15, 20, 16, 2..=2));
    w.run(1448 * 20, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 2, "{:?}", w.s.stats);
}

#[test]
fn a_re_retransmission_lost_in_loss_is_detected_again() {
    // segments 15.. of the flow lost, then segment 16's first two
    // retransmissions: with 20 segments nothing is sent after the second
    // and it takes a second timeout; with 30, the go-back-N pass goes on
    // and its SACKs show the second retransmission lost too
    let rule = |segs: u64| drop_tail_and_a_retransmission(15, segs, 16, 2..=3);
    let mut w = Wire::new(TcpConfig::default(), rule(20));
    w.run(1448 * 20, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 2, "{:?}", w.s.stats);
    let mut w = Wire::new(TcpConfig::default(), rule(30));
    w.run(1448 * 30, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 1, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.retransmits, 15 + 2, "{:?}", w.s.stats);
}

#[test]
fn fast_recovery_resends_only_what_is_missing_when_no_new_data_remains() {
    // A loss near the end of a transfer: when no new data is left, RFC 6675
    // NextSeg rule 3 may resend only holes below the highest SACKed byte;
    // data above it is in flight, not missing.
    for at in [60usize, 85, 95] {
        let mut w = Wire::new(TcpConfig::default(), single_drop(at));
        w.run(1448 * 100, SimTime::from_ms(100));
        let st = w.s.stats;
        assert_eq!(st.timeouts, 0, "drop at {at}: {st:?}");
        assert!(st.retransmits <= 2, "drop at {at}: {st:?}");
        assert!(w.r.stats.duplicates <= 1, "drop at {at}: {} duplicates", w.r.stats.duplicates);
    }
}

#[test]
fn a_retransmission_lost_in_fast_recovery_is_resent_without_a_timeout() {
    // segment 30 and its first retransmission lost: the SACKs of data sent
    // after the retransmission show it lost, and it is sent a third time
    let mut w = Wire::new(TcpConfig::default(), drop_tail_and_a_retransmission(30, 31, 30, 2..=2));
    let t = w.run(1448 * 200, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 0, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.fast_recoveries, 1, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.retransmits, 2, "{:?}", w.s.stats);
    assert!(t < SimTime::from_ms(5), "{t}");
    // without SACK nothing shows it, and the RTO repairs it; nor with
    // `LostRetransmission::Timeout` (ns-3 3.44), which leaves it to the timer
    for cfg in [TcpConfig { sack: false, ..TcpConfig::default() }, TcpConfig { lost_retransmission: LostRetransmission::Timeout, ..TcpConfig::default() }] {
        let mut w = Wire::new(cfg, drop_tail_and_a_retransmission(30, 31, 30, 2..=2));
        let t = w.run(1448 * 200, SimTime::from_ms(100));
        assert_eq!(w.s.stats.timeouts, 1, "{:?}", w.s.stats);
        assert!(t > SimTime::from_ms(10), "the repair waits for the 10 ms RTO: {t}");
    }
}

#[test]
fn fast_recovery_halves_the_pipe_at_entry_with_fr_ssthresh_pipe() {
    // one loss in a full window: at the third duplicate ACK three segments
    // are SACKed and one is lost, so ns-3's pipe is FlightSize less four
    // segments, and its ssthresh two segments below RFC 5681's
    let entry = |fr_ssthresh| {
        let mut w = Wire::new(TcpConfig { fr_ssthresh, ..TcpConfig::default() }, single_drop(60)).traced();
        w.run(1448 * 200, SimTime::from_ms(100));
        let t = w.trace.unwrap();
        let s = t.iter().find(|s| s.stats.fast_recoveries == 1).expect("a fast recovery");
        (s.ssthresh, w.s.stats.timeouts)
    };
    let (rfc, ns3) = (entry(FrSsthresh::FlightSize), entry(FrSsthresh::Pipe));
    assert_eq!((rfc.1, ns3.1), (0, 0));
    assert_eq!(rfc.0 - ns3.0, 2 * 1448, "RFC {} vs pipe {}", rfc.0, ns3.0);
}

#[test]
fn a_retransmission_lost_after_a_timeout_waits_for_the_next_with_lost_retransmission_timeout() {
    // the go-back-N pass's SACKs show segment 16 lost again, but
    // `LostRetransmission::Timeout` leaves it to a second RTO (ns-3 3.44)
    let cfg = TcpConfig { lost_retransmission: LostRetransmission::Timeout, ..TcpConfig::default() };
    let mut w = Wire::new(cfg, drop_tail_and_a_retransmission(15, 30, 16, 2..=2));
    w.run(1448 * 30, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 2, "{:?}", w.s.stats);
}

#[test]
fn a_partial_ack_resends_a_head_not_yet_deemed_lost_with_partial_ack_retransmit() {
    // 100 segments; 85 and the last one (99) lost. Nothing follows 99, so
    // no SACK shows it missing: once 85's retransmission is acknowledged,
    // only the rescue retransmission or the timer repairs it. Without the
    // rescue (ns-3 3.44), the partial ACK's own retransmission of the
    // head does.
    let rule = || -> Rule {
        let mut seen = std::collections::BTreeSet::new();
        Box::new(move |_, h| ([85, 99].contains(&(h.seq / 1448)) && seen.insert(h.seq), false))
    };
    let no_rescue = TcpConfig { rescue_retransmission: false, ..TcpConfig::default() };
    let mut w = Wire::new(no_rescue.clone(), rule());
    let t = w.run(1448 * 100, SimTime::from_ms(100));
    assert_eq!((w.s.stats.timeouts, w.s.stats.fast_recoveries), (1, 1), "{:?}", w.s.stats);
    assert!(t > SimTime::from_ms(10), "{t}");
    let mut w = Wire::new(TcpConfig { partial_ack_retransmit: true, ..no_rescue }, rule());
    let t = w.run(1448 * 100, SimTime::from_ms(100));
    assert_eq!((w.s.stats.timeouts, w.s.stats.retransmits), (0, 2), "{:?}", w.s.stats);
    assert!(t < SimTime::from_ms(5), "{t}");
}

#[test]
fn an_impatient_timer_ends_a_long_recovery_in_a_timeout() {
    // every other segment of 40..120 lost: each recovery takes several
    // round trips, each partial ACK restarting the timer (RFC 6298 (5.3)).
    // The impatient variant (RFC 6582 §4.2, ns-3 3.44) restarts it only on
    // the first, and an RTO close to the RTT expires before the end.
    let rule = || -> Rule {
        let mut seen = std::collections::BTreeSet::new();
        Box::new(move |_, h| {
            let i = h.seq / 1448;
            ((40..120).contains(&i) && i % 2 == 0 && seen.insert(h.seq), false)
        })
    };
    // a 30-segment receive window keeps the round trip near 60 us; a
    // 50 us minimum RTO leaves the timer close to it
    let base = TcpConfig { min_rto: SimTime::from_us(50), delack_count: 1, rcv_wnd: 30 * 1448, ..TcpConfig::default() };
    let mut w = Wire::new(base.clone(), rule());
    w.run(1448 * 300, SimTime::from_ms(100));
    let steady = w.s.stats;
    let mut w = Wire::new(TcpConfig { partial_ack_timer: PartialAckTimer::Impatient, ..base }, rule());
    w.run(1448 * 300, SimTime::from_ms(100));
    let impatient = w.s.stats;
    assert_eq!(steady.timeouts, 0, "{steady:?}");
    assert!(impatient.timeouts >= 1, "{impatient:?}");
}

#[test]
fn the_rescue_retransmission_repairs_a_lost_tail_in_fast_recovery() {
    // 100 segments; 94 and the last one (99) lost. 95-98 start fast
    // recovery for 94; nothing follows 99, so no SACK can show it lost:
    // the rescue retransmission (RFC 6675 NextSeg rule 4) resends it
    // instead of waiting for the RTO.
    let mut seen = std::collections::BTreeSet::new();
    let rule: Rule = Box::new(move |_, h| ([94, 99].contains(&(h.seq / 1448)) && seen.insert(h.seq), false));
    let mut w = Wire::new(TcpConfig::default(), rule);
    let t = w.run(1448 * 100, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 0, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.retransmits, 2, "{:?}", w.s.stats);
    assert!(t < SimTime::from_ms(5), "{t}");
    // without it (ns-3 3.44) the tail waits for the RTO
    let mut seen = std::collections::BTreeSet::new();
    let rule: Rule = Box::new(move |_, h| ([94, 99].contains(&(h.seq / 1448)) && seen.insert(h.seq), false));
    let mut w = Wire::new(TcpConfig { rescue_retransmission: false, ..TcpConfig::default() }, rule);
    let t = w.run(1448 * 100, SimTime::from_ms(100));
    assert_eq!(w.s.stats.timeouts, 1, "{:?}", w.s.stats);
    assert!(t > SimTime::from_ms(10), "{t}");
}

/// Segments held back behind `n` later ones, by index, first transmission only.
fn reorder(segments: &'static [u64], n: u32) -> Hold {
    let mut seen = std::collections::BTreeSet::new();
    Box::new(move |_, h| {
        let i = h.seq / 1448;
        if segments.contains(&i) && seen.insert(i) {
            n
        } else {
            0
        }
    })
}

fn linux_cfg() -> TcpConfig {
    TcpConfig { reordering: Reordering::LINUX, dsack: true, ..TcpConfig::default() }
}

/// The cwnd just before the first fast recovery, and the snapshots after it.
fn around_first_recovery(trace: &[Snap]) -> (u64, &[Snap]) {
    let i = trace.iter().position(|s| s.stats.fast_recoveries == 1).expect("a fast recovery");
    (trace[i - 1].cwnd, &trace[i..])
}

#[test]
fn reordering_fixed_threshold_retransmits_spuriously_and_cuts_cwnd() {
    // segments 100 and 300 each arrive after the five that follow them
    let mut w = Wire::new(TcpConfig::default(), no_loss()).with_hold(reorder(&[100, 300], 5)).traced();
    w.run(1448 * 400, SimTime::from_ms(100));
    assert_eq!(w.s.stats.fast_recoveries, 2, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.retransmits, 2);
    assert_eq!(w.s.stats.undos, 0);
    assert_eq!(w.s.reordering(), 3);
    let trace = w.trace.take().unwrap();
    let (pre, after) = around_first_recovery(&trace);
    let open = after.iter().find(|s| s.recovery == Recovery::Open).unwrap();
    assert!(open.cwnd <= pre * 6 / 10, "cut from {pre} to {}", open.cwnd);
}

#[test]
fn reordering_adaptive_undoes_the_cut_and_learns_the_degree() {
    let mut w = Wire::new(linux_cfg(), no_loss()).with_hold(reorder(&[100, 300], 5)).traced();
    w.run(1448 * 400, SimTime::from_ms(100));
    let st = w.s.stats;
    // the first reordering: one spurious fast retransmit, undone (Eifel: the
    // ACK of the late original echoes its timestamp, older than the
    // retransmission); the second: no fast retransmit at all
    assert_eq!(st.fast_recoveries, 1, "{st:?}");
    assert_eq!(st.retransmits, 1, "{st:?}");
    assert_eq!(st.undos, 1, "{st:?}");
    assert_eq!(st.spurious_retransmits, 1, "{st:?}");
    assert_eq!(st.timeouts, 0);
    assert!(w.s.reordering() >= 5, "{}", w.s.reordering());
    let trace = w.trace.take().unwrap();
    let (pre, after) = around_first_recovery(&trace);
    let undone = after.iter().find(|s| s.stats.undos == 1).unwrap();
    assert_eq!(undone.recovery, Recovery::Open);
    assert!(undone.cwnd >= pre, "restored {} < {pre}", undone.cwnd);
    // the timestamps alone suffice here (Eifel, RFC 3522): same without D-SACK
    let mut cfg = linux_cfg();
    cfg.dsack = false;
    let mut w = Wire::new(cfg, no_loss()).with_hold(reorder(&[100, 300], 5));
    w.run(1448 * 400, SimTime::from_ms(100));
    assert_eq!((w.s.stats.undos, w.s.stats.fast_recoveries, w.s.stats.retransmits), (1, 1, 1), "{:?}", w.s.stats);
}

#[test]
fn reordering_adaptive_undoes_on_dsack_when_the_original_arrives_last() {
    // segment 100 overtaken by 150 others: its fast retransmission arrives
    // first, so no timestamp evidence; the late original is D-SACKed
    let mut w = Wire::new(linux_cfg(), no_loss()).with_hold(reorder(&[100], 150)).traced();
    w.run(1448 * 400, SimTime::from_ms(100));
    let st = w.s.stats;
    assert_eq!(st.fast_recoveries, 1, "{st:?}");
    assert_eq!(st.undos, 1, "{st:?}");
    assert_eq!(st.spurious_retransmits, 1, "{st:?}");
    assert_eq!(w.r.stats.dsacks, 1);
    assert!(w.s.reordering() >= 50, "{}", w.s.reordering());
    let trace = w.trace.take().unwrap();
    let (pre, after) = around_first_recovery(&trace);
    let undone = after.iter().find(|s| s.stats.undos == 1).unwrap();
    assert!(undone.cwnd >= pre, "restored {} < {pre}", undone.cwnd);
    // without D-SACK at the receiver there is no evidence: no undo
    let mut cfg = linux_cfg();
    cfg.dsack = false;
    let mut w = Wire::new(cfg, no_loss()).with_hold(reorder(&[100], 150));
    w.run(1448 * 400, SimTime::from_ms(100));
    assert_eq!(w.s.stats.undos, 0, "{:?}", w.s.stats);
}

#[test]
fn real_loss_with_adaptive_reordering_is_a_fast_retransmit_without_undo() {
    let mut w = Wire::new(linux_cfg(), single_drop(30));
    w.run(1448 * 200, SimTime::from_ms(100));
    let st = w.s.stats;
    assert_eq!(st.fast_recoveries, 1, "{st:?}");
    assert_eq!(st.retransmits, 1, "{st:?}");
    assert_eq!(st.timeouts, 0, "{st:?}");
    assert_eq!(st.undos, 0, "{st:?}");
    assert_eq!(st.spurious_retransmits, 0, "{st:?}");
    assert_eq!(w.s.reordering(), 3);
    // and a burst of losses still needs no timeout
    let mut w = Wire::new(linux_cfg(), Box::new(|k, _| ((300..600).contains(&k) && k % 2 == 1, false)));
    w.run(1448 * 3000, SimTime::from_ms(500));
    assert_eq!(w.s.stats.timeouts, 0, "{:?}", w.s.stats);
    assert_eq!(w.s.stats.undos, 0, "{:?}", w.s.stats);
}

#[test]
fn receiver_reports_duplicates_first_with_dsack() {
    let seg = |seq: u64| TcpHeader { seq, len: 100, flags: crate::header::ACK, ..Default::default() };
    let cfg = TcpConfig { dsack: true, ..TcpConfig::default() };
    let mut r = TcpReceiver::new_established(&cfg);
    let mut out = vec![];
    r.on_segment(&seg(0), false, SimTime(1), &mut out);
    r.on_segment(&seg(200), false, SimTime(2), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks(), &[(200, 300)]);
    // a duplicate below rcv_nxt (RFC 2883 §4.1.1), acknowledged at once
    out.clear();
    r.on_segment(&seg(0), false, SimTime(3), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].ack, 100);
    assert_eq!(out[0].sack_blocks(), &[(0, 100), (200, 300)]);
    // a duplicate of out-of-order data: the D-SACK, then its block (§4.1.3)
    r.on_segment(&seg(400), false, SimTime(4), &mut out);
    r.on_segment(&seg(200), false, SimTime(5), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks(), &[(200, 300), (200, 300), (400, 500)]);
    // reported once only
    r.on_segment(&seg(600), false, SimTime(6), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks(), &[(600, 700), (200, 300), (400, 500)]);
    // a partial duplicate: the part below rcv_nxt
    r.on_segment(&TcpHeader { seq: 50, len: 100, flags: crate::header::ACK, ..Default::default() }, false, SimTime(7), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks()[0], (50, 100));
    assert_eq!(r.stats.dsacks, 3);
    // off: no D-SACK
    let mut r = TcpReceiver::new_established(&TcpConfig::default());
    out.clear();
    r.on_segment(&seg(0), false, SimTime(1), &mut out);
    r.on_segment(&seg(200), false, SimTime(2), &mut out);
    r.on_segment(&seg(0), false, SimTime(3), &mut out);
    assert_eq!(out.last().unwrap().sack_blocks(), &[(200, 300)]);
    assert_eq!(r.stats.dsacks, 0);
}

/// A sender that has sent `segs` segments, all acknowledged two at a time;
/// returns it and the time of the last ACK.
fn grown_sender(cfg: TcpConfig, segs: u64) -> (TcpSender, SimTime) {
    let mut s = TcpSender::new_established(cfg);
    let mut out = vec![];
    s.write(1448 * segs);
    let mut t = SimTime::ZERO;
    s.poll(t, &mut out);
    while !s.all_acked() {
        t += SimTime::from_us(1);
        let ack = (s.snd_una() + 2 * 1448).min(s.snd_max());
        s.on_segment(&TcpHeader { ack, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() }, t, &mut out);
    }
    (s, t)
}

#[test]
fn restart_after_idle_halves_cwnd_once_per_rto() {
    let cfg = TcpConfig { restart_after_idle: true, ..TcpConfig::default() };
    let (mut s, t) = grown_sender(cfg.clone(), 300);
    let c0 = s.cwnd();
    assert!(c0 >= 100 * 1448, "{}", c0 / 1448);
    let rto = s.rto();
    // idle a little more than 3 RTOs: three halvings
    let now = t + SimTime(3 * rto.0 + 1);
    s.write(1448 * 1000);
    let mut out = vec![];
    s.poll(now, &mut out);
    assert_eq!(s.cwnd(), c0 / 2 / 2 / 2);
    assert_eq!(out.len() as u64, s.cwnd() / 1448);
    assert_eq!(s.ssthresh(), u64::MAX, "max(ssthresh, 3/4 cwnd)");
    // not below the initial window
    let (mut s, t) = grown_sender(cfg.clone(), 30);
    assert!(s.cwnd() / 8 < 10 * 1448 && s.cwnd() > 10 * 1448);
    s.write(1448 * 1000);
    s.poll(t + SimTime(3 * rto.0 + 1), &mut out);
    assert_eq!(s.cwnd(), 10 * 1448);
    // less than an RTO idle: unchanged
    let (mut s, t) = grown_sender(cfg, 300);
    s.write(1448);
    s.poll(t + SimTime(rto.0 / 2), &mut out);
    assert_eq!(s.cwnd(), c0);
    // option off: unchanged
    let (mut s, t) = grown_sender(TcpConfig::default(), 300);
    s.write(1448 * 1000);
    s.poll(t + SimTime(3 * rto.0 + 1), &mut out);
    assert_eq!(s.cwnd(), c0);
}

#[test]
fn adaptive_threshold_follows_the_reordering_seen_in_sack_and_acks() {
    // Crafted ACKs; the NIC takes nothing, so no segment is ever
    // retransmitted and every late arrival is reordering, not repair.
    let run = |reordering: Reordering| {
        let cfg = TcpConfig { reordering, ..TcpConfig::default() };
        let mut s = TcpSender::new_established(cfg);
        let mut out = vec![];
        s.write(1448 * 20);
        s.poll(SimTime(1), &mut out);
        assert_eq!(out.len(), 10);
        s.set_tx_budget(0);
        let ack = |a: u64, sack: Option<(u64, u64)>| {
            let mut h = TcpHeader { ack: a * 1448, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
            if let Some((x, y)) = sack {
                h.sack[0] = (x * 1448, y * 1448);
                h.n_sack = 1;
            }
            h
        };
        let mut seen = vec![];
        s.on_segment(&ack(0, Some((2, 6))), SimTime(2), &mut out);
        seen.push(s.reordering());
        // segment 1 SACKed below the highest SACKed byte (6): degree 5
        s.on_segment(&ack(0, Some((1, 6))), SimTime(3), &mut out);
        seen.push(s.reordering());
        // segment 0 cumulatively acknowledged, never retransmitted: degree 6
        s.on_segment(&ack(6, None), SimTime(4), &mut out);
        seen.push(s.reordering());
        assert_eq!(s.stats.retransmits, 0);
        seen
    };
    assert_eq!(run(Reordering::Fixed), vec![3, 3, 3]);
    assert_eq!(run(Reordering::LINUX), vec![3, 5, 6]);
    assert_eq!(run(Reordering::Adaptive { max_pkts: 4 }), vec![3, 4, 4], "capped");
}

#[test]
fn rto_ssthresh_halves_flight_size_once_or_pipe_every_time() {
    // ten segments out, segments 8 and 9 SACKed (too few to deem 0 lost),
    // then two timeouts in a row
    let run = |rto_ssthresh: RtoSsthresh| {
        let cfg = TcpConfig { rto_ssthresh, ..TcpConfig::default() };
        let mut s = TcpSender::new_established(cfg);
        let mut out = vec![];
        s.write(1448 * 40);
        s.poll(SimTime::ZERO, &mut out);
        assert_eq!(out.len(), 10);
        let mut h = TcpHeader { ack: 0, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
        h.sack[0] = (8 * 1448, 10 * 1448);
        h.n_sack = 1;
        s.on_segment(&h, SimTime::from_us(20), &mut out);
        assert_eq!(s.recovery(), Recovery::Open);
        let mut th = vec![];
        for _ in 0..2 {
            let t = s.next_wakeup().unwrap();
            s.on_timer(t, &mut out);
            th.push(s.ssthresh() / 1448);
        }
        th
    };
    // The SACK shrank the pipe, so two new segments went out (RFC 6675):
    // 12 sent, 2 SACKed. RFC 5681: FlightSize (12 segments) / 2, held on
    // the repeated timeout.
    assert_eq!(run(RtoSsthresh::FlightSize), vec![6, 6]);
    // ns-3: pipe (10 un-SACKed segments) / 2, then the one retransmission
    // in flight / 2, floored at 2 segments
    assert_eq!(run(RtoSsthresh::Pipe), vec![5, 2]);
    // htsim: cwnd (10) / 2, then the 1-segment window of the timeout / 2,
    // floored at 2 segments
    assert_eq!(run(RtoSsthresh::Cwnd), vec![5, 2]);
}

#[test]
fn a_timeout_in_fast_recovery_keeps_the_reduction_recovery_made() {
    // NewReno: ten segments out, three duplicate ACKs (ssthresh 5), ten more
    // inflate the window and send eight new segments (FlightSize 18); the
    // RTO that follows must not raise ssthresh to 18 / 2 (Linux keeps
    // recovery's ssthresh; RFC 5681 eq. 4 is an upper bound)
    let run = |rto_ssthresh: RtoSsthresh| {
        let (mut s, mut out, dup) = newreno_ten_out(TcpConfig { rto_ssthresh, ..TcpConfig::default() }, 40);
        assert_eq!(out.len(), 10);
        for i in 0..13 {
            s.on_segment(&dup, SimTime::from_us(20 + i), &mut out);
        }
        assert!(matches!(s.recovery(), Recovery::Fast { .. }));
        assert_eq!(s.ssthresh() / 1448, 5);
        assert_eq!(s.snd_max() / 1448, 18, "{} sent", out.len());
        let t = s.next_wakeup().unwrap();
        s.on_timer(t, &mut out);
        s.ssthresh() / 1448
    };
    assert_eq!(run(RtoSsthresh::FlightSize), 5);
    // htsim halves again: min(ssthresh 5, FlightSize + MSS) / 2, floored at 2
    assert_eq!(run(RtoSsthresh::Cwnd), 2);
}

#[test]
fn prr_conservative_bound_recovers_a_burst_more_slowly_than_slow_start_bound() {
    // every other segment of 10..50 lost: the pipe falls below ssthresh, where
    // SSRB sends one MSS more than delivered per ACK and CRB only what was
    // delivered, so CRB sends less while it repairs the burst
    let run = |prr_bound: PrrBound| {
        let cfg = TcpConfig { prr_bound, init_cwnd_pkts: 30, ..TcpConfig::default() };
        let mut sent: BTreeMap<u64, u32> = BTreeMap::new();
        let rule: Rule = Box::new(move |_, h| {
            let i = h.seq / 1448;
            let n = sent.entry(i).or_insert(0);
            *n += 1;
            ((10..50).contains(&i) && i % 2 == 0 && *n == 1, false)
        });
        let mut w = Wire::new(cfg, rule).traced();
        w.run(1448 * 200, SimTime::from_ms(100));
        assert_eq!(w.s.stats.timeouts, 0, "{:?}", w.s.stats);
        assert_eq!(w.s.stats.retransmits, 20, "{:?}", w.s.stats);
        let trace = w.trace.unwrap();
        let first = trace.iter().position(|x| matches!(x.recovery, Recovery::Fast { .. })).unwrap();
        let events = trace[first..].iter().position(|x| x.recovery == Recovery::Open).unwrap();
        // sent before the ACK that ends recovery (that one resets cwnd to ssthresh)
        let sent = trace[first + events - 1].stats.segments_sent - trace[first].stats.segments_sent;
        (events, sent)
    };
    let (ssrb, crb) = (run(PrrBound::Ssrb), run(PrrBound::Crb));
    assert_eq!(crb.0, ssrb.0, "the same ACKs arrive in recovery");
    assert!(crb.1 < ssrb.1, "(ACKs, segments sent) in recovery: CRB {crb:?} vs SSRB {ssrb:?}");
}

/// NewReno without SACK, ten segments of forty sent: the sender and its
/// first ten segments, and a duplicate ACK of byte 0.
fn newreno_ten_out(cfg: TcpConfig, written: u64) -> (TcpSender, Vec<TcpHeader>, TcpHeader) {
    let mut s = TcpSender::new_established(TcpConfig { sack: false, ..cfg });
    let mut out = vec![];
    s.write(1448 * written);
    s.poll(SimTime::ZERO, &mut out);
    let dup = TcpHeader { ack: 0, flags: crate::header::ACK, wnd: 1 << 30, ..Default::default() };
    (s, out, dup)
}

#[test]
fn recovery_exit_option_1_leaves_fast_recovery_without_a_burst() {
    // three duplicate ACKs (ssthresh 5), then one ACK of all ten: nothing is
    // left in flight, so RFC 6582 option 2 (cwnd = ssthresh) sends five
    // segments back to back and option 1 (FlightSize + MSS) two
    let run = |recovery_exit: RecoveryExit| {
        let (mut s, mut out, dup) = newreno_ten_out(TcpConfig { recovery_exit, ..TcpConfig::default() }, 40);
        assert_eq!(out.len(), 10);
        for i in 0..3 {
            s.on_segment(&dup, SimTime::from_us(20 + i), &mut out);
        }
        assert_eq!(s.ssthresh() / 1448, 5);
        let before = out.len();
        let full = TcpHeader { ack: 10 * 1448, ..dup };
        s.on_segment(&full, SimTime::from_us(30), &mut out);
        assert_eq!(s.recovery(), Recovery::Open);
        (s.cwnd() / 1448, out.len() - before)
    };
    assert_eq!(run(RecoveryExit::Ssthresh), (5, 5));
    assert_eq!(run(RecoveryExit::FlightSize), (2, 2));
}

#[test]
fn fr_ssthresh_halves_the_window_or_what_is_in_flight() {
    // only six segments to send under a ten-segment window: FlightSize / 2 =
    // 3 (RFC 5681), cwnd / 2 = 5 (RFC 2001, htsim)
    let run = |fr_ssthresh: FrSsthresh| {
        let (mut s, mut out, dup) = newreno_ten_out(TcpConfig { fr_ssthresh, ..TcpConfig::default() }, 6);
        assert_eq!(out.len(), 6);
        for i in 0..3 {
            s.on_segment(&dup, SimTime::from_us(20 + i), &mut out);
        }
        assert!(matches!(s.recovery(), Recovery::Fast { .. }));
        s.ssthresh() / 1448
    };
    assert_eq!(run(FrSsthresh::FlightSize), 3);
    assert_eq!(run(FrSsthresh::Cwnd), 5);
}

#[test]
fn recover_at_snd_nxt_lets_a_repeated_timeout_lower_the_fast_retransmit_guard() {
    // two timeouts in a row (the second resends segment 0 again), then the
    // ACK of segment 0 and three duplicate ACKs: RFC 6582 §4.1 keeps
    // `recover` at the ten segments sent, so no fast retransmit; htsim's
    // snd.nxt had fallen back to one segment, so the ACK ends the timeout's
    // recovery and the duplicates start a fast retransmit
    let run = |recover: Recover| {
        let (mut s, mut out, dup) = newreno_ten_out(TcpConfig { recover, ..TcpConfig::default() }, 40);
        for _ in 0..2 {
            let t = s.next_wakeup().unwrap();
            s.on_timer(t, &mut out);
        }
        let now = s.next_wakeup().unwrap() - SimTime::from_us(1);
        let one = TcpHeader { ack: 1448, ..dup };
        s.on_segment(&one, now, &mut out);
        for _ in 0..3 {
            s.on_segment(&one, now, &mut out);
        }
        (s.stats.timeouts, s.stats.fast_recoveries)
    };
    assert_eq!(run(Recover::SndMax), (2, 0));
    assert_eq!(run(Recover::SndNxt), (2, 1));
}

#[test]
fn a_timer_tick_puts_expiries_on_its_grid() {
    // htsim checks timers every 10 ms: a 250 ms timer armed at 1.234 ms
    // expires at 260 ms, not 251.234
    let run = |rto_tick: SimTime| {
        let cfg = TcpConfig { rto_tick, min_rto: SimTime::from_ms(250), initial_rto: SimTime::from_ms(250), ..TcpConfig::default() };
        let mut s = TcpSender::new_established(cfg);
        let mut out = vec![];
        s.write(1448 * 10);
        s.poll(SimTime::from_us(1234), &mut out);
        let t = s.next_wakeup().unwrap();
        s.on_timer(t, &mut out);
        assert_eq!(s.stats.timeouts, 1);
        t
    };
    assert_eq!(run(SimTime::ZERO), SimTime::from_us(251_234));
    assert_eq!(run(SimTime::from_ms(10)), SimTime::from_ms(260));
}
