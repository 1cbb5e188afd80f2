//! Simulator truth for the reordering counters: a connection's data
//! segments in the network, in the order they were sent, so that an
//! arrival can tell whether it overtook an earlier-sent segment (the
//! network reordered) or only found a hole a drop left (a loss).
//!
//! Each data segment carries its send serial (`Packet::serial`, the low 32
//! bits of the connection's count of data segments sent before it), so
//! finding its entry is an index, not a search.
//!
//! Recording only: nothing here feeds back into the simulation.

/// An entry whose segment has left the network (no segment starts there:
/// byte offsets stay far below it).
const GONE: u64 = u64::MAX;

#[derive(Default)]
pub(crate) struct SendOrder {
    /// First bytes of the data segments with serials `front..next`, serial
    /// `s` at `ring[s % ring.len()]` (a power of two), `GONE` once delivered
    /// or dropped. `front` is the first serial still in the network, so a
    /// segment overtook an earlier-sent one still in the network exactly
    /// when its serial is above `front`.
    ring: Vec<u64>,
    front: u64,
    next: u64,
    /// One past the highest send serial delivered so far: a segment still
    /// in the network with a lower serial has been overtaken.
    delivered: u64,
    /// First bytes of segments that reached the receiver after a
    /// later-sent segment had (overtaken ones), not yet below snd.una;
    /// pruned like the dropped-segment list.
    late: Vec<u64>,
}

impl SendOrder {
    /// A data segment starting at byte `seq` enters the network; returns
    /// the serial it carries.
    #[inline(always)]
    pub fn sent(&mut self, seq: u64) -> u32 {
        if (self.next - self.front) as usize == self.ring.len() {
            self.grow();
        }
        let i = self.slot(self.next);
        self.ring[i] = seq;
        self.next += 1;
        (self.next - 1) as u32
    }

    /// The segment starting at `seq` with serial `serial` left the network
    /// undelivered (dropped or consumed).
    pub fn gone(&mut self, seq: u64, serial: u32) {
        if let Some(s) = self.find(seq, serial) {
            self.remove(s);
        }
    }

    /// The segment reached the receiver: true if it overtook an earlier-sent
    /// segment still in the network (true reordering). `una` is the sender's
    /// snd.una, for pruning.
    #[inline(always)]
    pub fn delivered(&mut self, seq: u64, serial: u32, una: u64) -> bool {
        let Some(s) = self.find(seq, serial) else { return false };
        if s < self.delivered {
            self.late(seq, una);
        } else {
            self.delivered = s + 1;
        }
        let overtook = s > self.front;
        self.remove(s);
        overtook
    }

    /// Whether the segment starting at `seq` was overtaken: it is still in
    /// the network behind a later-sent segment that arrived, or it arrived
    /// after one (the entry is then consumed).
    pub fn overtaken(&mut self, seq: u64) -> bool {
        if let Some(j) = self.late.iter().position(|&s| s == seq) {
            self.late.swap_remove(j);
            return true;
        }
        (self.front..self.delivered.min(self.next)).any(|s| self.ring[self.slot(s)] == seq)
    }

    /// A segment arrived after a later-sent one had: it was overtaken.
    #[cold]
    fn late(&mut self, seq: u64, una: u64) {
        let n = self.late.len();
        if n >= 32 && n.is_power_of_two() {
            self.late.retain(|&s| s >= una);
        }
        self.late.push(seq);
    }

    /// The serial of the segment at `seq` with serial `serial` (its low 32
    /// bits), if it is still in the network.
    #[inline(always)]
    fn find(&self, seq: u64, serial: u32) -> Option<u64> {
        let s = self.front + serial.wrapping_sub(self.front as u32) as u64;
        (s < self.next && self.ring[self.slot(s)] == seq).then_some(s)
    }

    #[inline(always)]
    fn remove(&mut self, s: u64) {
        if s == self.front {
            self.front += 1;
            while self.front < self.next && self.ring[self.slot(self.front)] == GONE {
                self.front += 1;
            }
        } else {
            let i = self.slot(s);
            self.ring[i] = GONE;
        }
    }

    #[inline(always)]
    fn slot(&self, s: u64) -> usize {
        s as usize & (self.ring.len() - 1)
    }

    /// Doubles the ring (it is full), keeping each entry at its serial.
    #[cold]
    fn grow(&mut self) {
        let mut ring = vec![GONE; (self.ring.len() * 2).max(8)];
        let mask = ring.len() - 1;
        for s in self.front..self.next {
            ring[s as usize & mask] = self.ring[self.slot(s)];
        }
        self.ring = ring;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overtaking_is_told_from_holes() {
        let mut o = SendOrder::default();
        let s: Vec<u32> = (0..4).map(|k| o.sent(k * 100)).collect();
        assert_eq!(s, vec![0, 1, 2, 3]);
        // 0 is dropped: 1 arrives first among those in the network
        o.gone(0, s[0]);
        assert!(!o.delivered(100, s[1], 0));
        // 3 overtakes 2, which is still in the network
        assert!(o.delivered(300, s[3], 0));
        assert!(o.overtaken(200));
        // 2 arrives late: the first in the network again, recorded as late
        assert!(!o.delivered(200, s[2], 0));
        assert!(o.overtaken(200));
        assert!(!o.overtaken(200), "a late entry is consumed");
        assert!(!o.overtaken(0));
        // a second delivery of the same packet finds nothing
        assert!(!o.delivered(300, s[3], 0));
        assert!(o.front == 4 && o.next == 4);
        assert_eq!(o.sent(400), 4);
    }

    #[test]
    fn the_ring_grows_with_entries_in_place() {
        let mut o = SendOrder::default();
        let s: Vec<u32> = (0..20).map(|k| o.sent(k * 100)).collect();
        o.gone(300, s[3]);
        assert!(o.delivered(1900, s[19], 0));
        assert!((0..19).filter(|&k| k != 3).all(|k| o.overtaken(k * 100)));
        assert!(!o.overtaken(300));
        assert!(!o.delivered(0, s[0], 0));
        assert!(o.delivered(200, s[2], 0), "1 is still in the network");
        assert!(o.overtaken(0) && o.overtaken(200) && !o.overtaken(1900));
    }

    #[test]
    fn serials_wrap_past_32_bits() {
        let mut o = SendOrder { front: u32::MAX as u64, next: u32::MAX as u64, delivered: u32::MAX as u64, ..Default::default() };
        let a = o.sent(0);
        let b = o.sent(100);
        assert_eq!((a, b), (u32::MAX, 0));
        assert!(o.delivered(100, b, 0));
        assert!(o.overtaken(0));
        o.gone(0, a);
        assert!(o.front == o.next && o.front == u32::MAX as u64 + 2);
    }
}
