//! RDMA hosts on a lossless fabric: the wiring of lbsim-rdma's queue pairs
//! (go-back-N, DCQCN) to the NICs, and of `lbsim_net::pfc` (classes, the
//! switch MMU, PFC) to the ports. docs/rdma.md describes the model.
//!
//! With `transport.kind = "rdma"` every port sends by dequeue: a packet
//! waits in its port's lossless queues ([`Mmu`]) until the port is free,
//! then starts on the wire (the port's `PortQueue`, which times it and
//! delivers it at the far end). A port with work and a busy wire has one
//! pending [`Ev::PortFree`]; an idle port starts at once.
//!
//! - A switch charges an arriving data packet to its ingress account, which
//!   may PAUSE the upstream port; at dequeue it releases the charge (which
//!   may RESUME), and RED decides CE on the data bytes behind it.
//! - A host NIC sends ACKs/NACKs first (their own queue, never paused), then
//!   its queue pairs round robin: a QP may send when it has bytes left, its
//!   window allows, pacing allows (`next_avail`), and the NIC's data class
//!   is not paused. Nothing eligible but a QP paced: the NIC wakes then.
//! - PFC frames go out of the ingress port they concern, ahead of data,
//!   and stop or restart the far end's data class on arrival.

use super::fabric::Drop;
use super::{Ev, World};
use crate::metrics::{FlowCounters, FlowRecord};
use lbsim_engine::{BitsPerSec, Bytes, Rng, SimTime};
use lbsim_net::{Admit, Ctx, Dequeued, LoadBalancer, Mmu, NodeId, Packet, Payload, PfcConfig, PktId, PortId, Proto, RdmaKind, Waiting, ROCE_DPORT};
use lbsim_rdma::{AckKind, QpReceiver, QpSender, RdmaConfig};
use lbsim_workload::FlowSpec;
use std::collections::HashMap;

/// Bytes of a PFC frame on the wire (the HPCC simulator's 43: Ethernet,
/// IPv4 and the pause fields, unpadded).
const PFC_BYTES: u32 = 43;

/// What the RDMA world is built from.
pub(crate) struct RdmaSetup {
    pub cfg: RdmaConfig,
    pub pfc: PfcConfig,
    /// ACKs/NACKs take the strict-priority class at switches too (else
    /// they share the data class, as in the HPCC simulator).
    pub ack_high: bool,
    pub rng: Rng,
}

/// One queue pair: a flow's sender and receiver (kept together, as TCP's
/// connections are).
pub(crate) struct Qp {
    pub src: NodeId,
    pub dst: NodeId,
    pub sport: u16,
    pub dport: u16,
    pub sender: QpSender,
    pub receiver: QpReceiver,
    timer_at: SimTime,
    timer_gen: u32,
    /// The source NIC's paused time when the flow started.
    paused0: SimTime,
}

impl Qp {
    /// The flow's counters, its source NIC having been paused for
    /// `nic_paused` in all by now.
    fn counters(&self, cfg: &RdmaConfig, nic_paused: SimTime) -> FlowCounters {
        let s = self.sender.stats;
        FlowCounters {
            retransmits: s.resent_bytes.div_ceil(cfg.mtu_bytes as u64),
            timeouts: s.timeouts,
            out_of_order: self.receiver.out_of_order,
            duplicates: self.receiver.duplicates,
            cnps: s.cnps,
            nacks: s.nacks,
            paused_ns: (nic_paused - self.paused0).0 / 1000,
            ..FlowCounters::default()
        }
    }
}

/// A completed flow's line of the HPCC simulator's FCT file.
#[derive(Clone, Copy, Debug)]
pub struct FctRow {
    pub flow: u32,
    pub sport: u16,
    pub dport: u16,
}

/// The RDMA hosts and the lossless fabric's state.
pub(crate) struct RdmaHosts {
    pub cfg: RdmaConfig,
    pub mmu: Mmu<PktId>,
    ack_high: bool,
    /// Per flow id.
    qps: Vec<Option<Box<Qp>>>,
    /// Per host index: its live QPs in round-robin order, and where the
    /// round robin stands.
    nic_qps: Vec<Vec<u32>>,
    rr: Vec<usize>,
    /// Per port: when its pending `PortFree` is (MAX: none).
    free_at: Vec<SimTime>,
    /// The next source port per (src, dst) host pair (from 10000, as the
    /// HPCC simulator numbers them).
    sports: HashMap<(u32, u32), u16>,
    rng: Rng,
    /// Completed flows in completion order.
    pub fct: Vec<FctRow>,
    /// PFC deadlocks found (a PAUSE that closed a cycle of paused ports
    /// holding data), and the first: when, and its ports.
    pub deadlocks: u64,
    pub first_deadlock: Option<(SimTime, Vec<PortId>)>,
}

