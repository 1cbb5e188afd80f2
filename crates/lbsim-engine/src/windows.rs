//! Conservative parallel windows that keep the serial event order exactly
//! (issue 19's second core; bench/README.md, tenth pass).
//!
//! A model is cut into partitions ([`Part`]) that share no state. An event
//! at one partition can cause an event at another only as a message that
//! takes at least the lookahead `L` (in a network: the smallest link delay).
//! Time is cut into windows `[t0, t0 + L)`, `t0` the earliest pending event
//! anywhere, so nothing one partition does in a window can reach another
//! partition within it: each partition handles its events of the window
//! alone, and the partitions meet once at its end (the synchronous form of
//! Chandy–Misra–Bryant's conservative lookahead, as in Lubachevsky's bounded
//! lag). Empty stretches of time are skipped, never stepped through.
//!
//! **The serial order, exactly.** [`EventQueue`](crate::EventQueue) breaks
//! ties in time by the order of scheduling (a global sequence number), and a
//! model's results may depend on that order. A run in windows gives every
//! event a serial number that orders it as the serial run would, so each
//! partition sees its events in the serial order, and the results are the
//! serial ones.
//! - *Numbers with gaps.* Every schedule takes the next number, whether or
//!   not it schedules an event now (a push onto a busy channel does not),
//!   and a channel's delivery takes one first, for the next delivery,
//!   whether or not there is one. These are the serial queue's numbers with
//!   gaps; a gap never changes which of two numbers is the smaller, so the
//!   order is the serial queue's. In exchange, how many numbers an event
//!   takes is known where it is handled.
//! - At a window's start every event pending anywhere has its number (but a
//!   message waiting on a channel behind an undelivered one, which gets its
//!   number when that one is delivered: see *Channels* below); they are all
//!   below `base`, the count of numbers so far.
//! - Inside the window a partition numbers its own schedules `base + c`, `c`
//!   its running count, and puts those due inside the window in its heap.
//!   In the serial run they get numbers at least `base`, in the order the
//!   partition makes them, so its heap orders as the serial queue would.
//! - Schedules due after the window (its own, and every message) wait in
//!   an outbox, since their serial numbers depend on how the partitions'
//!   events of the window interleave in the serial order.
//! - At the meeting, the events every partition handled in the window are
//!   merged by `(time, serial number)`, a walk that (with two partitions)
//!   reads numbers only on ties in time. An event numbered `base + c` has the number of the event
//!   that scheduled it, which came earlier in the same partition and so has
//!   merged, plus its place among that event's. Each handled event's first
//!   number is `base` plus the numbers taken by the events before it; the
//!   outboxes then go into the heaps with their numbers.
//!
//! **Channels** ([`Out::push`]) are FIFO links with the rule of a port in
//! the simulator: the next delivery is scheduled by the push if everything
//! pushed before has been delivered, and otherwise by the delivery before
//! it, in that delivery's place (`EventQueue::pop_with`); its number is
//! that event's. For a channel between partitions which rule applies
//! depends on how the two ends' events interleave, so each push and
//! delivery is recorded, and the meeting replays them per channel in the
//! serial order: a delivery numbers a message pushed in the same window, or
//! its receiver, already holding a message pushed in an earlier window, has
//! scheduled it itself.
//!
//! Every partition runs the (deterministic) walk for itself, and settles
//! the channels into it, reading the others' records of the window, so a
//! window costs one barrier. Records
//! alternate between two buffers by window parity, so a partition can
//! start the next window while a slower one still reads the last.
//!
//! The test below checks the claim directly: a toy model whose every choice
//! depends on the order of its events, run serially through `EventQueue`
//! and in windows (one thread, and one thread per partition), gives the
//! same sequence of `(time, serial number, partition)`, event for event.
//!
//! Two other runners share the barrier and the records: [`keyed`], a
//! different order (ties broken by the scheduling partition) that needs no
//! merge, and [`ancestry`], the same serial order as here that merges only
//! the picoseconds two partitions share.

use crate::queue::Entry;
use crate::units::SimTime;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::RwLock;

pub mod ancestry;
pub mod keyed;

/// One partition of a model: its state, and what one event does to it.
pub trait Part: Send {
    /// The partition's events: small and `Copy`, as with `EventQueue`.
    type Ev: Copy + Send + Sync;
    /// What its channels carry (`()` for a model without channels).
    type Msg: Copy + Send + Sync;
    /// Handles `ev` at `now`; everything it schedules goes through `out`.
    fn handle(&mut self, now: SimTime, ev: Self::Ev, out: &mut Out<Self::Ev, Self::Msg>);
    /// Receives `msg` from channel `ch` at `now`, the time it was pushed
    /// for. Only a model that pushes on channels is ever called here.
    fn receive(&mut self, now: SimTime, ch: usize, msg: Self::Msg, out: &mut Out<Self::Ev, Self::Msg>) {
        let _ = (now, msg, out);
        unreachable!("partition received on channel {ch} but does not implement `receive`");
    }
    /// Asked after each event: whether the run should end here (a model
    /// that is done, e.g. every flow finished). The partition handles
    /// nothing more, and the run ends at the window's meeting, leaving the
    /// rest pending. With one partition that is exactly where the serial
    /// run would stop; with several, the others finish the window.
    fn stop(&self) -> bool {
        false
    }
}

/// One thing a handled event does, in order.
#[derive(Clone, Copy)]
enum Op<E, M> {
    Ev(u32, E),
    Push(u32, M),
}

/// What one handled event schedules, in the order it schedules it.
pub struct Out<E, M> {
    me: u32,
    v: Vec<(SimTime, Op<E, M>)>,
}

impl<E, M> Out<E, M> {
    fn new(me: usize) -> Self {
        Out { me: me as u32, v: Vec::with_capacity(8) }
    }
    /// The partition handling the event.
    pub fn me(&self) -> usize {
        self.me as usize
    }
    /// Schedules `ev` at this partition, at `at` (not before the event).
    #[inline]
    pub fn local(&mut self, at: SimTime, ev: E) {
        self.v.push((at, Op::Ev(self.me, ev)));
    }
    /// Sends `ev` to partition `part`, arriving at `at`: at least the
    /// lookahead after the event when `part` is another partition.
    #[inline]
    pub fn send(&mut self, part: usize, at: SimTime, ev: E) {
        self.v.push((at, Op::Ev(part as u32, ev)));
    }
    /// Pushes `msg` on channel `ch` (from this partition), to be received
    /// at `at`: not before the channel's previous message, and at least
    /// the lookahead after the event when the channel leads to another
    /// partition.
    ///
    /// A channel is a FIFO link: its next delivery is scheduled by the push
    /// when everything pushed before has been received, and otherwise by
    /// the delivery of the message before it, in that delivery's place (a
    /// port whose head packet's arrival names the next arrival:
    /// [`EventQueue::pop_with`](crate::EventQueue::pop_with)). Which one
    /// it is fixes the delivery's serial number, and with a channel between
    /// partitions it depends on how their events interleave; the meeting
    /// resolves it.
    #[inline]
    pub fn push(&mut self, ch: usize, at: SimTime, msg: M) {
        self.v.push((at, Op::Push(ch as u32, msg)));
    }
}

/// A schedule that breaks the rules of the run; it names the partition and
/// the times involved (a model's bug, or a lookahead set too long).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowError {
    /// A message to another partition arrives sooner than the lookahead.
    Lookahead { from: usize, to: usize, now: SimTime, at: SimTime, lookahead: SimTime },
    /// An event scheduled before the event that scheduled it.
    Past { part: usize, now: SimTime, at: SimTime },
    /// A message to a partition that does not exist.
    NoSuchPart { from: usize, to: usize, parts: usize },
    /// A push on a channel that does not exist or leads from another
    /// partition.
    NotSender { part: usize, ch: usize },
    /// A push for a time before the channel's previous message.
    ChannelOrder { ch: usize, at: SimTime, last: SimTime },
    /// A lookahead of zero: windows could not advance.
    NoLookahead,
    /// More than [`ancestry::run`]'s packed keys hold (e.g. 2^40 schedules
    /// in one partition, 2^16 from one event).
    Capacity { part: usize, what: &'static str },
}

