//! The event loop: moves packets between hosts, ports and switches, runs
//! the transport state machines and the load-balancing hooks.
//!
//! Events are small `Copy` values dispatched by `match` (no boxing). A
//! packet costs one event per hop ([`Ev::Arrive`], see `lbsim_net::port`).
//! TCP timers are lazily scheduled: an endpoint keeps at most one pending
//! timer event, identified by a generation number; a timer that fires early
//! (its deadline moved later) just re-arms, so restarting the RTO on every
//! ACK costs no heap operation.

mod collective;
mod mptcp;
mod order;
pub(crate) use collective::JobRun;
use mptcp::Mptcp;
use order::SendOrder;

use crate::metrics::{Counters, FlowCounters, FlowRecord, FlowletObserver, LinkSample, QueueSample};
use lbsim_engine::{BitsPerSec, Bytes, EventQueue, Rng, SimTime, Slab};
use lbsim_lb::Scheme;
use lbsim_net::{
    Action, Admit, Ctx, Forward, HostRx, LinkId, LoadBalancer, NodeId, Packet, Payload, PktId, PortEnds, PortId, PortQueue, Proto, Routing, Topology,
};
use lbsim_tcp::{SenderStats, TcpConfig, TcpHeader, TcpReceiver, TcpSender};
use lbsim_workload::FlowSpec;
use std::collections::{BTreeMap, HashMap, VecDeque};

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
}

/// One TCP connection: its two endpoints live at different hosts, but the
/// simulator keeps them together (demultiplexing is by connection id).
pub(crate) struct Conn {
    pub src: NodeId,
    pub dst: NodeId,
    pub sport: u16,
    pub dport: u16,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    timer_at: [SimTime; 2],
    timer_gen: [u32; 2],
    /// (stream offset at which the flow ends, flow id), in order.
    flow_ends: VecDeque<(u64, u32)>,
    per_flow: bool,
    waiting_nic: bool,
    /// The MPTCP connection this is a subflow of (u32::MAX: plain TCP).
    parent: u32,
    sub_idx: u8,
    /// Fast recoveries set off by reordering / by loss / by neither
    /// (simulator truth, see `tcp_input`).
    fr_reorder: u64,
    fr_loss: u64,
    fr_other: u64,
    /// Out-of-order arrivals at the receiver that found a hole a drop left /
    /// that overtook an earlier-sent segment (simulator truth).
    ooo_loss: u64,
    reordered: u64,
    /// The data segments in the network in send order (simulator truth).
    order: SendOrder,
    /// Sequence numbers of this connection's data segments dropped in the
    /// network and not yet cumulatively acknowledged (simulator truth for
    /// the split above; entries below snd.una can never match again and are
    /// pruned as drops are recorded: it never holds more than twice the most
    /// it held live, or 32).
    lost: Vec<u64>,
    /// Path record: the source-leaf uplink of the last data segment, the
    /// uplinks used (bit k = uplink k) since the connection was last idle,
    /// and the changes of uplink.
    last_uplink: u32,
    uplink_mask: u64,
    path_changes: u64,
    /// Receive-side goodput sampling: the current window and, per flow, its
    /// bytes in it.
    rate_win: u64,
    rate_acc: Vec<(u32, u64)>,
}

impl Conn {
    fn counters(&self) -> FlowCounters {
        let (s, r) = (&self.sender.stats, &self.receiver.stats);
        FlowCounters {
            retransmits: s.retransmits,
            timeouts: s.timeouts,
            fast_recoveries: s.fast_recoveries,
            out_of_order: r.out_of_order,
            ooo_loss: self.ooo_loss,
            reordered: self.reordered,
            duplicates: r.duplicates,
            fr_reorder: self.fr_reorder,
            fr_loss: self.fr_loss,
            fr_other: self.fr_other,
            path_changes: self.path_changes,
        }
    }
}

pub(crate) struct UdpSource {
    /// The switch this source's packets are pinned through, if any.
    pub via: Option<NodeId>,
    pub src: NodeId,
    pub dst: NodeId,
    pub rate: BitsPerSec,
    pub size: u32,
    pub stop: SimTime,
    pub sent_pkts: u64,
    pub recv_pkts: u64,
    pub recv_bytes: u64,
}

pub(crate) struct Incast {
    pub client: u32,
    pub servers: Vec<u32>,
    pub fan_in: u32,
    pub request_bytes: u64,
    pub requests: u32,
    pub issued: u32,
    pub outstanding: u32,
    pub req_start: SimTime,
    /// (start, finish) of every completed request.
    pub completed: Vec<(SimTime, SimTime)>,
    pub rng: Rng,
}

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

pub(crate) struct LinkEvent {
    pub at: SimTime,
    pub links: Vec<LinkId>,
    pub up: bool,
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
                        if let Some(Some(c)) = self.conns.get(conn as usize) {
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

/// Hook context from disjoint fields of the world.
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
        }
    };
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

/// Whether a drop may prune its connection's dropped-segment list (always,
/// outside tests).
#[inline]
fn prune_lost() -> bool {
    #[cfg(test)]
    return LOST_PRUNES.with(|p| p.get().inspect(|k| p.set(Some(k + 1))).is_some());
    #[cfg(not(test))]
    true
}

