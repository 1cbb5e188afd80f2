//! A hashed flowlet table with a valid bit and one age bit per entry
//! (CONGA §3.4, also LetFlow's): each packet clears the age bit; a timer
//! every T_fl expires entries whose age bit is still set and sets it on the
//! others. A flowlet therefore ends after an idle gap of between T_fl and
//! 2·T_fl, depending on the timer phase.
//!
//! The timer is applied lazily: with ticks at multiples of T_fl, an entry
//! last touched in tick `a` is still valid at tick `b` iff `b − a ≤ 1`
//! (the first tick after the touch sets the age bit, the second expires it).
//! Hash collisions share an entry, as in hardware.
//!
//! [`FlowletMode::Exact`] instead stores each entry's last packet time and
//! ends a flowlet exactly when the idle gap exceeds T_fl (HULA's and
//! LetFlow's description, and AG's "flowlet gap 500 µs").
//!
//! Memory: the table's size is the hash modulus, as in hardware, but entries
//! are stored sparsely (a map from index to entry) until a quarter of them
//! have been used, then in a dense array. A fabric of hundreds of switches
//! with 64 K-entry tables thus costs memory in proportion to the flows each
//! switch has seen, never more than the dense table; lookups are identical.

use crate::edge::IdMap;
use lbsim_engine::SimTime;
use lbsim_net::PortId;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    port: u32,
    /// Age-bit mode: tick of the last packet + 1; exact mode: time of the
    /// last packet in ps + 1 (0 = never used).
    tick1: u64,
}

/// How a flowlet's end is detected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowletMode {
    /// Valid + age bit swept every T_fl: a gap of T_fl..2·T_fl ends it.
    AgeBit,
    /// A last-seen timestamp: a gap longer than T_fl ends it.
    Exact,
}

impl FlowletMode {
    /// The scheme parameter `flowlet_mode` ("age_bit" | "exact").
    pub fn param(p: &crate::Params) -> Result<FlowletMode, crate::ParamError> {
        Ok(if p.string("flowlet_mode", &["age_bit", "exact"])? == "exact" { FlowletMode::Exact } else { FlowletMode::AgeBit })
    }
}

#[derive(Clone, Debug)]
enum Store {
    /// Entries ever used, by index; becomes `Dense` at `size / 4` of them.
    Sparse(IdMap<u32, Entry>),
    Dense(Vec<Entry>),
}

#[derive(Clone, Debug)]
pub struct FlowletTable {
    store: Store,
    size: u64,
    /// `size - 1` when `size` is a power of two (the hash index is then a
    /// mask, not a 64-bit division); else 0.
    mask: u64,
    t_fl: SimTime,
    mode: FlowletMode,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// An active flowlet: keep its port.
    Active(PortId),
    /// A new flowlet; the port the expired entry last held, if any.
    New(Option<PortId>),
}

impl FlowletTable {
    pub fn new(size: usize, t_fl: SimTime) -> Self {
        Self::with_mode(size, t_fl, FlowletMode::AgeBit)
    }

    /// A table of `size` entries (at least 1, at most 2^32).
    pub fn with_mode(size: usize, t_fl: SimTime, mode: FlowletMode) -> Self {
        let size = size.clamp(1, 1 << 32) as u64;
        let mask = if size.is_power_of_two() { size - 1 } else { 0 };
        FlowletTable { store: Store::Sparse(IdMap::default()), size, mask, t_fl, mode }
    }

    #[inline]
    fn idx(&self, hash: u64) -> u32 {
        (if self.mask != 0 { hash & self.mask } else { hash % self.size }) as u32
    }

    /// The entry at index `i`, created (unused) if it was never touched.
    #[inline]
    fn entry(&mut self, i: u32) -> &mut Entry {
        if let Store::Sparse(m) = &mut self.store {
            if m.len() as u64 >= self.size / 4 && !m.contains_key(&i) {
                let mut dense = vec![Entry::default(); self.size as usize];
                for (&k, &e) in m.iter() {
                    dense[k as usize] = e;
                }
                self.store = Store::Dense(dense);
            }
        }
        match &mut self.store {
            Store::Sparse(m) => m.entry(i).or_default(),
            Store::Dense(v) => &mut v[i as usize],
        }
    }

    /// Entries held in memory (tests and memory accounting).
    pub fn stored_entries(&self) -> usize {
        match &self.store {
            Store::Sparse(m) => m.len(),
            Store::Dense(v) => v.len(),
        }
    }

    /// Looks up the flowlet of `hash` at `now` and marks it as seen.
    pub fn lookup(&mut self, hash: u64, now: SimTime) -> Lookup {
        let (tick, span) = match self.mode {
            FlowletMode::AgeBit => (now.0 / self.t_fl.0, 1),
            FlowletMode::Exact => (now.0, self.t_fl.0),
        };
        let i = self.idx(hash);
        let e = self.entry(i);
        let res = if e.tick1 == 0 {
            Lookup::New(None)
        } else if tick - (e.tick1 - 1) <= span {
            Lookup::Active(PortId(e.port))
        } else {
            Lookup::New(Some(PortId(e.port)))
        };
        e.tick1 = tick + 1;
        res
    }

