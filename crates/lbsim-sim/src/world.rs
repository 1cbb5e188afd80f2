//! The event loop: pops events in (time, insertion) order and dispatches
//! each to the component that owns its state — the fabric hop
//! (`world/fabric.rs`), the hosts' transport (`world/host.rs`, MPTCP in
//! `world/mptcp.rs`), collective jobs (`world/collective.rs`) and the
//! samplers (`world/sample.rs`). A [`World`] is built whole from a
//! [`WorldConfig`].
//!
//! Events are small `Copy` values dispatched by `match` (no boxing). A
//! packet costs one event per hop ([`Ev::Arrive`], see `lbsim_net::port`).

/// Hook context from disjoint fields of the world (defined before the
/// submodules so they can use it).
macro_rules! ctx {
    ($w:ident) => {
        Ctx {
            now: $w.q.now(),
            topo: &$w.topo,
            routing: &$w.routing,
            ports: &$w.ports,
            salts: &$w.salts,
            pkts: &mut $w.pkts,
            rng: &mut $w.lb_rng,
            actions: &mut $w.actions,
            lossless: $w.rdma.as_ref().map(|r| &r.mmu),
        }
    };
}

mod collective;
mod fabric;
mod host;
mod mptcp;
mod order;
mod rdma;
mod sample;
pub(crate) use collective::{JobRun, JobSpec};
pub(crate) use fabric::{DropPlan, InjectedDrop, LinkEvent};
#[cfg(test)]
pub(crate) use host::Conn;
pub(crate) use host::{Incast, TcpHosts, UdpSource};
pub(crate) use rdma::{RdmaHosts, RdmaSetup};
pub(crate) use sample::{SampleConfig, Samplers};

use crate::metrics::{Counters, FlowRecord};
use lbsim_engine::{EventQueue, Rng, SimTime, Slab};
use lbsim_lb::Scheme;
use lbsim_net::{Action, Ctx, LinkId, LoadBalancer, Packet, Payload, PktId, PortId, PortQueue, Routing, Topology};
use lbsim_tcp::TcpConfig;
use lbsim_workload::FlowSpec;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    /// The head packet of egress `port` has crossed its link and reaches
    /// the peer (one pending event per port; `gen` detects a failed port).
    /// `pkt` is that head packet, so the run loop can prefetch it before
    /// the event pops.
    Arrive {
        port: PortId,
        gen: u32,
        pkt: PktId,
    },
    /// A TCP endpoint's timer: endpoint = conn * 2 + (0 sender, 1 receiver).
    Timer {
        ep: u32,
        gen: u32,
    },
    /// The next flow of the open-loop workload starts.
    FlowArrival,
    /// A load-balancing scheme's timer.
    Lb {
        token: u64,
    },
    /// Scheduled link failure / restoration (index into `link_events`).
    Link {
        idx: u32,
    },
    /// A constant-bit-rate UDP source sends its next packet.
    Udp {
        src: u32,
    },
    /// Next incast request.
    IncastRequest,
    SampleLinks,
    SampleQueues,
    /// Every live connection's congestion window is sampled.
    SampleCwnd,
    SampleScheme,
    /// Host `host`'s NIC queue has drained: wake senders waiting for it.
    NicReady {
        host: u32,
    },
    /// Collective job `job` starts its next iteration.
    Job {
        job: u32,
    },
    /// RDMA: `port`'s wire is free (or a paced queue pair may send): it
    /// sends what comes next (`world/rdma.rs`).
    PortFree {
        port: PortId,
    },
    /// RDMA: a queue pair's timer (DCQCN's steps, the timeout).
    QpTimer {
        qp: u32,
        gen: u32,
    },
}

impl Ev {
    /// Each kind's name in summary.json's `events_by_kind`, in the order
    /// of [`Ev::kind`].
    pub const KINDS: [&'static str; 15] = [
        "arrive",
        "tcp_timer",
        "flow_arrival",
        "scheme_timer",
        "link",
        "udp",
        "incast_request",
        "sample_links",
        "sample_queues",
        "sample_cwnd",
        "sample_scheme",
        "nic_ready",
        "job",
        "port_free",
        "qp_timer",
    ];

