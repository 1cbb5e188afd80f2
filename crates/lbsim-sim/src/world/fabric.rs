//! The fabric hop: a packet offered to an egress port (queue, ECN mark,
//! scheduled drops, capture, the scheme's enqueue hook), its arrival at the
//! next node (a switch forwards it by the routes and the scheme, a host
//! hands it to its transport), and what the network loses: queue and link
//! drops, no route, TTL expiry with an RFC 792 time exceeded back to the
//! source. Link failures and restorations recompute the routes here too.
//! Switches are store-and-forward output-queued ports (`lbsim_net::port`).

use super::{Ev, World};
use lbsim_engine::{Bytes, SimTime};
use lbsim_net::{Action, Admit, Ctx, Forward, HostRx, LinkId, LoadBalancer, NodeId, Packet, Payload, PktId, PortEnds, PortId, Proto, Routing};

/// A scheduled packet drop (`[[drops]]`): the next `left` TCP data packets
/// offered to `port` from `at` on.
pub(crate) struct DropPlan {
    pub port: PortId,
    pub at: SimTime,
    pub left: u32,
}

/// A drop that happened as planned: where, when, which flow, which segment.
pub(crate) struct InjectedDrop {
    pub port: PortId,
    pub at: SimTime,
    pub flow: Option<u32>,
    pub seq: u64,
}

/// A scheduled failure (`up` false) or restoration of some links.
pub(crate) struct LinkEvent {
    pub at: SimTime,
    pub links: Vec<LinkId>,
    pub up: bool,
}

/// Whether a drop may prune its connection's dropped-segment list (always,
/// outside tests).
#[inline]
fn prune_lost() -> bool {
    #[cfg(test)]
    return super::LOST_PRUNES.with(|p| p.get().inspect(|k| p.set(Some(k + 1))).is_some());
    #[cfg(not(test))]
    true
}

impl World {
    /// Counts a new packet as sent and offers it to `port`.
    #[inline]
    pub(super) fn inject(&mut self, pkt: PktId, port: PortId) {
        self.c.sent += 1;
        self.c.sent_bytes += self.pkts.get(pkt.0).size as u64;
        self.enqueue(port, pkt);
    }

    #[inline]
    pub(super) fn enqueue(&mut self, port: PortId, pkt: PktId) {
        if self.rdma.is_some() {
            self.lossless_enqueue(port, pkt, None);
            return;
        }
        let now = self.now();
        if !self.drop_plan.is_empty() && self.injected_drop(port, pkt) {
            return;
        }
        let pq = &mut self.ports[port.idx()];
        if !pq.up {
            self.drop_pkt(pkt, Drop::LinkDown);
            return;
        }
        let size = self.pkts.get(pkt.0).size;
        // only the jitter and the flowlet observer care where the port is
        let from_host = self.ports[port.idx()].ends.at_host;
        let jitter = if self.jitter > SimTime::ZERO && from_host { SimTime(self.jitter_rng.below(self.jitter.0 + 1)) } else { SimTime::ZERO };
        let pq = &mut self.ports[port.idx()];
        match pq.offer(now, pkt, Bytes(size as u64), jitter) {
            Admit::Dropped => self.drop_pkt(pkt, Drop::Queue),
            Admit::Queued { arrive, mark, head, tx_end } => {
                let k = if self.path_record { self.uplink_pos[port.idx()] } else { u32::MAX };
                if k != u32::MAX {
                    // the path record: which source-leaf uplink data took
                    if let Payload::Tcp { conn, to_receiver: true, hdr } = &self.pkts.get(pkt.0).payload {
                        if let (true, Some(c)) = (hdr.len > 0, self.tcp.conns[*conn as usize].as_mut()) {
                            if c.last_uplink != k && c.last_uplink != u32::MAX {
                                c.path_changes += 1;
                            }
                            c.last_uplink = k;
                            c.uplink_mask |= 1 << (k % 64);
                        }
                    }
                }
                if let (Some(obs), true) = (self.samplers.flowlet_obs.as_mut(), from_host) {
                    if let Payload::Tcp { conn, to_receiver: true, hdr } = &self.pkts.get(pkt.0).payload {
                        if hdr.len > 0 {
                            obs.segment(*conn, tx_end, hdr.len as u64);
                        }
                    }
                }
                if head {
                    let gen = self.ports[port.idx()].generation;
                    self.q.schedule(arrive, Ev::Arrive { port, gen, pkt });
                }
                if mark {
                    let p = self.pkts.get_mut(pkt.0);
                    if p.ect && !p.ce {
                        p.ce = true;
                        self.ports[port.idx()].count_ecn_mark();
                    }
                }
                // captured after the marking decision: the packet as it leaves
                if !self.samplers.pcap_port.is_empty() && self.samplers.pcap_port[port.idx()] && self.samplers.pcap_left > 0 {
                    self.samplers.pcap_left -= 1;
                    let start = tx_end - self.ports[port.idx()].tx_time(Bytes(size as u64));
                    self.samplers.pcap.push((start, port, *self.pkts.get(pkt.0)));
                }
                if self.lb_wants_enqueue {
                    self.lb.on_enqueue(&mut ctx!(self), port, pkt);
                    self.run_actions();
                }
            }
        }
    }