impl RdmaHosts {
    pub fn new(s: RdmaSetup, topo: &lbsim_net::Topology) -> RdmaHosts {
        let ports: Vec<_> = topo.ports.iter().map(|p| (p.node.idx(), p.rate, p.delay)).collect();
        let switch_ports: Vec<Vec<PortId>> =
            topo.nodes.iter().enumerate().map(|(i, n)| if topo.is_host(NodeId(i as u32)) { vec![] } else { n.ports.clone() }).collect();
        let hosts = topo.num_hosts();
        let host_rate = (0..hosts as u32).map(|h| topo.port(topo.nic(topo.host(h))).rate).min().unwrap_or(BitsPerSec::gbps(100));
        RdmaHosts {
            cfg: s.cfg,
            mmu: Mmu::new(s.pfc, &ports, &switch_ports, host_rate),
            ack_high: s.ack_high,
            qps: Vec::new(),
            nic_qps: vec![Vec::new(); hosts],
            rr: vec![0; hosts],
            free_at: vec![SimTime::MAX; topo.ports.len()],
            sports: HashMap::new(),
            rng: s.rng,
            fct: Vec::new(),
            deadlocks: 0,
            first_deadlock: None,
        }
    }

    /// Every queue pair with bytes unacknowledged: its rates now.
    pub fn sample_rates(&self, now: SimTime, rows: &mut Vec<crate::QpRateSample>) {
        for (fid, q) in self.qps.iter().enumerate() {
            let Some(q) = q else { continue };
            let s = &q.sender;
            if !s.done() {
                rows.push(crate::QpRateSample {
                    t: now,
                    flow: fid as u32,
                    rate: s.rate(&self.cfg),
                    target: s.dcqcn.target(),
                    in_flight: s.snd_nxt() - s.snd_una(),
                });
            }
        }
    }

    /// Queue pairs opened (one per flow).
    pub fn qp_count(&self) -> usize {
        self.qps.len()
    }
}

impl World {
    /// A flow starts: a new queue pair at its source's NIC.
    pub(super) fn rdma_start_flow(&mut self, f: FlowSpec) {
        let now = self.now();
        let fid = self.flows.len() as u32;
        let ideal = self.standalone_fct(f.src, f.dst, f.size);
        self.flows.push(FlowRecord::new(&f, f.start.max(now), ideal, FlowCounters::default(), None));
        let (src, dst) = (self.topo.host(f.src), self.topo.host(f.dst));
        let nic = self.topo.nic(src);
        let line = self.topo.port(nic).rate;
        let r = self.rdma.as_mut().unwrap();
        let sport = r.sports.entry((f.src, f.dst)).or_insert(10_000);
        let qp = Qp {
            src,
            dst,
            sport: *sport,
            dport: 100,
            sender: QpSender::new(f.size, line, now),
            receiver: QpReceiver::default(),
            timer_at: SimTime::MAX,
            timer_gen: 0,
            paused0: r.mmu.paused_time(nic, now),
        };
        *sport = sport.wrapping_add(1);
        if r.qps.len() <= fid as usize {
            r.qps.resize_with(fid as usize + 1, || None);
        }
        r.qps[fid as usize] = Some(Box::new(qp));
        r.nic_qps[f.src as usize].push(fid);
        if f.size == 0 {
            self.rdma_complete(fid);
            return;
        }
        self.kick(nic);
    }

    /// The HPCC simulator's standalone FCT: the pair's base RTT (twice the
    /// propagation delay plus one MTU's serialisation per hop) plus the
    /// flow's bytes with 48 B of headers per packet at the path's
    /// bottleneck rate, along the first equal-cost route.
    pub(super) fn standalone_fct(&self, src: u32, dst: u32, size: u64) -> SimTime {
        let cfg = &self.rdma.as_ref().unwrap().cfg;
        let (mut node, goal) = (self.topo.host(src), self.topo.host(dst));
        let (mut delay, mut tx, mut bw) = (SimTime::ZERO, SimTime::ZERO, BitsPerSec(u64::MAX));
        while node != goal {
            let port = if self.topo.is_host(node) {
                self.topo.nic(node)
            } else {
                match self.routing.next_hops(node, dst).first() {
                    Some(&p) => p,
                    None => return SimTime::ZERO,
                }
            };
            let p = self.topo.port(port);
            delay += p.delay;
            tx += p.rate.tx_time(Bytes(cfg.mtu_bytes as u64));
            bw = bw.min(p.rate);
            node = self.topo.port(p.peer).node;
        }
        let pkts = size.div_ceil(cfg.mtu_bytes as u64);
        delay + delay + tx + bw.tx_time(Bytes(size + pkts * cfg.header_bytes as u64))
    }

