//! A slab: values stored in a `Vec`, addressed by `u32` index, with a free
//! list. Packets live here and travel through the model as indices, so an
//! event carrying a packet stays small and moving a packet never copies it.

enum Slot<T> {
    Full(T),
    Free(u32),
}

const NIL: u32 = u32::MAX;

pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free: u32,
    live: usize,
    allocated_total: u64,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab { slots: Vec::new(), free: NIL, live: 0, allocated_total: 0 }
    }

    #[inline]
    pub fn insert(&mut self, v: T) -> u32 {
        self.live += 1;
        self.allocated_total += 1;
        if self.free != NIL {
            let i = self.free;
            match std::mem::replace(&mut self.slots[i as usize], Slot::Full(v)) {
                Slot::Free(next) => self.free = next,
                Slot::Full(_) => unreachable!("free list points at a full slot"),
            }
            i
        } else {
            self.slots.push(Slot::Full(v));
            (self.slots.len() - 1) as u32
        }
    }

    #[inline]
    pub fn remove(&mut self, i: u32) -> T {
        match std::mem::replace(&mut self.slots[i as usize], Slot::Free(self.free)) {
            Slot::Full(v) => {
                self.free = i;
                self.live -= 1;
                v
            }
            Slot::Free(_) => panic!("slab: double free of {i}"),
        }
    }

    #[inline]
    pub fn get(&self, i: u32) -> &T {
        match &self.slots[i as usize] {
            Slot::Full(v) => v,
            Slot::Free(_) => panic!("slab: use of freed {i}"),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        match &mut self.slots[i as usize] {
            Slot::Full(v) => v,
            Slot::Free(_) => panic!("slab: use of freed {i}"),
        }
    }

    /// Prefetches slot `i`'s cache lines (a hint; any index is harmless).
    #[inline]
    pub fn prefetch(&self, i: u32) {
        if let Some(s) = self.slots.get(i as usize) {
            crate::prefetch_lines(s);
        }
    }

    /// Values currently stored.
    pub fn live(&self) -> usize {
        self.live
    }
    /// Values ever inserted.
    pub fn allocated_total(&self) -> u64 {
        self.allocated_total
    }
    /// High-water mark of simultaneous values (slots ever created).
    pub fn capacity_used(&self) -> usize {
        self.slots.len()
    }

    /// Iterates over the live values.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &T)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| match s {
            Slot::Full(v) => Some((i as u32, v)),
            Slot::Free(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_slots_and_counts_live() {
        let mut s = Slab::new();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.remove(a), "a");
        let c = s.insert("c");
        assert_eq!(c, a, "freed slot reused");
        assert_eq!(*s.get(b), "b");
        assert_eq!(s.live(), 2);
        assert_eq!(s.allocated_total(), 3);
        assert_eq!(s.capacity_used(), 2);
    }

    #[test]
    #[should_panic(expected = "double free")]
    fn double_free_panics() {
        let mut s = Slab::new();
        let a = s.insert(1);
        s.remove(a);
        s.remove(a);
    }
}
