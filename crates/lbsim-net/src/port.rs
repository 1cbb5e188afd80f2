//! Egress ports: a drop-tail FIFO with optional ECN marking, feeding one
//! direction of a link.
//!
//! A work-conserving FIFO's schedule is fixed the moment a packet is
//! admitted: it starts when the previous packet has finished (or at once if
//! the port is idle) and takes `size / rate`. So admission computes the
//! packet's transmit-end time and its arrival at the far end (transmit end
//! plus propagation delay). The port keeps its packets, in order, until they
//! arrive, and the simulator keeps *one* pending event per port — the
//! arrival of its head packet (htsim's pattern) — so a packet costs one
//! event per hop and the event heap holds about one entry per busy port,
//! not one per queued packet. The queue length at any instant is the number
//! of admitted packets whose last bit has not yet left — what drop-tail and
//! ECN marking look at (instantaneous occupancy, DCTCP-style, not an
//! average).
//!
//! The queue discipline sits in [`PortQueue::offer`]: from what the
//! arriving packet finds (`Found`), drop-tail refuses a packet that would
//! exceed the buffer, and the marking rule (`EcnKind::marks`) decides CE.
//! Today's rule is DCTCP's instantaneous threshold (RFC 8257 §3.1: mark
//! when the packet finds more than K queued). Another rule (RED, a
//! sojourn-time threshold) is a variant of `EcnKind` and an arm of its
//! `marks`; its parameter takes the port's `ecn` word on line 1, and state
//! it needs beyond that goes on line 2, which has 40 bytes free (see
//! [`PortQueue`]'s layout). Marking at dequeue would decide in
//! `pop_arrival`'s caller instead.

use crate::ids::{NodeId, PktId, PortId};
use lbsim_engine::{BitsPerSec, Bytes, SimTime};
use std::cell::Cell;
use std::collections::VecDeque;

/// Buffer limit or ECN threshold of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threshold {
    Packets(u32),
    Bytes(u64),
}

#[derive(Clone, Copy, Debug, Default)]
pub struct PortStats {
    /// Packets and bytes admitted (they will leave on the wire).
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Packets refused by drop-tail.
    pub drops: u64,
    pub ecn_marks: u64,
    pub max_qlen_pkts: u32,
}

/// Result of offering a packet to a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    Dropped,
    /// Admitted; the last bit leaves at `tx_end` and reaches the far end at
    /// `arrive`; `mark` if ECN says CE (the caller applies it only to
    /// ECN-capable packets); `head` if it is now the port's only packet in
    /// flight, i.e. the caller must schedule the port's arrival event.
    Queued {
        tx_end: SimTime,
        arrive: SimTime,
        mark: bool,
        head: bool,
    },
}

#[derive(Clone, Debug)]
struct Entry {
    tx_end: SimTime,
    arrive: SimTime,
    /// Bytes admitted before this packet (cumulative).
    cum_before: u64,
    pkt: PktId,
}

