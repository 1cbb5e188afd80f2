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
//! Exact map keyed by the 5-tuple hash with exact last-seen expiry (the
//! authors' artifact keeps an exact list; 64K-entry hashing collides rarely
//! at these scales). Expiry is lazy; expired entries are purged when the
//! table has doubled since the last purge (this never changes a lookup).

use crate::edge::IdHasher;
use lbsim_engine::SimTime;
use lbsim_net::PortId;
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

pub struct Pst {
    map: HashMap<u64, Entry, BuildHasherDefault<IdHasher>>,
    timeout: SimTime,
    purge_at: usize,
}

impl Pst {
    pub fn new(timeout: SimTime) -> Pst {
        Pst { map: HashMap::default(), timeout, purge_at: 1024 }
    }

    fn live(&self, e: &Entry, now: SimTime) -> bool {
        now.0.saturating_sub(e.last.0) <= self.timeout.0
    }

    /// Alg. 1 lines 3-10 for a packet of flow `key` whose next hops are
    /// `cands`; a match refreshes the entry's last-seen time.
    pub fn lookup(&mut self, key: u64, now: SimTime, cands: &[PortId]) -> Lookup {
        let timeout = self.timeout;
        match self.map.get_mut(&key) {
            Some(e) if now.0.saturating_sub(e.last.0) <= timeout.0 => {
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
        self.purge(now);
        self.map.insert(key, Entry { port: PortId(u32::MAX), pss: false, valid: false, last: now, mark: false });
    }

    /// A selection completed: `port`, PSS = 1, valid = 1.
    pub fn install(&mut self, key: u64, port: PortId, now: SimTime) {
        self.purge(now);
        self.map.insert(key, Entry { port, pss: true, valid: true, last: now, mark: false });
    }

    /// [`Pst::install`], with the mark set.
    pub fn install_marked(&mut self, key: u64, port: PortId, now: SimTime) {
        self.purge(now);
        self.map.insert(key, Entry { port, pss: true, valid: true, last: now, mark: true });
    }

    /// Whether `key`'s entry was marked (and clears the mark).
    pub fn take_mark(&mut self, key: u64) -> bool {
        self.map.get_mut(&key).map(|e| std::mem::take(&mut e.mark)).unwrap_or(false)
    }

    /// Whether the table holds an entry for `key`, live or expired (not yet purged).
    pub fn contains(&self, key: u64) -> bool {
        self.map.contains_key(&key)
    }

    /// The entry for `key`, if live (tests and reports).
    pub fn get(&self, key: u64, now: SimTime) -> Option<Entry> {
        self.map.get(&key).copied().filter(|e| self.live(e, now))
    }

    fn purge(&mut self, now: SimTime) {
        if self.map.len() >= self.purge_at {
            let t = self.timeout;
            self.map.retain(|_, e| now.0.saturating_sub(e.last.0) <= t.0);
            self.purge_at = (2 * self.map.len()).max(1024);
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_valid_expiry_and_dead_port() {
        let us = SimTime::from_us;
        let mut t = Pst::new(us(100_000));
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
        let mut t = Pst::new(SimTime::from_us(10));
        for k in 0..5000u64 {
            t.install(k, PortId(1), SimTime::from_us(k));
        }
        assert!(t.len() < 5000, "expired entries were purged: {}", t.len());
        assert_eq!(t.get(4999, SimTime::from_us(5000)).map(|e| e.port), Some(PortId(1)));
    }
}
