//! Presto (He et al., SIGCOMM 2015), as adapted to L3 ECMP by the Clove
//! paper (§5): the source edge cuts each flow into fixed-size flowcells
//! (64 KB, the TSO segment size) and sends successive flowcells round-robin
//! over the discovered ports (weighted: `weights = "topology"` gives each
//! path a share proportional to its bottleneck capacity — the "ideal static
//! weights" 0.33/0.33/0.17/0.17 of the Clove testbed with one S2–L2 link
//! down; or an explicit list in path order). Packets carry their flowcell
//! id; the receiving edge puts flowcells back in order before TCP sees them:
//! a packet beyond a gap is delivered at once if it belongs to the same
//! flowcell as the last in-order packet (a loss inside a flowcell, TCP's to
//! repair) or lies behind data already seen (a retransmission), and held
//! otherwise (an earlier flowcell still in flight), until the gap fills,
//! `reassembly_timeout_us` passes, or more than `reassembly_limit_bytes` are
//! held per flow. (The Clove paper gives the outline — flowcell ids, a
//! static timeout, a buffer limit — and these rules are our reading of it.)

use crate::edge::{hashed_port, Discovery, IdMap, Wrr};
use crate::edge_params::{self, num};
use crate::params::{DefaultValue, ParamDef, ParamError, Params, Value};
use crate::SchemeEnv;
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, HostRx, LbHeader, LoadBalancer, NodeId, Payload, PktId};
use std::collections::BTreeMap;

pub const PARAMS: &[ParamDef] = crate::with_discovery![
    num("flowcell_bytes", "bytes", 65536.0, "flowcell size (Presto: 64 KB, one TSO segment)"),
    ParamDef {
        name: "weights",
        unit: "",
        default: DefaultValue::Str("equal"),
        help: "\"equal\", \"topology\" (share proportional to each path's bottleneck capacity: ideal static weights), or a list in path order",
    },
    ParamDef {
        name: "reassembly",
        unit: "",
        default: DefaultValue::Bool(true),
        help: "true: the receiving edge puts flowcells back in order (Presto, Clove §5); false: packets go to TCP as they arrive (AG's Presto is silent on reassembly)",
    },
    num("reassembly_timeout_us", "us", 1000.0, "hold out-of-order flowcells at most this long (Clove §5: an empirical static timeout)"),
    num("reassembly_limit_bytes", "bytes", 524288.0, "flush a flow's held packets beyond this many bytes (Clove §5: a limit on buffered flowcells)"),
];

#[derive(Clone, Debug)]
enum Weights {
    Equal,
    Topology,
    List(Vec<f64>),
}

#[derive(Clone, Copy, Debug, Default)]
struct Sender {
    bytes: u64,
    cell: u32,
    port: u16,
    started: bool,
}

#[derive(Clone, Debug, Default)]
struct Reasm {
    started: bool,
    /// Every byte below this has been passed to TCP (in order or not).
    next: u64,
    /// Highest sequence end seen (delivered or held).
    max_end: u64,
    /// Newest flowcell passed to TCP.
    cell: u32,
    /// Held packets by sequence number: (packet, payload length, flowcell).
    held: BTreeMap<u64, (PktId, u32, u32)>,
    held_bytes: u64,
    /// Ranges passed to TCP above `next` (past a gap).
    passed: lbsim_tcp::RangeSet,
    timer: Option<u32>,
}

impl Reasm {
    /// Moves `next` over ranges already passed up beyond a gap that just closed.
    fn advance(&mut self) {
        while let Some((s, e)) = self.passed.next_at_or_after(0) {
            if s > self.next {
                break;
            }
            self.next = self.next.max(e);
            self.passed.remove_below(self.next);
        }
    }
}

pub struct Presto {
    disc: Discovery,
    reassembly: bool,
    cell_bytes: u64,
    weights: Weights,
    timeout: SimTime,
    limit: u64,
    senders: Vec<IdMap<u64, Sender>>,
    wrr: Vec<IdMap<u32, WrrState>>,
    rx: Vec<IdMap<u64, Reasm>>,
    /// timer slot -> (host, flow); token = 3 << 56 | slot
    timers: Vec<(u32, u64)>,
    free_timers: Vec<u32>,
    pub held_total: u64,
    pub timeouts: u64,
    pub flowcells: u64,
}

