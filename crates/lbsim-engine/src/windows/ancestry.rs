//! Parallel windows in the serial queue's exact order, without merging
//! every window's events (issue 19's second core; bench/README.md, twelfth
//! pass).
//!
//! [`EventQueue`](crate::EventQueue) breaks a tie in time by insertion, and
//! every event is inserted while another is handled (or before the run).
//! So of two events tied in time, the one whose scheduler was handled first
//! goes first, and of two from one scheduler, the one scheduled first. Of
//! two schedulers, the one handled at the earlier time was handled first,
//! and of two handled by one partition, the one its run handled first. The
//! order is open only between two schedulers handled at one picosecond by
//! two partitions; it is then their own schedulers' order, and so on up.
//!
//! [`super::run`] settles every tie at the meeting by merging the window's
//! events of all partitions. Here a partition orders its queue by where
//! each event's scheduler falls in its own run, and the meeting merges only
//! the events handled at picoseconds at which two or more partitions
//! handled something (0.05 % of B1's events, 0.7 % of the k = 8 fat-tree's,
//! cut in two by place; `window_stats`' tie study, bench/README.md twelfth
//! pass). Every partition merges them all, the same way, and keeps each
//! merged event's place among the events at its picosecond (`g`). With two
//! partitions each finds them by walking its own log and looking into the
//! other's only where the other's sketch of its times has the time; with
//! more, by walking every log (a picosecond two *other* partitions share
//! orders the messages they both send here).
//!
//! A queue entry's key is `time << 64 | key`, `key` 64 bits:
//! - a partition's own schedules: its running count of schedules (the
//!   serial queue's insertion number, counted per partition; a delivery
//!   takes one number for the delivery after it, whether or not there is
//!   one, as [`super::run_serial`] counts), `number << 24`;
//! - another partition's schedules, received at a meeting, by where their
//!   scheduler falls among this partition's events: between this
//!   partition's events `n - 1` and `n`, after event `n - 1`'s schedules
//!   and before event `n`'s, `(first(n) - 1) << 24 | sub`, where `first(n)`
//!   is event `n`'s first number and `sub` counts from 1 the other
//!   partitions' schedules falling below the same number, in the order of
//!   their schedulers and ranks;
//! - the run's initial events: their index, below everything (numbers
//!   start at 2).
//!
//! The entry also carries its scheduler and its rank among the scheduler's
//! schedules, for the merge. Past the packed fields' limits (2^40 numbers
//! or events per partition, 2^16 schedules from one event, 2^24 remote
//! schedules in one gap, 254 partitions) the run fails with
//! [`WindowError::Capacity`].
//!
//! A channel keeps the FIFO rule of a port, as in [`super::run`]: its next
//! delivery is scheduled by the push if every message before it had been
//! delivered when it was pushed, and otherwise by the delivery before it.
//! The receiver decides which at the meeting from its last delivery's time
//! and, at a tie, from the merge.

use super::{in_turn, note_pending, rehome_heap, threaded, Config, NumberedBy, Op, Out, Part, Report, Side, WindowError};
use crate::units::SimTime;
use std::cmp::Ordering;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for the merged places' map, whose keys are already spread
/// (`partition << 48 | place in its run`): one [`crate::mix64`].
#[derive(Default)]
struct Mix(u64);

impl Hasher for Mix {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = crate::mix64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = crate::mix64(self.0 ^ x);
    }
}

type Places = HashMap<u64, u32, BuildHasherDefault<Mix>>;

/// The merged places' key of the event `li` of partition `part`.
#[inline]
fn place_key(part: u32, li: u64) -> u64 {
    debug_assert!(li < 1 << 48, "2^48 events in one partition");
    (part as u64) << 48 | li
}

/// The partition of the run's start (the scheduler of the initial events).
const ROOT: u32 = 255;
/// The first number a partition gives its own schedules (below it: the
/// initial events, and another partition's schedules falling before this
/// partition's first event).
const FIRST_NUMBER: u64 = 2;
/// Bits of a key below a schedule's number: a remote schedule's `sub`.
const SUB_BITS: u32 = 24;
/// Limits of the packed keys: schedules and events per partition, a
/// schedule's rank, partitions.
const MAX_NUMBER: u64 = 1 << 40;
const MAX_RANK: u32 = 1 << 16;