    /// This event's index in [`Ev::KINDS`].
    #[inline(always)]
    pub fn kind(&self) -> usize {
        match self {
            Ev::Arrive { .. } => 0,
            Ev::Timer { .. } => 1,
            Ev::FlowArrival => 2,
            Ev::Lb { .. } => 3,
            Ev::Link { .. } => 4,
            Ev::Udp { .. } => 5,
            Ev::IncastRequest => 6,
            Ev::SampleLinks => 7,
            Ev::SampleQueues => 8,
            Ev::SampleCwnd => 9,
            Ev::SampleScheme => 10,
            Ev::NicReady { .. } => 11,
            Ev::Job { .. } => 12,
            Ev::PortFree { .. } => 13,
            Ev::QpTimer { .. } => 14,
        }
    }
}

/// The serial run: one queue, popped in its order.
impl World {
    /// Processes one event; false when the queue is empty.
    #[inline(always)]
    pub fn step(&mut self, hard_stop: SimTime) -> bool {
        let Some(t) = self.q.peek_time() else {
            return false;
        };
        if t > hard_stop {
            return false;
        }
        // A port's head packet arriving names the port's next arrival: that
        // event takes its place in the queue (one sift, same order).
        let ports = &mut self.ports;
        let mut arrived = None;
        let (_t, ev) = self
            .q
            .pop_with(|now, ev| match *ev {
                Ev::Arrive { port, gen, pkt: head } => {
                    let pq = &mut ports[port.idx()];
                    if pq.generation != gen {
                        return None; // the link failed and took its packets with it
                    }
                    let (pkt, next) = pq.pop_arrival(now)?;
                    debug_assert_eq!(pkt, head, "a live arrival event names its port's head packet");
                    arrived = Some(pkt);
                    next.map(|(t, pkt)| (t, Ev::Arrive { port, gen, pkt }))
                }
                _ => None,
            })
            .unwrap();
        if self.prefetch {
            self.prefetch_upcoming();
        }
        self.dispatch(ev, arrived);
        true
    }
    /// Overlaps the next events' cache misses with this one's work (hints
    /// only; large fabrics spend most of their time waiting for these
    /// lines). For the near heap's entries 1 and 2 (the event after next is
    /// one of them): their port records and packets. For entry 0 (the next
    /// near event, whose lines were requested one event ago): its FIFO head,
    /// and the routing entry its packet will read at a switch or, at a host,
    /// the host's NIC record and the segment's connection.
    #[inline]
    fn prefetch_upcoming(&self) {
        if let Some(&Ev::Arrive { port, gen, pkt }) = self.q.near_at(0) {
            let pq = &self.ports[port.idx()];
            // a stale event (its link failed) names a packet already freed
            if pq.generation == gen {
                pq.prefetch_head();
                if pq.ends.peer_is_host {
                    // the host's NIC (its reply or its next segments go out
                    // there) and the connection the segment is for
                    self.ports[self.topo.nic(pq.ends.peer_node).idx()].prefetch();
                    if let Payload::Tcp { conn, to_receiver, .. } = self.pkts.get(pkt.0).payload {
                        // the connection lives behind its box; of its ~1 KB,
                        // the endpoint the segment is for and the line with
                        // its source address (the reply's header reads it)
                        if let Some(Some(c)) = self.tcp.conns.get(conn as usize) {
                            if to_receiver {
                                lbsim_engine::prefetch_lines(&c.receiver);
                            } else {
                                lbsim_engine::prefetch_lines(&c.sender);
                            }
                            lbsim_engine::prefetch(&c.src);
                        }
                    }
                } else {
                    let dst = self.pkts.get(pkt.0).dst;
                    if self.topo.is_host(dst) {
                        self.routing.prefetch(pq.ends.peer_node, self.topo.host_index(dst));
                    }
                }
            }
        }
        for i in 1..3 {
            if let Some(&Ev::Arrive { port, pkt, .. }) = self.q.near_at(i) {
                self.pkts.prefetch(pkt.0);
                self.ports[port.idx()].prefetch_arrival();
            }
        }
    }
}

// An event is 16 bytes (a heap entry 32, two per cache line).
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

