//! Path-selection table (Expeditus §3.1-§3.2, Fig. 5; shared with
//! Clairvoyant): per switch, flow id → (egress port, PSS bit, valid bit),
//! an entry timing out after `timeout` without a matching packet.
//!
//! - valid: the flow's path is set; its packets take `port`;
//! - PSS = 0, not valid: a path selection is in progress; packets go by ECMP
//!   and start no new selection (Alg. 1 lines 6-7);
//! - no entry, or an entry idle for longer than the timeout, or a valid
//!   entry whose port is no longer among the routing candidates (its link
//!   failed): start a selection.
//!
//! Two stores, the same rules:
//! - an exact map keyed by the 5-tuple hash with exact last-seen expiry
//!   (the default: the authors' artifact keeps an exact list). Expiry is
//!   lazy; expired entries are purged when the table has doubled since the
//!   last purge (this never changes a lookup);
//! - a direct-mapped table of N entries indexed by the flow hash (§3.1: "a
//!   PST of 64K entries should cover all scenarios"; the paper does not say
//!   what a collision does): a flow whose slot holds another flow's entry
//!   finds nothing, and its own entry replaces the other (counted in
//!   `evictions` when the evicted entry was still live).

use crate::edge::IdHasher;
use crate::params::{ParamError, Params};
use lbsim_engine::{mix64, SimTime};
use lbsim_net::{NodeId, PortId};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub port: PortId,
    /// Path selection has completed (1) or not (0).
    pub pss: bool,
    pub valid: bool,
    pub last: SimTime,
    /// The flow's next packet carries the answer of a selection (the
    /// artifact's "SYN-ACK is the Exp-response"); cleared by [`Pst::take_mark`].
    pub mark: bool,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Valid(PortId),
    /// A selection is in progress (PSS = 0): forward by ECMP.
    Pending,
    /// No usable entry: start a path selection.
    Select,
}

/// Bytes per slot of a direct-mapped table (for the memory check before a run).
pub const SLOT_BYTES: usize = std::mem::size_of::<Option<(u64, Entry)>>();

/// Largest direct-mapped table (4 M slots, ~100 MB per switch).
pub const MAX_ENTRIES: u64 = 1 << 22;

/// Whether `e` is still live at `now` (its idle time within `timeout`).
fn live_at(e: &Entry, now: SimTime, timeout: SimTime) -> bool {
    now.0.saturating_sub(e.last.0) <= timeout.0
}

/// The path-selection tables of every switch (Expeditus and Clairvoyant),
/// each made on its switch's first use, sized by the scheme parameters
/// `pst_timeout_us` and `pst_entries`.
pub struct Tables {
    tables: Vec<Option<Pst>>,
    timeout: SimTime,
    entries: usize,
}

impl Tables {
    pub fn new(p: &Params, nodes: usize) -> Result<Tables, ParamError> {
        let x = p.num("pst_entries")?;
        if x.fract() != 0.0 || !(0.0..=MAX_ENTRIES as f64).contains(&x) {
            let msg = format!("must be 0 (an exact table) or a whole number of slots up to {MAX_ENTRIES}, got {}", lbsim_engine::fmt_num(x));
            return Err(ParamError { key: "pst_entries".into(), msg });
        }
        Ok(Tables { tables: (0..nodes).map(|_| None).collect(), timeout: p.duration("pst_timeout_us", false)?, entries: x as usize })
    }

    /// Switch `sw`'s table, made on first use.
    pub fn at(&mut self, sw: NodeId) -> &mut Pst {
        let (t, n) = (self.timeout, self.entries);
        self.tables[sw.idx()].get_or_insert_with(|| Pst::new(t, n))
    }

    /// Switch `sw`'s table, if it has one yet.
    pub fn get(&self, sw: NodeId) -> Option<&Pst> {
        self.tables[sw.idx()].as_ref()
    }

    /// Live entries replaced by a colliding flow's, over every switch
    /// (a direct-mapped table only).
    pub fn evictions(&self) -> u64 {
        self.tables.iter().flatten().map(|t| t.evictions).sum()
    }
}

enum Store {
    Exact(HashMap<u64, Entry, BuildHasherDefault<IdHasher>>),
    Direct(Vec<Option<(u64, Entry)>>),
}