    /// A packet for `port` (sent by its node, or forwarded there after
    /// arriving over `in_port`) joins its class's queue.
    pub(super) fn lossless_enqueue(&mut self, port: PortId, pkt: PktId, in_port: Option<PortId>) {
        if !self.ports[port.idx()].up {
            self.drop_pkt(pkt, Drop::LinkDown);
            return;
        }
        let p = self.pkts.get(pkt.0);
        let size = p.size;
        let at_host = self.ports[port.idx()].ends.at_host;
        let r = self.rdma.as_mut().unwrap();
        let data = match p.payload {
            Payload::Rdma { kind: RdmaKind::Data, .. } => true,
            Payload::Rdma { .. } => !at_host && !r.ack_high,
            _ => false,
        };
        if !data {
            r.mmu.push_control(port, pkt);
        } else {
            let node = self.topo.port(port).node.idx();
            let charged = match in_port {
                Some(i) if !at_host => match r.mmu.admit(node, i, size as u64) {
                    None => {
                        self.drop_pkt(pkt, Drop::Queue);
                        return;
                    }
                    Some(pause) => {
                        if pause {
                            self.send_pfc(i, true);
                        }
                        Some(i)
                    }
                },
                _ => None,
            };
            let r = self.rdma.as_mut().unwrap();
            r.mmu.push_data(port, Waiting { pkt, in_port: charged, size });
        }
        if self.lb_wants_enqueue {
            self.lb.on_enqueue(&mut ctx!(self), port, pkt);
            self.run_actions();
        }
        self.kick(port);
    }

    /// `port` has work: start it now if the wire is free, else be called
    /// when it is.
    pub(super) fn kick(&mut self, port: PortId) {
        let at = self.ports[port.idx()].busy_until().max(self.now());
        if at == self.now() {
            self.port_send(port);
        } else {
            self.free_at(port, at);
        }
    }

    /// Examine `port` at `at` (unless an earlier examination is pending).
    fn free_at(&mut self, port: PortId, at: SimTime) {
        let r = self.rdma.as_mut().unwrap();
        if r.free_at[port.idx()] <= at {
            return;
        }
        r.free_at[port.idx()] = at;
        self.q.schedule(at, Ev::PortFree { port });
    }

    /// A port's pending examination is due.
    pub(super) fn port_free(&mut self, port: PortId) {
        let now = self.now();
        let r = self.rdma.as_mut().unwrap();
        if r.free_at[port.idx()] != now {
            return; // superseded by an earlier one
        }
        r.free_at[port.idx()] = SimTime::MAX;
        if self.ports[port.idx()].busy_until() > now {
            self.kick(port);
            return;
        }
        self.port_send(port);
    }

    /// The wire of `port` is free: send what comes next.
    fn port_send(&mut self, port: PortId) {
        if !self.ports[port.idx()].up {
            return;
        }
        if self.ports[port.idx()].ends.at_host {
            self.nic_send(port);
            return;
        }
        let r = self.rdma.as_mut().unwrap();
        let Some((next, mark)) = r.mmu.dequeue(port, &mut r.rng) else { return };
        let pkt = match next {
            Dequeued::Control(pkt) => pkt,
            Dequeued::Data(w) => {
                if let Some(i) = w.in_port {
                    let node = self.topo.port(port).node.idx();
                    if r.mmu.release(node, i, w.size as u64) {
                        self.send_pfc(i, false);
                    }
                }
                if mark {
                    let p = self.pkts.get_mut(w.pkt.0);
                    if p.ect && !p.ce {
                        p.ce = true;
                        self.ports[port.idx()].count_ecn_mark();
                    }
                }
                w.pkt
            }
        };
        let tx_end = self.wire(port, pkt);
        if self.rdma.as_ref().unwrap().mmu.ready(port) {
            self.free_at(port, tx_end);
        }
    }

    /// Puts `pkt` on the idle wire of `port`; returns when its last bit
    /// leaves.
    fn wire(&mut self, port: PortId, pkt: PktId) -> SimTime {
        let now = self.now();
        let size = self.pkts.get(pkt.0).size;
        match self.ports[port.idx()].offer(now, pkt, Bytes(size as u64), SimTime::ZERO) {
            Admit::Queued { tx_end, arrive, head, .. } => {
                if head {
                    let gen = self.ports[port.idx()].generation;
                    self.q.schedule(arrive, Ev::Arrive { port, gen, pkt });
                }
                if !self.samplers.pcap_port.is_empty() && self.samplers.pcap_port[port.idx()] && self.samplers.pcap_left > 0 {
                    self.samplers.pcap_left -= 1;
                    self.samplers.pcap.push((now, port, *self.pkts.get(pkt.0)));
                }
                tx_end
            }
            // the wire holds one packet at a time: its own limit never binds
            Admit::Dropped => {
                self.drop_pkt(pkt, Drop::Queue);
                now
            }
        }
    }