/// Fabrics with at least this many ports prefetch the next events' state.
/// The threshold is measured, not derived (docs/performance.md): the k = 16 fat-tree (6,144 ports, whose records, in-flight
/// packets and routing table outgrow a core's 2 MB L2) ran 1.5x faster
/// with it; the k = 8 one (768 ports) +2 %, within noise; B1 paid ~10 %
/// more instructions for nothing.
const PREFETCH_MIN_PORTS: usize = 1024;

#[cfg(test)]
thread_local! {
    /// Tests force prefetching on or off to show it changes nothing.
    pub(crate) static FORCE_PREFETCH: std::cell::Cell<Option<bool>> = const { std::cell::Cell::new(None) };
    /// Tests force the scheme's host and switch hooks to run, and read
    /// what the scheme declared (host hooks, switch hook), to show that
    /// skipping them changes nothing.
    pub(crate) static FORCE_HOOKS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    pub(crate) static DECLARED_HOOKS: std::cell::Cell<Option<(bool, bool)>> = const { std::cell::Cell::new(None) };
    /// Prunes of the dropped-segment lists so far; `None` turns pruning off
    /// (tests show it changes nothing).
    pub(crate) static LOST_PRUNES: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(Some(0)) };
}

fn prefetch_for(ports: usize) -> bool {
    #[cfg(test)]
    if let Some(on) = FORCE_PREFETCH.with(|f| f.get()) {
        return on;
    }
    ports >= PREFETCH_MIN_PORTS
}

/// The simulated datacenter: the fabric (topology, routes, ports, packets,
/// the load-balancing scheme), the hosts' transport ([`TcpHosts`]), the
/// traffic sources, the samplers ([`Samplers`]) and the event queue that
/// drives them. Each job's code lives in its own file (`fabric`, `host`,
/// `sample`, `mptcp`, `collective`); this file keeps the loop and dispatch.
pub(crate) struct World {
    pub q: EventQueue<Ev>,
    /// Whether the run loop prefetches ([`PREFETCH_MIN_PORTS`]).
    prefetch: bool,
    /// Events processed per kind ([`Ev::KINDS`]), for summary.json's
    /// `events_by_kind`.
    pub ev_kinds: [u64; Ev::KINDS.len()],
    pub topo: Topology,
    pub routing: Routing,
    pub link_up: Vec<bool>,
    pub ports: Vec<PortQueue>,
    pub salts: Vec<u64>,
    pub pkts: Slab<Packet>,
    pub lb: Scheme,
    lb_wants_enqueue: bool,
    /// The scheme's host hooks do something (else they are skipped).
    lb_host_hooks: bool,
    /// The scheme's switch hook does more than ECMP (else the World picks
    /// by ECMP itself).
    lb_switch_hook: bool,
    pub lb_rng: Rng,
    actions: Vec<Action>,
    /// The hosts' TCP: connections, MPTCP, NIC wake-ups.
    pub tcp: TcpHosts,
    /// The RDMA hosts and the lossless fabric (`transport.kind = "rdma"`):
    /// then every port sends by dequeue (`world/rdma.rs`).
    pub rdma: Option<Box<RdmaHosts>>,
    pub flows: Vec<FlowRecord>,
    pub arrivals: Vec<FlowSpec>,
    /// Per port: its index among its leaf's uplinks, or u32::MAX; used when
    /// `path_record` (metrics.path_record) is on.
    uplink_pos: Vec<u32>,
    pub path_record: bool,
    /// Route profiles per (src, dst) host pair, for ideal FCTs.
    path_profiles: HashMap<(u32, u32), Vec<crate::metrics::PathProfile>>,
    next_arrival: usize,
    pub done: usize,
    done_incast: Vec<u32>,
    pub udp: Vec<UdpSource>,
    pub incast: Option<Incast>,
    pub link_events: Vec<LinkEvent>,
    pub drop_plan: Vec<DropPlan>,
    pub injected: Vec<InjectedDrop>,
    /// Periodic samples, goodput windows, capture, flowlet sizes.
    pub samplers: Samplers,
    pub c: Counters,
    /// NIC back-pressure: a TCP sender may keep this many packets queued at
    /// its host's NIC (`None`: the NIC drops instead, drop-tail).
    pub host_nic_limit: Option<u32>,
    /// Host send jitter: each packet leaving a host reaches the next hop
    /// up to this much later (uniform), never overtaking the previous one.
    pub jitter: SimTime,
    pub jitter_rng: Rng,
    /// Latest stop time of UDP sources that have one.
    pub udp_until: SimTime,
    /// Collective jobs (`[[jobs]]`), the connections of each job's rank
    /// pairs ((job, src, dst) -> one per channel), and the job flows just
    /// completed: (flow, uplink index its connection last used).
    pub(crate) jobs: Vec<JobRun>,
    job_pools: BTreeMap<(u32, u32, u32), Vec<u32>>,
    done_coll: Vec<(u32, u32)>,
}