    /// Drops `pkt` if a `[[drops]]` entry for `port` is due and it is TCP data.
    pub(super) fn injected_drop(&mut self, port: PortId, pkt: PktId) -> bool {
        let now = self.now();
        let Some(i) = self.drop_plan.iter().position(|d| d.port == port && d.left > 0 && now >= d.at) else { return false };
        let Payload::Tcp { conn, to_receiver: true, hdr } = self.pkts.get(pkt.0).payload else { return false };
        if hdr.len == 0 {
            return false;
        }
        self.drop_plan[i].left -= 1;
        let flow = self.tcp.conns[conn as usize].as_ref().and_then(|c| c.flow_ends.front().map(|e| e.1));
        self.injected.push(InjectedDrop { port, at: now, flow, seq: hdr.seq });
        self.drop_pkt(pkt, Drop::Injected);
        true
    }

    pub(super) fn drop_pkt(&mut self, pkt: PktId, why: Drop) {
        let p = self.pkts.remove(pkt.0);
        if let Payload::Tcp { conn, to_receiver: true, hdr } = &p.payload {
            if hdr.len > 0 {
                if let Some(c) = self.tcp.conns.get_mut(*conn as usize).and_then(|c| c.as_mut()) {
                    // entries below snd.una never match again: pruned when
                    // the list reaches a power of two from 32 on, so the
                    // work is bounded per drop and none falls on ACKs
                    let n = c.lost.len();
                    if n >= 32 && n.is_power_of_two() && prune_lost() {
                        let una = c.sender.snd_una();
                        c.lost.retain(|&s| s >= una);
                    }
                    c.lost.push(hdr.seq);
                    c.order.gone(hdr.seq, p.serial);
                }
            }
        }
        self.c.dropped += 1;
        self.c.dropped_bytes += p.size as u64;
        match why {
            Drop::Queue => self.c.drop_queue += 1,
            Drop::Injected => self.c.drop_injected += 1,
            Drop::LinkDown => self.c.drop_link += 1,
            Drop::NoRoute => self.c.drop_noroute += 1,
            // a traceroute probe is meant to expire: not a drop of traffic
            Drop::Ttl if matches!(p.payload, Payload::Control { .. }) => self.c.probe_expiries += 1,
            Drop::Ttl => self.c.drop_ttl += 1,
        }
    }

    /// A switch sends `pkt`, which arrived over `in_port`, out of `port`.
    #[inline(always)]
    fn forward(&mut self, port: PortId, pkt: PktId, in_port: PortId) {
        if self.rdma.is_some() {
            self.lossless_enqueue(port, pkt, Some(in_port));
        } else {
            self.enqueue(port, pkt);
        }
    }

    #[inline(always)]
    pub(super) fn arrive(&mut self, pkt: PktId, port: PortId) {
        let PortEnds { peer: in_port, peer_node: node, peer_is_host, .. } = self.ports[port.idx()].ends;
        if self.rdma.is_some() {
            if let Payload::Pfc { pause } = self.pkts.get(pkt.0).payload {
                self.pfc_arrive(pkt, port, pause);
                return;
            }
        }

        if peer_is_host {
            let rx = if self.lb_host_hooks {
                let rx = self.lb.on_host_receive(&mut ctx!(self), node, pkt);
                self.run_actions();
                rx
            } else {
                HostRx::Deliver
            };
            match rx {
                HostRx::Deliver => self.deliver(node, pkt),
                HostRx::Held => {}
                HostRx::Consume => self.consume(pkt),
            }
            return;
        }
        // a switch
        let p = self.pkts.get_mut(pkt.0);
        p.hops += 1;
        p.ttl -= 1;
        if p.ttl == 0 {
            self.time_exceeded(node, in_port, pkt);
            return;
        }
        if !self.topo.is_host(p.dst) {
            // addressed to a switch: the scheme forwards it hop by hop
            let f = self.lb.on_switch_control(&mut ctx!(self), node, in_port, pkt);
            self.run_actions();
            match f {
                Forward::Port(p) => self.forward(p, pkt, in_port),
                Forward::Consume => self.consume(pkt),
            }
            return;
        }
        let dst = self.topo.host_index(p.dst);
        let cands = self.routing.next_hops_from(node, in_port, dst);
        if cands.is_empty() {
            self.drop_pkt(pkt, Drop::NoRoute);
            return;
        }
        if let Payload::Udp { source } = p.payload {
            if let Some(via) = self.udp[source as usize].via {
                if let Some(&port) = cands.iter().find(|c| self.topo.ports[self.topo.ports[c.idx()].peer.idx()].node == via) {
                    self.forward(port, pkt, in_port);
                    return;
                }
            }
        }
        let f = if self.lb_switch_hook {
            let f = self.lb.on_switch(&mut ctx!(self), node, in_port, pkt, cands);
            self.run_actions();
            f
        } else {
            Forward::Port(lbsim_net::ecmp_pick(self.salts[node.idx()], p.hash, cands))
        };
        match f {
            Forward::Port(p) => self.forward(p, pkt, in_port),
            Forward::Consume => self.consume(pkt),
        }
    }