pub struct Pst {
    store: Store,
    timeout: SimTime,
    purge_at: usize,
    /// Live entries replaced by another flow's (direct-mapped table only).
    pub evictions: u64,
}

impl Pst {
    /// An exact table (`entries` = 0) or a direct-mapped one of `entries`
    /// slots.
    pub fn new(timeout: SimTime, entries: usize) -> Pst {
        let store = if entries == 0 { Store::Exact(HashMap::default()) } else { Store::Direct(vec![None; entries]) };
        Pst { store, timeout, purge_at: 1024, evictions: 0 }
    }

    fn slot(n: usize, key: u64) -> usize {
        (mix64(key) % n as u64) as usize
    }

    fn entry_mut(&mut self, key: u64) -> Option<&mut Entry> {
        match &mut self.store {
            Store::Exact(m) => m.get_mut(&key),
            Store::Direct(v) => {
                let i = Self::slot(v.len(), key);
                match &mut v[i] {
                    Some((k, e)) if *k == key => Some(e),
                    _ => None,
                }
            }
        }
    }

    fn entry(&self, key: u64) -> Option<&Entry> {
        match &self.store {
            Store::Exact(m) => m.get(&key),
            Store::Direct(v) => match &v[Self::slot(v.len(), key)] {
                Some((k, e)) if *k == key => Some(e),
                _ => None,
            },
        }
    }

    fn put(&mut self, key: u64, e: Entry) {
        let now = e.last;
        self.purge(now);
        let timeout = self.timeout;
        match &mut self.store {
            Store::Exact(m) => {
                m.insert(key, e);
            }
            Store::Direct(v) => {
                let i = Self::slot(v.len(), key);
                let slot = &mut v[i];
                if let Some((k, old)) = slot {
                    if *k != key && live_at(old, now, timeout) {
                        self.evictions += 1;
                    }
                }
                *slot = Some((key, e));
            }
        }
    }

    /// Alg. 1 lines 3-10 for a packet of flow `key` whose next hops are
    /// `cands`; a match refreshes the entry's last-seen time.
    pub fn lookup(&mut self, key: u64, now: SimTime, cands: &[PortId]) -> Lookup {
        let timeout = self.timeout;
        match self.entry_mut(key) {
            Some(e) if live_at(e, now, timeout) => {
                if e.valid && cands.contains(&e.port) {
                    e.last = now;
                    Lookup::Valid(e.port)
                } else if !e.valid && !e.pss {
                    e.last = now;
                    Lookup::Pending
                } else {
                    Lookup::Select
                }
            }
            _ => Lookup::Select,
        }
    }

    /// The valid, live entry's port if it is among `cands` (refreshed);
    /// never starts anything (aggregation switches, Alg. 2).
    pub fn valid_port(&mut self, key: u64, now: SimTime, cands: &[PortId]) -> Option<PortId> {
        match self.lookup(key, now, cands) {
            Lookup::Valid(p) => Some(p),
            _ => None,
        }
    }

    /// A selection started: PSS = 0, valid = 0.
    pub fn set_pending(&mut self, key: u64, now: SimTime) {
        self.put(key, Entry { port: PortId(u32::MAX), pss: false, valid: false, last: now, mark: false });
    }

    /// A selection completed: `port`, PSS = 1, valid = 1.
    pub fn install(&mut self, key: u64, port: PortId, now: SimTime) {
        self.put(key, Entry { port, pss: true, valid: true, last: now, mark: false });
    }

    /// [`Pst::install`], with the mark set.
    pub fn install_marked(&mut self, key: u64, port: PortId, now: SimTime) {
        self.put(key, Entry { port, pss: true, valid: true, last: now, mark: true });
    }

    /// Whether `key`'s entry was marked (and clears the mark).
    pub fn take_mark(&mut self, key: u64) -> bool {
        self.entry_mut(key).map(|e| std::mem::take(&mut e.mark)).unwrap_or(false)
    }

    /// Whether the table holds an entry for `key`, live or expired (not yet purged).
    pub fn contains(&self, key: u64) -> bool {
        self.entry(key).is_some()
    }

