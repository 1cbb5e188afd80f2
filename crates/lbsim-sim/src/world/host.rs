//! Hosts: the TCP endpoints of every connection (lbsim-tcp's state
//! machines: RFC 5681 congestion control, RFC 6675 SACK recovery, RFC 6298
//! timers), the segments they hand their NIC (with TSQ-like back-pressure:
//! a sender keeps at most half the NIC buffer queued), flows started on
//! new, pooled or job connections, and the closed-loop and background
//! sources (incast requests, constant-bit-rate UDP). The simulator-truth
//! counters (reordering vs loss, path record, goodput windows) are kept
//! beside the connections; they never feed back into the transport.
//!
//! TCP timers are lazily scheduled: an endpoint keeps at most one pending
//! timer event, identified by a generation number; a timer that fires early
//! (its deadline moved later) just re-arms, so restarting the RTO on every
//! ACK costs no heap operation.

use super::fabric::Drop;
use super::mptcp::Mptcp;
use super::order::SendOrder;
use super::{Ev, World};
use crate::metrics::{FlowCounters, FlowRecord};
use lbsim_engine::{BitsPerSec, Bytes, Rng, SimTime};
use lbsim_net::{Ctx, LoadBalancer, NodeId, Packet, Payload, PktId, Proto};
use lbsim_tcp::{SenderStats, TcpConfig, TcpHeader, TcpReceiver, TcpSender};
use lbsim_workload::FlowSpec;
use std::collections::{BTreeMap, VecDeque};

/// The hosts' TCP: every connection (both endpoints, demultiplexed by
/// connection id), MPTCP connections over them, the persistent pools, and
/// the senders waiting for NIC room. A second transport is a sibling of
/// this, with its own state and file.
pub(crate) struct TcpHosts {
    pub cfg: TcpConfig,
    /// Connections per (src, dst) pair when connections are persistent.
    pub persistent: Option<u32>,
    pub(super) conns: Vec<Option<Box<Conn>>>,
    /// Sender counters of connections already freed.
    pub(super) closed_stats: SenderStats,
    pub(super) pools: BTreeMap<(u32, u32), Vec<u32>>,
    pub(super) next_sport: Vec<u16>,
    /// Segments an endpoint just produced (kept to reuse its allocation).
    pub(super) out: Vec<TcpHeader>,
    /// Per host: senders waiting for NIC room, and when the wake-up is due.
    pub(super) nic_waiters: Vec<VecDeque<u32>>,
    pub(super) nic_wake_at: Vec<SimTime>,
    /// MPTCP: subflows per connection (None: plain TCP).
    pub mptcp_n: Option<u32>,
    pub(super) mps: Vec<Option<Box<Mptcp>>>,
}

impl TcpHosts {
    pub fn new(cfg: TcpConfig, persistent: Option<u32>, mptcp_n: Option<u32>, hosts: usize) -> TcpHosts {
        TcpHosts {
            cfg,
            persistent,
            conns: Vec::new(),
            closed_stats: SenderStats::default(),
            pools: BTreeMap::new(),
            next_sport: vec![0; hosts],
            out: Vec::new(),
            nic_waiters: vec![VecDeque::new(); hosts],
            nic_wake_at: vec![SimTime::MAX; hosts],
            mptcp_n,
            mps: Vec::new(),
        }
    }
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
    pub(super) timer_at: [SimTime; 2],
    pub(super) timer_gen: [u32; 2],
    /// (stream offset at which the flow ends, flow id), in order.
    pub(super) flow_ends: VecDeque<(u64, u32)>,
    pub(super) per_flow: bool,
    pub(super) waiting_nic: bool,
    /// The MPTCP connection this is a subflow of (u32::MAX: plain TCP).
    pub(super) parent: u32,
    pub(super) sub_idx: u8,
    /// Fast recoveries set off by reordering / by loss / by neither
    /// (simulator truth, see `tcp_input`).
    pub(super) fr_reorder: u64,
    pub(super) fr_loss: u64,
    pub(super) fr_other: u64,
    /// Out-of-order arrivals at the receiver that found a hole a drop left /
    /// that overtook an earlier-sent segment (simulator truth).
    pub(super) ooo_loss: u64,
    pub(super) reordered: u64,
    /// The data segments in the network in send order (simulator truth).
    pub(super) order: SendOrder,
    /// Sequence numbers of this connection's data segments dropped in the
    /// network and not yet cumulatively acknowledged (simulator truth for
    /// the split above; entries below snd.una can never match again and are
    /// pruned as drops are recorded: it never holds more than twice the most
    /// it held live, or 32).
    pub(super) lost: Vec<u64>,
    /// Path record: the source-leaf uplink of the last data segment, the
    /// uplinks used (bit k = uplink k) since the connection was last idle,
    /// and the changes of uplink.
    pub(super) last_uplink: u32,
    pub(super) uplink_mask: u64,
    pub(super) path_changes: u64,
    /// Receive-side goodput sampling: the current window and, per flow, its
    /// bytes in it.
    pub(super) rate_win: u64,
    pub(super) rate_acc: Vec<(u32, u64)>,
}