fn prefetch_for(ports: usize) -> bool {
    #[cfg(test)]
    if let Some(on) = FORCE_PREFETCH.with(|f| f.get()) {
        return on;
    }
    ports >= PREFETCH_MIN_PORTS
}

pub(crate) struct World {
    pub q: EventQueue<Ev>,
    /// Whether the run loop prefetches ([`PREFETCH_MIN_PORTS`]).
    prefetch: bool,
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
    out: Vec<TcpHeader>,
    pub tcp: TcpConfig,
    /// Connections per (src, dst) pair when connections are persistent.
    pub persistent: Option<u32>,
    conns: Vec<Option<Box<Conn>>>,
    /// Sender counters of connections already freed.
    closed_stats: SenderStats,
    pools: BTreeMap<(u32, u32), Vec<u32>>,
    next_sport: Vec<u16>,
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
    /// Receive-side goodput rows (window end, flow, bytes newly in order).
    pub flow_rate_window: Option<SimTime>,
    pub flow_rates: Vec<(SimTime, u32, u64)>,
    pub injected: Vec<InjectedDrop>,
    pub link_sample_ports: Vec<PortId>,
    pub link_window: SimTime,
    link_last_bytes: Vec<u64>,
    pub link_samples: Vec<LinkSample>,
    pub queue_sample_ports: Vec<PortId>,
    pub queue_interval: SimTime,
    pub queue_samples: Vec<QueueSample>,
    /// Ports to capture (indexed by port; empty: none), the packets captured
    /// and how many more may be.
    pub pcap_port: Vec<bool>,
    pub pcap: Vec<(SimTime, PortId, Packet)>,
    pub pcap_left: u64,
    /// Scheme state samples (time, metric, a, b, value) every `scheme_interval`.
    pub scheme_interval: Option<SimTime>,
    /// `metrics.cwnd_sample_interval_us`, and the samples: (time, flow id,
    /// connection, cwnd bytes, ssthresh bytes).
    pub cwnd_interval: Option<SimTime>,
    pub cwnd_samples: Vec<(SimTime, u32, u32, u64, u64)>,
    pub scheme_samples: Vec<lbsim_lb::SchemeSample>,
    pub c: Counters,
    /// NIC back-pressure: a TCP sender may keep this many packets queued at
    /// its host's NIC (`None`: the NIC drops instead, drop-tail).
    pub host_nic_limit: Option<u32>,
    nic_waiters: Vec<VecDeque<u32>>,
    nic_wake_at: Vec<SimTime>,
    /// MPTCP: subflows per connection (None: plain TCP).
    pub mptcp_n: Option<u32>,
    mps: Vec<Option<Box<Mptcp>>>,
    /// Host send jitter: each packet leaving a host reaches the next hop
    /// up to this much later (uniform), never overtaking the previous one.
    pub jitter: SimTime,
    pub jitter_rng: Rng,
    /// Latest stop time of UDP sources that have one.
    pub udp_until: SimTime,
    /// Flowlet sizes at the senders' NICs (`metrics.flowlet_gaps_us`).
    pub flowlet_obs: Option<FlowletObserver>,
    /// Collective jobs (`[[jobs]]`), the connections of each job's rank
    /// pairs ((job, src, dst) -> one per channel), and the job flows just
    /// completed: (flow, uplink index its connection last used).
    pub(crate) jobs: Vec<JobRun>,
    job_pools: BTreeMap<(u32, u32, u32), Vec<u32>>,
    done_coll: Vec<(u32, u32)>,
}

