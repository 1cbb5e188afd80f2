//! Simulator truth for the reordering counters: a connection's data
//! segments in the network, in the order they were sent, so that an
//! arrival can tell whether it overtook an earlier-sent segment (the
//! network reordered) or only found a hole a drop left (a loss).
//!
//! Recording only: nothing here feeds back into the simulation.

use lbsim_engine::SimTime;
use std::collections::VecDeque;

#[derive(Default)]
pub(crate) struct SendOrder {
    /// Data segments in the network (sent, neither delivered nor dropped),
    /// in send order: (send serial, first byte, send time). A packet is
    /// identified by its first byte and send time (a connection never sends
    /// the same byte twice at one instant).
    segs: VecDeque<(u64, u64, SimTime)>,
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
    /// A data segment starting at byte `seq` enters the network at `at`.
    #[inline]
    pub fn sent(&mut self, seq: u64, at: SimTime) {
        self.segs.push_back((self.next, seq, at));
        self.next += 1;
    }

    /// The segment left the network undelivered (dropped or consumed).
    pub fn gone(&mut self, seq: u64, at: SimTime) {
        if let Some(i) = self.find(seq, at) {
            self.segs.remove(i);
        }
    }

    /// The segment reached the receiver: true if it overtook an earlier-sent
    /// segment still in the network (true reordering). `una` is the sender's
    /// snd.una, for pruning.
    #[inline]
    pub fn delivered(&mut self, seq: u64, at: SimTime, una: u64) -> bool {
        let Some(i) = self.find(seq, at) else { return false };
        let (serial, ..) = self.segs.remove(i).unwrap();
        if serial < self.delivered {
            // a later-sent segment arrived first: this one was overtaken
            let n = self.late.len();
            if n >= 32 && n.is_power_of_two() {
                self.late.retain(|&s| s >= una);
            }
            self.late.push(seq);
        }
        self.delivered = self.delivered.max(serial + 1);
        i > 0
    }

    /// Whether the segment starting at `seq` was overtaken: it is still in
    /// the network behind a later-sent segment that arrived, or it arrived
    /// after one (the entry is then consumed).
    pub fn overtaken(&mut self, seq: u64) -> bool {
        if let Some(j) = self.late.iter().position(|&s| s == seq) {
            self.late.swap_remove(j);
            return true;
        }
        self.segs.iter().any(|&(serial, s, _)| s == seq && serial < self.delivered)
    }

    #[inline]
    fn find(&self, seq: u64, at: SimTime) -> Option<usize> {
        self.segs.iter().position(|&(_, s, t)| s == seq && t == at)
    }
}