/// An egress port. Its fields are laid out by use, one 64-byte cache line
/// each (large fabrics touch thousands of ports, so each line read is a
/// likely cache miss):
/// - line 0, everything the far end's arrival reads (admission reads it
///   too): the FIFO, its position, the generation, the far end, the `up`
///   and threshold-kind flags, and the queue's high-water mark;
/// - line 1, what admission adds: the queue-length cursor, the bytes
///   admitted, the transmit schedule (`busy_until`, `last_arrive`,
///   picoseconds per byte, propagation delay) and the two thresholds;
/// - line 2, touched on drops and marks, for rates that are not whole
///   Gb/s, and by schemes that read the rate (e.g. Clove, CONGA,
///   Expeditus): the rate and the drop and mark counters.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct PortQueue {
    /// Admitted packets until they *arrive* at the far end (so a failure
    /// can find the ones still on the wire).
    fifo: VecDeque<Entry>,
    /// Absolute index (since the port was created) of `fifo[0]`: packets
    /// ever popped, on arrival or lost to a failure.
    front_abs: u64,
    /// Incremented when the port fails, so the pending arrival event of the
    /// lost packets is recognised as stale.
    pub generation: u32,
    /// Where this port's packets land, copied from the topology so the
    /// per-hop path reads the port it just popped instead of three more
    /// cache lines (set once with [`PortQueue::with_ends`]).
    pub ends: PortEnds,
    /// The most packets ever queued (a statistic admission updates).
    max_qlen_pkts: u32,
    pub up: bool,
    /// Whether the limit or the ECN threshold counts bytes (then admission
    /// needs the queue's bytes, not just its packets).
    counts_bytes: bool,
    /// Whether `limit` counts bytes (else packets).
    limit_bytes: bool,
    /// Whether ECN marks, and whether `ecn` counts packets or bytes.
    ecn_kind: EcnKind,

    /// Absolute index of the first entry whose transmission had not ended
    /// at the latest time asked about. Time only moves forward, so this
    /// cursor only moves forward: queue length is amortised O(1).
    cursor: Cell<u64>,
    /// Bytes ever admitted (also the port's transmitted-bytes counter).
    admitted_bytes: u64,
    busy_until: SimTime,
    last_arrive: SimTime,
    /// Picoseconds per byte when the rate divides 8·10^12 b/s·ps (every
    /// whole-Gb/s rate): then a packet's transmit time is one multiply
    /// instead of a 128-bit division. 0 = use [`BitsPerSec::tx_time`].
    ps_per_byte: u64,
    pub delay: SimTime,
    /// Drop-tail limit, packets or bytes per `limit_bytes`.
    limit: u64,
    /// ECN marking threshold K, packets or bytes per `ecn_kind` (unused
    /// when that is `None`).
    ecn: u64,

    /// Line rate, fixed at construction (`ps_per_byte` is derived from it).
    pub rate: BitsPerSec,
    drops: u64,
    ecn_marks: u64,
}

// Line 0 ends where line 1 begins, line 1 within 128 bytes, and the record
// is three lines (see `PortQueue`); with `repr(C)` and `align(64)` each
// line is a cache line.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(offset_of!(PortQueue, cursor) == 64);
    assert!(offset_of!(PortQueue, ecn) + 8 <= 128 && offset_of!(PortQueue, rate) == 128);
    assert!(size_of::<PortQueue>() == 192);
};

/// What an arriving packet finds in the queue (the queue discipline's input).
#[derive(Clone, Copy, Debug)]
struct Found {
    /// Packets queued (waiting or transmitting) when the packet arrives.
    pkts: u32,
    /// Bytes queued, when the port counts bytes (0 otherwise).
    bytes: u64,
}

/// How a port marks ECN; the threshold is the port's `ecn` word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum EcnKind {
    None,
    /// More than K packets queued.
    Packets,
    /// More than K bytes queued.
    Bytes,
}

impl EcnKind {
    /// Whether a packet that finds `q` is marked CE (the caller applies it
    /// only to ECN-capable packets).
    #[inline(always)]
    fn marks(self, k: u64, q: Found) -> bool {
        match self {
            EcnKind::Packets => q.pkts as u64 > k,
            EcnKind::Bytes => q.bytes > k,
            EcnKind::None => false,
        }
    }
}

/// The two ends of a port's link, as the per-packet path needs them.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortEnds {
    /// The port facing this one at the far end.
    pub peer: PortId,
    /// The node the packets arrive at, and whether it is a host.
    pub peer_node: NodeId,
    pub peer_is_host: bool,
    /// Whether this port is a host's NIC.
    pub at_host: bool,
}

impl PortQueue {
    pub fn new(rate: BitsPerSec, delay: SimTime, limit: Threshold, ecn: Option<Threshold>) -> Self {
        const BIT_PS: u64 = 8_000_000_000_000;
        let (limit_bytes, limit) = match limit {
            Threshold::Packets(n) => (false, n as u64),
            Threshold::Bytes(b) => (true, b),
        };
        let (ecn_kind, ecn) = match ecn {
            None => (EcnKind::None, 0),
            Some(Threshold::Packets(k)) => (EcnKind::Packets, k as u64),
            Some(Threshold::Bytes(k)) => (EcnKind::Bytes, k),
        };
        PortQueue {
            fifo: VecDeque::new(),
            front_abs: 0,
            generation: 0,
            ends: PortEnds::default(),
            max_qlen_pkts: 0,
            up: true,
            counts_bytes: limit_bytes || ecn_kind == EcnKind::Bytes,
            limit_bytes,
            ecn_kind,
            cursor: Cell::new(0),
            admitted_bytes: 0,
            busy_until: SimTime::ZERO,
            last_arrive: SimTime::ZERO,
            ps_per_byte: if rate.0 > 0 && BIT_PS.is_multiple_of(rate.0) { BIT_PS / rate.0 } else { 0 },
            delay,
            limit,
            ecn,
            rate,
            drops: 0,
            ecn_marks: 0,
        }
    }

