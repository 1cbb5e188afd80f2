//! Lossless Ethernet: Priority Flow Control (IEEE 802.1Qbb) over a
//! shared-buffer switch, as the HPCC simulator models it (`SwitchMmu`,
//! `SwitchNode::SendToDev/SwitchNotifyDequeue`, `QbbNetDevice`).
//!
//! Each port has two egress classes: a strict-priority *control* queue
//! (PFC frames, and ACKs where they ride high priority) that is never
//! paused or charged, and a lossless *data* queue that a PAUSE from the
//! far end stops. A packet is dequeued — leaves its queue and starts on
//! the wire — only when the port is free, so what is queued here is what
//! has not started; the wire itself is the port's [`crate::PortQueue`].
//!
//! At a switch, a data packet arriving over link i is charged to i's
//! ingress account ([`Mmu::admit`]): first the per-port reserve, then the
//! switch's shared buffer while i's shared bytes stay under the dynamic
//! threshold `(B − headroom_total − reserve_total − shared_used) >> shift_i`,
//! then i's headroom. The ingress sends PAUSE upstream when it uses
//! headroom or its shared bytes reach the threshold, and RESUME when the
//! headroom is empty and the shared bytes are `resume_offset` below the
//! threshold, checked as each of its packets is dequeued ([`Mmu::release`]).
//! A packet finding both headroom and threshold exhausted is dropped (a
//! lossless fabric sized right never does; the count is reported).
//! Headroom per port is `headroom_rtts` one-way bandwidth-delay products;
//! the shift is 3 on ports at host rate, one less per doubling above it.
//!
//! ECN is decided at dequeue on the data bytes still queued behind the
//! packet (RED: none below Kmin, probability rising to Pmax at Kmax, all
//! above), as DCQCN's switches do.

use crate::ids::PortId;
use lbsim_engine::{BitsPerSec, Rng, SimTime};
use std::collections::VecDeque;

/// The lossless fabric's settings (bytes, engine units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PfcConfig {
    /// PFC on; off, the data queues are lossy (a packet that finds the
    /// buffer full is dropped) and nothing is paused.
    pub enabled: bool,
    /// Shared buffer per switch.
    pub buffer_bytes: u64,
    /// Bytes per ingress port charged before the shared buffer.
    pub reserve_bytes: u64,
    /// RESUME when shared bytes are this far below the threshold.
    pub resume_offset_bytes: u64,
    /// Headroom per port, in one-way bandwidth-delay products.
    pub headroom_rtts: u64,
    /// The dynamic threshold's shift on ports at host rate.
    pub shift: u8,
    /// RED marking thresholds for a 100 Gb/s port, scaled with the port's
    /// rate, and the probability at Kmax.
    pub kmin_bytes_100g: u64,
    pub kmax_bytes_100g: u64,
    pub pmax: f64,
}

impl Default for PfcConfig {
    /// The HPCC simulator's `run.py --cc dcqcn --bw 100`: a 32 MiB buffer,
    /// 4 KB reserve, 3 KB resume offset, 3 one-way BDPs of headroom, shift
    /// 3, Kmin 400 KB, Kmax 1,600 KB, Pmax 0.2 at 100 Gb/s.
    fn default() -> Self {
        PfcConfig {
            enabled: true,
            buffer_bytes: 32 << 20,
            reserve_bytes: 4096,
            resume_offset_bytes: 3072,
            headroom_rtts: 3,
            shift: 3,
            kmin_bytes_100g: 400_000,
            kmax_bytes_100g: 1_600_000,
            pmax: 0.2,
        }
    }
}

/// A data packet waiting in a port's lossless queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waiting<P> {
    pub pkt: P,
    /// The port it arrived over at this node (its ingress account), or
    /// `None` at a host.
    pub in_port: Option<PortId>,
    pub size: u32,
}