impl fmt::Display for WindowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowError::Lookahead { from, to, now, at, lookahead } => {
                write!(f, "partition {from} at {now} sent partition {to} an event for {at}, sooner than the lookahead {lookahead}")
            }
            WindowError::Past { part, now, at } => write!(f, "partition {part} at {now} scheduled an event in the past ({at})"),
            WindowError::NoSuchPart { from, to, parts } => {
                write!(f, "partition {from} sent an event to partition {to}, but there are {parts}")
            }
            WindowError::NotSender { part, ch } => write!(f, "partition {part} pushed on channel {ch}, which does not lead from it"),
            WindowError::NoLookahead => write!(f, "the lookahead (window length) must be positive"),
            WindowError::Capacity { part, what } => write!(f, "partition {part}: too many {what} for the ancestry order's keys"),
            WindowError::ChannelOrder { ch, at, last } => {
                write!(f, "channel {ch}: a message for {at} pushed after one for {last} (a channel delivers in order)")
            }
        }
    }
}

impl std::error::Error for WindowError {}

/// How to run.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// The lookahead `L`: the window length. Must be positive
    /// ([`WindowError::NoLookahead`]).
    pub lookahead: SimTime,
    /// Events after this time are left pending.
    pub until: SimTime,
    /// One thread per partition (`true`) or all partitions in turn on the
    /// calling thread (same results; for tests and for measuring the
    /// bookkeeping alone). Threads spin at the meeting, so a run should
    /// not have more partitions than free cores.
    pub threads: bool,
    /// Keep the serial order of every event handled: [`Report::trace`].
    pub trace: bool,
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Events handled, per partition.
    pub events: Vec<u64>,
    /// Windows with at least one event anywhere.
    pub windows: u64,
    /// Whether a partition ended the run ([`Part::stop`]).
    pub stopped: bool,
    /// Events and messages handed from one partition to another.
    pub handed_over: u64,
    /// Σ over windows of the busiest partition's events: with free
    /// meetings, threads would take this long in events; `events / busiest`
    /// bounds the speed-up.
    pub busiest: u64,
    /// With [`Config::trace`]: every handled event as `(time, serial
    /// sequence number, partition)`, in the serial order.
    pub trace: Vec<(SimTime, u64, u32)>,
    /// Deliveries on channels between partitions, by what numbered them.
    pub numbered_by: NumberedBy,
    /// [`ancestry::run`]: picoseconds at which two or more partitions
    /// handled events, merged at the meetings.
    pub merged: u64,
}

/// Deliveries on channels between partitions, by what gave them their
/// serial numbers at the meetings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NumberedBy {
    /// The push: the channel was empty.
    pub push: u64,
    /// The delivery before, with the message already waiting at the
    /// receiver (pushed in an earlier window).
    pub waiting: u64,
    /// The delivery before, in the window the message was pushed in.
    pub same_window: u64,
}

impl<'a> std::iter::Sum<&'a NumberedBy> for NumberedBy {
    fn sum<I: Iterator<Item = &'a NumberedBy>>(it: I) -> NumberedBy {
        it.fold(NumberedBy::default(), |a, b| NumberedBy { push: a.push + b.push, waiting: a.waiting + b.waiting, same_window: a.same_window + b.same_window })
    }
}

/// What sits in a heap or an outbox.
#[derive(Clone, Copy)]
enum Item<E, M> {
    Ev(E),
    /// The delivery of channel `.0`'s next message.
    Deliver(u32),
    /// A message for a channel into another partition (outboxes only).
    Msg(u32, M),
}

/// One handled event, as the merge needs it.
#[derive(Clone, Copy)]
struct Done {
    t: u64,
    /// Its serial number, or `base + c` for a schedule of this window.
    seq: u64,
    /// Its first number's place `c` among the partition's numbers of the
    /// window, and how many it took (one per schedule, and one more first
    /// for a delivery: the module docs' *numbers with gaps*).
    c0: u32,
    n: u32,
}

/// A schedule on a channel between partitions: event `d` of the window's
/// list, its number `r` among that event's.
#[derive(Clone, Copy)]
struct ChOp {
    d: u32,
    r: u32,
    ch: u32,
    kind: ChKind,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ChKind {
    /// A push; its delivery takes the push's number if the channel is
    /// empty.
    Push,
    /// A delivery, at the start of its event (`r` = 0): if the channel has
    /// more, the next message's delivery takes this number. `local`: that
    /// message was already here (pushed in an earlier window).
    Deliver { local: bool },
}

/// A schedule due after the window, waiting for its serial number: the
/// `r`-th number of event `d`; for a message, `k` is its push in the
/// record's `chops` for its receiver.
#[derive(Clone, Copy)]
struct Sent<E, M> {
    t: u64,
    d: u32,
    r: u32,
    k: u32,
    item: Item<E, M>,
}

/// What a partition publishes about one window (aligned like [`Lane`]).
#[repr(align(128))]
struct Rec<E, M> {
    done: Vec<Done>,
    /// Operations on channels between partitions, by the channel's
    /// receiver (the only partition that settles them).
    chops: Vec<Vec<ChOp>>,
    /// Outboxes by destination partition (its own included).
    out: Vec<Vec<Sent<E, M>>>,
    /// Earliest time pending in the partition's heap after the window, and
    /// in its outboxes.
    next: Option<u64>,
    err: Option<WindowError>,
    /// The partition asked to stop ([`Part::stop`]).
    stopped: bool,
}

impl<E, M> Rec<E, M> {
    fn new(parts: usize) -> Self {
        Rec {
            done: Vec::new(),
            chops: (0..parts).map(|_| Vec::new()).collect(),
            out: (0..parts).map(|_| Vec::new()).collect(),
            next: None,
            err: None,
            stopped: false,
        }
    }
    /// Notes something pending at `at` after the window.
    #[inline]
    fn pending(&mut self, at: SimTime) {
        note_pending(&mut self.next, at);
    }
    /// Keeps the first error of the window (later ones may follow from it).
    fn fail(&mut self, e: WindowError) {
        self.err.get_or_insert(e);
    }
    /// New buffers from the calling thread (see [`Lane::rehome`]): the
    /// outboxes' headers, written at every message, sit in one small
    /// allocation per record.
    fn rehome(&mut self) {
        *self = Rec::new(self.out.len());
    }
}

/// Notes something pending at `at` in a record's earliest pending time.
#[inline]
fn note_pending(next: &mut Option<u64>, at: SimTime) {
    *next = Some(next.map_or(at.0, |n| n.min(at.0)));
}

/// The end of a meeting for partition `me`, from each partition's record
/// `(events handled in the window, earliest time pending after it)`: adds
/// the busiest partition's events to `busiest` (counted by partition 0),
/// and returns the earliest time pending anywhere.
fn meeting_end(me: usize, busiest: &mut u64, recs: impl Iterator<Item = (u64, Option<u64>)> + Clone) -> Option<u64> {
    if me == 0 {
        *busiest += recs.clone().map(|r| r.0).max().unwrap_or(0);
    }
    recs.filter_map(|r| r.1).min()
}

/// Moves a heap to an allocation of the calling thread (see
/// [`Lane::rehome`]), with room to grow.
fn rehome_heap<T: Ord>(heap: &mut BinaryHeap<T>) {
    let old = std::mem::take(heap).into_vec();
    let mut fresh = Vec::with_capacity(old.len().max(256));
    fresh.extend(old);
    *heap = BinaryHeap::from(fresh);
}

/// "No number yet": a message pushed onto a channel that was not empty.
const UNNUMBERED: u64 = u64::MAX;

/// The meeting's view of a channel between partitions, kept by its
/// receiver.
#[derive(Clone, Default)]
struct ChanState {
    /// Messages pushed and not yet delivered, in the serial order so far.
    undelivered: u64,
    /// Of those, the ones still without a number: first `earlier` from past
    /// windows (their receiver holds them), then pushes of this window (as
    /// partition and place in its `chops` for the receiver).
    earlier: u64,
    this_window: VecDeque<(u32, u32)>,
}

/// A partition's private run state. Aligned to two cache lines (the
/// adjacent-line prefetcher pairs them) so that two partitions' counters,
/// written at every event, never share a line between cores.
#[repr(align(128))]
struct Lane<E, M> {
    me: usize,
    heap: BinaryHeap<Entry<Item<E, M>>>,
    /// Serial numbers handed out before the current window.
    base: u64,
    events: u64,
    handed_over: u64,
    busiest: u64,
    numbered_by: NumberedBy,
    out: Out<E, M>,
    /// Channels: `(from, to)` partitions.
    chans: Vec<(u32, u32)>,
    /// Per channel into this partition: messages not yet received.
    inbox: Vec<VecDeque<(SimTime, M)>>,
    /// Per channel from this partition: the last message's time.
    last: Vec<SimTime>,
    /// Per channel from another partition into this one: the meeting's
    /// state (indexed by channel, so entries for other channels stay
    /// unused), and the channels with pushes of this window still
    /// unnumbered.
    cs: Vec<ChanState>,
    touched: Vec<u32>,
    /// Merge scratch, per partition: each handled event's first serial
    /// number, each push's delivery number (or [`UNNUMBERED`]), and the
    /// merge's positions.
    gs: Vec<Vec<u64>>,
    msg: Vec<Vec<u64>>,
    pos: Vec<usize>,
    trace: Vec<(SimTime, u64, u32)>,
}

impl<E: Copy, M: Copy> Lane<E, M> {
    fn new(me: usize, parts: usize, base: u64, chans: &[(u32, u32)]) -> Self {
        let n = chans.len();
        Lane {
            me,
            heap: BinaryHeap::new(),
            base,
            events: 0,
            handed_over: 0,
            busiest: 0,
            numbered_by: NumberedBy::default(),
            out: Out::new(me),
            chans: chans.to_vec(),
            inbox: (0..n).map(|_| VecDeque::new()).collect(),
            last: vec![SimTime::ZERO; n],
            cs: vec![ChanState::default(); n],
            touched: Vec::new(),
            gs: vec![Vec::new(); parts],
            msg: vec![Vec::new(); parts],
            pos: vec![0; parts],
            trace: Vec::new(),
        }
    }

