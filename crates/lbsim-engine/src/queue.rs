//! The event queue: a binary heap ordered by `(time, insertion sequence)`.
//!
//! Two events scheduled for the same picosecond pop in the order they were
//! scheduled, so a run is a pure function of its inputs (NeXosim, simcore).
//! Events are small `Copy` values chosen by the model (`E`), dispatched by a
//! `match` in the model's loop; the queue never boxes them.
//!
//! Cancellation is the model's business: it stores a generation number in the
//! event and drops stale ones when they pop (htsim's pattern), which keeps
//! this structure a plain heap.
//!
//! Two heaps share one sequence counter: `schedule` for the dense stream of
//! near-future events (packet arrivals) and `schedule_later` for sparse,
//! mostly far-future ones (timers). Popping takes the smaller (time, seq) of
//! the two heads, so the order is exactly that of a single heap; the near
//! heap just stays small and cache-resident however many timers are pending.

use crate::units::SimTime;
use std::cmp::Ordering;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

/// A heap entry: `key` is `time << 64 | seq`, so one 128-bit comparison
/// orders by time, then by insertion.
struct Entry<E> {
    key: u128,
    ev: E,
}

impl<E> Entry<E> {
    #[inline(always)]
    fn new(time: SimTime, seq: u64, ev: E) -> Self {
        Entry { key: (time.0 as u128) << 64 | seq as u128, ev }
    }
    #[inline(always)]
    fn time(&self) -> SimTime {
        SimTime((self.key >> 64) as u64)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    #[inline(always)]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// A deterministic future-event list.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    later: BinaryHeap<Entry<E>>,
    seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), later: BinaryHeap::with_capacity(1024), seq: 0, now: SimTime::ZERO, popped: 0 }
    }

    /// The time of the event most recently popped (the simulation clock).
    #[inline(always)]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `ev` at `time`, which must not be in the past.
    #[inline(always)]
    pub fn schedule(&mut self, time: SimTime, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        self.heap.push(Entry::new(time, self.seq, ev));
        self.seq += 1;
    }

    /// Schedules a sparse / far-future event (a timer). Same ordering
    /// guarantees as [`EventQueue::schedule`].
    #[inline(always)]
    pub fn schedule_later(&mut self, time: SimTime, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past: {time} < {}", self.now);
        self.later.push(Entry::new(time, self.seq, ev));
        self.seq += 1;
    }

    #[inline(always)]
    fn later_first(&self) -> bool {
        match (self.heap.peek(), self.later.peek()) {
            (Some(a), Some(b)) => b.key < a.key,
            (None, Some(_)) => true,
            _ => false,
        }
    }

    /// Pops the earliest event and advances the clock to its time.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let e = if self.later_first() { self.later.pop()? } else { self.heap.pop()? };
        self.now = e.time();
        self.popped += 1;
        Some((e.time(), e.ev))
    }

    /// Pops the earliest event like [`EventQueue::pop`]; if `next` returns
    /// a successor for it, that is scheduled at once, in the popped event's
    /// place: one sift of the heap instead of a pop and a push, with exactly
    /// the order of `pop` followed by `schedule` (a port's next arrival,
    /// known when its head packet arrives, is the common case).
    #[inline(always)]
    pub fn pop_with(&mut self, next: impl FnOnce(SimTime, &E) -> Option<(SimTime, E)>) -> Option<(SimTime, E)>
    where
        E: Copy,
    {
        if self.later_first() {
            let (t, ev) = self.pop()?;
            if let Some((t2, e2)) = next(t, &ev) {
                self.schedule(t2, e2);
            }
            return Some((t, ev));
        }
        let mut top = self.heap.peek_mut()?;
        let (t, ev) = (top.time(), top.ev);
        self.now = t;
        self.popped += 1;
        match next(t, &ev) {
            Some((t2, e2)) => {
                debug_assert!(t2 >= t, "event scheduled in the past: {t2} < {t}");
                *top = Entry::new(t2, self.seq, e2);
                self.seq += 1;
            }
            None => {
                PeekMut::pop(top);
            }
        }
        Some((t, ev))
    }

    /// Entry `i` of the near-event heap in its array order: 0 is the next
    /// near event to pop, 1 and 2 (its children) hold the one after it.
    /// For prefetching their state only: std documents `as_slice`'s order
    /// as arbitrary, so this relies on its present implicit-tree layout
    /// (the test below checks entry 0); a change would cost speed, never
    /// results.
    #[inline(always)]
    pub fn near_at(&self, i: usize) -> Option<&E> {
        self.heap.as_slice().get(i).map(|e| &e.ev)
    }

    /// Time of the next event without removing it.
    pub fn peek_time(&self) -> Option<SimTime> {
        if self.later_first() {
            self.later.peek().map(|e| e.time())
        } else {
            self.heap.peek().map(|e| e.time())
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.later.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.later.is_empty()
    }
    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(30), 'c');
        q.schedule(SimTime(10), 'a');
        q.schedule(SimTime(30), 'd');
        q.schedule(SimTime(10), 'b');
        q.schedule(SimTime(20), 'x');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['a', 'b', 'x', 'c', 'd']);
        assert_eq!(q.now(), SimTime(30));
        assert_eq!(q.events_processed(), 5);
    }

    #[test]
    fn near_at_zero_is_the_next_near_event() {
        let mut q = EventQueue::new();
        let mut rng = crate::Rng::from_seed(12345);
        for i in 0..500u64 {
            q.schedule(SimTime(rng.below(1 << 24)), i);
        }
        while let Some(&next) = q.near_at(0) {
            assert_eq!(q.pop().map(|(_, e)| e), Some(next));
        }
        assert!(q.is_empty());
    }

    #[test]
    fn the_two_heaps_pop_in_one_global_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime(10), 1);
        q.schedule_later(SimTime(10), 2);
        q.schedule(SimTime(10), 3);
        q.schedule_later(SimTime(5), 0);
        q.schedule(SimTime(20), 5);
        q.schedule_later(SimTime(15), 4);
        let order: Vec<i32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5]);
    }

    /// A small seeded generator for the randomised tests.
    fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn pops_in_the_order_of_a_reference_sorted_map() {
        // a random schedule whose delays span 0 ps to 5 ms (same-time
        // events, both heaps interleaved), through both schedule kinds and
        // pop_with, against a BTreeMap on (time, seq)
        let mut rnd = xorshift(0x2545f4914f6cdd1d);
        let span = [0u64, 3, 1_500, 40_000, 1_000_000, 60_000_000, 70_000_000, 5_000_000_000];
        let mut q: EventQueue<u64> = EventQueue::new();
        let mut reference = std::collections::BTreeMap::new();
        let mut seq = 0u64;
        let mut now = 0u64;
        let add = |q: &mut EventQueue<u64>, reference: &mut std::collections::BTreeMap<(u64, u64), u64>, seq: &mut u64, t: u64, later: bool| {
            if later {
                q.schedule_later(SimTime(t), *seq);
            } else {
                q.schedule(SimTime(t), *seq);
            }
            reference.insert((t, *seq), *seq);
            *seq += 1;
        };
        let mut pops = 0;
        for step in 0..60_000 {
            let r = rnd();
            let dt = match span[(r % 8) as usize] {
                0 => 0,
                m => rnd() % m,
            };
            if step < 200 || !r.is_multiple_of(3) {
                add(&mut q, &mut reference, &mut seq, now + dt, r.is_multiple_of(7));
            }
            if step >= 200 && !r.is_multiple_of(5) {
                // independent draws: fused or not, a successor or not, its delay
                let (fused, succ_of) = (rnd().is_multiple_of(2), !rnd().is_multiple_of(3));
                let dt = match span[(rnd() % 8) as usize] {
                    0 => 0,
                    m => rnd() % m,
                };
                let expect = reference.pop_first().map(|((t, _), ev)| (SimTime(t), ev));
                let got = if fused {
                    let mut succ = None;
                    let id = seq;
                    let got = q.pop_with(|t, _| {
                        succ = succ_of.then_some(t.0 + dt);
                        succ.map(|t2| (SimTime(t2), id))
                    });
                    if let Some(t2) = succ {
                        reference.insert((t2, seq), seq);
                        seq += 1;
                    }
                    got
                } else {
                    q.pop()
                };
                assert_eq!(got, expect, "step {step}");
                if let Some((t, _)) = got {
                    now = t.0;
                    pops += 1;
                }
                assert_eq!(q.now().0, now);
            }
            assert_eq!(q.len(), reference.len());
            assert_eq!(q.peek_time().map(|t| t.0), reference.keys().next().map(|k| k.0));
        }
        assert!(pops > 30_000, "{pops}");
    }

    #[test]
    fn same_time_events_keep_fifo_order_at_scale() {
        let mut q = EventQueue::new();
        for i in 0..10_000u32 {
            q.schedule(SimTime(5), i);
        }
        for i in 0..10_000u32 {
            assert_eq!(q.pop().unwrap().1, i);
        }
    }
}
