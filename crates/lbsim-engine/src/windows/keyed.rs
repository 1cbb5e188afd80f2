//! Parallel windows in a keyed order: ties in time broken by who scheduled
//! the event, not by when in the whole run (issue 19's second core;
//! bench/README.md, eleventh pass).
//!
//! [`super::run`] keeps [`EventQueue`](crate::EventQueue)'s order, whose
//! ties in time fall to a count of every schedule in the run. That count
//! depends on how all partitions' events interleave, so every meeting merges
//! the window's events of all partitions, and a channel between partitions
//! is settled by replaying both ends.
//!
//! Here an event's key is fixed when it is scheduled: the scheduling
//! partition and that partition's own running count of schedules,
//! `(origin + 1) << 40 | count` (a run's initial events are keyed by their
//! index). The serial run of these keys ([`run_serial`]) handles the least
//! pending `(time, key)` next. A partition's events come from itself, or
//! from another partition at least the lookahead earlier, and its count
//! advances only with its own events; so, window by window, each partition
//! handles its events in the serial run's order, with its results. The
//! meeting only hands messages over: no merge, no replay.
//!
//! Channels keep the FIFO rule of a port: only the head message's delivery
//! waits in the receiver's heap, the next one taking its place. A channel's
//! pushes come from one partition with non-decreasing times and increasing
//! keys, so this is the `(time, key)` order too.
//!
//! The order depends on which partition schedules what. A model that keyed
//! its events by node rather than by partition (a node counting its own
//! schedules) would get one order for every cut into partitions, the serial
//! run included; but not `EventQueue`'s order, so its results would differ
//! from a serial run's wherever events tie to the picosecond.

use super::{in_turn, note_pending, rehome_heap, threaded, Config, Op, Out, Part, Report, Side, WindowError};
use crate::queue::Entry;
use crate::units::SimTime;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};

/// Bits of a key below its origin.
const ORIGIN_SHIFT: u32 = 40;

/// What sits in a heap.
#[derive(Clone, Copy)]
enum Item<E> {
    Ev(E),
    /// The delivery of channel `.0`'s head message.
    Deliver(u32),
}

/// A message to another partition.
#[derive(Clone, Copy)]
enum Msg<E, M> {
    Ev(E),
    Push(u32, M),
}

/// A message with its time and key.
type Sent<E, M> = (SimTime, u64, Msg<E, M>);

/// A partition's private run state (aligned as [`super::Lane`] is, for the
/// same reason).
#[repr(align(128))]
struct Lane<E, M> {
    me: usize,
    heap: BinaryHeap<Entry<Item<E>>>,
    out: Out<E, M>,
    /// Schedules made here so far: the low bits of their keys.
    count: u64,
    /// Channels: `(from, to)` partitions.
    chans: Vec<(u32, u32)>,
    /// Per channel into this partition: messages not yet received.
    inbox: Vec<VecDeque<(SimTime, u64, M)>>,
    /// Per channel from this partition: the last message's time.
    last: Vec<SimTime>,
    events: u64,
    handed_over: u64,
    busiest: u64,
    trace: Vec<(SimTime, u64, u32)>,
}

/// What a partition publishes about one window.
#[repr(align(128))]
struct Rec<E, M> {
    /// Messages for each partition (its own slot unused).
    out: Vec<Vec<Sent<E, M>>>,
    /// Earliest time pending here after the window, heap and outboxes.
    next: Option<u64>,
    /// Events handled in the window.
    handled: u64,
    err: Option<WindowError>,
    stopped: bool,
}

impl<E, M> Rec<E, M> {
    /// Notes something pending at `at` after the window.
    #[inline]
    fn pending(&mut self, at: SimTime) {
        note_pending(&mut self.next, at);
    }
    fn new(parts: usize) -> Self {
        Rec { out: (0..parts).map(|_| Vec::new()).collect(), next: None, handled: 0, err: None, stopped: false }
    }
}

impl<E: Copy, M: Copy> Lane<E, M> {
    fn new(me: usize, chans: &[(u32, u32)]) -> Self {
        let n = chans.len();
        Lane {
            me,
            heap: BinaryHeap::new(),
            out: Out::new(me),
            count: 0,
            chans: chans.to_vec(),
            inbox: (0..n).map(|_| VecDeque::new()).collect(),
            last: vec![SimTime::ZERO; n],
            events: 0,
            handed_over: 0,
            busiest: 0,
            trace: Vec::new(),
        }
    }

    /// A message on channel `ch` into this partition: queued behind the
    /// channel's others, its delivery scheduled if it is the head.
    #[inline]
    fn arrive(&mut self, ch: u32, at: SimTime, key: u64, m: M) {
        let q = &mut self.inbox[ch as usize];
        if q.is_empty() {
            self.heap.push(Entry::new(at, key, Item::Deliver(ch)));
        }
        q.push_back((at, key, m));
    }