/// One port's lossless state: its egress queues and pause state, and the
/// ingress account of the packets that arrive over its link at its node.
#[derive(Clone, Debug)]
pub struct LosslessPort<P> {
    control: VecDeque<P>,
    data: VecDeque<Waiting<P>>,
    data_bytes: u64,
    /// The far end paused this port's data class.
    pub paused: bool,
    paused_since: SimTime,
    /// Counters (docs/metrics.md, ports table).
    pub paused_time: SimTime,
    pub pauses_received: u64,
    pub pauses_sent: u64,
    pub resumes_sent: u64,
    pub marks: u64,
    /// Data packets this port's ingress refused (0 on a lossless fabric).
    pub drops: u64,
    /// A dequeue event is pending for this port.
    pub kick_pending: bool,
    // ingress account
    ing_bytes: u64,
    hdrm_bytes: u64,
    /// This ingress sent PAUSE upstream and not yet RESUME.
    pub ing_paused: bool,
    headroom: u64,
    shift: u8,
    kmin: u64,
    kmax: u64,
}

/// What a port sends next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeued<P> {
    Control(P),
    Data(Waiting<P>),
}

/// Every port's lossless state and each switch's shared-buffer use.
#[derive(Clone, Debug)]
pub struct Mmu<P> {
    pub cfg: PfcConfig,
    pub ports: Vec<LosslessPort<P>>,
    /// Per node: B − headroom total − reserve total (what the shared
    /// buffer may hold), and the shared bytes in use.
    free_base: Vec<u64>,
    shared_used: Vec<u64>,
    pmax: f64,
}

impl<P: Copy> Mmu<P> {
    /// `ports[i]` = (node index, rate, one-way delay) of port i; `host_rate`
    /// is the hosts' NIC rate (the shift's reference); `nodes` the node
    /// count; `switch_ports[n]` the ports of switch n (empty for hosts).
    pub fn new(cfg: PfcConfig, ports: &[(usize, BitsPerSec, SimTime)], switch_ports: &[Vec<PortId>], host_rate: BitsPerSec) -> Mmu<P> {
        let lp = ports
            .iter()
            .map(|&(_, rate, delay)| {
                let bdp = (rate.0 as u128 * delay.0 as u128 / 8 / 1_000_000_000_000) as u64;
                let mut shift = cfg.shift;
                let mut r = rate.0;
                while r > host_rate.0 && shift > 0 {
                    shift -= 1;
                    r /= 2;
                }
                let scale = |b: u64| (b as u128 * rate.0 as u128 / 100_000_000_000) as u64;
                LosslessPort {
                    control: VecDeque::new(),
                    data: VecDeque::new(),
                    data_bytes: 0,
                    paused: false,
                    paused_since: SimTime::ZERO,
                    paused_time: SimTime::ZERO,
                    pauses_received: 0,
                    pauses_sent: 0,
                    resumes_sent: 0,
                    marks: 0,
                    drops: 0,
                    kick_pending: false,
                    ing_bytes: 0,
                    hdrm_bytes: 0,
                    ing_paused: false,
                    headroom: bdp * cfg.headroom_rtts,
                    shift,
                    kmin: scale(cfg.kmin_bytes_100g),
                    kmax: scale(cfg.kmax_bytes_100g),
                }
            })
            .collect::<Vec<_>>();
        let free_base = switch_ports
            .iter()
            .map(|ps| {
                let h: u64 = ps.iter().map(|p| lp[p.idx()].headroom).sum();
                cfg.buffer_bytes.saturating_sub(h + cfg.reserve_bytes * ps.len() as u64)
            })
            .collect();
        Mmu { cfg, ports: lp, free_base, shared_used: vec![0; switch_ports.len()], pmax: cfg.pmax }
    }

    /// The dynamic threshold of ingress `i` at switch `node`.
    pub fn threshold(&self, node: usize, i: PortId) -> u64 {
        self.free_base[node].saturating_sub(self.shared_used[node]) >> self.ports[i.idx()].shift
    }

