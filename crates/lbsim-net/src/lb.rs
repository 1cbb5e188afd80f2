//! The load-balancing plug point: one trait, hooks with do-nothing (ECMP)
//! defaults, called at the three places schemes live (docs/architecture.md, "The scheme
//! hooks"):
//!
//! - the sending host's edge ([`LoadBalancer::on_host_send`]): choose the
//!   outer source port / path, stamp header fields, read feedback carried
//!   by reverse packets (Clove, Presto, Edge-Flowlet, VMS);
//! - every switch ([`LoadBalancer::on_switch`]): pick an egress port among
//!   the equal-cost candidates, update header fields, or consume the packet
//!   (CONGA at leaves, LetFlow, DRILL, HULA, Expeditus);
//!   [`LoadBalancer::on_enqueue`] sees every packet admitted to an egress
//!   port (rate estimators, CE / INT updates);
//! - packets a scheme addresses to a switch ([`Packet::to_switch`]: probes
//!   that switches originate, such as HULA's) have no routes: at every
//!   switch they reach, [`LoadBalancer::on_switch_control`] forwards them
//!   hop by hop or consumes them;
//! - the receiving host's edge ([`LoadBalancer::on_host_receive`]): hold
//!   packets for reordering and release them later, relay feedback.
//!
//! Hooks act through a [`Ctx`]: read-only views of the topology, routes and
//! port queues, the packet slab, the scheme's RNG stream, and an outbox of
//! [`Action`]s (timers, releases, new packets) that the simulator carries
//! out when the hook returns. Schemes are dispatched statically (an enum in
//! `lbsim-lb`), so no hook call is virtual.

use crate::ids::{LinkId, NodeId, PktId, PortId};
use crate::packet::Packet;
use crate::pfc::Mmu;
use crate::port::PortQueue;
use crate::routing::Routing;
use crate::topology::Topology;
use lbsim_engine::{mix64, Rng, SimTime, Slab};

/// What a switch does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Forward {
    Port(PortId),
    /// The scheme absorbed it (a probe reaching its end, say).
    Consume,
}

/// What a receiving host's edge does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostRx {
    /// Pass it to the transport now.
    Deliver,
    /// The scheme keeps it: it will `deliver` or `consume` it later.
    Held,
    /// The scheme absorbed it (feedback-only or probe packets).
    Consume,
}

/// Work a hook asks the simulator to do once it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Call `on_timer(token)` at `at`.
    Timer { at: SimTime, token: u64 },
    /// Hand a held packet to `host`'s transport.
    Deliver { host: NodeId, pkt: PktId },
    /// Discard a held packet the scheme is done with (counted as delivered
    /// to the edge, not as a network drop).
    Consume { pkt: PktId },
    /// Put a packet the scheme created on `host`'s NIC (no `on_host_send`).
    SendFromHost { host: NodeId, pkt: PktId },
    /// Send a packet from switch `sw`: out of `port`, or routed if `None`
    /// (a packet addressed to a switch needs a port: `None` drops it as
    /// unroutable).
    SendFromSwitch { sw: NodeId, pkt: PktId, port: Option<PortId> },
    /// A switch inserted (`delta > 0`) or stripped header bytes of a packet
    /// in flight (an in-network tag such as Expeditus'): the byte
    /// accounting of the conservation check follows it.
    HeaderBytes { delta: i32 },
}

/// A hook's view of the simulation.
pub struct Ctx<'a> {
    pub now: SimTime,
    pub topo: &'a Topology,
    pub routing: &'a Routing,
    pub ports: &'a [PortQueue],
    /// Per-node ECMP salt.
    pub salts: &'a [u64],
    pub pkts: &'a mut Slab<Packet>,
    /// The scheme's own random stream.
    pub rng: &'a mut Rng,
    pub actions: &'a mut Vec<Action>,
    /// The lossless fabric's queues (RDMA runs): packets waiting there have
    /// not reached their port's `PortQueue` yet.
    pub lossless: Option<&'a Mmu<PktId>>,
}