/// Per destination: (routing epoch the weights follow, the round robin, its weights).
type WrrState = (u32, Wrr, Vec<f64>);

const TOKEN_REASM: u64 = 3 << 56;

impl Presto {
    pub fn new(p: &Params, env: &SchemeEnv, given: &BTreeMap<String, Value>) -> Result<Self, ParamError> {
        let weights = match given.get("weights") {
            Some(Value::List(v)) => {
                if v.iter().any(|x| x.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)) {
                    return Err(ParamError { key: "weights".into(), msg: "list entries must be > 0".into() });
                }
                Weights::List(v.clone())
            }
            _ => match p.string("weights", &["equal", "topology"])?.as_str() {
                "topology" => Weights::Topology,
                _ => Weights::Equal,
            },
        };
        let hosts = env.topo.num_hosts();
        Ok(Presto {
            disc: Discovery::new(edge_params::discovery(p)?, hosts),
            cell_bytes: p.count("flowcell_bytes", 1 << 30)?,
            weights,
            reassembly: p.boolean("reassembly")?,
            timeout: p.duration("reassembly_timeout_us", false)?,
            limit: p.count("reassembly_limit_bytes", 1 << 34)?,
            senders: (0..hosts).map(|_| IdMap::default()).collect(),
            wrr: (0..hosts).map(|_| IdMap::default()).collect(),
            rx: (0..hosts).map(|_| IdMap::default()).collect(),
            timers: vec![],
            free_timers: vec![],
            held_total: 0,
            timeouts: 0,
            flowcells: 0,
        })
    }

    pub fn discovery(&self) -> &Discovery {
        &self.disc
    }

    /// Path weights toward `dst` for the current path set.
    fn path_weights(&self, ctx: &Ctx, src: u32, dst: u32) -> Vec<f64> {
        let set = self.disc.get(src, dst).unwrap();
        let n = set.ports.len();
        match &self.weights {
            Weights::Equal => vec![1.0; n],
            Weights::List(v) => (0..n).map(|i| v.get(i).copied().unwrap_or(1.0)).collect(),
            Weights::Topology => {
                // each path's bottleneck: min over its links of capacity / paths
                // sharing it, ignoring links every path uses (the host's own link)
                set.paths
                    .iter()
                    .map(|path| {
                        path.iter()
                            .filter(|l| !set.paths.iter().all(|q| q.contains(l)))
                            .map(|&in_port| {
                                let rate = ctx.ports[ctx.topo.ports[in_port.idx()].peer.idx()].rate.0 as f64;
                                let sharing = set.paths.iter().filter(|q| q.contains(&in_port)).count() as f64;
                                rate / sharing
                            })
                            .fold(f64::INFINITY, f64::min)
                    })
                    .collect()
            }
        }
    }

    /// Passes held packets up in sequence order: those now in order, or all.
    fn release(&mut self, ctx: &mut Ctx, host: NodeId, h: u32, flow: u64, all: bool) {
        let r = self.rx[h as usize].get_mut(&flow).unwrap();
        r.advance();
        while let Some((&seq, &(pkt, len, cell))) = r.held.iter().next() {
            if !all && seq > r.next {
                break;
            }
            r.held.remove(&seq);
            r.held_bytes -= ctx.pkt(pkt).size as u64;
            r.next = r.next.max(seq + len as u64);
            r.cell = r.cell.max(cell);
            r.advance();
            ctx.deliver(host, pkt);
        }
        if r.held.is_empty() {
            r.timer = None; // a pending timer for this episode is now stale
        }
    }

    /// Current per-path weights toward `dst` (for tests).
    pub fn weights_toward(&self, src: u32, dst: u32) -> Option<Vec<f64>> {
        self.wrr[src as usize].get(&dst).map(|w| w.2.clone())
    }
}