    fn shared_of(&self, i: PortId) -> u64 {
        self.ports[i.idx()].ing_bytes.saturating_sub(self.cfg.reserve_bytes)
    }

    /// A data packet of `size` bytes arrives at switch `node` over ingress
    /// `i`: `None` if it must be dropped, else whether `i` must now send
    /// PAUSE upstream.
    pub fn admit(&mut self, node: usize, i: PortId, size: u64) -> Option<bool> {
        let thr = self.threshold(node, i);
        let shared = self.shared_of(i);
        let p = &self.ports[i.idx()];
        if !self.cfg.enabled {
            // lossy: the shared buffer with the dynamic threshold, no headroom
            if size + shared > thr && p.ing_bytes + size > self.cfg.reserve_bytes {
                self.ports[i.idx()].drops += 1;
                return None;
            }
        } else if size + p.hdrm_bytes > p.headroom && size + shared > thr {
            self.ports[i.idx()].drops += 1;
            return None;
        }
        let n = p.ing_bytes + size;
        if n <= self.cfg.reserve_bytes {
            self.ports[i.idx()].ing_bytes = n;
        } else if self.cfg.enabled && n - self.cfg.reserve_bytes > thr {
            self.ports[i.idx()].hdrm_bytes += size;
        } else {
            self.ports[i.idx()].ing_bytes = n;
            self.shared_used[node] += size.min(n - self.cfg.reserve_bytes);
        }
        let p = &self.ports[i.idx()];
        let pause = self.cfg.enabled && !p.ing_paused && (p.hdrm_bytes > 0 || self.shared_of(i) >= thr);
        if pause {
            let p = &mut self.ports[i.idx()];
            p.ing_paused = true;
            p.pauses_sent += 1;
        }
        Some(pause)
    }

    /// A data packet charged to ingress `i` of switch `node` is dequeued:
    /// its bytes are released; true if `i` must now send RESUME.
    pub fn release(&mut self, node: usize, i: PortId, size: u64) -> bool {
        let reserve = self.cfg.reserve_bytes;
        let p = &mut self.ports[i.idx()];
        let from_h = p.hdrm_bytes.min(size);
        let from_s = (size - from_h).min(p.ing_bytes.saturating_sub(reserve));
        p.hdrm_bytes -= from_h;
        p.ing_bytes -= size - from_h;
        self.shared_used[node] -= from_s;
        let p = &self.ports[i.idx()];
        if !p.ing_paused || p.hdrm_bytes > 0 {
            return false;
        }
        let shared = self.shared_of(i);
        let resume = shared == 0 || shared + self.cfg.resume_offset_bytes <= self.threshold(node, i);
        if resume {
            let p = &mut self.ports[i.idx()];
            p.ing_paused = false;
            p.resumes_sent += 1;
        }
        resume
    }

    /// Queues a control frame (strict priority) at `port`.
    pub fn push_control(&mut self, port: PortId, pkt: P) {
        self.ports[port.idx()].control.push_back(pkt);
    }

    /// Queues a data packet at `port`.
    pub fn push_data(&mut self, port: PortId, w: Waiting<P>) {
        let p = &mut self.ports[port.idx()];
        p.data_bytes += w.size as u64;
        p.data.push_back(w);
    }

    /// Bytes in `port`'s data queue (not yet started).
    pub fn data_bytes(&self, port: PortId) -> u64 {
        self.ports[port.idx()].data_bytes
    }

    /// Packets waiting at `port` (both classes).
    pub fn waiting(&self, port: PortId) -> usize {
        let p = &self.ports[port.idx()];
        p.control.len() + p.data.len()
    }

    /// Whether `port` has something it may send now.
    pub fn ready(&self, port: PortId) -> bool {
        let p = &self.ports[port.idx()];
        !p.control.is_empty() || (!p.paused && !p.data.is_empty())
    }