    /// Places one schedule of the event at `now`: here (heap or channel
    /// inbox) or in an outbox; an error names the rule it breaks.
    #[inline]
    fn place(&mut self, now: SimTime, at: SimTime, op: Op<E, M>, rec: &mut Rec<E, M>, lookahead: SimTime) -> Result<(), WindowError> {
        debug_assert!(self.count < 1 << ORIGIN_SHIFT, "partition {}: 2^40 schedules overflow the key's count", self.me);
        let key = (self.me as u64 + 1) << ORIGIN_SHIFT | self.count;
        self.count += 1;
        if at < now {
            return Err(WindowError::Past { part: self.me, now, at });
        }
        let parts = rec.out.len();
        let (to, msg) = match op {
            Op::Ev(to, ev) if to as usize == self.me => {
                self.heap.push(Entry::new(at, key, Item::Ev(ev)));
                return Ok(());
            }
            Op::Ev(to, _) if to as usize >= parts => return Err(WindowError::NoSuchPart { from: self.me, to: to as usize, parts }),
            Op::Ev(to, ev) => (to as usize, Msg::Ev(ev)),
            Op::Push(ch, m) => {
                let c = ch as usize;
                match self.chans.get(c) {
                    Some(&(from, _)) if from as usize == self.me => {}
                    _ => return Err(WindowError::NotSender { part: self.me, ch: c }),
                }
                if at < self.last[c] {
                    return Err(WindowError::ChannelOrder { ch: c, at, last: self.last[c] });
                }
                self.last[c] = at;
                let to = self.chans[c].1 as usize;
                if to == self.me {
                    self.arrive(ch, at, key, m);
                    return Ok(());
                }
                (to, Msg::Push(ch, m))
            }
        };
        if at < now + lookahead {
            return Err(WindowError::Lookahead { from: self.me, to, now, at, lookahead });
        }
        self.handed_over += 1;
        rec.pending(at);
        rec.out[to].push((at, key, msg));
        Ok(())
    }
}

impl<P: Part> Side<P> for Lane<P::Ev, P::Msg> {
    type Rec = Rec<P::Ev, P::Msg>;
    fn rec(parts: usize) -> Self::Rec {
        Rec::new(parts)
    }
    fn me(&self) -> usize {
        self.me
    }
    fn rehome(&mut self, recs: [&mut Self::Rec; 2]) {
        debug_assert!(self.inbox.iter().all(VecDeque::is_empty), "called before the run starts");
        rehome_heap(&mut self.heap);
        self.out = Out::new(self.me);
        self.inbox = self.inbox.iter().map(|_| VecDeque::new()).collect();
        self.last = self.last.clone();
        for r in recs {
            *r = Rec::new(r.out.len());
        }
    }

    fn window(&mut self, part: &mut P, rec: &mut Self::Rec, hi: SimTime, cfg: &Config) {
        rec.out.iter_mut().for_each(Vec::clear);
        (rec.next, rec.handled, rec.err, rec.stopped) = (None, 0, None, false);
        loop {
            let Some(top) = self.heap.peek_mut() else { break };
            let (now, key, item) = (top.time(), top.seq(), top.ev);
            if now > hi {
                break;
            }
            match item {
                Item::Ev(ev) => {
                    PeekMut::pop(top);
                    part.handle(now, ev, &mut self.out);
                }
                Item::Deliver(ch) => {
                    let q = &mut self.inbox[ch as usize];
                    let (_, _, m) = q.pop_front().expect("a delivery finds its message");
                    // the channel's next message takes the head's place
                    match q.front() {
                        Some(&(t, k, _)) => {
                            let mut top = top;
                            *top = Entry::new(t, k, Item::Deliver(ch));
                        }
                        None => drop(PeekMut::pop(top)),
                    }
                    part.receive(now, ch as usize, m, &mut self.out);
                }
            }
            self.events += 1;
            rec.handled += 1;
            if cfg.trace {
                self.trace.push((now, key, self.me as u32));
            }
            let mut v = std::mem::take(&mut self.out.v);
            for (at, op) in v.drain(..) {
                if let Err(e) = self.place(now, at, op, rec, cfg.lookahead) {
                    rec.err = Some(e);
                    break;
                }
            }
            self.out.v = v;
            if rec.err.is_some() {
                return;
            }
            if part.stop() {
                rec.stopped = true;
                break;
            }
        }
        if let Some(e) = self.heap.peek() {
            rec.pending(e.time());
        }
    }

    fn meet(&mut self, recs: &[&Self::Rec], _cfg: &Config) -> Option<u64> {
        for (p, r) in recs.iter().enumerate() {
            if p == self.me {
                continue;
            }
            for &(at, key, msg) in &r.out[self.me] {
                match msg {
                    Msg::Ev(ev) => self.heap.push(Entry::new(at, key, Item::Ev(ev))),
                    Msg::Push(ch, m) => self.arrive(ch, at, key, m),
                }
            }
        }
        super::meeting_end(self.me, &mut self.busiest, recs.iter().map(|r| (r.handled, r.next)))
    }

    fn outcome(rec: &Self::Rec) -> (Option<&WindowError>, bool) {
        (rec.err.as_ref(), rec.stopped)
    }
}