impl Conn {
    /// The receiver takes a segment; returns the bytes newly in order. For
    /// data, the simulator truth: did it overtake an earlier-sent segment
    /// still in the network, or find a hole a drop left?
    #[inline(always)]
    fn receive(&mut self, hdr: &TcpHeader, ce: bool, serial: u32, now: SimTime, out: &mut Vec<TcpHeader>) -> u64 {
        let ooo0 = self.receiver.stats.out_of_order;
        let got = self.receiver.on_segment(hdr, ce, now, out);
        if hdr.len > 0 {
            let overtook = self.order.delivered(hdr.seq, serial, self.sender.snd_una());
            if self.receiver.stats.out_of_order > ooo0 {
                if overtook {
                    self.reordered += 1;
                } else {
                    self.ooo_loss += 1;
                }
            }
        }
        got
    }

    /// Receive-side goodput per flow and window of `win`: the bytes newly
    /// in order (from `rcv0` on), split at the flows' ends in the
    /// connection's stream; a window left behind is written to `rows`.
    fn record_goodput(&mut self, win: SimTime, rcv0: u64, now: SimTime, rows: &mut Vec<(SimTime, u32, u64)>) {
        let w = now.0 / win.0;
        if w != self.rate_win {
            let end = SimTime((self.rate_win + 1) * win.0);
            rows.extend(self.rate_acc.drain(..).map(|(f, b)| (end, f, b)));
        }
        self.rate_win = w;
        let (mut at, rcv1) = (rcv0, self.receiver.rcv_nxt());
        for &(end, f) in &self.flow_ends {
            if at >= rcv1 {
                break;
            }
            let upto = end.min(rcv1);
            if upto > at {
                match self.rate_acc.iter_mut().find(|e| e.0 == f) {
                    Some(e) => e.1 += upto - at,
                    None => self.rate_acc.push((f, upto - at)),
                }
                at = upto;
            }
        }
    }

    /// A fast recovery just started: what set it off? Was the segment it
    /// resends dropped, or overtaken by a later-sent one (still in the
    /// network behind it, or arrived after it)? Neither: see
    /// fast_recoveries_other.
    fn classify_recovery(&mut self) {
        let una = self.sender.snd_una();
        if self.lost.contains(&una) {
            self.lost.retain(|&s| s != una);
            self.fr_loss += 1;
        } else if self.order.overtaken(una) {
            self.fr_reorder += 1;
        } else {
            self.fr_other += 1;
        }
    }

    pub(super) fn counters(&self) -> FlowCounters {
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
            ..FlowCounters::default()
        }
    }
}