    /// Takes what `port` sends next: a control frame, else the head data
    /// packet unless the class is paused. For data, `ecn` says whether it
    /// leaves CE-marked (RED on the data bytes behind it; the caller
    /// applies it to ECN-capable packets and counts it).
    pub fn dequeue(&mut self, port: PortId, rng: &mut Rng) -> Option<(Dequeued<P>, bool)> {
        let pmax = self.pmax;
        let p = &mut self.ports[port.idx()];
        if let Some(c) = p.control.pop_front() {
            return Some((Dequeued::Control(c), false));
        }
        if p.paused {
            return None;
        }
        let w = p.data.pop_front()?;
        p.data_bytes -= w.size as u64;
        let q = p.data_bytes;
        let mark = if q > p.kmax {
            true
        } else if q > p.kmin && p.kmax > p.kmin {
            rng.f64() < pmax * (q - p.kmin) as f64 / (p.kmax - p.kmin) as f64
        } else {
            false
        };
        Some((Dequeued::Data(w), mark))
    }

    /// A PAUSE (`pause`) or RESUME reached `port`'s node from the far end:
    /// `port`'s data class stops or may go on. True if the state changed.
    pub fn set_paused(&mut self, port: PortId, pause: bool, now: SimTime) -> bool {
        let p = &mut self.ports[port.idx()];
        if pause {
            p.pauses_received += 1;
        }
        if p.paused == pause {
            return false;
        }
        p.paused = pause;
        if pause {
            p.paused_since = now;
        } else {
            p.paused_time += now - p.paused_since;
        }
        true
    }

    /// Time `port` has spent paused up to `now`.
    pub fn paused_time(&self, port: PortId, now: SimTime) -> SimTime {
        let p = &self.ports[port.idx()];
        p.paused_time + if p.paused { now - p.paused_since } else { SimTime::ZERO }
    }

    /// Shared bytes in use at switch `node`.
    pub fn shared_used(&self, node: usize) -> u64 {
        self.shared_used[node]
    }