impl LoadBalancer for Presto {
    /// Host-side only: switches forward by plain ECMP.
    fn wants_switch_hook(&self) -> bool {
        false
    }
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        let p = *ctx.pkt(pkt);
        let len = match p.payload {
            Payload::Control { .. } => return,
            Payload::Tcp { hdr, .. } => hdr.len as u64,
            _ => p.size as u64,
        };
        let (src, dst) = (ctx.topo.host_index(host), ctx.topo.host_index(p.dst));
        let set = self.disc.paths(ctx, src, dst);
        let (ports, epoch) = (set.ports.clone(), set.epoch);
        let flow = p.inner_hash();
        let s = self.senders[src as usize].entry(flow).or_default();
        let new_cell = !s.started || s.bytes + len > self.cell_bytes;
        if new_cell {
            if s.started {
                s.cell += 1;
            }
            s.started = true;
            s.bytes = 0;
        }
        s.bytes += len;
        let (cell, mut port) = (s.cell, s.port);
        if new_cell {
            self.flowcells += 1;
            port = if ports.is_empty() {
                hashed_port(&p)
            } else {
                let stale = self.wrr[src as usize].get(&dst).is_none_or(|w| w.0 != epoch || w.2.len() != ports.len());
                if stale {
                    let w = self.path_weights(ctx, src, dst);
                    self.wrr[src as usize].insert(dst, (epoch, Wrr::default(), w));
                }
                let w = self.wrr[src as usize].get_mut(&dst).unwrap();
                ports[w.1.pick(&w.2)]
            };
            self.senders[src as usize].get_mut(&flow).unwrap().port = port;
        }
        let pm = ctx.pkt_mut(pkt);
        pm.set_outer_sport(port);
        pm.lb = LbHeader::Presto { flowcell: cell };
    }

    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        if self.disc.on_receive(ctx, pkt) {
            return HostRx::Consume;
        }
        let p = *ctx.pkt(pkt);
        let (LbHeader::Presto { flowcell }, Payload::Tcp { hdr, .. }) = (p.lb, p.payload) else { return HostRx::Deliver };
        ctx.pkt_mut(pkt).lb = LbHeader::None;
        if hdr.len == 0 || !self.reassembly {
            return HostRx::Deliver;
        }
        let h = ctx.topo.host_index(host);
        let flow = p.inner_hash();
        let r = self.rx[h as usize].entry(flow).or_default();
        if !r.started {
            r.started = true;
            r.next = hdr.seq;
            r.cell = flowcell;
        }
        let end = hdr.seq + hdr.len as u64;
        if hdr.seq <= r.next {
            // in order (or a retransmission): deliver, then whatever it unblocks
            r.next = r.next.max(end);
            r.max_end = r.max_end.max(end);
            r.cell = r.cell.max(flowcell);
            r.advance();
            if r.held.is_empty() {
                return HostRx::Deliver;
            }
            ctx.deliver(host, pkt);
            self.release(ctx, host, h, flow, false);
            return HostRx::Held;
        }
        if flowcell <= r.cell || hdr.seq < r.max_end {
            // a gap inside the current flowcell (a loss), or a packet behind
            // data already seen (a retransmission filling a hole): TCP's
            // business; remember it was passed so `next` can move over it
            r.max_end = r.max_end.max(end);
            r.passed.insert(hdr.seq, end);
            return HostRx::Deliver;
        }
        r.max_end = r.max_end.max(end);
        // an earlier flowcell is still in flight: hold
        r.held.insert(hdr.seq, (pkt, hdr.len, flowcell));
        r.held_bytes += p.size as u64;
        self.held_total += 1;
        if r.held_bytes > self.limit {
            self.release(ctx, host, h, flow, true);
            return HostRx::Held;
        }
        if r.timer.is_none() {
            let slot = match self.free_timers.pop() {
                Some(s) => {
                    self.timers[s as usize] = (h, flow);
                    s
                }
                None => {
                    self.timers.push((h, flow));
                    (self.timers.len() - 1) as u32
                }
            };
            self.rx[h as usize].get_mut(&flow).unwrap().timer = Some(slot);
            ctx.schedule(ctx.now + self.timeout, TOKEN_REASM | slot as u64);
        }
        HostRx::Held
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        if token & (0xFF << 56) != TOKEN_REASM {
            self.disc.on_timer(ctx, token);
            return;
        }
        let slot = (token & 0xFFFF_FFFF) as u32;
        let (h, flow) = self.timers[slot as usize];
        self.free_timers.push(slot);
        let Some(r) = self.rx[h as usize].get_mut(&flow) else { return };
        if r.timer != Some(slot) {
            return; // the episode it was armed for ended; a later one has its own
        }
        r.timer = None;
        if !r.held.is_empty() {
            self.timeouts += 1;
            let host = ctx.topo.host(h);
            self.release(ctx, host, h, flow, true);
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![("flowcells", self.flowcells as f64), ("packets_held", self.held_total as f64), ("reassembly_timeouts", self.timeouts as f64)];
        v.extend(self.discovery().stats());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_net::{Action, Packet, Proto};
    use lbsim_tcp::TcpHeader;

    /// The receiving side of a test: host 20 of the testbed with Presto.
    struct Rx {
        env: Env,
        p: Presto,
        h: NodeId,
    }

    impl Rx {
        fn new() -> Rx {
            let env = Env::testbed();
            let p = presto(&env);
            let h = env.topo.host(20);
            Rx { env, p, h }
        }

        /// Hands host 20 the 1000-byte segment at `seq` of flowcell `cell`.
        fn rx(&mut self, t: SimTime, seq: u64, cell: u32) -> HostRx {
            let s = seg(&mut self.env, seq, cell);
            self.p.on_host_receive(&mut self.env.ctx(t), self.h, s)
        }

        /// The first timer the scheme armed: (when, token).
        fn timer(&self) -> Option<(SimTime, u64)> {
            self.env.actions.iter().find_map(|a| match a {
                Action::Timer { at, token } => Some((*at, *token)),
                _ => None,
            })
        }

        /// Segments released to TCP since the last call, by sequence number.
        fn delivered(&mut self) -> Vec<u64> {
            let env = &mut self.env;
            let v = env
                .actions
                .iter()
                .filter_map(|a| match a {
                    Action::Deliver { pkt, .. } => Some(env.pkts.get(pkt.0).tcp().unwrap().seq),
                    _ => None,
                })
                .collect();
            env.actions.retain(|a| !matches!(a, Action::Deliver { .. }));
            v
        }
    }

    fn presto(env: &Env) -> Presto {
        let mut given = BTreeMap::new();
        given.insert("discovery".to_string(), Value::Str("oracle".into()));
        let e = env.scheme_env();
        Presto::new(&Params::new(&given, PARAMS, "presto").unwrap(), &e, &given).unwrap()
    }

    fn seg(env: &mut Env, seq: u64, cell: u32) -> PktId {
        let hdr = TcpHeader { seq, len: 1000, flags: lbsim_tcp::header::ACK, ..Default::default() };
        let mut p =
            Packet::new(env.topo.host(0), env.topo.host(20), 1234, 80, Proto::Tcp, 1052, Payload::Tcp { conn: 0, to_receiver: true, hdr }, SimTime::ZERO);
        p.lb = LbHeader::Presto { flowcell: cell };
        PktId(env.pkts.insert(p))
    }

    #[test]
    fn reassembly_puts_flowcells_back_in_order() {
        let mut r = Rx::new();
        let t = SimTime::from_us(1);
        assert_eq!(r.rx(t, 0, 0), HostRx::Deliver);
        // flowcell 1 overtakes the rest of flowcell 0: held
        assert_eq!(r.rx(t, 3000, 1), HostRx::Held);
        assert_eq!(r.rx(t, 4000, 1), HostRx::Held);
        // the rest of flowcell 0 arrives: it and the held packets go up in order
        // (with packets held, in-order ones also go up through the release queue)
        assert_eq!(r.rx(t, 1000, 0), HostRx::Held);
        assert_eq!(r.delivered(), vec![1000]);
        assert_eq!(r.rx(t, 2000, 0), HostRx::Held);
        assert_eq!(r.delivered(), vec![2000, 3000, 4000]);
    }

    #[test]
    fn a_timer_from_an_earlier_hold_does_not_flush_a_later_one() {
        let mut r = Rx::new();
        let t0 = SimTime::from_us(1);
        r.rx(t0, 0, 0);
        // hold episode 1 at t0, resolved at once
        r.rx(t0, 2000, 1);
        r.rx(t0, 1000, 0);
        let first_timer = r.timer().unwrap();
        r.env.actions.clear();
        // hold episode 2 at t0 + 900 us
        let t1 = t0 + SimTime::from_us(900);
        assert_eq!(r.rx(t1, 5000, 3), HostRx::Held);
        // the first timer fires: stale, nothing released
        r.p.on_timer(&mut r.env.ctx(first_timer.0), first_timer.1);
        assert!(r.delivered().is_empty());
        assert_eq!(r.p.timeouts, 0);
    }

    #[test]
    fn a_gap_inside_the_current_flowcell_is_a_loss_and_passes_at_once() {
        let mut r = Rx::new();
        let t = SimTime::from_us(1);
        r.rx(t, 0, 0);
        // 1000..2000 lost in flowcell 0
        assert_eq!(r.rx(t, 2000, 0), HostRx::Deliver);
    }

    #[test]
    fn after_a_loss_is_repaired_the_next_flowcell_is_not_held_until_the_timeout() {
        let mut r = Rx::new();
        let t = SimTime::from_us(1);
        r.rx(t, 0, 0);
        // 1000..2000 of flowcell 0 is lost; 2000 and 3000 pass straight up
        assert_eq!(r.rx(t, 2000, 0), HostRx::Deliver);
        assert_eq!(r.rx(t, 3000, 0), HostRx::Deliver);
        // flowcell 1 arrives: held behind the hole
        assert_eq!(r.rx(t, 4000, 1), HostRx::Held);
        // the retransmission fills the hole: flowcell 1 goes up at once
        assert_eq!(r.rx(t, 1000, 2), HostRx::Held);
        assert_eq!(r.delivered(), vec![1000, 4000]);
    }

    #[test]
    fn held_packets_are_released_by_the_timeout() {
        let mut r = Rx::new();
        let t = SimTime::from_us(1);
        r.rx(t, 0, 0);
        assert_eq!(r.rx(t, 5000, 1), HostRx::Held);
        let (at, token) = r.timer().expect("a reassembly timer");
        assert_eq!(at, t + SimTime::from_us(1000));
        r.env.actions.clear();
        r.p.on_timer(&mut r.env.ctx(at), token);
        assert_eq!(r.delivered(), vec![5000]);
        assert_eq!(r.p.timeouts, 1);
    }

    #[test]
    fn topology_weights_follow_bottleneck_shares() {
        // one S1-L1 link down: paths through S1 share its remaining downlink
        let mut env = Env::testbed();
        let l = env.topo.match_links("S1-L1#0")[0];
        let mut up = vec![true; env.topo.links.len()];
        up[l.idx()] = false;
        env.routing = lbsim_net::Routing::compute(&env.topo, &up);
        let mut given = BTreeMap::new();
        given.insert("discovery".to_string(), Value::Str("oracle".into()));
        given.insert("weights".to_string(), Value::Str("topology".into()));
        let e = env.scheme_env();
        let mut p = Presto::new(&Params::new(&given, PARAMS, "presto").unwrap(), &e, &given).unwrap();
        let d = env.packet(0, 20, 1500);
        let h0 = env.topo.host(0);
        p.on_host_send(&mut env.ctx(SimTime::from_us(1)), h0, d);
        let w = p.weights_toward(0, 20).unwrap();
        let mut w: Vec<f64> = w.iter().map(|x| x / w.iter().sum::<f64>()).collect();
        w.sort_by(|a, b| b.partial_cmp(a).unwrap());
        // the Clove testbed's 0.33 / 0.33 / 0.17 / 0.17
        let want = [1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0];
        for (a, b) in w.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{w:?}");
        }
    }
}