    pub fn with_ends(mut self, ends: PortEnds) -> Self {
        self.ends = ends;
        self
    }

    /// Index in `fifo` of the first packet still (waiting or) transmitting
    /// at `now`. `now` must not decrease between calls.
    #[inline]
    fn first_queued(&self, now: SimTime) -> usize {
        if self.busy_until <= now {
            // idle: every packet's last bit has left (no scan, whose exit
            // a branch predictor guesses badly)
            self.cursor.set(self.front_abs + self.fifo.len() as u64);
            return self.fifo.len();
        }
        let mut i = (self.cursor.get().max(self.front_abs) - self.front_abs) as usize;
        while i < self.fifo.len() && self.fifo[i].tx_end <= now {
            i += 1;
        }
        self.cursor.set(self.front_abs + i as u64);
        i
    }

    /// Packets in the buffer at `now` (waiting or being transmitted).
    #[inline]
    pub fn qlen_pkts(&self, now: SimTime) -> u32 {
        (self.fifo.len() - self.first_queued(now)) as u32
    }

    /// Bytes in the buffer at `now`.
    #[inline]
    pub fn qlen_bytes(&self, now: SimTime) -> u64 {
        let i = self.first_queued(now);
        match self.fifo.get(i) {
            Some(e) => self.admitted_bytes - e.cum_before,
            None => 0,
        }
    }

    /// Bytes whose last bit has left the port by `now` (for utilisation).
    pub fn transmitted_bytes(&self, now: SimTime) -> u64 {
        self.admitted_bytes - self.qlen_bytes(now)
    }

    /// The earliest time at which at most `target` packets remain queued
    /// (given what has been admitted so far).
    pub fn drain_time(&self, now: SimTime, target: u32) -> SimTime {
        let i = self.first_queued(now);
        let q = (self.fifo.len() - i) as u32;
        if q <= target {
            return now;
        }
        self.fifo[i + (q - target) as usize - 1].tx_end
    }

    /// Time to serialise `size` at this port's rate (exactly
    /// [`BitsPerSec::tx_time`]).
    #[inline]
    pub fn tx_time(&self, size: Bytes) -> SimTime {
        match size.0.checked_mul(self.ps_per_byte) {
            Some(t) if self.ps_per_byte != 0 => SimTime(t),
            _ => self.rate.tx_time(size),
        }
    }

    /// Time at which the port is idle again.
    pub fn busy_until(&self) -> SimTime {
        self.busy_until
    }

    /// Prefetches what admitting a packet reads: lines 0 and 1.
    #[inline]
    pub fn prefetch(&self) {
        let p = self as *const Self as *const u8;
        lbsim_engine::prefetch(p);
        lbsim_engine::prefetch(p.wrapping_add(64));
    }

    /// Prefetches what the far end's arrival reads: line 0.
    #[inline]
    pub fn prefetch_arrival(&self) {
        lbsim_engine::prefetch(self);
    }

    /// Prefetches the head entry of the FIFO (its arrival is next).
    #[inline]
    pub fn prefetch_head(&self) {
        if let Some(e) = self.fifo.front() {
            lbsim_engine::prefetch(e);
        }
    }

    /// Removes the head packet, which arrives at the far end at `now`, and
    /// returns it with the arrival time and packet of the next one (to
    /// schedule).
    #[inline]
    pub fn pop_arrival(&mut self, now: SimTime) -> Option<(PktId, Option<(SimTime, PktId)>)> {
        let e = self.fifo.front()?;
        if e.arrive > now {
            return None;
        }
        let pkt = e.pkt;
        self.fifo.pop_front();
        self.front_abs += 1;
        Some((pkt, self.fifo.front().map(|e| (e.arrive, e.pkt))))
    }