pub(crate) struct UdpSource {
    /// The switch this source's packets are pinned through, if any.
    pub via: Option<NodeId>,
    /// When its first packet is sent, and (`SimTime::MAX`: never) when it stops.
    pub start: SimTime,
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

impl World {
    /// Hands a packet to the transport of `host`.
    #[inline(always)]
    pub(super) fn deliver(&mut self, _host: NodeId, pkt: PktId) {
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
            Payload::Control { .. } | Payload::TimeExceeded { .. } | Payload::Pfc { .. } => self.c.control_delivered += 1,
            Payload::Rdma { qp, kind, seq, len, cnp } => {
                let flag = if kind == lbsim_net::RdmaKind::Data { p.ce } else { cnp };
                self.rdma_input(qp, kind, seq, len, flag)
            }
        }
    }

    // ------------------------------------------------------------ TCP

    /// A segment reaches the endpoint of `conn` it is for.
    #[inline(always)]
    pub(super) fn tcp_input(&mut self, conn: u32, to_receiver: bool, hdr: &TcpHeader, ce: bool, serial: u32) {
        let now = self.now();
        let Some(c) = self.tcp.conns[conn as usize].as_mut() else {
            self.c.stale_segments += 1; // the connection finished and was freed
            return;
        };
        let mut out = std::mem::take(&mut self.tcp.out);
        if !to_receiver {
            let (src, parent) = (c.src, c.parent);
            self.tcp_ack(conn, src, parent, hdr, now, out);
            return;
        }
        let rcv0 = c.receiver.rcv_nxt();
        let got = c.receive(hdr, ce, serial, now, &mut out);
        if let (Some(win), true) = (self.samplers.flow_rate_window, got > 0) {
            c.record_goodput(win, rcv0, now, &mut self.samplers.flow_rates);
        }
        if c.parent != u32::MAX {
            let parent = c.parent;
            self.emit(conn, false, &mut out);
            self.rearm(conn, 1);
            self.tcp.out = out;
            if hdr.len > 0 {
                self.mp_receive(parent, hdr.dsn, hdr.dsn + hdr.len as u64);
            }
            return;
        }
        // a flow of the connection's stream is complete (checked here, so
        // the common segment that completes none costs no second look-up)
        if got > 0 && c.flow_ends.front().is_some_and(|&(end, _)| end <= c.receiver.rcv_nxt()) {
            self.complete_flows(conn, now);
        }
        self.emit(conn, false, &mut out);
        self.rearm(conn, 1);
        self.tcp.out = out;
        while let Some(f) = self.done_incast.pop() {
            self.incast_flow_done(self.flows[f as usize].incast_request.unwrap());
        }
        if !self.done_coll.is_empty() {
            self.job_flows_done();
        }
    }