    /// A host NIC's wire is free: its ACK queue first, then a queue pair
    /// round robin.
    fn nic_send(&mut self, port: PortId) {
        let now = self.now();
        let host = self.topo.port(port).node;
        let h = self.topo.host_index(host) as usize;
        let r = self.rdma.as_mut().unwrap();
        // (a NIC's data queue stays empty: its QPs make packets on demand)
        if let Some((Dequeued::Control(pkt), _)) = r.mmu.dequeue(port, &mut r.rng) {
            // the next: another ACK, or a QP's packet (a NIC that only
            // receives has no QPs and no further event)
            let more = r.mmu.waiting(port) > 0 || !r.nic_qps[h].is_empty();
            let tx_end = self.wire(port, pkt);
            if more {
                self.free_at(port, tx_end);
            }
            return;
        }
        if r.mmu.ports[port.idx()].paused {
            return; // RESUME kicks the NIC
        }
        // round robin over the QPs with data: the first whose pacing allows
        let n = r.nic_qps[h].len();
        let mut wake = SimTime::MAX;
        let mut chosen = None;
        for k in 0..n {
            let i = (r.rr[h] + 1 + k) % n;
            let q = r.qps[r.nic_qps[h][i] as usize].as_ref().unwrap();
            if !q.sender.has_data(&r.cfg) {
                continue;
            }
            if q.sender.next_avail() <= now {
                chosen = Some(i);
                break;
            }
            wake = wake.min(q.sender.next_avail());
        }
        let Some(i) = chosen else {
            if wake != SimTime::MAX {
                self.free_at(port, wake);
            }
            return;
        };
        r.rr[h] = i;
        let fid = r.nic_qps[h][i];
        let q = r.qps[fid as usize].as_mut().unwrap();
        let (seq, len) = q.sender.send(now, &r.cfg);
        let header = r.cfg.header_bytes;
        let mut p = Packet::new(
            q.src,
            q.dst,
            q.sport,
            ROCE_DPORT,
            Proto::Udp,
            len + header,
            Payload::Rdma { qp: fid, kind: RdmaKind::Data, seq, len, cnp: false },
            now,
        );
        p.ect = true;
        let pkt = PktId(self.pkts.insert(p));
        self.c.sent += 1;
        self.c.sent_bytes += (len + header) as u64;
        self.qp_rearm(fid);
        let tx_end = self.wire(port, pkt);
        // the next packet: when this one is out (or a QP's pacing allows)
        self.free_at(port, tx_end);
    }

    /// A PFC frame out of `port` (toward the node that sends into it).
    fn send_pfc(&mut self, port: PortId, pause: bool) {
        let now = self.now();
        let pr = self.topo.port(port);
        let peer = self.topo.port(pr.peer).node;
        let p = Packet::new(pr.node, peer, 0, 0, Proto::Udp, PFC_BYTES, Payload::Pfc { pause }, now);
        let pkt = PktId(self.pkts.insert(p));
        self.c.sent += 1;
        self.c.sent_bytes += PFC_BYTES as u64;
        self.rdma.as_mut().unwrap().mmu.push_control(port, pkt);
        self.kick(port);
    }

    /// A PFC frame that crossed `port`'s link arrives: the far end's port
    /// toward the sender stops or goes on.
    pub(super) fn pfc_arrive(&mut self, pkt: PktId, port: PortId, pause: bool) {
        let p = self.pkts.remove(pkt.0);
        self.c.delivered += 1;
        self.c.delivered_bytes += p.size as u64;
        self.c.control_delivered += 1;
        let target = self.ports[port.idx()].ends.peer;
        let now = self.now();
        let changed = self.rdma.as_mut().unwrap().mmu.set_paused(target, pause, now);
        if changed && !pause {
            self.kick(target);
        }
        if changed && pause {
            if let Some(cycle) = self.pause_cycle(target) {
                let r = self.rdma.as_mut().unwrap();
                r.deadlocks += 1;
                r.first_deadlock.get_or_insert((now, cycle));
            }
        }
    }

    /// A cycle of paused ports holding data through `start` (a PFC
    /// deadlock: none of them can drain): `start` is paused by its far end,
    /// whose data waits at its own egress ports; a paused one holding data
    /// waits in turn for its far end, and so on. The cycle's ports, if any.
    fn pause_cycle(&self, start: PortId) -> Option<Vec<PortId>> {
        let mmu = &self.rdma.as_ref().unwrap().mmu;
        let blocked = |p: PortId| mmu.ports[p.idx()].paused && mmu.data_bytes(p) > 0;
        if !blocked(start) {
            return None;
        }
        // depth-first over blocked ports; `path` is the chain from start
        let mut path = vec![start];
        let mut next = vec![0usize];
        let mut seen = std::collections::HashSet::new();
        seen.insert(start);
        while let Some(&cur) = path.last() {
            let node = self.ports[cur.idx()].ends.peer_node;
            let outs = &self.topo.nodes[node.idx()].ports;
            let k = next.last_mut().unwrap();
            if self.topo.is_host(node) || *k >= outs.len() {
                path.pop();
                next.pop();
                continue;
            }
            let q = outs[*k];
            *k += 1;
            if q == start && blocked(q) {
                return Some(path);
            }
            if blocked(q) && seen.insert(q) {
                path.push(q);
                next.push(0);
            }
        }
        None
    }