    /// Moves the buffers written at every event (the heap, the schedules'
    /// buffer) and the merge's scratch to new allocations made by the
    /// calling thread: allocated one after the other by the thread that set
    /// the run up, two partitions' buffers can share a cache line, which
    /// then bounces between the cores at every event.
    fn rehome(&mut self) {
        debug_assert!(self.inbox.iter().all(VecDeque::is_empty), "called before the run starts");
        rehome_heap(&mut self.heap);
        self.out.v = Vec::with_capacity(16);
        let k = self.pos.len();
        self.gs = (0..k).map(|_| Vec::new()).collect();
        self.msg = (0..k).map(|_| Vec::new()).collect();
        self.pos = vec![0; k];
        self.inbox = self.inbox.iter().map(|_| VecDeque::new()).collect();
        self.last = self.last.clone();
        self.cs = self.cs.clone();
    }

    /// Puts the schedule numbered `c` of this window (the event's
    /// `c - c0`-th) where it belongs: due in the window, in the heap with its
    /// provisional number; otherwise in the outbox.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn place(&mut self, rec: &mut Rec<E, M>, c: u64, c0: u64, at: SimTime, to: usize, item: Item<E, M>, hi: SimTime) {
        if to == self.me && at <= hi {
            self.heap.push(Entry::new(at, self.base + c, item));
        } else {
            rec.pending(at);
            rec.out[to].push(Sent { t: at.0, d: rec.done.len() as u32, r: (c - c0) as u32, k: u32::MAX, item });
        }
    }