/// Runs `parts` as [`super::run`] does (same arguments, same errors), in
/// the keyed order, with the results of [`run_serial`]; the report's trace
/// lists `(time, key, partition)` in [`run_serial`]'s order, and
/// `numbered_by` stays zero.
pub fn run<P: Part>(parts: &mut [P], channels: &[(usize, usize)], initial: &[(SimTime, usize, P::Ev)], cfg: Config) -> Result<Report, WindowError> {
    let Some((chans, first)) = super::prepare(parts.len(), channels, initial, &cfg)? else { return Ok(Report::default()) };
    let k = parts.len();
    let mut lanes: Vec<Lane<P::Ev, P::Msg>> = (0..k).map(|me| Lane::new(me, &chans)).collect();
    for (i, &(t, p, ev)) in initial.iter().enumerate() {
        debug_assert!((i as u64) < 1 << ORIGIN_SHIFT, "2^40 initial events overflow their keys");
        lanes[p].heap.push(Entry::new(t, i as u64, Item::Ev(ev)));
    }
    let (windows, stopped) = if cfg.threads { threaded(parts, &mut lanes, first, cfg)? } else { in_turn(parts, &mut lanes, first, cfg)? };
    // The serial order interleaves the partitions' own orders by their next
    // events: a partition's next event is the least it has pending, or one
    // another partition will send, at least the lookahead later.
    let lists: Vec<Vec<(SimTime, u64, u32)>> = lanes.iter_mut().map(|l| std::mem::take(&mut l.trace)).collect();
    let mut at = vec![0; k];
    let mut trace = Vec::with_capacity(lists.iter().map(Vec::len).sum());
    while let Some(p) = (0..k).filter(|&p| at[p] < lists[p].len()).min_by_key(|&p| (lists[p][at[p]].0, lists[p][at[p]].1)) {
        trace.push(lists[p][at[p]]);
        at[p] += 1;
    }
    Ok(Report {
        events: lanes.iter().map(|l| l.events).collect(),
        windows,
        stopped,
        handed_over: lanes.iter().map(|l| l.handed_over).sum(),
        busiest: lanes[0].busiest,
        trace,
        ..Report::default()
    })
}

/// The reference: the same partitions and keys in one heap, popped in
/// `(time, key)` order, a channel's deliveries chained as in [`run`].
/// Returns what [`run`] does (`windows` and `busiest` 0).
pub fn run_serial<P: Part>(parts: &mut [P], channels: &[(usize, usize)], initial: &[(SimTime, usize, P::Ev)], until: SimTime, trace: bool) -> Report {
    let mut heap: BinaryHeap<Entry<(u32, Item<P::Ev>)>> = BinaryHeap::new();
    for (i, &(t, p, ev)) in initial.iter().enumerate() {
        heap.push(Entry::new(t, i as u64, (p as u32, Item::Ev(ev))));
    }
    let mut inbox: Vec<VecDeque<(SimTime, u64, P::Msg)>> = channels.iter().map(|_| VecDeque::new()).collect();
    let mut count = vec![0u64; parts.len()];
    let mut rep = Report { events: vec![0; parts.len()], ..Report::default() };
    let mut outs: Vec<Out<P::Ev, P::Msg>> = (0..parts.len()).map(Out::new).collect();
    loop {
        let Some(top) = heap.peek_mut() else { break };
        let (now, key, (p, item)) = (top.time(), top.seq(), top.ev);
        if now > until {
            break;
        }
        let p = p as usize;
        match item {
            Item::Ev(ev) => {
                PeekMut::pop(top);
                parts[p].handle(now, ev, &mut outs[p]);
            }
            Item::Deliver(ch) => {
                let q = &mut inbox[ch as usize];
                let (_, _, m) = q.pop_front().expect("a delivery finds its message");
                match q.front() {
                    Some(&(t, k, _)) => {
                        let mut top = top;
                        *top = Entry::new(t, k, (p as u32, Item::Deliver(ch)));
                    }
                    None => drop(PeekMut::pop(top)),
                }
                parts[p].receive(now, ch as usize, m, &mut outs[p]);
            }
        }
        rep.events[p] += 1;
        if trace {
            rep.trace.push((now, key, p as u32));
        }
        for (at, op) in outs[p].v.drain(..) {
            let key = (p as u64 + 1) << ORIGIN_SHIFT | count[p];
            count[p] += 1;
            match op {
                Op::Ev(to, ev) => {
                    rep.handed_over += (to as usize != p) as u64;
                    heap.push(Entry::new(at, key, (to, Item::Ev(ev))));
                }
                Op::Push(ch, m) => {
                    let to = channels[ch as usize].1;
                    rep.handed_over += (to != p) as u64;
                    let q = &mut inbox[ch as usize];
                    if q.is_empty() {
                        heap.push(Entry::new(at, key, (to as u32, Item::Deliver(ch))));
                    }
                    q.push_back((at, key, m));
                }
            }
        }
        if parts[p].stop() {
            rep.stopped = true;
            break;
        }
    }
    rep
}