    /// A RoCEv2 packet reaches the host it is for.
    pub(super) fn rdma_input(&mut self, qp: u32, kind: RdmaKind, seq: u64, len: u32, flag: bool) {
        let now = self.now();
        let r = self.rdma.as_mut().unwrap();
        let cfg = r.cfg;
        let Some(q) = r.qps.get_mut(qp as usize).and_then(|q| q.as_mut()) else {
            self.c.stale_segments += 1; // the flow completed
            return;
        };
        if kind == RdmaKind::Data {
            let had = q.receiver.expected();
            let reply = q.receiver.on_data(seq, len, flag, now, &cfg);
            // a job's flow is done for its step when its receiver has every
            // byte (the next step waits for the data, not for the ACK)
            if had < q.sender.size() && q.receiver.expected() >= q.sender.size() && self.flows[qp as usize].job != u32::MAX {
                self.done_coll.push((qp, u32::MAX));
            }
            let Some(reply) = reply else { return };
            let kind = if reply.kind == AckKind::Ack { RdmaKind::Ack } else { RdmaKind::Nack };
            let p = Packet::new(
                q.dst,
                q.src,
                ROCE_DPORT,
                q.sport,
                Proto::Udp,
                cfg.ack_bytes,
                Payload::Rdma { qp, kind, seq: reply.seq, len: 0, cnp: reply.cnp },
                now,
            );
            let nic = self.topo.nic(q.dst);
            let pkt = PktId(self.pkts.insert(p));
            self.c.sent += 1;
            self.c.sent_bytes += cfg.ack_bytes as u64;
            self.lossless_enqueue(nic, pkt, None);
            if !self.done_coll.is_empty() {
                self.job_flows_done();
            }
            return;
        }
        let ack = if kind == RdmaKind::Ack { AckKind::Ack } else { AckKind::Nack };
        let nic = self.topo.nic(q.src);
        if q.sender.on_ack(ack, seq, flag, now, &cfg) {
            self.rdma_complete(qp);
            return;
        }
        self.qp_rearm(qp);
        self.kick(nic);
    }

    /// Every byte of flow `fid` is acknowledged: its record closes and its
    /// QP is freed.
    fn rdma_complete(&mut self, fid: u32) {
        let now = self.now();
        let r = self.rdma.as_mut().unwrap();
        let q = r.qps[fid as usize].take().unwrap();
        let nic = self.topo.nic(q.src);
        let h = self.topo.host_index(q.src) as usize;
        let list = &mut r.nic_qps[h];
        if let Some(i) = list.iter().position(|&x| x == fid) {
            list.remove(i);
            if r.rr[h] >= i && r.rr[h] > 0 {
                r.rr[h] -= 1;
            }
        }
        r.fct.push(FctRow { flow: fid, sport: q.sport, dport: q.dport });
        let fr = &mut self.flows[fid as usize];
        fr.finish = Some(now);
        fr.counters = q.counters(&r.cfg, r.mmu.paused_time(nic, now));
        self.done += 1;
    }

    /// Keeps one pending timer event per QP at its earliest deadline.
    fn qp_rearm(&mut self, qp: u32) {
        let r = self.rdma.as_mut().unwrap();
        let q = r.qps[qp as usize].as_mut().unwrap();
        let Some(due) = q.sender.next_timer(&r.cfg) else { return };
        if due < q.timer_at {
            q.timer_at = due;
            q.timer_gen = q.timer_gen.wrapping_add(1);
            let gen = q.timer_gen;
            self.q.schedule_later(due, Ev::QpTimer { qp, gen });
        }
    }

    /// A QP's timer event.
    pub(super) fn qp_timer(&mut self, qp: u32, gen: u32) {
        let now = self.now();
        let r = self.rdma.as_mut().unwrap();
        let cfg = r.cfg;
        let Some(q) = r.qps.get_mut(qp as usize).and_then(|q| q.as_mut()) else { return };
        if q.timer_gen != gen {
            return;
        }
        q.timer_at = SimTime::MAX;
        q.sender.on_timer(now, &cfg);
        let nic = self.topo.nic(q.src);
        self.qp_rearm(qp);
        self.kick(nic);
    }

    /// The first deadlock's ports by name, for the summary.
    pub fn deadlock_ports(&self) -> Vec<String> {
        let r = self.rdma.as_ref().unwrap();
        r.first_deadlock.as_ref().map(|(_, c)| c.iter().map(|p| self.topo.port(*p).name.clone()).collect()).unwrap_or_default()
    }