impl<'a> Ctx<'a> {
    /// Packets queued at egress `p` (waiting or transmitting), in either
    /// fabric.
    #[inline]
    pub fn queued_pkts(&self, p: PortId) -> u64 {
        self.ports[p.idx()].qlen_pkts(self.now) as u64 + self.lossless.map_or(0, |m| m.waiting(p) as u64)
    }
    /// Bytes queued at egress `p`, in either fabric.
    #[inline]
    pub fn queued_bytes(&self, p: PortId) -> u64 {
        self.ports[p.idx()].qlen_bytes(self.now) + self.lossless.map_or(0, |m| m.data_bytes(p))
    }
    #[inline]
    pub fn pkt(&self, p: PktId) -> &Packet {
        self.pkts.get(p.0)
    }
    #[inline]
    pub fn pkt_mut(&mut self, p: PktId) -> &mut Packet {
        self.pkts.get_mut(p.0)
    }
    /// The ECMP choice of switch `node` for `pkt` among `candidates`: the
    /// packet's 5-tuple hash mixed with the switch's salt, modulo the group size.
    #[inline]
    pub fn ecmp(&self, node: NodeId, pkt: PktId, candidates: &[PortId]) -> PortId {
        ecmp_pick(self.salts[node.idx()], self.pkts.get(pkt.0).hash, candidates)
    }
    pub fn schedule(&mut self, at: SimTime, token: u64) {
        self.actions.push(Action::Timer { at, token });
    }
    pub fn deliver(&mut self, host: NodeId, pkt: PktId) {
        self.actions.push(Action::Deliver { host, pkt });
    }
    pub fn consume(&mut self, pkt: PktId) {
        self.actions.push(Action::Consume { pkt });
    }
    /// Allocates a new packet (count it as sent: the simulator does when
    /// the send action runs).
    pub fn new_packet(&mut self, p: Packet) -> PktId {
        PktId(self.pkts.insert(p))
    }
    pub fn send_from_host(&mut self, host: NodeId, pkt: PktId) {
        self.actions.push(Action::SendFromHost { host, pkt });
    }
    pub fn send_from_switch(&mut self, sw: NodeId, pkt: PktId, port: Option<PortId>) {
        self.actions.push(Action::SendFromSwitch { sw, pkt, port });
    }
    /// Grows (`delta > 0`) or shrinks a packet in flight by `delta` bytes
    /// of header, keeping the byte accounting exact. Call it before the
    /// packet is queued (from `on_switch`), so the new size is what the
    /// egress link serialises.
    pub fn resize(&mut self, pkt: PktId, delta: i32) {
        if delta == 0 {
            return;
        }
        let p = self.pkts.get_mut(pkt.0);
        p.size = (p.size as i64 + delta as i64).max(1) as u32;
        self.actions.push(Action::HeaderBytes { delta });
    }
}

/// ECMP: `mix(hash ⊕ salt) mod n`.
#[inline]
pub fn ecmp_pick(salt: u64, hash: u64, candidates: &[PortId]) -> PortId {
    debug_assert!(!candidates.is_empty());
    if candidates.len() == 1 {
        return candidates[0];
    }
    candidates[reduce(mix64(hash ^ salt), candidates.len() as u64) as usize]
}

/// `x mod n`, exactly, without a 64-bit division when `n` is a power of
/// two (the group sizes of most fabrics: a division costs tens of cycles,
/// and ECMP takes one on every switch hop with a choice).
#[inline]
fn reduce(x: u64, n: u64) -> u64 {
    if n.is_power_of_two() {
        x & (n - 1)
    } else {
        x % n
    }
}

/// A load-balancing scheme. Every hook has a default that behaves like
/// plain ECMP with no edge logic.
pub trait LoadBalancer {
    /// Called once at time 0 (schedule periodic timers here).
    fn start(&mut self, _ctx: &mut Ctx) {}

    /// A packet from `host`'s transport (data, ACK or UDP) before its NIC.
    fn on_host_send(&mut self, _ctx: &mut Ctx, _host: NodeId, _pkt: PktId) {}