    /// Handles every event up to `hi` (the window's last picosecond) and
    /// records the window in `rec`.
    fn window<P: Part<Ev = E, Msg = M>>(&mut self, part: &mut P, rec: &mut Rec<E, M>, hi: SimTime, lookahead: SimTime) {
        rec.done.clear();
        rec.chops.iter_mut().for_each(Vec::clear);
        rec.out.iter_mut().for_each(Vec::clear);
        // numbers taken in the window so far
        let mut sched = 0u64;
        rec.err = None;
        rec.stopped = false;
        rec.next = None;
        let parts = rec.out.len();
        let me = self.me;
        loop {
            let Some(mut top) = self.heap.peek_mut() else { break };
            if top.time() > hi {
                break;
            }
            let (now, seq, item) = (top.time(), top.seq(), top.ev);
            let c0 = sched;
            let d = rec.done.len() as u32;
            match item {
                Item::Ev(ev) => {
                    PeekMut::pop(top);
                    part.handle(now, ev, &mut self.out);
                }
                Item::Deliver(ch) => {
                    let inbox = &mut self.inbox[ch as usize];
                    let (at, msg) = inbox.pop_front().expect("a delivery finds its message");
                    debug_assert_eq!(at, now);
                    // a delivery's first number is for the next message's
                    // delivery, which takes this one's place: in the heap
                    // (one sift, as `EventQueue::pop_with`) when due in the
                    // window; taken whether or not there is one
                    let c = sched;
                    sched += 1;
                    let next = inbox.front().map(|m| m.0);
                    if self.chans[ch as usize].0 as usize != me {
                        rec.chops[me].push(ChOp { d, r: 0, ch, kind: ChKind::Deliver { local: next.is_some() } });
                    }
                    match next {
                        Some(at) if at <= hi => {
                            *top = Entry::new(at, self.base + c, Item::Deliver(ch));
                            drop(top);
                        }
                        Some(at) => {
                            PeekMut::pop(top);
                            self.place(rec, c, c0, at, me, Item::Deliver(ch), hi);
                        }
                        None => {
                            PeekMut::pop(top);
                        }
                    }
                    part.receive(now, ch as usize, msg, &mut self.out);
                }
                Item::Msg(..) => unreachable!("messages wait in inboxes, not in the heap"),
            }
            for i in 0..self.out.v.len() {
                let (at, op) = self.out.v[i];
                // every schedule takes a number, whether or not it schedules
                // an event now (a push behind others does not)
                let c = sched;
                sched += 1;
                if at < now {
                    rec.fail(WindowError::Past { part: me, now, at });
                    continue;
                }
                match op {
                    Op::Ev(to, ev) => {
                        let to = to as usize;
                        if to >= parts {
                            rec.fail(WindowError::NoSuchPart { from: me, to, parts });
                        } else if to != me && at < now + lookahead {
                            rec.fail(WindowError::Lookahead { from: me, to, now, at, lookahead });
                        } else {
                            self.place(rec, c, c0, at, to, Item::Ev(ev), hi);
                        }
                    }
                    Op::Push(ch, msg) => {
                        let (from, to) = match self.chans.get(ch as usize) {
                            Some(&(f, t)) if f as usize == me => (f as usize, t as usize),
                            _ => {
                                rec.fail(WindowError::NotSender { part: me, ch: ch as usize });
                                continue;
                            }
                        };
                        let last = self.last[ch as usize];
                        if at < last {
                            rec.fail(WindowError::ChannelOrder { ch: ch as usize, at, last });
                            continue;
                        }
                        self.last[ch as usize] = at;
                        if to == from {
                            // within the partition: the serial rule, here
                            if self.inbox[ch as usize].is_empty() {
                                self.place(rec, c, c0, at, me, Item::Deliver(ch), hi);
                            }
                            self.inbox[ch as usize].push_back((at, msg));
                        } else if at < now + lookahead {
                            rec.fail(WindowError::Lookahead { from: me, to, now, at, lookahead });
                        } else {
                            let (r, k) = ((c - c0) as u32, rec.chops[to].len() as u32);
                            rec.chops[to].push(ChOp { d, r, ch, kind: ChKind::Push });
                            rec.pending(at);
                            rec.out[to].push(Sent { t: at.0, d, r, k, item: Item::Msg(ch, msg) });
                        }
                    }
                }
            }
            self.out.v.clear();
            debug_assert!(sched <= u32::MAX as u64, "more than 2^32 numbers in one window");
            rec.done.push(Done { t: now.0, seq, c0: c0 as u32, n: (sched - c0) as u32 });
            self.events += 1;
            if rec.err.is_some() {
                break;
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

    /// The meeting: merges every partition's window into the serial order,
    /// which gives each handled event its first serial number; settles the
    /// channels between partitions; and takes in this partition's outbox
    /// entries with their numbers. Returns the earliest pending time
    /// anywhere.
    fn meet(&mut self, recs: &[&Rec<E, M>], trace: bool) -> Option<u64> {
        let base = self.base;
        for (q, r) in recs.iter().enumerate() {
            self.gs[q].clear();
            self.gs[q].resize(r.done.len(), 0);
            self.pos[q] = 0;
        }
        let mut next = base;
        let gs = &mut self.gs;
        if let [a, b] = recs {
            // two partitions, the case that matters on a 2-core machine: a
            // two-pointer walk that looks at serial numbers only on ties in
            // time
            let mut j = 0;
            for (i, da) in a.done.iter().enumerate() {
                while let Some(db) = b.done.get(j) {
                    if db.t > da.t || db.t == da.t && serial(&b.done, &gs[1], base, db) > serial(&a.done, &gs[0], base, da) {
                        break;
                    }
                    if trace {
                        self.trace.push((SimTime(db.t), serial(&b.done, &gs[1], base, db), 1));
                    }
                    gs[1][j] = next;
                    next += db.n as u64;
                    j += 1;
                }
                if trace {
                    self.trace.push((SimTime(da.t), serial(&a.done, &gs[0], base, da), 0));
                }
                gs[0][i] = next;
                next += da.n as u64;
            }
            for (j, db) in b.done.iter().enumerate().skip(j) {
                if trace {
                    self.trace.push((SimTime(db.t), serial(&b.done, &gs[1], base, db), 1));
                }
                gs[1][j] = next;
                next += db.n as u64;
            }
        } else {
            loop {
                // the earliest head by (time, serial number); k is small
                let mut best: Option<(u64, u64, usize)> = None;
                for (q, r) in recs.iter().enumerate() {
                    if let Some(d) = r.done.get(self.pos[q]) {
                        let s = serial(&r.done, &gs[q], base, d);
                        let earlier = match best {
                            None => true,
                            Some((t, s0, _)) => (d.t, s) < (t, s0),
                        };
                        if earlier {
                            best = Some((d.t, s, q));
                        }
                    }
                }
                let Some((t, s, q)) = best else { break };
                let i = self.pos[q];
                self.pos[q] += 1;
                gs[q][i] = next;
                next += recs[q].done[i].n as u64;
                if trace {
                    self.trace.push((SimTime(t), s, q as u32));
                }
            }
        }
        self.settle_channels(recs);
        for (q, r) in recs.iter().enumerate() {
            let inbox = &r.out[self.me];
            if q != self.me {
                self.handed_over += inbox.len() as u64;
            }
            for s in inbox {
                match s.item {
                    Item::Msg(ch, m) => {
                        self.inbox[ch as usize].push_back((SimTime(s.t), m));
                        let g = self.msg[q][s.k as usize];
                        if g != UNNUMBERED {
                            self.heap.push(Entry::new(SimTime(s.t), g, Item::Deliver(ch)));
                        }
                    }
                    item => self.heap.push(Entry::new(SimTime(s.t), self.gs[q][s.d as usize] + s.r as u64, item)),
                }
            }
        }
        self.base = next;
        self.busiest += recs.iter().map(|r| r.done.len() as u64).max().unwrap_or(0);
        recs.iter().filter_map(|r| r.next).min()
    }

    /// Replays the pushes and deliveries on the channels from other
    /// partitions into this one (the only partition that needs their
    /// outcome) in the serial order, and gives each message pushed in the
    /// window the number of the event that schedules its delivery: its
    /// push, when the channel was empty, or the delivery before it, when
    /// that came in this window (`msg`). A message waiting for a delivery in a later window
    /// stays unnumbered; its receiver will schedule it.
    fn settle_channels(&mut self, recs: &[&Rec<E, M>]) {
        for (q, r) in recs.iter().enumerate() {
            self.msg[q].clear();
            self.msg[q].resize(r.chops[self.me].len(), UNNUMBERED);
            self.pos[q] = 0;
        }
        let me = self.me;
        if recs.iter().all(|r| r.chops[me].is_empty()) {
            return;
        }
        let Lane { gs, msg, pos, cs, touched, numbered_by, .. } = self;
        let mut settle = |q: usize, k: usize, op: ChOp, g: u64| settle_one(cs, touched, msg, numbered_by, q, k, op, g);
        let number = |q: usize, op: &ChOp| gs[q][op.d as usize] + op.r as u64;
        if let [a, b] = recs {
            // two partitions: a two-pointer walk
            let mut j = 0;
            let (a, b) = (&a.chops[me], &b.chops[me]);
            for (i, oa) in a.iter().enumerate() {
                let ga = number(0, oa);
                while let Some(ob) = b.get(j) {
                    let gb = number(1, ob);
                    if gb > ga {
                        break;
                    }
                    settle(1, j, *ob, gb);
                    j += 1;
                }
                settle(0, i, *oa, ga);
            }
            for (j, ob) in b.iter().enumerate().skip(j) {
                settle(1, j, *ob, number(1, ob));
            }
        } else {
            loop {
                // the earliest channel operation by serial number
                let mut best: Option<(u64, usize)> = None;
                for (q, r) in recs.iter().enumerate() {
                    if let Some(op) = r.chops[me].get(pos[q]) {
                        let g = number(q, op);
                        if best.is_none() || best.is_some_and(|(g0, _)| g < g0) {
                            best = Some((g, q));
                        }
                    }
                }
                let Some((g, q)) = best else { break };
                let k = pos[q];
                pos[q] += 1;
                settle(q, k, recs[q].chops[me][k], g);
            }
        }
        // pushes still without a number wait for their predecessor's
        // delivery in a later window
        for ch in touched.drain(..) {
            let s = &mut cs[ch as usize];
            s.earlier += s.this_window.len() as u64;
            s.this_window.clear();
        }
    }
}

/// One channel operation of the window, in the serial order (see
/// [`Lane::settle_channels`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn settle_one(cs: &mut [ChanState], touched: &mut Vec<u32>, msg: &mut [Vec<u64>], numbered_by: &mut NumberedBy, q: usize, k: usize, op: ChOp, g: u64) {
    let s = &mut cs[op.ch as usize];
    match op.kind {
        ChKind::Push => {
            if s.undelivered == 0 {
                msg[q][k] = g;
                numbered_by.push += 1;
            } else {
                if s.this_window.is_empty() {
                    touched.push(op.ch);
                }
                s.this_window.push_back((q as u32, k as u32));
            }
            s.undelivered += 1;
        }
        ChKind::Deliver { local } => {
            s.undelivered -= 1;
            if s.undelivered == 0 {
                assert!(!local, "channel {}: a delivery's successor was never pushed", op.ch);
            } else if s.earlier > 0 {
                // its receiver held it and scheduled it with this number
                assert!(local, "channel {}: the waiting message was not scheduled by its receiver", op.ch);
                s.earlier -= 1;
                numbered_by.waiting += 1;
            } else {
                assert!(!local, "channel {}: a delivery took a number for a message not yet pushed", op.ch);
                let (qa, ka) = s.this_window.pop_front().expect("an undelivered message is pending");
                msg[qa as usize][ka as usize] = g;
                numbered_by.same_window += 1;
            }
        }
    }
}

/// The serial number of a handled event `d` of a partition's window list
/// `done`: its own if it was scheduled before the window; otherwise
/// (`base + c`) its scheduling event's first number `gs[..]` plus its place
/// among that event's numbers. The scheduling event is earlier in the same
/// list and so has been merged.
fn serial(done: &[Done], gs: &[u64], base: u64, d: &Done) -> u64 {
    if d.seq < base {
        return d.seq;
    }
    let c = d.seq - base;
    let i = done.partition_point(|p| p.c0 as u64 <= c) - 1;
    gs[i] + (c - done[i].c0 as u64)
}

/// A barrier for a fixed set of spinning threads, which gives up (returns
/// `false`) once any of them has stopped by panicking.
struct SpinBarrier {
    arrived: AtomicU64,
    n: u64,
    abort: AtomicBool,
}

impl SpinBarrier {
    fn wait(&self, round: u64) -> bool {
        self.arrived.fetch_add(1, Ordering::AcqRel);
        let target = round * self.n;
        let mut spins = 0u32;
        while self.arrived.load(Ordering::Acquire) < target {
            if self.abort.load(Ordering::Relaxed) {
                return false;
            }
            spins = spins.saturating_add(1);
            if spins < 1 << 14 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        true
    }
}

/// Sets the barrier's abort flag if its thread unwinds.
struct AbortOnPanic<'a>(&'a AtomicBool);
impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Relaxed);
        }
    }
}

/// Runs `parts` from the `initial` events `(time, partition, event)` in
/// windows of `cfg.lookahead`, with the results of [`run_serial`].
/// `channels[i] = (from, to)`: channel `i` leads from partition `from` to
/// partition `to` (the same one is allowed).
pub fn run<P: Part>(parts: &mut [P], channels: &[(usize, usize)], initial: &[(SimTime, usize, P::Ev)], cfg: Config) -> Result<Report, WindowError> {
    let Some((chans, first)) = prepare(parts.len(), channels, initial, &cfg)? else { return Ok(Report::default()) };
    let k = parts.len();
    let mut lanes: Vec<Lane<P::Ev, P::Msg>> = (0..k).map(|me| Lane::new(me, k, initial.len() as u64, &chans)).collect();
    for (i, &(t, p, ev)) in initial.iter().enumerate() {
        lanes[p].heap.push(Entry::new(t, i as u64, Item::Ev(ev)));
    }
    let (windows, stopped) = if cfg.threads { threaded(parts, &mut lanes, first, cfg)? } else { in_turn(parts, &mut lanes, first, cfg)? };
    Ok(Report {
        events: lanes.iter().map(|l| l.events).collect(),
        windows,
        stopped,
        handed_over: lanes.iter().map(|l| l.handed_over).sum(),
        busiest: lanes[0].busiest,
        numbered_by: lanes.iter().map(|l| &l.numbered_by).sum(),
        trace: std::mem::take(&mut lanes[0].trace),
        merged: 0,
    })
}