    /// The entry for `key`, if live (tests and reports).
    pub fn get(&self, key: u64, now: SimTime) -> Option<Entry> {
        self.entry(key).copied().filter(|e| live_at(e, now, self.timeout))
    }

    fn purge(&mut self, now: SimTime) {
        let t = self.timeout;
        if let Store::Exact(m) = &mut self.store {
            if m.len() >= self.purge_at {
                m.retain(|_, e| live_at(e, now, t));
                self.purge_at = (2 * m.len()).max(1024);
            }
        }
    }

    /// Entries held, live or expired.
    pub fn len(&self) -> usize {
        match &self.store {
            Store::Exact(m) => m.len(),
            Store::Direct(v) => v.iter().filter(|x| x.is_some()).count(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_valid_expiry_and_dead_port() {
        let us = SimTime::from_us;
        let mut t = Pst::new(us(100_000), 0);
        let c = [PortId(3), PortId(4)];
        assert_eq!(t.lookup(7, us(0), &c), Lookup::Select);
        t.set_pending(7, us(0));
        assert_eq!(t.lookup(7, us(10), &c), Lookup::Pending);
        t.install(7, PortId(4), us(20));
        assert_eq!(t.lookup(7, us(30), &c), Lookup::Valid(PortId(4)));
        // continuous traffic (a packet every 90 ms) never expires
        assert_eq!(t.lookup(7, us(90_030), &c), Lookup::Valid(PortId(4)));
        assert_eq!(t.lookup(7, us(180_030), &c), Lookup::Valid(PortId(4)));
        // idle for more than 100 ms: a new selection
        assert_eq!(t.lookup(7, us(280_031), &c), Lookup::Select);
        // a valid entry whose port left the candidates (link down): a new selection
        t.install(8, PortId(5), us(0));
        assert_eq!(t.lookup(8, us(1), &c), Lookup::Select);
        assert_eq!(t.valid_port(8, us(1), &[PortId(5)]), Some(PortId(5)));
    }

    #[test]
    fn purge_keeps_live_entries() {
        let mut t = Pst::new(SimTime::from_us(10), 0);
        for k in 0..5000u64 {
            t.install(k, PortId(1), SimTime::from_us(k));
        }
        assert!(t.len() < 5000, "expired entries were purged: {}", t.len());
        assert_eq!(t.get(4999, SimTime::from_us(5000)).map(|e| e.port), Some(PortId(1)));
    }

    #[test]
    fn a_direct_mapped_table_evicts_on_collision_and_follows_the_same_rules() {
        let us = SimTime::from_us;
        let c = [PortId(3), PortId(4)];
        // the exact rules hold in a large direct-mapped table
        let mut t = Pst::new(us(100_000), 65_536);
        t.set_pending(7, us(0));
        assert_eq!(t.lookup(7, us(10), &c), Lookup::Pending);
        t.install(7, PortId(4), us(20));
        assert_eq!(t.lookup(7, us(30), &c), Lookup::Valid(PortId(4)));
        assert_eq!(t.lookup(7, us(130_031), &c), Lookup::Select);
        // one slot: a second flow finds nothing, then evicts the first
        let mut t = Pst::new(us(100_000), 1);
        t.install(1, PortId(3), us(0));
        assert_eq!(t.lookup(2, us(1), &c), Lookup::Select);
        t.install(2, PortId(4), us(1));
        assert_eq!((t.lookup(1, us(2), &c), t.lookup(2, us(2), &c)), (Lookup::Select, Lookup::Valid(PortId(4))));
        assert_eq!(t.evictions, 1);
        // an expired occupant is not an eviction
        t.install(1, PortId(3), us(200_000));
        assert_eq!(t.evictions, 1);
        // 2,000 flows in 64K slots: a few collide (~1.5 % expected),
        // every survivor answers with its own port
        let mut t = Pst::new(us(100_000), 65_536);
        for k in 0..2000u64 {
            t.install(k * 7919, PortId(3 + (k % 2) as u32), us(0));
        }
        let found = (0..2000u64).filter(|k| t.lookup(k * 7919, us(1), &c) == Lookup::Valid(PortId(3 + (k % 2) as u32))).count();
        assert!((1900..2000).contains(&found) && found as u64 + t.evictions == 2000, "{found} {}", t.evictions);
    }
}