    /// A packet arriving at `host` before its transport sees it.
    fn on_host_receive(&mut self, _ctx: &mut Ctx, _host: NodeId, _pkt: PktId) -> HostRx {
        HostRx::Deliver
    }

    /// Whether the host hooks ([`LoadBalancer::on_host_send`],
    /// [`LoadBalancer::on_host_receive`]) do anything. A scheme that keeps
    /// both defaults says false, and the simulator then skips them for every
    /// packet (on B1, 1.7 % of the instructions); the default, true, is
    /// always correct.
    fn wants_host_hooks(&self) -> bool {
        true
    }

    /// Whether [`LoadBalancer::on_switch`] does anything beyond the default
    /// ECMP choice. A scheme that keeps the default says false, and the
    /// simulator then picks by ECMP itself, without building a [`Ctx`] for
    /// every switch hop; the default, true, is always correct.
    fn wants_switch_hook(&self) -> bool {
        true
    }

    /// A packet at switch `sw`, arrived on `in_port`, bound for a host that
    /// `candidates` (the equal-cost next hops, never empty) lead to.
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in_port: PortId, pkt: PktId, candidates: &[PortId]) -> Forward {
        Forward::Port(ctx.ecmp(sw, pkt, candidates))
    }

    /// A packet addressed to a switch ([`Packet::to_switch`]) arriving at
    /// switch `sw` on `in_port`. It has no routes, so the scheme forwards it
    /// (out of a port of `sw`) or consumes it; the default consumes.
    fn on_switch_control(&mut self, _ctx: &mut Ctx, _sw: NodeId, _in_port: PortId, _pkt: PktId) -> Forward {
        Forward::Consume
    }

    /// Whether [`LoadBalancer::on_enqueue`] does anything (skipped otherwise).
    fn wants_enqueue(&self) -> bool {
        false
    }

    /// A packet admitted to egress `port` (of a switch or a host NIC).
    fn on_enqueue(&mut self, _ctx: &mut Ctx, _port: PortId, _pkt: PktId) {}

    /// A timer the scheme scheduled.
    fn on_timer(&mut self, _ctx: &mut Ctx, _token: u64) {}

    /// A link failed (`up == false`) or came back; routes are already recomputed.
    fn on_link_change(&mut self, _ctx: &mut Ctx, _link: LinkId, _up: bool) {}

    /// What the scheme counted during the run, by name, for summary.json's
    /// `scheme.stats` (counts, or means where the name says so).
    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![]
    }

    /// The scheme's own state at the end of the run, as tables for
    /// summary.json's `scheme.<table>` (e.g. CONGA's remote metrics per
    /// uplink); `topo` names the nodes and ports in the keys.
    fn report(&self, _topo: &Topology) -> Vec<ReportTable> {
        vec![]
    }
}

/// A value in a scheme's end-of-run report ([`LoadBalancer::report`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ReportValue {
    /// A count: an integer in summary.json.
    Count(u64),
    /// A measure: a number in summary.json (null if not finite).
    Real(f64),
    /// A name, such as a port's.
    Name(String),
}

/// One table of a scheme's state at the end of a run: summary.json's
/// `scheme.<name>`, an object even when it has no rows, in which each row
/// sets the value at its path of keys (`scheme.<name>.<key>.<key>...`).
#[derive(Clone, Debug, PartialEq)]
pub struct ReportTable {
    pub name: &'static str,
    pub rows: Vec<(Vec<String>, ReportValue)>,
}

impl ReportTable {
    /// A table with no rows yet.
    pub fn new(name: &'static str) -> ReportTable {
        ReportTable { name, rows: vec![] }
    }

    /// Adds the row `keys = value`.
    pub fn push<const N: usize>(&mut self, keys: [String; N], value: ReportValue) {
        self.rows.push((keys.into(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_is_the_remainder_for_every_group_size() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for n in 1..=130u64 {
            for _ in 0..200 {
                x = mix64(x);
                assert_eq!(reduce(x, n), x % n, "{x} mod {n}");
            }
            assert_eq!(reduce(u64::MAX, n), u64::MAX % n);
        }
    }
}