/// The channels as `(from, to)` partitions, each of the `k` there are.
fn check_channels(channels: &[(usize, usize)], k: usize) -> Result<Vec<(u32, u32)>, WindowError> {
    channels.iter().map(|&(f, t)| if f >= k || t >= k { Err(WindowError::NoSuchPart { from: f, to: t, parts: k }) } else { Ok((f as u32, t as u32)) }).collect()
}

/// A run's channels as `(from, to)` partitions, and its earliest initial
/// time.
type Prepared = (Vec<(u32, u32)>, Option<u64>);

/// What every runner checks before it starts, for `k` partitions: a
/// positive lookahead, the channels' and the initial events' partitions.
/// Returns the channels as `(from, to)` and the earliest initial time, or
/// `None` with no partitions (nothing to run).
fn prepare<E>(k: usize, channels: &[(usize, usize)], initial: &[(SimTime, usize, E)], cfg: &Config) -> Result<Option<Prepared>, WindowError> {
    if cfg.lookahead == SimTime::ZERO {
        return Err(WindowError::NoLookahead);
    }
    if k == 0 {
        return Ok(None);
    }
    let chans = check_channels(channels, k)?;
    if let Some(&(_, p, _)) = initial.iter().find(|e| e.1 >= k) {
        return Err(WindowError::NoSuchPart { from: p, to: p, parts: k });
    }
    Ok(Some((chans, initial.iter().map(|e| e.0 .0).min())))
}

/// The last picosecond of the window starting at `t0`, the earliest time
/// pending: `None` once nothing is pending up to `until`.
fn window_end(t0: Option<u64>, cfg: &Config) -> Option<SimTime> {
    t0.filter(|&t| t <= cfg.until.0).map(|t| SimTime(t.saturating_add(cfg.lookahead.0 - 1).min(cfg.until.0)))
}

/// One partition's side of a run in windows, as the runners ([`in_turn`],
/// [`threaded`]) drive it: the serial order's [`Lane`], the keyed order's
/// ([`keyed`]), or the serial order's by ancestry ([`ancestry`]).
trait Side<P: Part>: Send {
    /// What the side publishes about a window, for every partition to read
    /// at the meeting.
    type Rec: Send + Sync;
    fn rec(parts: usize) -> Self::Rec;
    fn me(&self) -> usize;
    /// Moves the buffers written at every event to allocations of the
    /// calling thread (see [`Lane::rehome`]), and the side's records too.
    fn rehome(&mut self, recs: [&mut Self::Rec; 2]);
    /// Handles the partition's events up to `hi`, the window's last
    /// picosecond.
    fn window(&mut self, part: &mut P, rec: &mut Self::Rec, hi: SimTime, cfg: &Config);
    /// Takes what concerns this partition from every partition's record of
    /// the window; returns the earliest time pending anywhere.
    fn meet(&mut self, recs: &[&Self::Rec], cfg: &Config) -> Option<u64>;
    /// The record's error, and whether its partition stopped the run.
    fn outcome(rec: &Self::Rec) -> (Option<&WindowError>, bool);
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
        Lane::rehome(self);
        for r in recs {
            r.rehome();
        }
    }
    fn window(&mut self, part: &mut P, rec: &mut Self::Rec, hi: SimTime, cfg: &Config) {
        Lane::window(self, part, rec, hi, cfg.lookahead);
    }
    fn meet(&mut self, recs: &[&Self::Rec], cfg: &Config) -> Option<u64> {
        Lane::meet(self, recs, cfg.trace && self.me == 0)
    }
    fn outcome(rec: &Self::Rec) -> (Option<&WindowError>, bool) {
        (rec.err.as_ref(), rec.stopped)
    }
}

/// A window's first error, by partition.
fn first_error<P: Part, S: Side<P>>(view: &[&S::Rec]) -> Option<WindowError> {
    view.iter().find_map(|r| S::outcome(r).0).cloned()
}

/// Whether a partition stopped the run in the window.
fn stopped<P: Part, S: Side<P>>(view: &[&S::Rec]) -> bool {
    view.iter().any(|r| S::outcome(r).1)
}

/// Runs the windows with the partitions in turn on this thread; returns how
/// many, and whether a partition stopped the run ([`Part::stop`]).
fn in_turn<P: Part, S: Side<P>>(parts: &mut [P], lanes: &mut [S], first: Option<u64>, cfg: Config) -> Ending {
    let k = parts.len();
    let mut recs: Vec<S::Rec> = (0..k).map(|_| S::rec(k)).collect();
    let (mut t0, mut windows) = (first, 0);
    while let Some(hi) = window_end(t0, &cfg) {
        for ((lane, part), rec) in lanes.iter_mut().zip(parts.iter_mut()).zip(recs.iter_mut()) {
            lane.window(part, rec, hi, &cfg);
        }
        windows += 1;
        let view: Vec<&S::Rec> = recs.iter().collect();
        if let Some(e) = first_error::<P, S>(&view) {
            return Err(e);
        }
        for lane in lanes.iter_mut() {
            t0 = lane.meet(&view, &cfg);
        }
        if stopped::<P, S>(&view) {
            return Ok((windows, true));
        }
    }
    Ok((windows, false))
}

type Recs<R> = Vec<[RwLock<R>; 2]>;
/// How a run of windows ended: windows run and whether a partition stopped
/// it, or the first error.
type Ending = Result<(u64, bool), WindowError>;