/// Everything a [`World`] is built from (`build.rs` derives it from the
/// scenario); nothing is set on the World after [`World::new`].
pub(crate) struct WorldConfig {
    pub topo: Topology,
    /// Per link: up at t = 0; `routing` is computed over it.
    pub link_up: Vec<bool>,
    pub routing: Routing,
    /// The links down at t = 0, whose ports start failed.
    pub down0: Vec<LinkId>,
    pub ports: Vec<PortQueue>,
    pub salts: Vec<u64>,
    pub lb: Scheme,
    pub lb_rng: Rng,
    pub tcp: TcpConfig,
    /// Connections per (src, dst) pair when connections are persistent.
    pub persistent: Option<u32>,
    pub host_nic_limit: Option<u32>,
    pub jitter: SimTime,
    pub jitter_rng: Rng,
    /// The open-loop flows, in start order.
    pub arrivals: Vec<FlowSpec>,
    pub incast: Option<Incast>,
    pub udp: Vec<UdpSource>,
    pub jobs: Vec<JobSpec>,
    pub link_events: Vec<LinkEvent>,
    pub drop_plan: Vec<DropPlan>,
    pub samplers: SampleConfig,
    pub path_record: bool,
    /// The RDMA transport and lossless fabric, instead of TCP.
    pub rdma: Option<RdmaSetup>,
}

impl World {
    /// Builds the world at t = 0: the ports of the links down fail, the
    /// UDP sources' first sends are scheduled and the jobs' ideal step
    /// times computed (the other initial events wait for [`World::start`]).
    pub fn new(cfg: WorldConfig) -> World {
        let WorldConfig {
            topo,
            link_up,
            routing,
            down0,
            ports,
            salts,
            lb,
            lb_rng,
            tcp,
            persistent,
            host_nic_limit,
            jitter,
            jitter_rng,
            arrivals,
            incast,
            udp,
            jobs,
            link_events,
            drop_plan,
            samplers,
            path_record,
            rdma,
        } = cfg;
        debug_assert_eq!(link_up.len(), topo.links.len());
        let hosts = topo.num_hosts();
        let (lb_wants_enqueue, lb_host_hooks, lb_switch_hook) = (lb.wants_enqueue(), lb.wants_host_hooks(), lb.wants_switch_hook());
        #[cfg(test)]
        let (lb_host_hooks, lb_switch_hook) = {
            DECLARED_HOOKS.with(|d| d.set(Some((lb_host_hooks, lb_switch_hook))));
            let force = FORCE_HOOKS.with(|f| f.get());
            (lb_host_hooks || force, lb_switch_hook || force)
        };
        let udp_until = udp.iter().map(|u| u.stop).filter(|&s| s != SimTime::MAX).fold(SimTime::ZERO, SimTime::max);
        let mptcp_n = lb.mptcp_subflows();
        let mut w = World {
            q: EventQueue::new(),
            prefetch: prefetch_for(ports.len()),
            ev_kinds: [0; Ev::KINDS.len()],
            routing,
            link_up,
            ports,
            salts,
            pkts: Slab::new(),
            lb,
            lb_wants_enqueue,
            lb_host_hooks,
            lb_switch_hook,
            lb_rng,
            actions: Vec::new(),
            tcp: TcpHosts::new(tcp, persistent, mptcp_n, hosts),
            rdma: rdma.map(|r| Box::new(RdmaHosts::new(r, &topo))),
            flows: Vec::new(),
            arrivals,
            path_profiles: HashMap::new(),
            uplink_pos: topo.leaf_uplinks().1,
            path_record,
            next_arrival: 0,
            done: 0,
            done_incast: Vec::new(),
            udp,
            incast,
            link_events,
            drop_plan,
            injected: Vec::new(),
            samplers: Samplers::new(samplers),
            c: Counters::default(),
            host_nic_limit,
            jitter,
            jitter_rng,
            udp_until,
            jobs: Vec::new(),
            job_pools: BTreeMap::new(),
            done_coll: Vec::new(),
            topo,
        };
        for l in &down0 {
            for p in w.topo.links[l.idx()].ports {
                let lost = w.ports[p.idx()].fail(SimTime::ZERO);
                debug_assert!(lost.is_empty());
            }
        }
        for k in 0..w.udp.len() {
            w.q.schedule(w.udp[k].start, Ev::Udp { src: k as u32 });
        }
        for j in jobs {
            w.add_job(j);
        }
        w
    }