/// An event handled somewhere: its partition, its place in that
/// partition's run, its time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Who {
    part: u32,
    li: u64,
    t: SimTime,
}

impl Who {
    const ROOT: Who = Who { part: ROOT, li: 0, t: SimTime::ZERO };
}

#[derive(Clone, Copy)]
enum Item<E> {
    Ev(E),
    /// The delivery of channel `.0`'s head message.
    Deliver(u32),
}

/// A queued item: `k` is `time << 64 | key` (one 128-bit comparison),
/// `who` its scheduler and rank packed (`partition << 56 | place << 16 |
/// rank`; the run's start keeps an initial event's index in `place`), and
/// `by_t` its scheduler's time.
struct Ent<E> {
    k: u128,
    item: Item<E>,
    who: u64,
    by_t: SimTime,
}

impl<E> Ent<E> {
    #[inline]
    fn new(t: SimTime, key: u64, item: Item<E>, by: Who, rank: u32) -> Self {
        debug_assert!(by.li < MAX_NUMBER && rank < MAX_RANK, "checked where made");
        Ent { k: (t.0 as u128) << 64 | key as u128, item, who: (by.part as u64) << 56 | by.li << 16 | rank as u64, by_t: by.t }
    }
    #[inline]
    fn t(&self) -> SimTime {
        SimTime((self.k >> 64) as u64)
    }
}

/// A packed scheduler and rank ([`Ent`]'s `who`), with the scheduler's time.
#[inline]
fn unpack(who: u64, by_t: SimTime) -> (Who, u32) {
    let (part, li, rank) = ((who >> 56) as u32, who >> 16 & (MAX_NUMBER - 1), (who & 0xFFFF) as u32);
    if part == ROOT {
        (Who::ROOT, li as u32)
    } else {
        (Who { part, li, t: by_t }, rank)
    }
}

impl<E> PartialEq for Ent<E> {
    fn eq(&self, o: &Self) -> bool {
        self.k == o.k
    }
}
impl<E> Eq for Ent<E> {}
impl<E> PartialOrd for Ent<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Ent<E> {
    // reversed: the earliest on top of the max-heap
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        o.k.cmp(&self.k)
    }
}

/// An event handled in a window, as the meeting sees it.
#[derive(Clone, Copy)]
struct Done {
    t: SimTime,
    /// The partition's count of schedules when the event was popped.
    first: u64,
    /// Its scheduler and rank, as its queue entry held them.
    who: u64,
    by_t: SimTime,
}

impl Done {
    #[inline]
    fn by(&self) -> (Who, u32) {
        unpack(self.who, self.by_t)
    }
}

/// Bits in a window's sketch of its event times.
const SKETCH_BITS: usize = 4096;

/// The sketch's bit for time `t`.
#[inline]
fn sketch_bit(t: SimTime) -> usize {
    (t.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SKETCH_BITS.trailing_zeros())) as usize
}

#[derive(Clone, Copy)]
enum Msg<E, M> {
    Ev(E),
    Push(u32, M),
}

/// A schedule for another partition.
#[derive(Clone, Copy)]
struct Sent<E, M> {
    at: SimTime,
    by: Who,
    rank: u32,
    msg: Msg<E, M>,
}

/// A partition's private run state (aligned as [`super::Lane`] is).
#[repr(align(128))]
struct Lane<E, M> {
    me: usize,
    heap: BinaryHeap<Ent<E>>,
    out: Out<E, M>,
    /// The next number for a schedule made here.
    count: u64,
    /// Events handled here so far.
    handled: u64,
    /// Channels: `(from, to)` partitions.
    chans: Vec<(u32, u32)>,
    /// Per channel into this partition: messages not yet delivered, with
    /// their time, scheduler and rank.
    inbox: Vec<VecDeque<(SimTime, Who, u32, M)>>,
    /// Per channel into this partition: the last delivery (its time, its
    /// place here, the number it took for the next one).
    delivered: Vec<Option<(SimTime, u64, u64)>>,
    /// Per channel from this partition: the last message's time.
    last: Vec<SimTime>,
    /// Where the last remote schedule fell (the high word of its key), and
    /// its `sub` there.
    gap: (u64, u64),
    /// Each merged event's place among all partitions' events at its
    /// picosecond, by `(partition, place in its run)`.
    g: Places,
    /// Scratch for the meeting's incoming schedules.
    incoming: Vec<Sent<E, M>>,
    /// A meeting's error, reported with the next window.
    err: Option<WindowError>,
    events: u64,
    handed_over: u64,
    busiest: u64,
    merged: u64,
    numbered_by: NumberedBy,
}