    /// Closes the flows of `conn` whose last byte its receiver now has in
    /// order; incast and job flows are queued for their sources to react.
    fn complete_flows(&mut self, conn: u32, now: SimTime) {
        let c = self.tcp.conns[conn as usize].as_mut().unwrap();
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

    /// An ACK reaches the sender of `conn` (at host `src`; `parent`: its
    /// MPTCP connection or u32::MAX); `out` is the segment buffer, given back.
    #[inline(always)]
    fn tcp_ack(&mut self, conn: u32, src: NodeId, parent: u32, hdr: &TcpHeader, now: SimTime, mut out: Vec<TcpHeader>) {
        if parent != u32::MAX {
            self.couple(parent, conn);
        }
        let budget = self.nic_budget(src);
        let c = self.tcp.conns[conn as usize].as_mut().unwrap();
        c.sender.set_tx_budget(budget);
        let recoveries = c.sender.stats.fast_recoveries;
        c.sender.on_segment(hdr, now, &mut out);
        if c.sender.stats.fast_recoveries > recoveries {
            c.classify_recovery();
        }
        self.emit(conn, true, &mut out);
        self.after_send(conn);
        self.rearm(conn, 0);
        self.tcp.out = out;
        if parent != u32::MAX {
            self.mp_after_ack(parent, conn);
        } else {
            self.maybe_free(conn);
        }
    }

    /// Segments TCP senders at `host` may hand its NIC now: they keep at
    /// most half the NIC buffer queued (Linux TSQ keeps TCP's share of the
    /// qdisc small), so other traffic finds room.
    pub(super) fn nic_budget(&self, host: NodeId) -> u32 {
        match self.host_nic_limit {
            None => u32::MAX,
            Some(l) => (l / 2).max(1).saturating_sub(self.ports[self.topo.nic(host).idx()].qlen_pkts(self.now())),
        }
    }

    /// If the sender stopped for want of NIC room, queue it for a wake-up.
    pub(super) fn after_send(&mut self, conn: u32) {
        let Some(c) = self.tcp.conns[conn as usize].as_mut() else {
            return;
        };
        if !c.sender.nic_blocked() || c.waiting_nic {
            return;
        }
        c.waiting_nic = true;
        let h = self.topo.host_index(c.src) as usize;
        self.tcp.nic_waiters[h].push_back(conn);
        self.schedule_nic_wake(h);
    }

    /// Wakes waiting senders when the NIC queue is down to a quarter of the limit.
    pub(super) fn schedule_nic_wake(&mut self, h: usize) {
        if self.tcp.nic_wake_at[h] != SimTime::MAX {
            return;
        }
        let limit = self.host_nic_limit.unwrap();
        let nic = self.topo.nic(self.topo.host(h as u32));
        let at = self.ports[nic.idx()].drain_time(self.now(), limit / 4).max(self.now());
        self.tcp.nic_wake_at[h] = at;
        self.q.schedule(at, Ev::NicReady { host: h as u32 });
    }

    pub(super) fn nic_ready(&mut self, h: u32) {
        let now = self.now();
        self.tcp.nic_wake_at[h as usize] = SimTime::MAX;
        let host = self.topo.host(h);
        let mut out = std::mem::take(&mut self.tcp.out);
        // round-robin over the waiting connections while there is room
        let n = self.tcp.nic_waiters[h as usize].len();
        for _ in 0..n {
            let budget = self.nic_budget(host);
            if budget == 0 {
                break;
            }
            let Some(conn) = self.tcp.nic_waiters[h as usize].pop_front() else {
                break;
            };
            let Some(c) = self.tcp.conns[conn as usize].as_mut() else {
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
                self.tcp.out = out;
                self.mp_schedule(parent);
                out = std::mem::take(&mut self.tcp.out);
            }
        }
        self.tcp.out = out;
        if !self.tcp.nic_waiters[h as usize].is_empty() {
            self.schedule_nic_wake(h as usize);
        }
    }

    /// Turns the segments in `out` into packets from the right end of `conn`.
    #[inline]
    pub(super) fn emit(&mut self, conn: u32, to_receiver: bool, out: &mut Vec<TcpHeader>) {
        if out.is_empty() {
            return;
        }
        let now = self.now();
        let c = self.tcp.conns[conn as usize].as_ref().unwrap();
        let (src, dst, sport, dport) = if to_receiver { (c.src, c.dst, c.sport, c.dport) } else { (c.dst, c.src, c.dport, c.sport) };
        let ect = self.tcp.cfg.ecn_capable();
        let hb = self.tcp.cfg.header_bytes;
        let nic = self.topo.nic(src);
        for hdr in out.drain(..) {
            let size = hb + hdr.len + hdr.sack_option_bytes();
            let mut p = Packet::new(src, dst, sport, dport, Proto::Tcp, size, Payload::Tcp { conn, to_receiver, hdr }, now);
            p.ect = ect && hdr.len > 0; // RFC 3168 §6.1.4: pure ACKs are not ECT
            if to_receiver && hdr.len > 0 {
                p.serial = self.tcp.conns[conn as usize].as_mut().unwrap().order.sent(hdr.seq);
            }
            let id = PktId(self.pkts.insert(p));
            self.host_send_hook(src, id);
            self.inject(id, nic);
        }
    }

    /// The scheme's hook on a packet leaving `host`'s transport, skipped
    /// for schemes without host hooks.
    #[inline]
    pub(super) fn host_send_hook(&mut self, host: NodeId, pkt: PktId) {
        if self.lb_host_hooks {
            self.lb.on_host_send(&mut ctx!(self), host, pkt);
            self.run_actions();
        }
    }

    /// Keeps one pending timer event per endpoint (see module docs).
    pub(super) fn rearm(&mut self, conn: u32, side: usize) {
        let Some(c) = self.tcp.conns[conn as usize].as_mut() else {
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

    pub(super) fn conn_timer(&mut self, ep: u32, gen: u32) {
        let (conn, side) = (ep / 2, (ep % 2) as usize);
        let now = self.now();
        let Some(c) = self.tcp.conns[conn as usize].as_mut() else {
            return;
        };
        if c.timer_gen[side] != gen {
            return; // superseded
        }
        c.timer_at[side] = SimTime::MAX;
        let mut out = std::mem::take(&mut self.tcp.out);
        if side == 0 {
            let src = c.src;
            let budget = self.nic_budget(src);
            let c = self.tcp.conns[conn as usize].as_mut().unwrap();
            c.sender.set_tx_budget(budget);
            c.sender.on_timer(now, &mut out);
        } else {
            c.receiver.on_timer(now, &mut out);
        }
        self.emit(conn, side == 0, &mut out);
        self.tcp.out = out;
        if side == 0 {
            self.after_send(conn);
        }
        self.rearm(conn, side);
    }

    /// Frees a per-flow connection once its flow is delivered and acknowledged.
    pub(super) fn maybe_free(&mut self, conn: u32) {
        let c = self.tcp.conns[conn as usize].as_ref().unwrap();
        if c.per_flow && c.flow_ends.is_empty() && c.sender.all_acked() && c.receiver.next_wakeup().is_none() {
            self.tcp.closed_stats += &c.sender.stats;
            if let (Some(win), false) = (self.samplers.flow_rate_window, c.rate_acc.is_empty()) {
                let end = SimTime((c.rate_win + 1) * win.0);
                self.samplers.flow_rates.extend(c.rate_acc.iter().map(|&(f, b)| (end, f, b)));
            }
            self.tcp.conns[conn as usize] = None;
        }
    }

    pub(super) fn new_conn(&mut self, src: u32, dst: u32, established: bool, per_flow: bool, dport: u16) -> u32 {
        let sp = &mut self.tcp.next_sport[src as usize];
        let sport = 10_000 + (*sp % 50_000);
        *sp = sp.wrapping_add(1);
        let (sender, receiver) = if established {
            (TcpSender::new_established(self.tcp.cfg.clone()), TcpReceiver::new_established(&self.tcp.cfg))
        } else {
            (TcpSender::new(self.tcp.cfg.clone()), TcpReceiver::new(&self.tcp.cfg))
        };
        let id = self.tcp.conns.len() as u32;
        self.tcp.conns.push(Some(Box::new(Conn {
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
    pub(super) fn pooled(&mut self, src: u32, dst: u32, n: u32, mut open: impl FnMut(&mut World, u16) -> u32, outstanding: impl Fn(&World, u32) -> u64) -> u32 {
        if !self.tcp.pools.contains_key(&(src, dst)) {
            let p: Vec<u32> = (0..n).map(|k| open(self, k as u16)).collect();
            self.tcp.pools.insert((src, dst), p);
        }
        *self.tcp.pools[&(src, dst)].iter().min_by_key(|&&c| outstanding(self, c)).unwrap()
    }

    /// Starts a flow: a new connection with a handshake, or the least-loaded
    /// persistent connection of the pair.
    pub fn start_flow(&mut self, f: FlowSpec, incast_request: Option<u32>) {
        self.start_flow_on(f, incast_request, None);
    }

    /// [`World::start_flow`]; a collective job's flow (`job` = (job,
    /// channel)) goes on its channel's established connection.
    pub(super) fn start_flow_on(&mut self, f: FlowSpec, incast_request: Option<u32>, job: Option<(u32, u32)>) {
        let now = self.now();
        let fid = self.flows.len() as u32;
        let handshake = self.tcp.persistent.is_none() && job.is_none();
        let ideal = self.ideal_fct(f.src, f.dst, f.size, handshake);
        if self.tcp.mptcp_n.is_some() {
            let start = f.start.max(now);
            self.flows.push(FlowRecord::new(&f, start, ideal, FlowCounters::default(), incast_request));
            // counters are read as differences at completion
            let mp = job.map(|(j, ch)| self.job_conn(j, f.src, f.dst, ch, true));
            let base = self.start_mptcp_flow(f, fid, mp);
            self.flows[fid as usize] = FlowRecord::new(&f, start, ideal, base, incast_request);
            return;
        }
        let conn = match (job, self.tcp.persistent) {
            (Some((j, ch)), _) => self.job_conn(j, f.src, f.dst, ch, false),
            (None, None) => self.new_conn(f.src, f.dst, false, true, 80),
            (None, Some(n)) => self.pooled(
                f.src,
                f.dst,
                n,
                |w, k| w.new_conn(f.src, f.dst, true, false, 5000 + k),
                |w, c| {
                    let s = &w.tcp.conns[c as usize].as_ref().unwrap().sender;
                    s.app_end() - s.snd_una()
                },
            ),
        };
        let c = self.tcp.conns[conn as usize].as_mut().unwrap();
        if c.flow_ends.is_empty() {
            c.uplink_mask = 0; // an idle connection starts a fresh path record
        }
        let end = c.sender.app_end() + f.size;
        c.flow_ends.push_back((end, fid));
        self.flows.push(FlowRecord::new(&f, f.start.max(now), ideal, c.counters(), incast_request));
        c.sender.write(f.size);
        let src = c.src;
        let budget = self.nic_budget(src);
        let c = self.tcp.conns[conn as usize].as_mut().unwrap();
        c.sender.set_tx_budget(budget);
        let mut out = std::mem::take(&mut self.tcp.out);
        if handshake {
            c.sender.connect(now, &mut out);
        } else {
            c.sender.poll(now, &mut out);
        }
        self.emit(conn, true, &mut out);
        self.tcp.out = out;
        self.after_send(conn);
        self.rearm(conn, 0);
    }

    /// The flow's FCT alone in the idle network over its best route in the
    /// current routes (route profiles cached per host pair until a link
    /// changes).
    pub fn ideal_fct(&mut self, src: u32, dst: u32, size: u64, handshake: bool) -> SimTime {
        let (topo, routing) = (&self.topo, &self.routing);
        let prof = self.path_profiles.entry((src, dst)).or_insert_with(|| crate::metrics::path_profiles(topo, routing, src, dst));
        crate::metrics::ideal_fct_over(prof, &self.tcp.cfg, size, handshake)
    }

    /// Records the flows that never started (their arrival came after the
    /// run stopped): kept in the flow table, marked not started.
    pub fn record_unstarted(&mut self) {
        let handshake = self.tcp.persistent.is_none();
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
        let Some(win) = self.samplers.flow_rate_window else { return };
        for c in self.tcp.conns.iter_mut().flatten() {
            let end = SimTime((c.rate_win + 1) * win.0);
            self.samplers.flow_rates.extend(c.rate_acc.drain(..).map(|(f, b)| (end, f, b)));
        }
        self.samplers.flow_rates.sort_by_key(|r| (r.0, r.1));
    }

    /// Counters of flows still unfinished, read at the end.
    pub fn finalize_unfinished(&mut self) {
        for mp in 0..self.tcp.mps.len() {
            if self.tcp.mps[mp].is_none() {
                continue;
            }
            let counters = self.mp_stats(mp as u32);
            let ends: Vec<u32> = self.tcp.mps[mp].as_ref().unwrap().flow_ends.iter().map(|e| e.1).collect();
            for f in ends {
                self.flows[f as usize].close(counters);
            }
        }
        for c in self.tcp.conns.iter().flatten() {
            let counters = c.counters();
            for &(_, f) in &c.flow_ends {
                self.flows[f as usize].close(counters);
                self.flows[f as usize].uplinks_used = c.uplink_mask.count_ones();
            }
        }
    }

    /// Sender counters summed over every connection, freed or open.
    pub fn sender_totals(&self) -> SenderStats {
        let mut t = self.tcp.closed_stats;
        for c in self.tcp.conns.iter().flatten() {
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

    pub(super) fn incast_request(&mut self) {
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

    pub(super) fn incast_flow_done(&mut self, _req: u32) {
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

    pub(super) fn udp_send(&mut self, src: u32) {
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
}

#[cfg(test)]
mod tests {
    use super::World;
    use crate::Scenario;
    use lbsim_engine::SimTime;
    use lbsim_tcp::header::ACK;
    use lbsim_tcp::TcpHeader;

    const FABRIC: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
[workload]
kind = "none"
[run]
stop_ms = 1.0
"#;

    fn world(sets: &[&str]) -> World {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let sc = Scenario::from_toml(FABRIC, &sets).unwrap_or_else(|e| panic!("{e}"));
        crate::build::build(&sc, None).unwrap_or_else(|e| panic!("{e}")).w
    }

    fn data(seq: u64, len: u32) -> TcpHeader {
        TcpHeader { seq, len, flags: ACK, dsn: seq, ..Default::default() }
    }

    /// Goodput is split at the flows' ends in the stream, and a window is
    /// written out when a segment lands in a later one.
    #[test]
    fn goodput_splits_at_flow_ends_and_windows() {
        let mut w = world(&[]);
        let id = w.new_conn(0, 2, true, true, 80);
        let c = w.tcp.conns[id as usize].as_mut().unwrap();
        c.flow_ends.extend([(1000, 7), (3000, 8)]);
        let (win, mut rows, mut out) = (SimTime::from_ms(1), vec![], vec![]);
        let now = SimTime::from_us(500);
        assert_eq!(c.receiver.on_segment(&data(0, 2000), false, now, &mut out), 2000);
        c.record_goodput(win, 0, now, &mut rows);
        assert!(rows.is_empty());
        assert_eq!(c.rate_acc, vec![(7, 1000), (8, 1000)]);
        let now = SimTime::from_us(1500);
        assert_eq!(c.receiver.on_segment(&data(2000, 1000), false, now, &mut out), 1000);
        c.record_goodput(win, 2000, now, &mut rows);
        assert_eq!(rows, vec![(win, 7, 1000), (win, 8, 1000)]);
        assert_eq!(c.rate_acc, vec![(8, 1000)]);
    }

    /// A fast recovery resending a dropped segment counts as loss-driven
    /// (once: the drop record is consumed); one with no drop and no
    /// overtaking counts as neither.
    #[test]
    fn recovery_classified_by_drop_record() {
        let mut w = world(&[]);
        let id = w.new_conn(0, 2, true, true, 80);
        let c = w.tcp.conns[id as usize].as_mut().unwrap();
        let una = c.sender.snd_una();
        c.lost.push(una);
        c.classify_recovery();
        assert_eq!((c.fr_loss, c.fr_reorder, c.fr_other), (1, 0, 0));
        assert!(c.lost.is_empty());
        c.classify_recovery();
        assert_eq!((c.fr_loss, c.fr_reorder, c.fr_other), (1, 0, 1));
    }

    /// `World::new` leaves nothing for the builder to set: the links down
    /// at t = 0 have failed ports and the UDP sources' first sends are
    /// already in the queue, ahead of what `start` schedules.
    #[test]
    fn new_world_is_complete() {
        let w = world(&["failures=[{link=\"L0-S0#0\"}]", "udp=[{src=0,dst=2,rate_gbps=1.0,start_ms=0.25,stop_ms=0.5}]"]);
        let l = w.topo.match_links("L0-S0#0");
        assert_eq!(l.len(), 1);
        assert!(!w.link_up[l[0].idx()]);
        for p in w.topo.links[l[0].idx()].ports {
            assert!(!w.ports[p.idx()].up);
        }
        assert_eq!(w.q.peek_time(), Some(SimTime::from_us(250)));
        assert_eq!(w.udp_until, SimTime::from_us(500));
    }
}