/// Runs the windows with one thread per partition, meeting at a spinning
/// barrier; records alternate between two buffers by window parity.
fn threaded<P: Part, S: Side<P>>(parts: &mut [P], lanes: &mut [S], first: Option<u64>, cfg: Config) -> Ending {
    let k = parts.len();
    let recs: Recs<S::Rec> = (0..k).map(|_| [RwLock::new(S::rec(k)), RwLock::new(S::rec(k))]).collect();
    let barrier = SpinBarrier { arrived: AtomicU64::new(0), n: k as u64, abort: AtomicBool::new(false) };
    // per thread: `None` if it stopped because another one panicked
    let results: Vec<std::thread::Result<Option<Ending>>> = std::thread::scope(|s| {
        let handles: Vec<_> = lanes
            .iter_mut()
            .zip(parts.iter_mut())
            .map(|(lane, part)| {
                let (recs, barrier) = (&recs, &barrier);
                s.spawn(move || {
                    let _guard = AbortOnPanic(&barrier.abort);
                    let me = lane.me();
                    {
                        let [a, b] = &recs[me];
                        lane.rehome([&mut a.write().expect("not yet shared"), &mut b.write().expect("not yet shared")]);
                    }
                    let (mut t0, mut round) = (first, 0u64);
                    while let Some(hi) = window_end(t0, &cfg) {
                        let parity = (round % 2) as usize;
                        lane.window(part, &mut recs[me][parity].write().expect("a writer panicked"), hi, &cfg);
                        round += 1;
                        if !barrier.wait(round) {
                            return None;
                        }
                        let guards: Vec<_> = recs.iter().map(|r| r[parity].read().expect("a writer panicked")).collect();
                        let view: Vec<&S::Rec> = guards.iter().map(|g| &**g).collect();
                        if let Some(e) = first_error::<P, S>(&view) {
                            return Some(Err(e));
                        }
                        t0 = lane.meet(&view, &cfg);
                        if stopped::<P, S>(&view) {
                            return Some(Ok((round, true)));
                        }
                    }
                    Some(Ok((round, false)))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut first = None;
    for r in results {
        match r {
            // a partition's panic (a model's bug) surfaces as itself
            Err(panic) => std::panic::resume_unwind(panic),
            Ok(r) => first = first.or(r),
        }
    }
    first.expect("no partition stops early unless another panics")
}

/// The reference: the same partitions run through one
/// [`EventQueue`](crate::EventQueue), with its serial order, a channel's
/// deliveries chained through `pop_with`. Returns what [`run`] does
/// (`windows`, `busiest` and `numbered_by` 0); the trace's numbers count as
/// [`run`]'s do, with a number for every schedule (the queue's own order
/// has no gaps, which changes no comparison).
pub fn run_serial<P: Part>(parts: &mut [P], channels: &[(usize, usize)], initial: &[(SimTime, usize, P::Ev)], until: SimTime, trace: bool) -> Report {
    // each event carries its number counted with gaps as `run` counts
    // (the queue orders by its own sequence, without gaps), for the trace
    type Queued<E, M> = crate::EventQueue<(u64, u32, Item<E, M>)>;
    let mut q: Queued<P::Ev, P::Msg> = crate::EventQueue::new();
    let mut seq = 0u64;
    for &(t, p, ev) in initial {
        q.schedule(t, (seq, p as u32, Item::Ev(ev)));
        seq += 1;
    }
    let mut inbox: Vec<VecDeque<(SimTime, P::Msg)>> = channels.iter().map(|_| VecDeque::new()).collect();
    let mut rep = Report { events: vec![0; parts.len()], ..Report::default() };
    let mut outs: Vec<Out<P::Ev, P::Msg>> = (0..parts.len()).map(Out::new).collect();
    while q.peek_time().is_some_and(|t| t <= until) {
        let mut msg = None;
        let (now, (s, p, item)) = q
            .pop_with(|_, &(_, p, item)| match item {
                Item::Deliver(ch) => {
                    let (_, m) = inbox[ch as usize].pop_front().expect("a delivery finds its message");
                    msg = Some(m);
                    let next = inbox[ch as usize].front().map(|&(at, _)| (at, (seq, p, Item::Deliver(ch))));
                    // the delivery's first number, taken whether or not it
                    // names a next one (see `run`)
                    seq += 1;
                    next
                }
                _ => None,
            })
            .expect("peeked");
        let p = p as usize;
        match item {
            Item::Ev(ev) => parts[p].handle(now, ev, &mut outs[p]),
            Item::Deliver(ch) => parts[p].receive(now, ch as usize, msg.expect("popped"), &mut outs[p]),
            Item::Msg(..) => unreachable!(),
        }
        rep.events[p] += 1;
        if trace {
            rep.trace.push((now, s, p as u32));
        }
        for (at, op) in outs[p].v.drain(..) {
            match op {
                Op::Ev(to, ev) => {
                    rep.handed_over += (to as usize != p) as u64;
                    q.schedule(at, (seq, to, Item::Ev(ev)));
                    seq += 1;
                }
                Op::Push(ch, m) => {
                    let to = channels[ch as usize].1;
                    rep.handed_over += (to != p) as u64;
                    if inbox[ch as usize].is_empty() {
                        q.schedule(at, (seq, to as u32, Item::Deliver(ch)));
                    }
                    // taken whether or not the push schedules its delivery
                    seq += 1;
                    inbox[ch as usize].push_back((at, m));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mix64;

    const L: u64 = 1_000;

    /// A partition whose every choice hangs on the order of its events: its
    /// state hashes each event's time and payload in turn, and the state
    /// picks what it schedules (mostly one thing, sometimes none or two, so
    /// the population stays near its start): an event of its own, an event
    /// for another partition, or a message on a channel (to any partition,
    /// itself included). Delays sit on a 100 ps grid, a third of them zero,
    /// so ties in time are common.
    struct Toy {
        parts: usize,
        /// Push on channels (else only events).
        channels: bool,
        state: u64,
        seen: Vec<(u64, u32)>,
        /// Per channel from here: the last message's time.
        last: Vec<SimTime>,
        /// Stop the run after this many events here.
        stop_after: Option<usize>,
    }

    /// Channels per ordered pair of partitions: enough that a channel is
    /// often empty, so every way of numbering a delivery occurs.
    const PER: usize = 64;

    /// Channel `(from * k + to) * PER + j` leads from `from` to `to`.
    fn channels(k: usize) -> Vec<(usize, usize)> {
        (0..k * k * PER).map(|i| (i / PER / k, i / PER % k)).collect()
    }

    impl Toy {
        fn step(&mut self, now: SimTime, x: u32, out: &mut Out<u32, u32>) {
            self.state = mix64(self.state ^ now.0.rotate_left(17) ^ x as u64);
            self.seen.push((now.0, x));
            let n = match self.state % 16 {
                0 => 0,
                1 => 2,
                _ => 1,
            };
            for i in 0..n {
                let r = mix64(self.state.wrapping_add(i));
                let step = 100 * (r % 8) * ((r >> 8) % 4);
                let ev = (r >> 32) as u32;
                let me = out.me();
                let other = (me + 1 + (r >> 20) as usize % self.parts.max(2).saturating_sub(1)) % self.parts;
                match r >> 16 & 7 {
                    0 | 1 if self.parts > 1 => out.send(other, now + SimTime(L + step), ev),
                    2..=4 if self.channels => {
                        let to = if r >> 24 & 1 == 0 { me } else { other };
                        let ch = (me * self.parts + to) * PER + (r >> 40) as usize % PER;
                        let delay = if to == me { step } else { L + step };
                        // a FIFO link: never before the previous message
                        let at = (now + SimTime(delay)).max(self.last[ch]);
                        self.last[ch] = at;
                        out.push(ch, at, ev);
                    }
                    _ => out.local(now + SimTime(step), ev),
                }
            }
        }
    }

    impl Part for Toy {
        type Ev = u32;
        type Msg = u32;
        fn handle(&mut self, now: SimTime, ev: u32, out: &mut Out<u32, u32>) {
            self.step(now, ev, out);
        }
        fn receive(&mut self, now: SimTime, ch: usize, msg: u32, out: &mut Out<u32, u32>) {
            self.step(now, msg ^ (ch as u32) << 24, out);
        }
        fn stop(&self) -> bool {
            self.stop_after.is_some_and(|n| self.seen.len() >= n)
        }
    }

    fn toys(k: usize, channels: bool) -> Vec<Toy> {
        (0..k).map(|p| Toy { parts: k, channels, state: p as u64, seen: Vec::new(), last: vec![SimTime::ZERO; k * k * PER], stop_after: None }).collect()
    }

    fn initial(k: usize, n: usize) -> Vec<(SimTime, usize, u32)> {
        // many at the same times, in every partition
        (0..n).map(|i| (SimTime(100 * (i as u64 % 7)), i % k, i as u32)).collect()
    }

    /// Runs the toy serially and in windows (one thread, and one per
    /// partition) and checks that every event has the same place, time and
    /// serial number, and every partition the same history; and, with more
    /// than one partition, that the run had messages and ties between
    /// partitions to get right.
    fn same_as_serial(k: usize, with_channels: bool) -> NumberedBy {
        let until = SimTime(400_000);
        let init = initial(k, 200);
        let chans = channels(k);
        let mut serial = toys(k, with_channels);
        let want = run_serial(&mut serial, &chans, &init, until, true);
        assert!(want.trace.len() > 20_000, "k = {k}: only {} events", want.trace.len());
        let mut by = NumberedBy::default();
        for threads in [false, true] {
            let mut par = toys(k, with_channels);
            let cfg = Config { lookahead: SimTime(L), until, threads, trace: true };
            let got = run(&mut par, &chans, &init, cfg).unwrap();
            assert_eq!(got.trace.len(), want.trace.len(), "k = {k}, threads {threads}");
            if let Some(i) = (0..got.trace.len()).find(|&i| got.trace[i] != want.trace[i]) {
                panic!("k = {k}, threads {threads}: event {i}: {:?} != serial {:?}", got.trace[i], want.trace[i]);
            }
            assert_eq!(got.events, want.events);
            assert_eq!(got.handed_over, want.handed_over);
            for (a, b) in par.iter().zip(&serial) {
                assert_eq!(a.state, b.state);
                assert_eq!(a.seen, b.seen);
            }
            assert!(got.windows > 300, "{}", got.windows);
            by = got.numbered_by;
        }
        if k > 1 {
            // ties in time between partitions: the case the merge is for
            let ties = want.trace.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].2 != w[1].2).count();
            assert!(want.handed_over > 2_000 && ties > 500, "k = {k}: {} messages, {ties} ties", want.handed_over);
        }
        by
    }

    /// A partition that stops the run: with one partition, the run ends at
    /// the very event the serial run ends at; with two, the stopping one
    /// handles nothing more and the other finishes the window.
    #[test]
    fn a_stop_ends_the_run_after_the_event() {
        let (until, init) = (SimTime(400_000), initial(1, 200));
        let chans = channels(1);
        let stopping = |k: usize, n: usize| {
            let mut t = toys(k, true);
            t[0].stop_after = Some(n);
            t
        };
        let mut serial = stopping(1, 5_000);
        let want = run_serial(&mut serial, &chans, &init, until, true);
        assert!(want.stopped);
        assert_eq!(serial[0].seen.len(), 5_000);
        for threads in [false, true] {
            let mut par = stopping(1, 5_000);
            let got = run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: true }).unwrap();
            assert!(got.stopped, "threads {threads}");
            assert_eq!(got.trace, want.trace, "threads {threads}");
            assert_eq!(par[0].seen, serial[0].seen, "threads {threads}");
        }
        let (chans, init) = (channels(2), initial(2, 200));
        for threads in [false, true] {
            let mut par = stopping(2, 3_000);
            let got = run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: false }).unwrap();
            assert!(got.stopped, "threads {threads}");
            assert_eq!(par[0].seen.len(), 3_000, "threads {threads}");
            // the other partition went on to the end of the window, no further
            let (last0, last1) = (par[0].seen.last().unwrap().0, par[1].seen.last().unwrap().0);
            assert!(last1 < last0 + L && par[1].seen.len() > 1_000, "threads {threads}: {last1} against {last0}");
        }
        // the ancestry order stops where the exact one does
        for threads in [false, true] {
            let mut par = stopping(1, 5_000);
            let got = ancestry::run(&mut par, &channels(1), &initial(1, 200), Config { lookahead: SimTime(L), until, threads, trace: false }).unwrap();
            assert!(got.stopped, "threads {threads}");
            assert_eq!(par[0].seen, serial[0].seen, "threads {threads}");
            let mut par = stopping(2, 3_000);
            let got = ancestry::run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: false }).unwrap();
            assert!(got.stopped && par[0].seen.len() == 3_000, "threads {threads}");
        }
        // without a stop the run goes on
        let mut par = toys(2, true);
        let got = run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads: false, trace: false }).unwrap();
        assert!(!got.stopped && par[0].seen.len() > 3_000);
    }

    #[test]
    fn windows_reproduce_the_serial_order_event_for_event() {
        for k in [1, 2, 3, 4] {
            same_as_serial(k, false);
        }
    }

    #[test]
    fn channels_number_each_delivery_as_the_serial_queue_does() {
        for k in [2, 3, 4] {
            let by = same_as_serial(k, true);
            assert!(by.push > 100 && by.waiting > 100 && by.same_window > 100, "k = {k}: numbered by {by:?}");
        }
        same_as_serial(1, true);
    }

    /// The keyed order ([`keyed`]): windows, on one thread and on one per
    /// partition, against the keyed serial run, event for event; the run
    /// has messages and ties between partitions to get right.
    fn keyed_same_as_serial(k: usize, with_channels: bool) {
        let until = SimTime(400_000);
        let (init, chans) = (initial(k, 200), channels(k));
        let mut serial = toys(k, with_channels);
        let want = keyed::run_serial(&mut serial, &chans, &init, until, true);
        assert!(want.trace.len() > 20_000, "k = {k}: only {} events", want.trace.len());
        for threads in [false, true] {
            let mut par = toys(k, with_channels);
            let got = keyed::run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: true }).unwrap();
            assert_eq!(got.trace.len(), want.trace.len(), "k = {k}, threads {threads}");
            if let Some(i) = (0..got.trace.len()).find(|&i| got.trace[i] != want.trace[i]) {
                panic!("k = {k}, threads {threads}: event {i}: {:?} != serial {:?}", got.trace[i], want.trace[i]);
            }
            assert_eq!((&got.events, got.handed_over), (&want.events, want.handed_over));
            for (a, b) in par.iter().zip(&serial) {
                assert_eq!((a.state, &a.seen), (b.state, &b.seen));
            }
            assert!(got.windows > 300, "{}", got.windows);
        }
        if k > 1 {
            let ties = want.trace.windows(2).filter(|w| w[0].0 == w[1].0 && w[0].2 != w[1].2).count();
            assert!(want.handed_over > 2_000 && ties > 500, "k = {k}: {} messages, {ties} ties", want.handed_over);
        }
    }

    /// The ancestry order ([`ancestry`]): windows, on one thread and on one
    /// per partition, give every partition the history of the serial run
    /// ([`run_serial`], the queue's order), event for event, through ties
    /// between partitions that only a merge settles.
    fn ancestry_same_as_serial(k: usize, with_channels: bool) -> Report {
        let until = SimTime(400_000);
        let (init, chans) = (initial(k, 200), channels(k));
        let mut serial = toys(k, with_channels);
        let want = run_serial(&mut serial, &chans, &init, until, false);
        assert!(want.events.iter().sum::<u64>() > 20_000, "k = {k}: only {:?} events", want.events);
        let mut last = Report::default();
        for threads in [false, true] {
            let mut par = toys(k, with_channels);
            let got = ancestry::run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: false }).unwrap();
            for (p, (a, b)) in par.iter().zip(&serial).enumerate() {
                if let Some(i) = (0..a.seen.len().min(b.seen.len())).find(|&i| a.seen[i] != b.seen[i]) {
                    panic!("k = {k}, threads {threads}, partition {p}: event {i}: {:?} != serial {:?}", a.seen[i], b.seen[i]);
                }
                assert_eq!((a.state, a.seen.len()), (b.state, b.seen.len()), "k = {k}, threads {threads}, partition {p}");
            }
            assert_eq!((&got.events, got.handed_over), (&want.events, want.handed_over), "k = {k}, threads {threads}");
            assert!(got.windows > 300, "{}", got.windows);
            last = got;
        }
        last
    }

    #[test]
    fn ancestry_windows_reproduce_the_serial_order_event_for_event() {
        for k in [1, 2, 3, 4] {
            let r = ancestry_same_as_serial(k, false);
            if k > 1 {
                // the toy ties often: the merge has work
                assert!(r.merged > 1_000, "k = {k}: {} picoseconds merged", r.merged);
            }
        }
    }

    #[test]
    fn ancestry_channels_number_each_delivery_as_the_serial_queue_does() {
        for k in [2, 3, 4] {
            let r = ancestry_same_as_serial(k, true);
            let by = r.numbered_by;
            assert!(by.push > 100 && by.waiting > 100 && by.same_window > 100, "k = {k}: numbered by {by:?}");
        }
        ancestry_same_as_serial(1, true);
    }

    #[test]
    fn keyed_windows_reproduce_the_keyed_serial_order_event_for_event() {
        for k in [1, 2, 3, 4] {
            keyed_same_as_serial(k, false);
            keyed_same_as_serial(k, true);
        }
    }

    #[test]
    fn the_keyed_order_is_the_queues_with_one_partition_and_not_with_two() {
        // one partition, no channels: the keys count schedules in the order
        // made, as the queue's numbers do
        let until = SimTime(400_000);
        let (mut a, mut b) = (toys(1, false), toys(1, false));
        run_serial(&mut a, &[], &initial(1, 200), until, false);
        keyed::run_serial(&mut b, &[], &initial(1, 200), until, false);
        assert!(a[0].seen.len() > 20_000);
        assert_eq!(a[0].seen, b[0].seen);
        // two partitions: ties between them fall another way
        let (init, chans) = (initial(2, 200), channels(2));
        let (mut a, mut b) = (toys(2, true), toys(2, true));
        run_serial(&mut a, &chans, &init, until, false);
        keyed::run_serial(&mut b, &chans, &init, until, false);
        assert_ne!(a[0].seen, b[0].seen);
        // a stop ends a keyed run where its serial run ends
        let stopping = || {
            let mut t = toys(1, true);
            t[0].stop_after = Some(5_000);
            t
        };
        let (init, chans) = (initial(1, 200), channels(1));
        let mut serial = stopping();
        let want = keyed::run_serial(&mut serial, &chans, &init, until, true);
        for threads in [false, true] {
            let mut par = stopping();
            let got = keyed::run(&mut par, &chans, &init, Config { lookahead: SimTime(L), until, threads, trace: true }).unwrap();
            assert!(want.stopped && got.stopped, "threads {threads}");
            assert_eq!((&got.trace, &par[0].seen), (&want.trace, &serial[0].seen), "threads {threads}");
        }
    }

    #[test]
    fn the_toys_order_hangs_on_its_ties() {
        // The toy's serial trace with every tie in time broken by partition
        // instead of by serial number is a different order: so a windowed
        // run that got ties wrong would not pass the tests above.
        let (k, until) = (2, SimTime(200_000));
        let init = initial(k, 40);
        let want = run_serial(&mut toys(k, true), &channels(k), &init, until, true).trace;
        let mut by_part = want.clone();
        by_part.sort_by_key(|&(t, _, p)| (t, p));
        assert_ne!(by_part, want);
    }

    /// A partition whose events a closure handles, for the small tests
    /// below (its state lives in the closure).
    struct Script<E, F>(F, std::marker::PhantomData<E>);

    impl<E: Copy + Send + Sync, F: FnMut(SimTime, E, &mut Out<E, ()>) + Send> Part for Script<E, F> {
        type Ev = E;
        type Msg = ();
        fn handle(&mut self, now: SimTime, ev: E, out: &mut Out<E, ()>) {
            (self.0)(now, ev, out)
        }
    }

    fn script<E, F: FnMut(SimTime, E, &mut Out<E, ()>)>(f: F) -> Script<E, F> {
        Script(f, std::marker::PhantomData)
    }

    fn cfg(lookahead: u64, until: u64, threads: bool) -> Config {
        Config { lookahead: SimTime(lookahead), until: SimTime(until), threads, trace: false }
    }

    /// The three runners in windows: [`run`], [`keyed::run`], [`ancestry::run`].
    #[derive(Clone, Copy, Debug, PartialEq)]
    enum Order {
        Exact,
        Keyed,
        Ancestry,
    }

    /// (threads, order): every way to run in windows.
    fn both_ways() -> Vec<(bool, Order)> {
        [false, true].into_iter().flat_map(|t| [Order::Exact, Order::Keyed, Order::Ancestry].map(|o| (t, o))).collect()
    }

    fn run_either<P: Part>(
        order: Order,
        parts: &mut [P],
        chans: &[(usize, usize)],
        init: &[(SimTime, usize, P::Ev)],
        cfg: Config,
    ) -> Result<Report, WindowError> {
        match order {
            Order::Exact => run(parts, chans, init, cfg),
            Order::Keyed => keyed::run(parts, chans, init, cfg),
            Order::Ancestry => ancestry::run(parts, chans, init, cfg),
        }
    }

    #[test]
    fn a_message_sooner_than_the_lookahead_is_refused_with_its_partitions() {
        let hasty = |push: bool| {
            script(move |now, _: (), out| {
                if out.me() == 0 {
                    if push {
                        out.push(0, now + SimTime(10), ());
                    } else {
                        out.send(1, now + SimTime(10), ());
                    }
                }
            })
        };
        for (threads, order) in both_ways() {
            for push in [false, true] {
                let err = run_either(order, &mut [hasty(push), hasty(push)], &[(0, 1)], &[(SimTime(5), 0, ())], cfg(100, 1_000, threads)).unwrap_err();
                assert_eq!(err, WindowError::Lookahead { from: 0, to: 1, now: SimTime(5), at: SimTime(15), lookahead: SimTime(100) });
                assert!(err.to_string().contains("partition 0"), "{err}");
            }
        }
    }

    #[test]
    fn a_push_out_of_order_or_from_the_wrong_end_is_refused() {
        let bad = |which: u8| {
            script(move |now, _: (), out| {
                if which == 0 {
                    out.push(0, now + SimTime(500), ());
                    out.push(0, now + SimTime(400), ());
                } else {
                    out.push(1, now + SimTime(500), ());
                }
            })
        };
        let chans = [(0, 1), (1, 0)];
        for (threads, order) in both_ways() {
            let err = run_either(order, &mut [bad(0), bad(0)], &chans, &[(SimTime(5), 0, ())], cfg(100, 1_000, threads)).unwrap_err();
            assert_eq!(err, WindowError::ChannelOrder { ch: 0, at: SimTime(405), last: SimTime(505) });
            let err = run_either(order, &mut [bad(1), bad(1)], &chans, &[(SimTime(5), 0, ())], cfg(100, 1_000, threads)).unwrap_err();
            assert_eq!(err, WindowError::NotSender { part: 0, ch: 1 });
        }
    }

    #[test]
    fn a_run_without_a_stop_ends_when_nothing_is_pending() {
        // `until` = the end of time, as the simulator runs without a stop;
        // one event sits at the very last picosecond
        let few = || {
            let mut n = 0;
            script(move |now, _: (), out| {
                n += 1;
                if n < 5 {
                    out.send(1 - out.me(), now + SimTime(1_000), ());
                }
            })
        };
        let init = [(SimTime(0), 0, ()), (SimTime(u64::MAX), 1, ())];
        for (threads, order) in both_ways() {
            let want = if order == Order::Keyed { keyed::run_serial } else { run_serial }(&mut [few(), few()], &[], &init, SimTime(u64::MAX), true);
            assert_eq!(want.events, vec![5, 5]);
            let got = run_either(order, &mut [few(), few()], &[], &init, Config { trace: true, ..cfg(1_000, u64::MAX, threads) }).unwrap();
            assert_eq!(got.events, want.events, "threads {threads}, {order:?}");
            if order != Order::Ancestry {
                // (the ancestry order keeps no trace)
                assert_eq!(got.trace, want.trace, "threads {threads}, {order:?}");
            }
        }
    }

    #[test]
    fn a_partitions_panic_ends_the_run_as_itself() {
        let faulty = || {
            script(|now, n: u32, out| {
                assert!(!(out.me() == 1 && n == 7), "the model's own bug");
                out.send(1 - out.me(), now + SimTime(1_000), n + 1);
            })
        };
        for (threads, order) in both_ways() {
            let r = std::panic::catch_unwind(|| run_either(order, &mut [faulty(), faulty()], &[], &[(SimTime(0), 0, 0)], cfg(1_000, 1_000_000, threads)));
            let msg = r.err().and_then(|p| p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()));
            assert_eq!(msg.as_deref(), Some("the model's own bug"), "threads {threads}, {order:?}");
        }
    }

    #[test]
    fn schedules_in_the_past_or_to_no_partition_are_refused() {
        let wrong = |past: bool| {
            script(move |now, _: (), out| {
                if past {
                    out.local(SimTime(now.0 - 1), ());
                } else {
                    out.send(5, now + SimTime(1_000), ());
                }
            })
        };
        for (threads, order) in both_ways() {
            let err = run_either(order, &mut [wrong(true), wrong(true)], &[], &[(SimTime(5), 1, ())], cfg(100, 1_000, threads)).unwrap_err();
            assert_eq!(err, WindowError::Past { part: 1, now: SimTime(5), at: SimTime(4) });
            let err = run_either(order, &mut [wrong(false), wrong(false)], &[], &[(SimTime(5), 0, ())], cfg(100, 1_000, threads)).unwrap_err();
            assert_eq!(err, WindowError::NoSuchPart { from: 0, to: 5, parts: 2 });
            assert_eq!(run_either(order, &mut [wrong(false)], &[], &[], cfg(0, 1_000, threads)).unwrap_err(), WindowError::NoLookahead);
        }
    }

    /// The ancestry order's packed keys have limits; past one, the run
    /// fails naming the partition, never a wrong order.
    #[test]
    fn the_ancestry_orders_key_limits_are_errors() {
        // one event scheduling 2^16 + 1 events: the last one's rank, 2^16,
        // does not fit
        let burst = || {
            script(|now, first: bool, out| {
                if first {
                    for _ in 0..(1 << 16) + 1 {
                        out.local(now + SimTime(10), false);
                    }
                }
            })
        };
        for threads in [false, true] {
            let err = ancestry::run(&mut [burst(), burst()], &[], &[(SimTime(0), 1, true)], cfg(100, 1_000, threads)).unwrap_err();
            assert_eq!(err, WindowError::Capacity { part: 1, what: "schedules" });
            assert!(err.to_string().contains("partition 1"), "{err}");
            // one fewer is fine
            let ok = script(|now, first: bool, out| {
                if first {
                    for _ in 0..1 << 16 {
                        out.local(now + SimTime(10), false);
                    }
                }
            });
            let rep = ancestry::run(&mut [ok], &[], &[(SimTime(0), 0, true)], cfg(100, 1_000, threads)).unwrap();
            assert_eq!(rep.events, vec![(1 << 16) + 1]);
        }
        let mut many: Vec<_> = (0..255).map(|_| script(|_, (), _| {})).collect();
        assert_eq!(ancestry::run(&mut many, &[], &[], cfg(100, 1_000, false)).unwrap_err(), WindowError::Capacity { part: 254, what: "partitions" });
    }

    #[test]
    fn idle_stretches_are_skipped_not_stepped() {
        let sparse = script(|now, _: (), out| out.local(now + SimTime(1_000_000_000), ()));
        let mut sparse = [sparse];
        for order in [Order::Exact, Order::Keyed, Order::Ancestry] {
            let rep = run_either(order, &mut sparse, &[], &[(SimTime(0), 0, ())], cfg(1_000, 10_000_000_000, false)).unwrap();
            assert_eq!(rep.events, vec![11]);
            assert_eq!(rep.windows, 11);
        }
    }
}