    /// RFC 792 time exceeded, sent back toward the expired packet's source.
    pub(super) fn time_exceeded(&mut self, sw: NodeId, in_port: PortId, pkt: PktId) {
        let p = *self.pkts.get(pkt.0);
        self.drop_pkt(pkt, Drop::Ttl);
        if !self.topo.is_host(p.src) {
            return; // a switch's own packet: no ICMP back to a switch
        }
        let tag = match p.payload {
            Payload::Control { tag } => tag,
            _ => u32::MAX,
        };
        let mut icmp = Packet::new(p.dst, p.src, 0, 0, Proto::Udp, 64, Payload::TimeExceeded { tag, from: sw, in_port }, self.now());
        icmp.outer_sport = p.outer_sport;
        let id = PktId(self.pkts.insert(icmp));
        self.send_from_switch(sw, id, None);
    }

    pub(super) fn send_from_switch(&mut self, sw: NodeId, pkt: PktId, port: Option<PortId>) {
        let port = match port {
            Some(p) => p,
            None => {
                let d = self.pkts.get(pkt.0).dst;
                let c = if self.topo.is_host(d) { self.routing.next_hops(sw, self.topo.host_index(d)) } else { &[] };
                if c.is_empty() {
                    self.c.sent += 1;
                    self.c.sent_bytes += self.pkts.get(pkt.0).size as u64;
                    self.drop_pkt(pkt, Drop::NoRoute);
                    return;
                }
                lbsim_net::ecmp_pick(self.salts[sw.idx()], self.pkts.get(pkt.0).hash, c)
            }
        };
        self.inject(pkt, port);
    }

    pub(super) fn consume(&mut self, pkt: PktId) {
        let p = self.pkts.remove(pkt.0);
        if let Payload::Tcp { conn, to_receiver: true, hdr } = &p.payload {
            if let (true, Some(c)) = (hdr.len > 0, self.tcp.conns.get_mut(*conn as usize).and_then(|c| c.as_mut())) {
                c.order.gone(hdr.seq, p.serial);
            }
        }
        self.c.delivered += 1;
        self.c.delivered_bytes += p.size as u64;
        self.c.consumed_by_lb += 1;
    }

    /// Carries out what the scheme's last hook asked for (usually nothing).
    #[inline]
    pub(super) fn run_actions(&mut self) {
        if !self.actions.is_empty() {
            self.run_pending_actions();
        }
    }

    #[inline(never)]
    pub(super) fn run_pending_actions(&mut self) {
        while !self.actions.is_empty() {
            let acts = std::mem::take(&mut self.actions);
            for a in &acts {
                match *a {
                    Action::Timer { at, token } => self.q.schedule_later(at.max(self.now()), Ev::Lb { token }),
                    Action::Deliver { host, pkt } => self.deliver(host, pkt),
                    Action::Consume { pkt } => self.consume(pkt),
                    Action::SendFromHost { host, pkt } => {
                        let nic = self.topo.nic(host);
                        self.inject(pkt, nic);
                    }
                    Action::SendFromSwitch { sw, pkt, port } => self.send_from_switch(sw, pkt, port),
                    Action::HeaderBytes { delta } => self.c.lb_header_bytes += delta as i64,
                }
            }
            if self.actions.is_empty() {
                let mut acts = acts;
                acts.clear();
                self.actions = acts; // keep the allocation
            }
        }
    }

    // ------------------------------------------------------------ failures

    pub(super) fn link_event(&mut self, idx: usize) {
        let now = self.now();
        let up = self.link_events[idx].up;
        let links = self.link_events[idx].links.clone();
        for &l in &links {
            self.link_up[l.idx()] = up;
            for p in self.topo.links[l.idx()].ports {
                if up {
                    self.ports[p.idx()].restore();
                } else {
                    for pkt in self.ports[p.idx()].fail(now) {
                        self.drop_pkt(pkt, Drop::LinkDown); // queued or on the wire: lost
                    }
                }
            }
        }
        self.routing = Routing::compute(&self.topo, &self.link_up);
        self.path_profiles.clear();
        for &l in &links {
            self.lb.on_link_change(&mut ctx!(self), l, up);
            self.run_actions();
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) enum Drop {
    Queue,
    /// A drop the scenario asked for (`[[drops]]`).
    Injected,
    LinkDown,
    NoRoute,
    Ttl,
}