    /// Offers a packet of `size` bytes at `now`. `jitter` delays its arrival
    /// (never past a later packet's: order is kept).
    #[inline]
    pub fn offer(&mut self, now: SimTime, pkt: PktId, size: Bytes, jitter: SimTime) -> Admit {
        let qp = self.qlen_pkts(now);
        let qb = if self.counts_bytes { self.qlen_bytes(now) } else { 0 };
        // drop-tail
        let full = if self.limit_bytes { qb + size.0 > self.limit } else { qp as u64 >= self.limit };
        if full {
            self.drops += 1;
            return Admit::Dropped;
        }
        let mark = self.ecn_kind.marks(self.ecn, Found { pkts: qp, bytes: qb });
        let start = self.busy_until.max(now);
        let tx_end = start + self.tx_time(size);
        self.busy_until = tx_end;
        let arrive = (tx_end + self.delay + jitter).max(self.last_arrive);
        self.last_arrive = arrive;
        let head = self.fifo.is_empty();
        self.fifo.push_back(Entry { tx_end, arrive, cum_before: self.admitted_bytes, pkt });
        self.admitted_bytes += size.0;
        if qp + 1 > self.max_qlen_pkts {
            self.max_qlen_pkts = qp + 1;
        }
        Admit::Queued { tx_end, arrive, mark, head }
    }

    /// Takes the port down: returns the packets still queued or on the wire
    /// (they are lost) and resets the schedule.
    pub fn fail(&mut self, now: SimTime) -> Vec<PktId> {
        self.up = false;
        self.generation = self.generation.wrapping_add(1);
        self.front_abs += self.fifo.len() as u64;
        let lost = self.fifo.drain(..).map(|e| e.pkt).collect();
        self.busy_until = now;
        self.last_arrive = now;
        lost
    }

    pub fn restore(&mut self) {
        self.up = true;
    }

    pub fn ecn_threshold(&self) -> Option<Threshold> {
        match self.ecn_kind {
            EcnKind::None => None,
            EcnKind::Packets => Some(Threshold::Packets(self.ecn as u32)),
            EcnKind::Bytes => Some(Threshold::Bytes(self.ecn)),
        }
    }
    pub fn limit(&self) -> Threshold {
        if self.limit_bytes {
            Threshold::Bytes(self.limit)
        } else {
            Threshold::Packets(self.limit as u32)
        }
    }

    /// The port's counters so far. Every admitted packet counts as sent
    /// (also those a link failure later destroys): the FIFO's position plus
    /// what it holds, and every admitted byte.
    pub fn stats(&self) -> PortStats {
        PortStats {
            tx_pkts: self.front_abs + self.fifo.len() as u64,
            tx_bytes: self.admitted_bytes,
            drops: self.drops,
            ecn_marks: self.ecn_marks,
            max_qlen_pkts: self.max_qlen_pkts,
        }
    }