    /// Flows still running at the end: their counters so far.
    pub fn rdma_finalize(&mut self) {
        let now = self.now();
        let Some(r) = self.rdma.as_ref() else { return };
        for (fid, q) in r.qps.iter().enumerate() {
            let Some(q) = q else { continue };
            let nic = self.topo.nic(q.src);
            self.flows[fid].counters = q.counters(&r.cfg, r.mmu.paused_time(nic, now));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::run_ok;
    use crate::RunOutput;

    /// `leaves` leaves of `per_leaf` 100G hosts under `spines` 100G spines,
    /// 1 µs links, RDMA, and the flows given as (src, dst, bytes, start µs).
    fn rdma(leaves: u32, spines: u32, per_leaf: u32, flows: &[(u32, u32, u64, f64)], sets: &[&str]) -> RunOutput {
        rdma_at(100, leaves, spines, per_leaf, flows, sets)
    }

    /// [`rdma`] with `fabric` Gb/s leaf-spine links.
    fn rdma_at(fabric: u32, leaves: u32, spines: u32, per_leaf: u32, flows: &[(u32, u32, u64, f64)], sets: &[&str]) -> RunOutput {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!("lbsim-rdma-{}-{}.csv", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
        let mut csv = String::from("src,dst,size_bytes,start_us\n");
        for (s, d, b, t) in flows {
            csv += &format!("{s},{d},{b},{t}\n");
        }
        std::fs::write(&path, csv).unwrap();
        let text = format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nspines = {spines}\nhosts_per_leaf = {per_leaf}\nhost_rate_gbps = 100\nfabric_rate_gbps = {fabric}\nlink_delay_us = 1\n[transport]\nkind = \"rdma\"\n[workload]\nkind = \"flow_list\"\nflow_list = {:?}\n",
            path.display().to_string()
        );
        let out = run_ok(&text, sets);
        let _ = std::fs::remove_file(&path);
        out
    }

    fn r(out: &RunOutput, key: &str) -> f64 {
        out.summary["rdma"][key].as_f64().unwrap_or_else(|| panic!("rdma.{key} in {}", out.summary["rdma"]))
    }

    /// 16 hosts under L0 send 4 MB each to H16 under the same leaf.
    fn incast(sets: &[&str]) -> RunOutput {
        let flows: Vec<_> = (1..17).map(|s| (s, 0, 4_000_000, 0.0)).collect();
        rdma(2, 1, 17, &flows, sets)
    }

    #[test]
    fn incast_with_pfc_pauses_the_senders_and_drops_nothing() {
        // line-rate senders (no DCQCN): only PFC stops the 16:1 overload
        let out = incast(&["rdma.rate_control=none"]);
        assert_eq!(r(&out, "ingress_drops"), 0.0);
        assert_eq!(out.summary["conservation"]["dropped"], 0);
        assert!(r(&out, "pause_frames") >= 16.0, "{}", out.summary["rdma"]);
        assert!(r(&out, "host_paused_ms") > 1.0, "the senders' NICs were paused: {}", out.summary["rdma"]);
        // every flow completes, and the receiver's link stays busy: 64 MB
        // at 100 Gb/s is 5.12 ms (plus headers)
        let last = out.flows.iter().map(|f| f.finish.expect("finished").as_us_f64()).fold(0.0, f64::max);
        let ideal = 64e6 * 1.048 * 8.0 / 100e9 * 1e6;
        assert!(last < ideal * 1.05, "last flow at {last} us, the link's minimum {ideal} us");
        assert!(out.flows.iter().all(|f| f.counters.paused_ns > 0));
        // events by kind add up to the count; a paused 16:1 incast keeps
        // every port backlogged, so about one port_free per packet-hop
        let kinds = out.summary["events_by_kind"].as_object().unwrap();
        assert_eq!(kinds.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), out.summary["events"].as_u64().unwrap());
        let (arrive, free) = (kinds["arrive"].as_f64().unwrap(), kinds["port_free"].as_f64().unwrap());
        assert!(free > 0.3 * arrive && free < arrive, "{kinds:?}");
        assert!(!kinds.contains_key("tcp_timer"), "{kinds:?}");
    }

    #[test]
    fn the_rate_sampler_shows_dcqcn_cutting_sixteen_senders_to_their_share() {
        let out = incast(&["metrics.cwnd_sample_interval_us=20"]);
        assert!(out.cwnd_samples.is_empty());
        let at = |t: f64| out.qp_rates.iter().filter(move |q| (q.t.as_us_f64() - t).abs() < 1e-6);
        // the 16:1 overload passes Kmin (400 KB) within 5 us: by 20 us every
        // sender has been cut at least once (to 100 (1 - α/2) ≈ 50 Gb/s or
        // below), its target still at line rate (no increase since)
        assert_eq!(at(20.0).count(), 16);
        assert!(at(20.0).all(|q| q.rate.as_gbps_f64() < 51.0 && q.target.0 == 100_000_000_000), "{:?}", at(20.0).collect::<Vec<_>>());
        // 1 ms in, DCQCN has cut them: together near the bottleneck's
        // 100 Gb/s rather than 16 x 100
        let sum: f64 = at(1000.0).map(|q| q.rate.as_gbps_f64()).sum();
        assert!(at(1000.0).count() == 16 && sum < 200.0, "{sum} Gb/s in all at 1 ms");
        assert!(r(&out, "cnps") > 0.0);
    }

    #[test]
    fn incast_without_pfc_drops_and_recovers_by_timeout() {
        let out = incast(&["rdma.rate_control=none", "rdma.pfc=false", "rdma.rto_us=100", "rdma.buffer_bytes=2000000"]);
        assert!(r(&out, "ingress_drops") > 100.0, "{}", out.summary["rdma"]);
        assert_eq!(r(&out, "pause_frames"), 0.0);
        assert!(r(&out, "nacks") > 0.0);
        assert!(out.flows.iter().all(|f| f.finish.is_some()), "go-back-N and the timeout repair every loss");
    }

    #[test]
    fn dcqcn_flows_share_a_bottleneck_fairly_and_fill_it() {
        // the paper's timers (run.py's dcqcn_paper: α and decrease every
        // 50 µs, increase every 55 µs) fill the link; ConnectX's (1 / 4 /
        // 300 µs, the default) recover more slowly after each cut; DCTCP's
        // law on the rate fills it too
        let paper = ["rdma.dcqcn_alpha_interval_us=50", "rdma.dcqcn_decrease_interval_us=50", "rdma.dcqcn_increase_interval_us=55"];
        // the reference's DCTCP preset: a step at 300 KB, g = 1/16, AI 615 Mb/s
        let dctcp = ["rdma.rate_control=dctcp", "rdma.ecn_kmin_bytes=300000", "rdma.ecn_kmax_bytes=300000", "rdma.ecn_pmax=1", "rdma.dctcp_rate_ai_mbps=615"];
        for (sets, floor) in [(&paper[..], 0.9), (&[][..], 0.85), (&dctcp[..], 0.9)] {
            for n in [2u32, 4, 8] {
                // n senders under L0 to one receiver under L1 through one
                // spine: equal long flows (200 MB in all, ~17 ms) that finish
                // together if the shares are fair
                let flows: Vec<_> = (1..=n).map(|s| (s, n + 1, 200_000_000 / n as u64, 0.0)).collect();
                let out = rdma(2, 1, n + 1, &flows, sets);
                let rates: Vec<f64> = out.flows.iter().map(|f| f.size as f64 / f.fct().unwrap().as_secs_f64()).collect();
                let jain = rates.iter().sum::<f64>().powi(2) / (n as f64 * rates.iter().map(|x| x * x).sum::<f64>());
                let last = out.flows.iter().map(|f| f.finish.unwrap()).max().unwrap();
                // on the wire: 48 header bytes per 1000-byte payload
                let util = 200e6 * 1.048 * 8.0 / last.as_secs_f64() / 100e9;
                assert!(jain >= 0.95, "{n} flows {sets:?}: Jain index {jain}, rates {rates:?}");
                assert!(util >= floor, "{n} flows {sets:?}: bottleneck utilisation {util}");
                assert!(r(&out, "cnps") > 0.0, "the rate control saw marks");
                assert_eq!(r(&out, "ingress_drops"), 0.0);
            }
        }
    }

    #[test]
    fn a_victim_sharing_only_a_paused_upstream_link_is_slowed() {
        // 4 hosts under L0 blast H6 (under L1) at line rate over 400G
        // fabric links: H6's access link is the only bottleneck. H0 sends
        // 2 MB to H7, also under L1 but on an idle access link: its path
        // shares only L0->S0 and S0->L1 with the incast, which PFC pauses
        // as the pause spreads back from L1
        let victim = (0u32, 7u32, 2_000_000u64, 500.0);
        let alone = rdma_at(400, 2, 1, 5, &[victim], &["rdma.rate_control=none"]);
        let mut flows: Vec<_> = (1..5).map(|s| (s, 6, 16_000_000, 0.0)).collect();
        flows.push(victim);
        let out = rdma_at(400, 2, 1, 5, &flows, &["rdma.rate_control=none"]);
        let v = |o: &RunOutput| o.flows.iter().find(|f| f.src == 0).unwrap().fct().unwrap().as_us_f64();
        assert!(v(&out) > 3.0 * v(&alone), "victim {} us with the incast, {} us alone", v(&out), v(&alone));
        assert!(r(&out, "switch_port_paused_ms") > 0.0);
        assert_eq!(r(&out, "ingress_drops"), 0.0);
    }

    #[test]
    fn a_ring_with_cyclic_routes_deadlocks_and_it_is_reported() {
        // five switches in a ring, two hosts each; every host sends to a
        // host two switches clockwise (its only shortest path), so each ring
        // link's buffer waits on the next: a cyclic buffer dependency. At
        // line rate (no DCQCN) with small buffers every ring port pauses
        // while holding data, and nothing moves again
        let mut t = String::from("[topology]\nkind = \"explicit\"\n");
        for i in 0..5 {
            t += &format!("[[topology.nodes]]\nname = \"S{i}\"\n");
        }
        for h in 0..10 {
            t += &format!("[[topology.nodes]]\nname = \"H{h}\"\nhost = true\n");
        }
        for i in 0..5 {
            t += &format!("[[topology.links]]\na = \"S{i}\"\nb = \"S{}\"\nrate_gbps = 100\n", (i + 1) % 5);
        }
        for h in 0..10 {
            t += &format!("[[topology.links]]\na = \"H{h}\"\nb = \"S{}\"\nrate_gbps = 100\n", h / 2);
        }
        let dir = std::env::temp_dir().join(format!("lbsim-ring-{}.csv", std::process::id()));
        let mut csv = String::from("src,dst,size_bytes,start_us\n");
        for h in 0..10u32 {
            csv += &format!("{h},{},20000000,0\n", (h + 4) % 10);
        }
        std::fs::write(&dir, csv).unwrap();
        t += &format!("[transport]\nkind = \"rdma\"\n[workload]\nkind = \"flow_list\"\nflow_list = {:?}\n[run]\nstop_ms = 5\n", dir.display().to_string());
        let out = run_ok(&t, &["rdma.rate_control=none", "rdma.buffer_bytes=1000000", "rdma.rto_us=0"]);
        let _ = std::fs::remove_file(&dir);
        assert!(r(&out, "pfc_deadlocks") >= 1.0, "{}", out.summary["rdma"]);
        let ports: Vec<String> = serde_json::from_value(out.summary["rdma"]["first_deadlock_ports"].clone()).unwrap();
        // the cycle is the five clockwise ring ports
        let mut ring: Vec<String> = (0..5).map(|i| format!("S{i}->S{}#0", (i + 1) % 5)).collect();
        let mut got = ports.clone();
        ring.sort();
        got.sort();
        assert_eq!(got, ring, "{ports:?}");
        assert!(out.flows.iter().all(|f| f.finish.is_none()), "nothing completes once deadlocked");
    }

    #[test]
    fn same_seed_same_flows_and_fct_file() {
        let flows: Vec<_> = (0..40u32).map(|i| (i % 8, 8 + (i * 3) % 8, 50_000 + 37_000 * i as u64, i as f64 * 3.0)).collect();
        let a = rdma(2, 2, 8, &flows, &["lb.scheme=drill"]);
        let b = rdma(2, 2, 8, &flows, &["lb.scheme=drill"]);
        assert_eq!(a.fct_txt, b.fct_txt);
        assert_eq!(a.fct_txt.lines().count(), 40);
        assert_eq!(format!("{:?}", a.flows), format!("{:?}", b.flows));
    }
}

#[cfg(test)]
mod job_tests {
    use crate::tests::run_ok;