impl World {
    /// `routing` is computed over `link_up` (per link: up at t = 0); the
    /// caller fails the ports of the links that are down.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        topo: Topology,
        link_up: Vec<bool>,
        routing: Routing,
        ports: Vec<PortQueue>,
        salts: Vec<u64>,
        lb: Scheme,
        lb_rng: Rng,
        tcp: TcpConfig,
        persistent: Option<u32>,
    ) -> World {
        debug_assert_eq!(link_up.len(), topo.links.len());
        let hosts = topo.num_hosts();
        let (lb_wants_enqueue, lb_host_hooks, lb_switch_hook) = (lb.wants_enqueue(), lb.wants_host_hooks(), lb.wants_switch_hook());
        #[cfg(test)]
        let (lb_host_hooks, lb_switch_hook) = {
            DECLARED_HOOKS.with(|d| d.set(Some((lb_host_hooks, lb_switch_hook))));
            let force = FORCE_HOOKS.with(|f| f.get());
            (lb_host_hooks || force, lb_switch_hook || force)
        };
        World {
            q: EventQueue::new(),
            prefetch: prefetch_for(ports.len()),
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
            out: Vec::new(),
            tcp,
            persistent,
            conns: Vec::new(),
            closed_stats: SenderStats::default(),
            pools: BTreeMap::new(),
            next_sport: vec![0; hosts],
            flows: Vec::new(),
            arrivals: Vec::new(),
            path_profiles: HashMap::new(),
            uplink_pos: topo.leaf_uplinks().1,
            path_record: false,
            next_arrival: 0,
            done: 0,
            done_incast: Vec::new(),
            udp: Vec::new(),
            incast: None,
            link_events: Vec::new(),
            drop_plan: Vec::new(),
            flow_rate_window: None,
            flow_rates: Vec::new(),
            injected: Vec::new(),
            link_sample_ports: Vec::new(),
            link_window: SimTime::from_ms(10),
            link_last_bytes: Vec::new(),
            link_samples: Vec::new(),
            queue_sample_ports: Vec::new(),
            queue_interval: SimTime::from_us(100),
            queue_samples: Vec::new(),
            scheme_interval: None,
            cwnd_interval: None,
            cwnd_samples: Vec::new(),
            pcap_port: Vec::new(),
            pcap: Vec::new(),
            pcap_left: 0,
            scheme_samples: Vec::new(),
            c: Counters::default(),
            host_nic_limit: None,
            nic_waiters: vec![VecDeque::new(); hosts],
            nic_wake_at: vec![SimTime::MAX; hosts],
            mptcp_n: None,
            mps: Vec::new(),
            jitter: SimTime::ZERO,
            jitter_rng: Rng::stream(0, "jitter"),
            udp_until: SimTime::ZERO,
            flowlet_obs: None,
            jobs: Vec::new(),
            job_pools: BTreeMap::new(),
            done_coll: Vec::new(),
            topo,
        }
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
        if !self.link_sample_ports.is_empty() {
            self.link_last_bytes = vec![0; self.link_sample_ports.len()];
            self.q.schedule(self.link_window, Ev::SampleLinks);
        }
        if !self.queue_sample_ports.is_empty() {
            self.q.schedule(SimTime::ZERO, Ev::SampleQueues);
        }
        if let Some(dt) = self.scheme_interval {
            self.q.schedule(dt, Ev::SampleScheme);
        }
        if let Some(dt) = self.cwnd_interval {
            self.q.schedule(dt, Ev::SampleCwnd);
        }
        self.start_jobs();
        self.lb.start(&mut ctx!(self));
        self.run_actions();
    }

    pub fn schedule_udp(&mut self, src: u32, at: SimTime) {
        self.q.schedule(at, Ev::Udp { src });
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
                self.start_flow(spec, None);
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
            Ev::SampleScheme => {
                let now = self.now();
                let n = self.scheme_samples.len();
                let mut out = std::mem::take(&mut self.scheme_samples);
                self.lb.sample(&ctx!(self), &mut out);
                self.scheme_samples = out;
                for r in &mut self.scheme_samples[n..] {
                    r.0 = now;
                }
                if !self.finished() {
                    self.q.schedule_later(now + self.scheme_interval.unwrap(), Ev::SampleScheme);
                }
            }
            Ev::NicReady { host } => self.nic_ready(host),
            Ev::Job { job } => self.job_iteration(job),
        }
    }

    // ------------------------------------------------------------ packets

    /// Counts a new packet as sent and offers it to `port`.
    #[inline]
    fn inject(&mut self, pkt: PktId, port: PortId) {
        self.c.sent += 1;
        self.c.sent_bytes += self.pkts.get(pkt.0).size as u64;
        self.enqueue(port, pkt);
    }

    #[inline]
    fn enqueue(&mut self, port: PortId, pkt: PktId) {
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
                        if let (true, Some(c)) = (hdr.len > 0, self.conns[*conn as usize].as_mut()) {
                            if c.last_uplink != k && c.last_uplink != u32::MAX {
                                c.path_changes += 1;
                            }
                            c.last_uplink = k;
                            c.uplink_mask |= 1 << (k % 64);
                        }
                    }
                }
                if let (Some(obs), true) = (self.flowlet_obs.as_mut(), from_host) {
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
                if !self.pcap_port.is_empty() && self.pcap_port[port.idx()] && self.pcap_left > 0 {
                    self.pcap_left -= 1;
                    let start = tx_end - self.ports[port.idx()].tx_time(Bytes(size as u64));
                    self.pcap.push((start, port, *self.pkts.get(pkt.0)));
                }
                if self.lb_wants_enqueue {
                    self.lb.on_enqueue(&mut ctx!(self), port, pkt);
                    self.run_actions();
                }
            }
        }
    }

    /// Drops `pkt` if a `[[drops]]` entry for `port` is due and it is TCP data.
    fn injected_drop(&mut self, port: PortId, pkt: PktId) -> bool {
        let now = self.now();
        let Some(i) = self.drop_plan.iter().position(|d| d.port == port && d.left > 0 && now >= d.at) else { return false };
        let Payload::Tcp { conn, to_receiver: true, hdr } = self.pkts.get(pkt.0).payload else { return false };
        if hdr.len == 0 {
            return false;
        }
        self.drop_plan[i].left -= 1;
        let flow = self.conns[conn as usize].as_ref().and_then(|c| c.flow_ends.front().map(|e| e.1));
        self.injected.push(InjectedDrop { port, at: now, flow, seq: hdr.seq });
        self.drop_pkt(pkt, Drop::Injected);
        true
    }

    fn drop_pkt(&mut self, pkt: PktId, why: Drop) {
        let p = self.pkts.remove(pkt.0);
        if let Payload::Tcp { conn, to_receiver: true, hdr } = &p.payload {
            if hdr.len > 0 {
                if let Some(c) = self.conns.get_mut(*conn as usize).and_then(|c| c.as_mut()) {
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

    #[inline(always)]
    fn arrive(&mut self, pkt: PktId, port: PortId) {
        let PortEnds { peer: in_port, peer_node: node, peer_is_host, .. } = self.ports[port.idx()].ends;

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
                Forward::Port(p) => self.enqueue(p, pkt),
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
                    self.enqueue(port, pkt);
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
            Forward::Port(p) => self.enqueue(p, pkt),
            Forward::Consume => self.consume(pkt),
        }
    }

    /// RFC 792 time exceeded, sent back toward the expired packet's source.
    fn time_exceeded(&mut self, sw: NodeId, in_port: PortId, pkt: PktId) {
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

    fn send_from_switch(&mut self, sw: NodeId, pkt: PktId, port: Option<PortId>) {
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

    fn consume(&mut self, pkt: PktId) {
        let p = self.pkts.remove(pkt.0);
        if let Payload::Tcp { conn, to_receiver: true, hdr } = &p.payload {
            if let (true, Some(c)) = (hdr.len > 0, self.conns.get_mut(*conn as usize).and_then(|c| c.as_mut())) {
                c.order.gone(hdr.seq, p.serial);
            }
        }
        self.c.delivered += 1;
        self.c.delivered_bytes += p.size as u64;
        self.c.consumed_by_lb += 1;
    }

    /// Carries out what the scheme's last hook asked for (usually nothing).
    #[inline]
    fn run_actions(&mut self) {
        if !self.actions.is_empty() {
            self.run_pending_actions();
        }
    }

    #[inline(never)]
    fn run_pending_actions(&mut self) {
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

    /// Hands a packet to the transport of `host`.
    #[inline(always)]
    fn deliver(&mut self, _host: NodeId, pkt: PktId) {
        let p = self.pkts.remove(pkt.0);
        self.c.delivered += 1;
        self.c.delivered_bytes += p.size as u64;
        match p.payload {
            Payload::Tcp { conn, to_receiver, hdr } => self.tcp_input(conn, to_receiver, &hdr, p.ce, p.serial),
            Payload::Udp { source } => {
                let u = &mut self.udp[source as usize];
                u.recv_pkts += 1;
                u.recv_bytes += p.size as u64;
            }
            Payload::Control { .. } | Payload::TimeExceeded { .. } => self.c.control_delivered += 1,
        }
    }

    // ------------------------------------------------------------ TCP

    #[inline(always)]
    fn tcp_input(&mut self, conn: u32, to_receiver: bool, hdr: &TcpHeader, ce: bool, serial: u32) {
        let now = self.now();
        let Some(c) = self.conns[conn as usize].as_mut() else {
            self.c.stale_segments += 1; // the connection finished and was freed
            return;
        };
        let mut out = std::mem::take(&mut self.out);
        if to_receiver {
            let rcv0 = c.receiver.rcv_nxt();
            let ooo0 = c.receiver.stats.out_of_order;
            let got = c.receiver.on_segment(hdr, ce, now, &mut out);
            if hdr.len > 0 {
                // simulator truth: did it overtake an earlier-sent segment
                // still in the network, or find a hole a drop left?
                let overtook = c.order.delivered(hdr.seq, serial, c.sender.snd_una());
                if c.receiver.stats.out_of_order > ooo0 {
                    if overtook {
                        c.reordered += 1;
                    } else {
                        c.ooo_loss += 1;
                    }
                }
            }
            if let (Some(win), true) = (self.flow_rate_window, got > 0) {
                // receive-side goodput per flow and window: the bytes newly in
                // order, split at the flows' ends in the connection's stream
                let w = now.0 / win.0;
                if w != c.rate_win {
                    let end = SimTime((c.rate_win + 1) * win.0);
                    self.flow_rates.extend(c.rate_acc.drain(..).map(|(f, b)| (end, f, b)));
                }
                c.rate_win = w;
                let (mut at, rcv1) = (rcv0, c.receiver.rcv_nxt());
                for &(end, f) in &c.flow_ends {
                    if at >= rcv1 {
                        break;
                    }
                    let upto = end.min(rcv1);
                    if upto > at {
                        match c.rate_acc.iter_mut().find(|e| e.0 == f) {
                            Some(e) => e.1 += upto - at,
                            None => c.rate_acc.push((f, upto - at)),
                        }
                        at = upto;
                    }
                }
            }
            if c.parent != u32::MAX {
                let parent = c.parent;
                self.emit(conn, false, &mut out);
                self.rearm(conn, 1);
                self.out = out;
                if hdr.len > 0 {
                    self.mp_receive(parent, hdr.dsn, hdr.dsn + hdr.len as u64);
                }
                return;
            }
            if got > 0 {
                let rcv = c.receiver.rcv_nxt();
                let counters = c.counters();
                while let Some(&(end, f)) = c.flow_ends.front() {
                    if end > rcv {
                        break;
                    }
                    c.flow_ends.pop_front();
                    let fr = &mut self.flows[f as usize];
                    fr.finish = Some(now);
                    fr.close(counters);
                    fr.uplinks_used = c.uplink_mask.count_ones();
                    self.done += 1;
                    if fr.incast_request.is_some() {
                        self.done_incast.push(f);
                    }
                    if fr.job != u32::MAX {
                        self.done_coll.push((f, c.last_uplink));
                    }
                }
            }
            self.emit(conn, false, &mut out);
            self.rearm(conn, 1);
            while let Some(f) = self.done_incast.pop() {
                self.incast_flow_done(self.flows[f as usize].incast_request.unwrap());
            }
            if !self.done_coll.is_empty() {
                self.out = out;
                self.job_flows_done();
                return;
            }
        } else {
            let (src, parent) = (c.src, c.parent);
            if parent != u32::MAX {
                self.couple(parent, conn);
            }
            let budget = self.nic_budget(src);
            let c = self.conns[conn as usize].as_mut().unwrap();
            c.sender.set_tx_budget(budget);
            let recoveries = c.sender.stats.fast_recoveries;
            c.sender.on_segment(hdr, now, &mut out);
            let una = c.sender.snd_una();
            if c.sender.stats.fast_recoveries > recoveries {
                // what set it off: was the segment it resends dropped, or
                // overtaken by a later-sent one (still in the network behind
                // it, or arrived after it)? Neither: see fast_recoveries_other.
                if c.lost.contains(&una) {
                    c.lost.retain(|&s| s != una);
                    c.fr_loss += 1;
                } else if c.order.overtaken(una) {
                    c.fr_reorder += 1;
                } else {
                    c.fr_other += 1;
                }
            }
            self.emit(conn, true, &mut out);
            self.after_send(conn);
            self.rearm(conn, 0);
            self.out = out;
            if parent != u32::MAX {
                self.mp_after_ack(parent, conn);
            } else {
                self.maybe_free(conn);
            }
            return;
        }
        self.out = out;
    }

    /// Segments TCP senders at `host` may hand its NIC now: they keep at
    /// most half the NIC buffer queued (Linux TSQ keeps TCP's share of the
    /// qdisc small), so other traffic finds room.
    fn nic_budget(&self, host: NodeId) -> u32 {
        match self.host_nic_limit {
            None => u32::MAX,
            Some(l) => (l / 2).max(1).saturating_sub(self.ports[self.topo.nic(host).idx()].qlen_pkts(self.now())),
        }
    }

    /// If the sender stopped for want of NIC room, queue it for a wake-up.
    fn after_send(&mut self, conn: u32) {
        let Some(c) = self.conns[conn as usize].as_mut() else {
            return;
        };
        if !c.sender.nic_blocked() || c.waiting_nic {
            return;
        }
        c.waiting_nic = true;
        let h = self.topo.host_index(c.src) as usize;
        self.nic_waiters[h].push_back(conn);
        self.schedule_nic_wake(h);
    }

    /// Wakes waiting senders when the NIC queue is down to a quarter of the limit.
    fn schedule_nic_wake(&mut self, h: usize) {
        if self.nic_wake_at[h] != SimTime::MAX {
            return;
        }
        let limit = self.host_nic_limit.unwrap();
        let nic = self.topo.nic(self.topo.host(h as u32));
        let at = self.ports[nic.idx()].drain_time(self.now(), limit / 4).max(self.now());
        self.nic_wake_at[h] = at;
        self.q.schedule(at, Ev::NicReady { host: h as u32 });
    }

    fn nic_ready(&mut self, h: u32) {
        let now = self.now();
        self.nic_wake_at[h as usize] = SimTime::MAX;
        let host = self.topo.host(h);
        let mut out = std::mem::take(&mut self.out);
        // round-robin over the waiting connections while there is room
        let n = self.nic_waiters[h as usize].len();
        for _ in 0..n {
            let budget = self.nic_budget(host);
            if budget == 0 {
                break;
            }
            let Some(conn) = self.nic_waiters[h as usize].pop_front() else {
                break;
            };
            let Some(c) = self.conns[conn as usize].as_mut() else {
                continue;
            };
            c.waiting_nic = false;
            let parent = c.parent;
            c.sender.set_tx_budget(budget);
            c.sender.poll(now, &mut out);
            self.emit(conn, true, &mut out);
            self.after_send(conn);
            self.rearm(conn, 0);
            if parent != u32::MAX {
                self.out = out;
                self.mp_schedule(parent);
                out = std::mem::take(&mut self.out);
            }
        }
        self.out = out;
        if !self.nic_waiters[h as usize].is_empty() {
            self.schedule_nic_wake(h as usize);
        }
    }

    /// Turns the segments in `out` into packets from the right end of `conn`.
    #[inline]
    fn emit(&mut self, conn: u32, to_receiver: bool, out: &mut Vec<TcpHeader>) {
        if out.is_empty() {
            return;
        }
        let now = self.now();
        let c = self.conns[conn as usize].as_ref().unwrap();
        let (src, dst, sport, dport) = if to_receiver { (c.src, c.dst, c.sport, c.dport) } else { (c.dst, c.src, c.dport, c.sport) };
        let ect = self.tcp.ecn_capable();
        let hb = self.tcp.header_bytes;
        let nic = self.topo.nic(src);
        for hdr in out.drain(..) {
            let size = hb + hdr.len + hdr.sack_option_bytes();
            let mut p = Packet::new(src, dst, sport, dport, Proto::Tcp, size, Payload::Tcp { conn, to_receiver, hdr }, now);
            p.ect = ect && hdr.len > 0; // RFC 3168 §6.1.4: pure ACKs are not ECT
            if to_receiver && hdr.len > 0 {
                p.serial = self.conns[conn as usize].as_mut().unwrap().order.sent(hdr.seq);
            }
            let id = PktId(self.pkts.insert(p));
            self.host_send_hook(src, id);
            self.inject(id, nic);
        }
    }

    /// The scheme's hook on a packet leaving `host`'s transport, skipped
    /// for schemes without host hooks.
    #[inline]
    fn host_send_hook(&mut self, host: NodeId, pkt: PktId) {
        if self.lb_host_hooks {
            self.lb.on_host_send(&mut ctx!(self), host, pkt);
            self.run_actions();
        }
    }

    /// Keeps one pending timer event per endpoint (see module docs).
    fn rearm(&mut self, conn: u32, side: usize) {
        let Some(c) = self.conns[conn as usize].as_mut() else {
            return;
        };
        let want = if side == 0 { c.sender.next_wakeup() } else { c.receiver.next_wakeup() };
        if let Some(w) = want {
            if w < c.timer_at[side] {
                c.timer_gen[side] = c.timer_gen[side].wrapping_add(1);
                c.timer_at[side] = w;
                self.q.schedule_later(w.max(self.q.now()), Ev::Timer { ep: conn * 2 + side as u32, gen: c.timer_gen[side] });
            }
        }
    }

    fn conn_timer(&mut self, ep: u32, gen: u32) {
        let (conn, side) = (ep / 2, (ep % 2) as usize);
        let now = self.now();
        let Some(c) = self.conns[conn as usize].as_mut() else {
            return;
        };
        if c.timer_gen[side] != gen {
            return; // superseded
        }
        c.timer_at[side] = SimTime::MAX;
        let mut out = std::mem::take(&mut self.out);
        if side == 0 {
            let src = c.src;
            let budget = self.nic_budget(src);
            let c = self.conns[conn as usize].as_mut().unwrap();
            c.sender.set_tx_budget(budget);
            c.sender.on_timer(now, &mut out);
        } else {
            c.receiver.on_timer(now, &mut out);
        }
        self.emit(conn, side == 0, &mut out);
        self.out = out;
        if side == 0 {
            self.after_send(conn);
        }
        self.rearm(conn, side);
    }

    /// Frees a per-flow connection once its flow is delivered and acknowledged.
    fn maybe_free(&mut self, conn: u32) {
        let c = self.conns[conn as usize].as_ref().unwrap();
        if c.per_flow && c.flow_ends.is_empty() && c.sender.all_acked() && c.receiver.next_wakeup().is_none() {
            self.closed_stats += &c.sender.stats;
            if let (Some(win), false) = (self.flow_rate_window, c.rate_acc.is_empty()) {
                let end = SimTime((c.rate_win + 1) * win.0);
                self.flow_rates.extend(c.rate_acc.iter().map(|&(f, b)| (end, f, b)));
            }
            self.conns[conn as usize] = None;
        }
    }

    fn new_conn(&mut self, src: u32, dst: u32, established: bool, per_flow: bool, dport: u16) -> u32 {
        let sp = &mut self.next_sport[src as usize];
        let sport = 10_000 + (*sp % 50_000);
        *sp = sp.wrapping_add(1);
        let (sender, receiver) = if established {
            (TcpSender::new_established(self.tcp.clone()), TcpReceiver::new_established(&self.tcp))
        } else {
            (TcpSender::new(self.tcp.clone()), TcpReceiver::new(&self.tcp))
        };
        let id = self.conns.len() as u32;
        self.conns.push(Some(Box::new(Conn {
            src: self.topo.host(src),
            dst: self.topo.host(dst),
            sport,
            dport,
            sender,
            receiver,
            timer_at: [SimTime::MAX; 2],
            timer_gen: [0; 2],
            flow_ends: VecDeque::new(),
            per_flow,
            waiting_nic: false,
            parent: u32::MAX,
            sub_idx: 0,
            fr_reorder: 0,
            fr_loss: 0,
            fr_other: 0,
            ooo_loss: 0,
            reordered: 0,
            order: SendOrder::default(),
            lost: Vec::new(),
            last_uplink: u32::MAX,
            uplink_mask: 0,
            path_changes: 0,
            rate_win: 0,
            rate_acc: Vec::new(),
        })));
        id
    }

    /// The persistent connection (or MPTCP connection) of the pair
    /// `src -> dst` a new flow goes on: the pool of `n` is opened with
    /// `open(k)` on first use; the least loaded by `outstanding` wins, ties
    /// to the lowest index.
    fn pooled(&mut self, src: u32, dst: u32, n: u32, mut open: impl FnMut(&mut World, u16) -> u32, outstanding: impl Fn(&World, u32) -> u64) -> u32 {
        if !self.pools.contains_key(&(src, dst)) {
            let p: Vec<u32> = (0..n).map(|k| open(self, k as u16)).collect();
            self.pools.insert((src, dst), p);
        }
        *self.pools[&(src, dst)].iter().min_by_key(|&&c| outstanding(self, c)).unwrap()
    }

    /// Starts a flow: a new connection with a handshake, or the least-loaded
    /// persistent connection of the pair.
    pub fn start_flow(&mut self, f: FlowSpec, incast_request: Option<u32>) {
        self.start_flow_on(f, incast_request, None);
    }

    /// [`World::start_flow`]; a collective job's flow (`job` = (job,
    /// channel)) goes on its channel's established connection.
    fn start_flow_on(&mut self, f: FlowSpec, incast_request: Option<u32>, job: Option<(u32, u32)>) {
        let now = self.now();
        let fid = self.flows.len() as u32;
        let handshake = self.persistent.is_none() && job.is_none();
        let ideal = self.ideal_fct(f.src, f.dst, f.size, handshake);
        if self.mptcp_n.is_some() {
            let start = f.start.max(now);
            self.flows.push(FlowRecord::new(&f, start, ideal, FlowCounters::default(), incast_request));
            // counters are read as differences at completion
            let mp = job.map(|(j, ch)| self.job_conn(j, f.src, f.dst, ch, true));
            let base = self.start_mptcp_flow(f, fid, mp);
            self.flows[fid as usize] = FlowRecord::new(&f, start, ideal, base, incast_request);
            return;
        }
        let conn = match (job, self.persistent) {
            (Some((j, ch)), _) => self.job_conn(j, f.src, f.dst, ch, false),
            (None, None) => self.new_conn(f.src, f.dst, false, true, 80),
            (None, Some(n)) => self.pooled(
                f.src,
                f.dst,
                n,
                |w, k| w.new_conn(f.src, f.dst, true, false, 5000 + k),
                |w, c| {
                    let s = &w.conns[c as usize].as_ref().unwrap().sender;
                    s.app_end() - s.snd_una()
                },
            ),
        };
        let c = self.conns[conn as usize].as_mut().unwrap();
        if c.flow_ends.is_empty() {
            c.uplink_mask = 0; // an idle connection starts a fresh path record
        }
        let end = c.sender.app_end() + f.size;
        c.flow_ends.push_back((end, fid));
        self.flows.push(FlowRecord::new(&f, f.start.max(now), ideal, c.counters(), incast_request));
        c.sender.write(f.size);
        let src = c.src;
        let budget = self.nic_budget(src);
        let c = self.conns[conn as usize].as_mut().unwrap();
        c.sender.set_tx_budget(budget);
        let mut out = std::mem::take(&mut self.out);
        if handshake {
            c.sender.connect(now, &mut out);
        } else {
            c.sender.poll(now, &mut out);
        }
        self.emit(conn, true, &mut out);
        self.out = out;
        self.after_send(conn);
        self.rearm(conn, 0);
    }

    /// The flow's FCT alone in the idle network over its best route in the
    /// current routes (route profiles cached per host pair until a link
    /// changes).
    pub fn ideal_fct(&mut self, src: u32, dst: u32, size: u64, handshake: bool) -> SimTime {
        let (topo, routing) = (&self.topo, &self.routing);
        let prof = self.path_profiles.entry((src, dst)).or_insert_with(|| crate::metrics::path_profiles(topo, routing, src, dst));
        crate::metrics::ideal_fct_over(prof, &self.tcp, size, handshake)
    }

    /// Records the flows that never started (their arrival came after the
    /// run stopped): kept in the flow table, marked not started.
    pub fn record_unstarted(&mut self) {
        let handshake = self.persistent.is_none();
        for i in self.next_arrival..self.arrivals.len() {
            let f = self.arrivals[i];
            let ideal = self.ideal_fct(f.src, f.dst, f.size, handshake);
            let mut r = FlowRecord::new(&f, f.start, ideal, FlowCounters::default(), None);
            r.started = false;
            self.flows.push(r);
        }
        self.next_arrival = self.arrivals.len();
    }

    /// Writes out the goodput windows still open at the end of the run.
    pub fn flush_flow_rates(&mut self) {
        let Some(win) = self.flow_rate_window else { return };
        for c in self.conns.iter_mut().flatten() {
            let end = SimTime((c.rate_win + 1) * win.0);
            self.flow_rates.extend(c.rate_acc.drain(..).map(|(f, b)| (end, f, b)));
        }
        self.flow_rates.sort_by_key(|r| (r.0, r.1));
    }

    /// Counters of flows still unfinished, read at the end.
    pub fn finalize_unfinished(&mut self) {
        for mp in 0..self.mps.len() {
            if self.mps[mp].is_none() {
                continue;
            }
            let counters = self.mp_stats(mp as u32);
            let ends: Vec<u32> = self.mps[mp].as_ref().unwrap().flow_ends.iter().map(|e| e.1).collect();
            for f in ends {
                self.flows[f as usize].close(counters);
            }
        }
        for c in self.conns.iter().flatten() {
            let counters = c.counters();
            for &(_, f) in &c.flow_ends {
                self.flows[f as usize].close(counters);
                self.flows[f as usize].uplinks_used = c.uplink_mask.count_ones();
            }
        }
    }

    /// Sender counters summed over every connection, freed or open.
    pub fn sender_totals(&self) -> SenderStats {
        let mut t = self.closed_stats;
        for c in self.conns.iter().flatten() {
            t += &c.sender.stats;
        }
        t
    }

    /// Sender-side totals over all connections ever opened (freed ones
    /// included through the flow records).
    pub fn tcp_totals(&self) -> (u64, u64) {
        let r: u64 = self.flows.iter().map(|f| f.counters.retransmits).sum();
        let t: u64 = self.flows.iter().map(|f| f.counters.timeouts).sum();
        (r, t)
    }

    // ------------------------------------------------------------ incast

    fn incast_request(&mut self) {
        let now = self.now();
        let inc = self.incast.as_mut().unwrap();
        if inc.issued >= inc.requests {
            return;
        }
        let r = inc.issued;
        inc.issued += 1;
        inc.req_start = now;
        // fan_in distinct servers, uniformly (partial Fisher–Yates)
        let mut pool = inc.servers.clone();
        let n = (inc.fan_in as usize).min(pool.len());
        for i in 0..n {
            let j = i + inc.rng.below((pool.len() - i) as u64) as usize;
            pool.swap(i, j);
        }
        let base = inc.request_bytes / n as u64;
        let extra = inc.request_bytes % n as u64;
        inc.outstanding = n as u32;
        let client = inc.client;
        for (k, &srv) in pool[..n].iter().enumerate() {
            let size = base + if (k as u64) < extra { 1 } else { 0 };
            self.start_flow(FlowSpec { src: srv, dst: client, size: size.max(1), start: now, class: 0 }, Some(r));
        }
    }

    fn incast_flow_done(&mut self, _req: u32) {
        let now = self.now();
        let inc = self.incast.as_mut().unwrap();
        inc.outstanding -= 1;
        if inc.outstanding == 0 {
            inc.completed.push((inc.req_start, now));
            if inc.issued < inc.requests {
                self.q.schedule(now, Ev::IncastRequest);
            }
        }
    }

    // ------------------------------------------------------------ UDP

    fn udp_send(&mut self, src: u32) {
        let now = self.now();
        let u = &mut self.udp[src as usize];
        if now >= u.stop {
            return;
        }
        u.sent_pkts += 1;
        let (s, d, size, gap) = (u.src, u.dst, u.size, u.rate.tx_time(Bytes(u.size as u64)));
        let p = Packet::new(s, d, 20_000 + src as u16, 9, Proto::Udp, size, Payload::Udp { source: src }, now);
        let id = PktId(self.pkts.insert(p));
        self.host_send_hook(s, id);
        let nic = self.topo.nic(s);
        match self.host_nic_limit {
            Some(l) if self.ports[nic.idx()].qlen_pkts(now) >= l => {
                self.c.sent += 1;
                self.c.sent_bytes += size as u64;
                self.drop_pkt(id, Drop::Queue);
            }
            _ => self.inject(id, nic),
        }
        self.q.schedule(now + gap, Ev::Udp { src });
    }

    // ------------------------------------------------------------ failures

    fn link_event(&mut self, idx: usize) {
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

    // ------------------------------------------------------------ samplers

    fn sample_links(&mut self) {
        let now = self.now();
        for (i, &p) in self.link_sample_ports.iter().enumerate() {
            let b = self.ports[p.idx()].transmitted_bytes(now);
            self.link_samples.push(LinkSample { t: now, port: p, bytes: b - self.link_last_bytes[i] });
            self.link_last_bytes[i] = b;
        }
        if !self.finished() {
            self.q.schedule_later(now + self.link_window, Ev::SampleLinks);
        }
    }

    /// Samples the congestion window of every connection with data
    /// outstanding or still to send (AG Fig. 3b; an MPTCP subflow is
    /// labelled with its connection's flow).
    fn sample_cwnd(&mut self) {
        let now = self.now();
        for (i, c) in self.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            if c.sender.app_end() <= c.sender.snd_una() {
                continue; // idle
            }
            let ends = match c.parent {
                u32::MAX => &c.flow_ends,
                m => match &self.mps[m as usize] {
                    Some(mp) => &mp.flow_ends,
                    None => &c.flow_ends,
                },
            };
            // a flow already delivered in full is over, whatever ACKs remain
            let Some(&(_, flow)) = ends.front() else { continue };
            self.cwnd_samples.push((now, flow, i as u32, c.sender.cwnd(), c.sender.ssthresh()));
        }
        if !self.finished() {
            self.q.schedule_later(now + self.cwnd_interval.unwrap(), Ev::SampleCwnd);
        }
    }

    fn sample_queues(&mut self) {
        let now = self.now();
        for &p in &self.queue_sample_ports {
            let q = &self.ports[p.idx()];
            self.queue_samples.push(QueueSample { t: now, port: p, pkts: q.qlen_pkts(now), bytes: q.qlen_bytes(now) });
        }
        if !self.finished() {
            self.q.schedule_later(now + self.queue_interval, Ev::SampleQueues);
        }
    }

    /// Packets alive and their bytes (for the conservation check).
    pub fn in_flight(&self) -> (u64, u64) {
        let b: u64 = self.pkts.iter().map(|(_, p)| p.size as u64).sum();
        (self.pkts.live() as u64, b)
    }

    pub fn connections_opened(&self) -> usize {
        self.conns.len()
    }
}

#[derive(Clone, Copy, Debug)]
enum Drop {
    Queue,
    /// A drop the scenario asked for (`[[drops]]`).
    Injected,
    LinkDown,
    NoRoute,
    Ttl,
}