    /// Counts a packet this port marked CE.
    pub fn count_ecn_mark(&mut self) {
        self.ecn_marks += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(limit: u32, k: Option<u32>) -> PortQueue {
        PortQueue::new(BitsPerSec::gbps(10), SimTime::from_us(1), Threshold::Packets(limit), k.map(Threshold::Packets))
    }

    #[test]
    fn back_to_back_packets_serialise_in_order() {
        let mut p = port(10, None);
        let t0 = SimTime::ZERO;
        let a = p.offer(t0, PktId(0), Bytes(1500), SimTime::ZERO);
        let b = p.offer(t0, PktId(1), Bytes(1500), SimTime::ZERO);
        assert_eq!(a, Admit::Queued { tx_end: SimTime::from_ns(1200), arrive: SimTime::from_ns(2200), mark: false, head: true });
        assert_eq!(b, Admit::Queued { tx_end: SimTime::from_ns(2400), arrive: SimTime::from_ns(3400), mark: false, head: false });
        assert_eq!(p.qlen_pkts(t0), 2);
        assert_eq!(p.drain_time(t0, 1), SimTime::from_ns(1200));
        assert_eq!(p.drain_time(t0, 0), SimTime::from_ns(2400));
        assert_eq!(p.drain_time(t0, 2), t0);
        // (queries must not go back in time)
        assert_eq!(p.qlen_bytes(SimTime::from_ns(1200)), 1500);
        assert_eq!(p.qlen_pkts(SimTime::from_ns(2400)), 0);
        assert_eq!(p.transmitted_bytes(SimTime::from_ns(2400)), 3000);
        // arrivals come off the head in order
        assert_eq!(p.pop_arrival(SimTime::from_ns(2199)), None);
        assert_eq!(p.pop_arrival(SimTime::from_ns(2200)), Some((PktId(0), Some((SimTime::from_ns(3400), PktId(1))))));
        assert_eq!(p.pop_arrival(SimTime::from_ns(3400)), Some((PktId(1), None)));
        // an idle port starts a new packet at once
        let c = p.offer(SimTime::from_us(10), PktId(2), Bytes(1500), SimTime::ZERO);
        assert_eq!(c, Admit::Queued { tx_end: SimTime::from_ns(11_200), arrive: SimTime::from_ns(12_200), mark: false, head: true });
        // jitter delays arrival but never reorders
        let d = p.offer(SimTime::from_us(10), PktId(3), Bytes(1500), SimTime::from_us(5));
        let e = p.offer(SimTime::from_us(10), PktId(4), Bytes(1500), SimTime::ZERO);
        match (d, e) {
            (Admit::Queued { arrive: ad, .. }, Admit::Queued { arrive: ae, .. }) => {
                assert_eq!(ad, SimTime::from_ns(18_400));
                assert_eq!(ae, ad, "the next packet cannot overtake");
            }
            _ => panic!(),
        }
    }

    #[test]
    fn cached_tx_time_equals_the_exact_division() {
        for bps in [1_000_000_000u64, 10_000_000_000, 40_000_000_000, 100_000_000_000, 3, 7_000_000_001, 2_500_000_000] {
            let p = PortQueue::new(BitsPerSec(bps), SimTime::ZERO, Threshold::Packets(1), None);
            for b in [0u64, 1, 64, 1500, 9000, 65_536, u64::MAX / 1000] {
                assert_eq!(p.tx_time(Bytes(b)), BitsPerSec(bps).tx_time(Bytes(b)), "{bps} b/s, {b} B");
            }
        }
    }

    #[test]
    fn counters_match_a_naive_count_through_drops_arrivals_and_failures() {
        // tx_pkts and tx_bytes are derived (FIFO position + length, admitted
        // bytes): check them against counting each admission while the
        // queue fills to its limit, drains, and loses its packets to a link
        // failure now and then.
        let mut rng = lbsim_engine::Rng::from_seed(7);
        for (limit, ecn) in [(Threshold::Packets(5), Some(Threshold::Packets(2))), (Threshold::Bytes(6_000), Some(Threshold::Bytes(3_000)))] {
            let mut p = PortQueue::new(BitsPerSec::gbps(10), SimTime::from_us(1), limit, ecn);
            assert_eq!((p.limit(), p.ecn_threshold()), (limit, ecn));
            let (mut pkts, mut bytes, mut drops, mut marks, mut maxq, mut failures) = (0u64, 0u64, 0u64, 0u64, 0u32, 0);
            let mut now = SimTime::ZERO;
            for i in 0..4_000u32 {
                now += SimTime(rng.below(900_000));
                while p.pop_arrival(now).is_some() {}
                if rng.below(500) == 0 {
                    p.fail(now);
                    p.restore();
                    failures += 1;
                }
                let size = [64u64, 1500, 9000][rng.below(3) as usize];
                let q = p.qlen_pkts(now);
                match p.offer(now, PktId(i), Bytes(size), SimTime::ZERO) {
                    Admit::Dropped => drops += 1,
                    Admit::Queued { mark, .. } => {
                        (pkts, bytes, maxq) = (pkts + 1, bytes + size, maxq.max(q + 1));
                        if mark {
                            p.count_ecn_mark();
                            marks += 1;
                        }
                    }
                }
                let st = p.stats();
                assert_eq!((st.tx_pkts, st.tx_bytes, st.drops, st.ecn_marks, st.max_qlen_pkts), (pkts, bytes, drops, marks, maxq), "{limit:?}, step {i}");
            }
            assert!(drops > 100 && marks > 100 && failures > 2 && maxq >= 4, "{drops} {marks} {failures} {maxq}");
        }
    }

    #[test]
    fn drop_tail_at_the_limit() {
        let mut p = port(3, None);
        for i in 0..3 {
            assert!(matches!(p.offer(SimTime::ZERO, PktId(i), Bytes(1500), SimTime::ZERO), Admit::Queued { .. }));
        }
        assert_eq!(p.offer(SimTime::ZERO, PktId(9), Bytes(1500), SimTime::ZERO), Admit::Dropped);
        assert_eq!(p.stats().drops, 1);
        // once the first has left there is room again
        assert!(matches!(p.offer(SimTime::from_ns(1200), PktId(10), Bytes(1500), SimTime::ZERO), Admit::Queued { .. }));
    }

    #[test]
    fn ecn_marks_on_instantaneous_occupancy_above_k() {
        let mut p = port(100, Some(2));
        let marks: Vec<bool> = (0..5)
            .map(|i| match p.offer(SimTime::ZERO, PktId(i), Bytes(1500), SimTime::ZERO) {
                Admit::Queued { mark, .. } => mark,
                Admit::Dropped => panic!(),
            })
            .collect();
        // arrivals find 0,1,2,3,4 packets queued: > 2 marks the last two
        assert_eq!(marks, vec![false, false, false, true, true]);
        // after the queue drains, no mark
        let later = SimTime::from_us(100);
        assert!(matches!(p.offer(later, PktId(7), Bytes(1500), SimTime::ZERO), Admit::Queued { mark: false, .. }));
    }

    #[test]
    fn byte_limit() {
        let mut p = PortQueue::new(BitsPerSec::gbps(10), SimTime::ZERO, Threshold::Bytes(3000), None);
        assert!(matches!(p.offer(SimTime::ZERO, PktId(0), Bytes(1500), SimTime::ZERO), Admit::Queued { .. }));
        assert!(matches!(p.offer(SimTime::ZERO, PktId(1), Bytes(1500), SimTime::ZERO), Admit::Queued { .. }));
        assert_eq!(p.offer(SimTime::ZERO, PktId(2), Bytes(64), SimTime::ZERO), Admit::Dropped);
    }

    #[test]
    fn mixed_packet_and_byte_thresholds() {
        let offer = |p: &mut PortQueue, i: u32, size: u64| match p.offer(SimTime::ZERO, PktId(i), Bytes(size), SimTime::ZERO) {
            Admit::Queued { mark, .. } => Some(mark),
            Admit::Dropped => None,
        };
        // packet limit, byte ECN threshold: arrivals find 0, 1500, 3000,
        // 4500, 6000 bytes queued; > 3000 marks (then a small one, at 7500)
        let mut p = PortQueue::new(BitsPerSec::gbps(10), SimTime::ZERO, Threshold::Packets(6), Some(Threshold::Bytes(3000)));
        let marks: Vec<_> = (0..5).map(|i| offer(&mut p, i, 1500)).collect();
        assert_eq!(marks, [Some(false), Some(false), Some(false), Some(true), Some(true)]);
        assert_eq!(offer(&mut p, 5, 64), Some(true));
        assert_eq!(offer(&mut p, 6, 64), None, "the seventh packet exceeds the 6-packet limit");
        // byte limit, packet ECN threshold: 1500 + 1500 fit in 4000 bytes, a
        // third 1500 does not, a 64-byte one does and finds 2 > 1 packets
        let mut p = PortQueue::new(BitsPerSec::gbps(10), SimTime::ZERO, Threshold::Bytes(4000), Some(Threshold::Packets(1)));
        assert_eq!(
            [offer(&mut p, 0, 1500), offer(&mut p, 1, 1500), offer(&mut p, 2, 1500), offer(&mut p, 3, 64)],
            [Some(false), Some(false), None, Some(true)]
        );
        assert_eq!((p.limit(), p.ecn_threshold()), (Threshold::Bytes(4000), Some(Threshold::Packets(1))));
    }

    #[test]
    fn failure_returns_queued_and_in_flight_packets() {
        let mut p = port(10, None);
        p.offer(SimTime::ZERO, PktId(0), Bytes(1500), SimTime::ZERO); // arrives at 2.2 us
        p.offer(SimTime::ZERO, PktId(1), Bytes(1500), SimTime::ZERO); // arrives at 3.4 us
        assert_eq!(p.pop_arrival(SimTime::from_ns(2200)).unwrap().0, PktId(0));
        let lost = p.fail(SimTime::from_ns(2500));
        assert_eq!(lost, vec![PktId(1)]);
        assert!(!p.up);
    }
}