    /// Records the port chosen for the flowlet of `hash`.
    pub fn set(&mut self, hash: u64, port: PortId) {
        let i = self.idx(hash);
        self.entry(i).port = port.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_bit_expires_entries_between_t_and_2t() {
        let t = SimTime::from_us(500);
        let mut ft = FlowletTable::new(1024, t);
        assert_eq!(ft.lookup(7, SimTime::from_us(100)), Lookup::New(None));
        ft.set(7, PortId(3));
        // a gap shorter than T_fl never splits
        assert_eq!(ft.lookup(7, SimTime::from_us(550)), Lookup::Active(PortId(3)));
        // last packet at 550 (tick 1): still valid in tick 2 (up to 1000), expired from tick 3
        assert_eq!(ft.lookup(7, SimTime::from_us(999)), Lookup::Active(PortId(3)));
        // last packet at 999 (tick 1): a gap of 1.5 T_fl ends at 1749 (tick 3): expired
        assert_eq!(ft.lookup(7, SimTime::from_us(1749)), Lookup::New(Some(PortId(3))));
        // last packet at 1749 (tick 3): 1 T_fl + 1 us later is tick 4: still active
        assert_eq!(ft.lookup(7, SimTime::from_us(2250)), Lookup::Active(PortId(3)));
        // a gap of 2 T_fl always expires
        assert_eq!(ft.lookup(7, SimTime::from_us(3250)), Lookup::New(Some(PortId(3))));
    }

    #[test]
    fn the_index_is_the_hash_modulo_the_size_for_every_size() {
        let t = SimTime::from_us(50);
        for size in [1u64, 2, 64, 1000, 65_536, 65_537, 1 << 32] {
            let ft = FlowletTable::new(size as usize, t);
            let mut x = 99u64;
            for _ in 0..1000 {
                x = lbsim_engine::mix64(x);
                assert_eq!(ft.idx(x) as u64, x % size, "size {size}");
            }
        }
    }

    #[test]
    fn sparse_and_dense_storage_give_the_same_answers() {
        // A reference: the plain dense array the table used to be.
        let (size, t) = (64u64, SimTime::from_us(50));
        let mut reference: Vec<(u32, u64)> = vec![(0, 0); size as usize];
        let mut ft = FlowletTable::with_mode(size as usize, t, FlowletMode::Exact);
        let mut x = 12345u64;
        let mut went_dense = false;
        for step in 0..2000u64 {
            x = lbsim_engine::mix64(x);
            let hash = x >> 7;
            let now = SimTime::from_us(step * 3);
            let i = (hash % size) as usize;
            let (port, tick1) = reference[i];
            let want = if tick1 == 0 {
                Lookup::New(None)
            } else if now.0 - (tick1 - 1) <= t.0 {
                Lookup::Active(PortId(port))
            } else {
                Lookup::New(Some(PortId(port)))
            };
            reference[i].1 = now.0 + 1;
            assert_eq!(ft.lookup(hash, now), want, "step {step}");
            if x.is_multiple_of(3) {
                ft.set(hash, PortId(x as u32 % 7));
                reference[i].0 = x as u32 % 7;
            }
            if step == 5 {
                assert!(ft.stored_entries() <= 6, "sparse while few entries are used");
            }
            went_dense |= ft.stored_entries() == size as usize;
        }
        assert!(went_dense, "a quarter of the entries used: dense");
    }

    #[test]
    fn exact_mode_ends_a_flowlet_only_after_a_gap_longer_than_t() {
        let t = SimTime::from_us(500);
        for start in [0u64, 1, 499, 500, 777] {
            let mut ft = FlowletTable::with_mode(8, t, FlowletMode::Exact);
            let s = SimTime::from_us(start);
            assert_eq!(ft.lookup(3, s), Lookup::New(None));
            ft.set(3, PortId(5));
            assert_eq!(ft.lookup(3, s + t), Lookup::Active(PortId(5)), "a gap of exactly T_fl from {start}");
            let later = s + t + t + SimTime(1);
            assert_eq!(ft.lookup(3, later), Lookup::New(Some(PortId(5))), "T_fl + 1 ps from {start}");
        }
    }

    #[test]
    fn every_gap_between_t_and_2t_is_phase_dependent_and_never_beyond() {
        let t = 500u64;
        for start in (0..1000).step_by(37) {
            for gap in (0..1200).step_by(13) {
                let mut ft = FlowletTable::new(1, SimTime::from_us(t));
                ft.lookup(1, SimTime::from_us(start));
                let r = ft.lookup(1, SimTime::from_us(start + gap));
                if gap < t {
                    assert!(matches!(r, Lookup::Active(_)), "gap {gap} from {start}");
                }
                if gap >= 2 * t {
                    assert!(matches!(r, Lookup::New(_)), "gap {gap} from {start}");
                }
            }
        }
    }
}