/// What a partition publishes about one window.
#[repr(align(128))]
struct Rec<E, M> {
    /// Schedules for each partition (its own slot unused).
    out: Vec<Vec<Sent<E, M>>>,
    /// The window's events, in order.
    log: Vec<Done>,
    /// The place of `log[0]` in the partition's run.
    base: u64,
    /// Which times the window's events fall on, hashed ([`sketch_bit`]):
    /// another partition looks here before it looks in the log.
    sketch: [u64; SKETCH_BITS / 64],
    /// Earliest time pending here after the window, heap and outboxes.
    next: Option<u64>,
    handled: u64,
    err: Option<WindowError>,
    stopped: bool,
}

impl<E, M> Rec<E, M> {
    fn new(parts: usize) -> Self {
        Rec {
            out: (0..parts).map(|_| Vec::new()).collect(),
            log: Vec::new(),
            base: 0,
            sketch: [0; SKETCH_BITS / 64],
            next: None,
            handled: 0,
            err: None,
            stopped: false,
        }
    }
}

impl<E: Copy, M: Copy> Lane<E, M> {
    fn new(me: usize, chans: &[(u32, u32)]) -> Self {
        let n = chans.len();
        Lane {
            me,
            heap: BinaryHeap::new(),
            out: Out::new(me),
            count: FIRST_NUMBER,
            handled: 0,
            chans: chans.to_vec(),
            inbox: (0..n).map(|_| VecDeque::new()).collect(),
            delivered: vec![None; n],
            last: vec![SimTime::ZERO; n],
            gap: (u64::MAX, 0),
            g: Places::default(),
            incoming: Vec::new(),
            err: None,
            events: 0,
            handed_over: 0,
            busiest: 0,
            merged: 0,
            numbered_by: NumberedBy::default(),
        }
    }