    #[inline]
    pub fn now(&self) -> SimTime {
        self.q.now()
    }

    /// Schedules the initial events.
    pub fn start(&mut self, start_at: SimTime) {
        if !self.arrivals.is_empty() {
            self.q.schedule(self.arrivals[0].start, Ev::FlowArrival);
        }
        for i in 0..self.link_events.len() {
            self.q.schedule(self.link_events[i].at, Ev::Link { idx: i as u32 });
        }
        if self.incast.is_some() {
            self.q.schedule(start_at, Ev::IncastRequest);
        }
        self.start_samplers();
        self.start_jobs();
        self.lb.start(&mut ctx!(self));
        self.run_actions();
    }

    /// Whether the workload is complete.
    pub fn finished(&self) -> bool {
        let open_loop_done = self.next_arrival == self.arrivals.len() && self.done == self.flows.len();
        let incast_done = self.incast.as_ref().is_none_or(|i| i.issued == i.requests && i.outstanding == 0);
        open_loop_done
            && incast_done
            && self.jobs_done()
            && (!self.flows.is_empty() || self.incast.is_some() || !self.jobs.is_empty())
            && self.now() >= self.udp_until
    }

    /// What event `ev` does; `arrived` is the packet an arrival popped
    /// (`None` for a stale one, whose link failed).
    #[inline(always)]
    pub(crate) fn dispatch(&mut self, ev: Ev, arrived: Option<PktId>) {
        self.ev_kinds[ev.kind()] += 1;
        match ev {
            Ev::Arrive { port, .. } => {
                if let Some(pkt) = arrived {
                    self.arrive(pkt, port);
                }
            }
            Ev::Timer { ep, gen, .. } => self.conn_timer(ep, gen),
            Ev::FlowArrival => {
                let spec = self.arrivals[self.next_arrival];
                self.next_arrival += 1;
                if self.next_arrival < self.arrivals.len() {
                    let next = self.arrivals[self.next_arrival].start;
                    self.q.schedule_later(next.max(self.now()), Ev::FlowArrival);
                }
                if self.rdma.is_some() {
                    self.rdma_start_flow(spec);
                } else {
                    self.start_flow(spec, None);
                }
            }
            Ev::Lb { token } => {
                self.lb.on_timer(&mut ctx!(self), token);
                self.run_actions();
            }
            Ev::Link { idx } => self.link_event(idx as usize),
            Ev::Udp { src } => self.udp_send(src),
            Ev::IncastRequest => self.incast_request(),
            Ev::SampleLinks => self.sample_links(),
            Ev::SampleQueues => self.sample_queues(),
            Ev::SampleCwnd => self.sample_cwnd(),
            Ev::SampleScheme => self.sample_scheme(),
            Ev::NicReady { host } => self.nic_ready(host),
            Ev::Job { job } => self.job_iteration(job),
            Ev::PortFree { port } => self.port_free(port),
            Ev::QpTimer { qp, gen } => self.qp_timer(qp, gen),
        }
    }

    /// Packets alive and their bytes (for the conservation check).
    pub fn in_flight(&self) -> (u64, u64) {
        let b: u64 = self.pkts.iter().map(|(_, p)| p.size as u64).sum();
        (self.pkts.live() as u64, b)
    }

    pub fn connections_opened(&self) -> usize {
        self.tcp.conns.len()
    }
}