    /// The headroom of `port`'s ingress.
    pub fn headroom(&self, port: PortId) -> u64 {
        self.ports[port.idx()].headroom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One switch (node 0) with four 100 Gb/s ports of 1 µs and the host
    /// rate 100 Gb/s: the worked example of the reference model.
    fn mmu() -> Mmu<u32> {
        let ports: Vec<_> = (0..4).map(|_| (0usize, BitsPerSec::gbps(100), SimTime::from_us(1))).collect();
        Mmu::new(PfcConfig::default(), &ports, &[(0..4).map(PortId).collect()], BitsPerSec::gbps(100))
    }

    #[test]
    fn headroom_threshold_and_shift_follow_the_reference() {
        let m = mmu();
        // 3 x 100 Gb/s x 1 us / 8 = 37,500 B; free = 32 MiB - 4 x (37,500 + 4,096)
        assert_eq!(m.headroom(PortId(0)), 37_500);
        assert_eq!(m.threshold(0, PortId(0)), (33_554_432 - 4 * (37_500 + 4_096)) >> 3);
        // a 400G port beside 100G hosts: shift 1, four BDPs of headroom
        let ports = vec![(0usize, BitsPerSec::gbps(400), SimTime::from_us(1))];
        let m: Mmu<u32> = Mmu::new(PfcConfig::default(), &ports, &[vec![PortId(0)]], BitsPerSec::gbps(100));
        assert_eq!(m.ports[0].shift, 1);
        assert_eq!(m.headroom(PortId(0)), 150_000);
        assert_eq!((m.ports[0].kmin, m.ports[0].kmax), (1_600_000, 6_400_000));
    }

    #[test]
    fn one_congested_ingress_pauses_near_its_share_and_resumes_below_it() {
        let mut m = mmu();
        let i = PortId(0);
        let mut sent = 0u64;
        let paused_at = loop {
            let pause = m.admit(0, i, 1048).expect("no drop before pausing");
            sent += 1048;
            if pause {
                break sent;
            }
        };
        // shared bytes reach thr = (F - S) >> 3 with S = shared: S ≈ F/9
        let f = 33_554_432u64 - 4 * (37_500 + 4_096);
        let share = f / 9;
        assert!(paused_at >= share && paused_at <= share + 4_096 + 2 * 1048, "{paused_at} vs {share}");
        assert!(m.ports[0].ing_paused && m.ports[0].pauses_sent == 1);
        // what was in flight lands in the headroom, never dropped
        for k in 0..34 {
            assert_eq!(m.admit(0, i, 1048), Some(false), "{k} {} {}", m.ports[0].hdrm_bytes, m.shared_of(i));
        }
        assert!(m.ports[0].hdrm_bytes > 0);
        // draining: no RESUME while headroom holds bytes; RESUME once the
        // shared bytes are 3 KB under the threshold
        let mut resumed = None;
        for k in 0..200 {
            if m.release(0, i, 1048) {
                resumed = Some(k);
                break;
            }
        }
        let k = resumed.expect("resumes");
        assert!(k >= 34, "{k}");
        assert_eq!(m.ports[0].hdrm_bytes, 0);
        assert!(m.shared_of(i) + 3072 <= m.threshold(0, i));
        assert_eq!(m.ports[0].drops, 0);
    }

    #[test]
    fn exhausted_headroom_drops_and_lossy_mode_drops_at_the_threshold() {
        let mut m = mmu();
        let mut drops = 0;
        for _ in 0..10_000 {
            if m.admit(0, PortId(1), 1048).is_none() {
                drops += 1;
            }
        }
        assert!(drops > 0 && m.ports[1].drops == drops);
        let mut cfg = PfcConfig { enabled: false, ..PfcConfig::default() };
        cfg.buffer_bytes = 1 << 20;
        let ports: Vec<_> = (0..2).map(|_| (0usize, BitsPerSec::gbps(100), SimTime::from_us(1))).collect();
        let mut m: Mmu<u32> = Mmu::new(cfg, &ports, &[vec![PortId(0), PortId(1)]], BitsPerSec::gbps(100));
        let admitted = (0..2_000).filter(|_| m.admit(0, PortId(0), 1000) == Some(false)).count();
        assert!(admitted < 2_000 && m.ports[0].pauses_sent == 0, "{admitted}");
    }

    #[test]
    fn control_first_paused_data_waits_and_red_marks_above_kmin() {
        let mut m = mmu();
        let mut rng = Rng::from_seed(1);
        let p = PortId(2);
        for k in 0..2_000u32 {
            m.push_data(p, Waiting { pkt: k, in_port: None, size: 1000 });
        }
        m.push_control(p, 9_999);
        assert_eq!(m.dequeue(p, &mut rng), Some((Dequeued::Control(9_999), false)));
        m.set_paused(p, true, SimTime::from_us(1));
        assert!(!m.ready(p) && m.dequeue(p, &mut rng).is_none());
        m.push_control(p, 7);
        assert!(m.ready(p), "control frames pass a pause");
        assert!(matches!(m.dequeue(p, &mut rng), Some((Dequeued::Control(7), _))));
        m.set_paused(p, false, SimTime::from_us(3));
        assert_eq!(m.paused_time(p, SimTime::from_us(9)), SimTime::from_us(2));
        // 2,000 KB queued: everything above Kmax (1,600 KB) marks, between
        // 400 and 1,600 KB about Pmax/2 on average, below none
        let marks: Vec<bool> = (0..2_000).map(|_| m.dequeue(p, &mut rng).unwrap().1).collect();
        assert!(marks[..399].iter().all(|&x| x));
        let mid = marks[400..1_600].iter().filter(|&&x| x).count() as f64 / 1_200.0;
        assert!((mid - 0.1).abs() < 0.03, "{mid}");
        assert!(marks[1_601..].iter().all(|&x| !x));
    }
}