    /// Places one schedule numbered `n` of the event `by`: here, or in an
    /// outbox; an error names the rule it breaks.
    #[inline]
    fn place(&mut self, by: Who, (n, rank): (u64, u32), at: SimTime, op: Op<E, M>, rec: &mut Rec<E, M>, lookahead: SimTime) -> Result<(), WindowError> {
        let now = by.t;
        if at < now {
            return Err(WindowError::Past { part: self.me, now, at });
        }
        if n >= MAX_NUMBER || rank >= MAX_RANK || by.li >= MAX_NUMBER {
            return Err(WindowError::Capacity { part: self.me, what: "schedules" });
        }
        let parts = rec.out.len();
        let key = n << SUB_BITS;
        let (to, msg) = match op {
            Op::Ev(to, ev) if to as usize == self.me => {
                self.heap.push(Ent::new(at, key, Item::Ev(ev), by, rank));
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
                    // both ends here: the inbox is the channel
                    let q = &mut self.inbox[c];
                    if q.is_empty() {
                        self.heap.push(Ent::new(at, key, Item::Deliver(ch), by, rank));
                    }
                    q.push_back((at, by, rank, m));
                    return Ok(());
                }
                (to, Msg::Push(ch, m))
            }
        };
        if at < now + lookahead {
            return Err(WindowError::Lookahead { from: self.me, to, now, at, lookahead });
        }
        self.handed_over += 1;
        note_pending(&mut rec.next, at);
        rec.out[to].push(Sent { at, by, rank, msg });
        Ok(())
    }

    /// The order of two schedulers in the serial run (`Equal`: the same).
    fn sched_cmp(&self, x: Who, y: Who) -> Ordering {
        if x == y {
            return Ordering::Equal;
        }
        match (x.part == ROOT, y.part == ROOT) {
            (true, _) => return Ordering::Less,
            (_, true) => return Ordering::Greater,
            _ => {}
        }
        if x.t != y.t {
            return x.t.cmp(&y.t);
        }
        if x.part == y.part {
            return x.li.cmp(&y.li);
        }
        // handled at one picosecond by two partitions: merged at the
        // meeting after their window
        let (gx, gy) = (self.g.get(&place_key(x.part, x.li)), self.g.get(&place_key(y.part, y.li)));
        debug_assert!(gx.is_some() && gy.is_some(), "schedulers tied across partitions were merged: {x:?} {y:?}");
        gx.cmp(&gy)
    }

    /// Merges the events of the window handled at picoseconds at which two
    /// or more partitions handled something, noting each one's place there.
    fn merge_ties(&mut self, recs: &[&Rec<E, M>]) {
        let k = recs.len();
        let mut runs: Vec<(u32, usize, usize)> = Vec::with_capacity(k);
        if k == 2 {
            // the common case: each side walks its own log, and looks in the
            // other's only where the other's sketch has the time; both
            // sides find the same picoseconds and merge them alike
            let me = self.me;
            let (mine, other) = (&recs[me].log, &recs[1 - me].log);
            let sketch = &recs[1 - me].sketch;
            let mut i = 0;
            while i < mine.len() {
                let t = mine[i].t;
                let mut ie = i + 1;
                while ie < mine.len() && mine[ie].t == t {
                    ie += 1;
                }
                let b = sketch_bit(t);
                if sketch[b / 64] >> (b % 64) & 1 != 0 {
                    let j = other.partition_point(|d| d.t < t);
                    let mut je = j;
                    while je < other.len() && other[je].t == t {
                        je += 1;
                    }
                    if je > j {
                        runs.clear();
                        runs.push((me as u32, i, ie));
                        runs.push((1 - me as u32, j, je));
                        runs.sort_unstable();
                        self.merge_at(recs, &mut runs);
                    }
                }
                i = ie;
            }
            return;
        }
        let mut at = vec![0usize; k];
        while let Some(t) = (0..k).filter_map(|p| recs[p].log.get(at[p]).map(|d| d.t)).min() {
            runs.clear();
            for p in 0..k {
                let log = &recs[p].log;
                let s = at[p];
                let mut e = s;
                while e < log.len() && log[e].t == t {
                    e += 1;
                }
                if e > s {
                    runs.push((p as u32, s, e));
                }
                at[p] = e;
            }
            if runs.len() >= 2 {
                self.merge_at(recs, &mut runs);
            }
        }
    }

    /// Merges `runs` (per partition, its events `[start, end)` at one
    /// picosecond): places the least head, one at a time (such ties are
    /// rare and short).
    fn merge_at(&mut self, recs: &[&Rec<E, M>], runs: &mut [(u32, usize, usize)]) {
        self.merged += 1;
        let mut place = 0u32;
        loop {
            let mut best: Option<usize> = None;
            for r in 0..runs.len() {
                let (p, s, e) = runs[r];
                if s == e {
                    continue;
                }
                let d = recs[p as usize].log[s];
                best = match best {
                    None => Some(r),
                    Some(b) => {
                        let (q, sb, _) = runs[b];
                        let o = recs[q as usize].log[sb];
                        let ((db, dr), (ob, or)) = (d.by(), o.by());
                        let less = self.sched_cmp(db, ob).then(dr.cmp(&or)) == Ordering::Less;
                        Some(if less { r } else { b })
                    }
                };
            }
            let Some(b) = best else { break };
            let (p, s, _) = runs[b];
            self.g.insert(place_key(p, recs[p as usize].base + s as u64), place);
            place += 1;
            runs[b].1 += 1;
        }
    }

    /// The key of a schedule of `by` (another partition's event of the
    /// window just met), the next in its gap: see the module's docs.
    fn remote_key(&mut self, by: Who, mine: &Rec<E, M>) -> Result<u64, WindowError> {
        let log = &mine.log;
        let mut n = log.partition_point(|d| d.t < by.t);
        if n < log.len() && log[n].t == by.t {
            let gb = self.g[&place_key(by.part, by.li)];
            while n < log.len() && log[n].t == by.t && self.g[&place_key(self.me as u32, mine.base + n as u64)] < gb {
                n += 1;
            }
        }
        // the number below which this partition's schedules come before
        // `by`'s (events with no schedules of their own leave several
        // places between the same two numbers: one gap)
        let below = if n < log.len() { log[n].first } else { self.count } - 1;
        if self.gap.0 == below {
            self.gap.1 += 1;
        } else {
            self.gap = (below, 1);
        }
        if self.gap.1 >= 1 << SUB_BITS {
            return Err(WindowError::Capacity { part: self.me, what: "schedules from other partitions between two of its own" });
        }
        Ok(below << SUB_BITS | self.gap.1)
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
        self.delivered = self.delivered.clone();
        self.last = self.last.clone();
        for r in recs {
            *r = Rec::new(r.out.len());
        }
    }

    fn window(&mut self, part: &mut P, rec: &mut Self::Rec, hi: SimTime, cfg: &Config) {
        rec.out.iter_mut().for_each(Vec::clear);
        rec.log.clear();
        rec.sketch = [0; SKETCH_BITS / 64];
        (rec.base, rec.next, rec.handled, rec.err, rec.stopped) = (self.handled, None, 0, self.err.take(), false);
        if rec.err.is_some() {
            return;
        }
        let me = self.me as u32;
        loop {
            let Some(top) = self.heap.peek_mut() else { break };
            let now = top.t();
            if now > hi {
                break;
            }
            let (item, by_who, by_t) = (top.item, top.who, top.by_t);
            let first = self.count;
            let who = Who { part: me, li: self.handled, t: now };
            match item {
                Item::Ev(ev) => {
                    PeekMut::pop(top);
                    part.handle(now, ev, &mut self.out);
                }
                Item::Deliver(ch) => {
                    // the number for the next delivery, taken either way
                    let next = self.count;
                    self.count += 1;
                    let q = &mut self.inbox[ch as usize];
                    let (_, _, _, m) = q.pop_front().expect("a delivery finds its message");
                    self.delivered[ch as usize] = Some((now, self.handled, next));
                    match q.front() {
                        Some(&(t, ..)) => {
                            let mut top = top;
                            *top = Ent::new(t, next << SUB_BITS, Item::Deliver(ch), who, 0);
                        }
                        None => drop(PeekMut::pop(top)),
                    }
                    part.receive(now, ch as usize, m, &mut self.out);
                }
            }
            rec.log.push(Done { t: now, first, who: by_who, by_t });
            let b = sketch_bit(now);
            rec.sketch[b / 64] |= 1 << (b % 64);
            self.handled += 1;
            self.events += 1;
            rec.handled += 1;
            let mut v = std::mem::take(&mut self.out.v);
            for (at, op) in v.drain(..) {
                let n = self.count;
                self.count += 1;
                if let Err(e) = self.place(who, (n, (n - first) as u32), at, op, rec, cfg.lookahead) {
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
            note_pending(&mut rec.next, e.t());
        }
    }

    fn meet(&mut self, recs: &[&Self::Rec], _cfg: &Config) -> Option<u64> {
        if recs.len() > 1 {
            self.merge_ties(recs);
        }
        let me = self.me;
        let mine = recs[me];
        // what the others scheduled here, in the order of their schedulers
        // (a picosecond's events by their merged places if two partitions
        // handled events at it, else by their place in the one that did)
        let mut inc = std::mem::take(&mut self.incoming);
        inc.clear();
        for (p, r) in recs.iter().enumerate() {
            if p != me {
                inc.extend_from_slice(&r.out[me]);
            }
        }
        // each partition's are in its order already: with one sender, no sort
        if recs.iter().enumerate().filter(|&(p, r)| p != me && !r.out[me].is_empty()).count() > 1 {
            inc.sort_by_cached_key(|s| (s.by.t, self.g.get(&place_key(s.by.part, s.by.li)).map_or(s.by.li, |&g| g as u64), s.rank));
        }
        for s in inc.drain(..) {
            match s.msg {
                Msg::Ev(ev) => match self.remote_key(s.by, mine) {
                    Ok(key) => self.heap.push(Ent::new(s.at, key, Item::Ev(ev), s.by, s.rank)),
                    Err(e) => self.err = self.err.take().or(Some(e)),
                },
                Msg::Push(ch, m) => {
                    let c = ch as usize;
                    if self.inbox[c].is_empty() {
                        // was the message before still in flight when this one was pushed?
                        let chained = self.delivered[c]
                            .filter(|&(t, li, _)| t > s.by.t || (t == s.by.t && self.g[&place_key(me as u32, li)] > self.g[&place_key(s.by.part, s.by.li)]));
                        match chained {
                            Some((t, li, next)) => {
                                self.numbered_by.same_window += 1;
                                let by = Who { part: me as u32, li, t };
                                self.heap.push(Ent::new(s.at, next << SUB_BITS, Item::Deliver(ch), by, 0));
                            }
                            None => {
                                self.numbered_by.push += 1;
                                match self.remote_key(s.by, mine) {
                                    Ok(key) => self.heap.push(Ent::new(s.at, key, Item::Deliver(ch), s.by, s.rank)),
                                    Err(e) => self.err = self.err.take().or(Some(e)),
                                }
                            }
                        }
                    } else {
                        self.numbered_by.waiting += 1;
                    }
                    self.inbox[c].push_back((s.at, s.by, s.rank, m));
                }
            }
        }
        self.incoming = inc;
        super::meeting_end(self.me, &mut self.busiest, recs.iter().map(|r| (r.handled, r.next)))
    }

    fn outcome(rec: &Self::Rec) -> (Option<&WindowError>, bool) {
        (rec.err.as_ref(), rec.stopped)
    }
}

/// Runs `parts` as [`super::run`] does (same arguments, same errors, each
/// partition handling its events in [`super::run_serial`]'s order, so with
/// its results), merging at a meeting only the events at picoseconds at
/// which two or more partitions handled something. The report has no
/// trace; `merged` counts those picoseconds, and `numbered_by` the
/// deliveries on channels between partitions by what numbered them (`push`:
/// the channel was empty; `waiting`: the delivery before, with the message
/// queued behind it; `same_window`: the delivery before, already handled
/// when the message came).
pub fn run<P: Part>(parts: &mut [P], channels: &[(usize, usize)], initial: &[(SimTime, usize, P::Ev)], cfg: Config) -> Result<Report, WindowError> {
    let Some((chans, first)) = super::prepare(parts.len(), channels, initial, &cfg)? else { return Ok(Report::default()) };
    let k = parts.len();
    if k >= ROOT as usize {
        return Err(WindowError::Capacity { part: k - 1, what: "partitions" });
    }
    if initial.len() as u64 > 1 << SUB_BITS {
        return Err(WindowError::Capacity { part: 0, what: "initial events" });
    }
    let mut lanes: Vec<Lane<P::Ev, P::Msg>> = (0..k).map(|me| Lane::new(me, &chans)).collect();
    for (i, &(t, p, ev)) in initial.iter().enumerate() {
        lanes[p].heap.push(Ent::new(t, i as u64, Item::Ev(ev), Who { li: i as u64, ..Who::ROOT }, 0));
    }
    let (windows, stopped) = if cfg.threads { threaded(parts, &mut lanes, first, cfg)? } else { in_turn(parts, &mut lanes, first, cfg)? };
    // a last meeting's error, with no window after it
    if let Some(e) = lanes.iter_mut().find_map(|l| l.err.take()) {
        return Err(e);
    }
    let numbered_by = lanes.iter().map(|l| &l.numbered_by).sum();
    Ok(Report {
        events: lanes.iter().map(|l| l.events).collect(),
        windows,
        stopped,
        handed_over: lanes.iter().map(|l| l.handed_over).sum(),
        busiest: lanes[0].busiest,
        merged: lanes[0].merged,
        numbered_by,
        ..Report::default()
    })
}