    #[test]
    fn a_two_rank_all_reduce_over_rdma_takes_the_idle_fabric_time() {
        // H0 under L0, H1 under L1, one spine, 100G: each of the 2 steps
        // sends 8 MB each way at line rate (queue pairs start at line rate:
        // no slow start). The ideal leaves out ACK bytes; here a 60-byte ACK
        // per 1048-byte packet shares each link with the other direction's
        // data, 60 / 1048 = 5.7 % of it, so an iteration takes 1.057x
        let text = "[topology]\nkind = \"leaf_spine\"\nleaves = 2\nspines = 1\nhosts_per_leaf = 1\nhost_rate_gbps = 100\nfabric_rate_gbps = 100\nlink_delay_us = 1\n[transport]\nkind = \"rdma\"\n[workload]\nkind = \"collective\"\n";
        let out = run_ok(text, &["jobs=[{ranks=[0, 1], size_bytes=16000000, iterations=2, gap_us=50}]"]);
        assert_eq!(out.jobs.len(), 2);
        for j in &out.jobs {
            let (t, ideal) = (j.time().unwrap().as_us_f64(), j.ideal.as_us_f64());
            // 2 steps x (8 MB x 1.048 at 100 Gb/s + 4 hops of 1 us and
            // one packet's serialisation) = 2 x (670.72 + 4.34) us
            assert!((ideal - 1350.1).abs() < 0.5, "ideal {ideal}");
            assert!((1.05..1.065).contains(&(t / ideal)), "iteration took {t} us, ideal {ideal} us");
        }
        assert_eq!(out.summary["rdma"]["queue_pairs"], 8, "a queue pair per flow: 2 ranks x 2 steps x 2 iterations");
    }
}
