//! VMS (Li et al., "VMS: Traffic Balancing Based on Virtual Switches in
//! Datacenter Networks", §III): the sending host's virtual switch (sVMS)
//! spreads one TCP flow over N channels — source ports whose ECMP hashes
//! differ — each with a DCTCP-like virtual window driven by per-channel ECN
//! feedback that the receiving virtual switch (rVMS) piggybacks on ACKs;
//! sVMS caps the guest TCP by rewriting the receive window to the sum of the
//! channel windows; rVMS resequences before the guest sees the data; on a
//! loss the flow falls back to one channel (VMS Reset).
//!
//! sVMS and rVMS keep separate state and talk only through header fields of
//! packets that exist (the typed `LbHeader::Vms`: channel, SIN, and the
//! 8-byte feedback option on ACKs). The mechanism, step by step, and every
//! choice where the paper is silent (numbered Q1-Q16) are written up in
//! docs/schemes/vms.md; the Q-numbers are cited below.
//!
//! - §III-B channels: port p on channel c is written `((p − c) & 7) + (p & !7)`
//!   (eq. 1) and restored by eq. 2; channel 0 is the original 5-tuple.
//! - §III-D Algorithm 1: the first channel after the current one with room
//!   for the segment, else the one with the most (signed) room (Q4).
//! - §III-F Algorithm 2: per report, W += size/2 in slow start, MSS·size/2/D/W
//!   after (D = N, Q3); RCE: no increase, SsThresh = W/2; once per RTT
//!   (MileStone) α ← α(1−g) + gF and W ← W(1 − α/2) for channels that
//!   carried data (Q5); the guest's window = min(its receiver's, ΣW) (Q12).
//! - §III-G Reset: a retransmission seen by sVMS or a duplicate ACK seen by
//!   rVMS (signalled with the sticky SIN flag); then channel 0 only, D = 1,
//!   ΣW = W_0 (Q14).
//! - §III-C resequencing: `reseq.rs`; unless set, T = T'/2 with T' = kB/C
//!   of eq. 3 for the scenario's fabric ([`eq3_bound`]) and S = C'T (eq. 4).
//! - Q1: sVMS sets ECT, rVMS clears CE: the guests never see underlay ECN.
//! - §III-I state lifetime: a flow's state at either end is dropped after
//!   `state_idle_ms` without a packet (lbsim has no FIN); state recreated by
//!   a non-SYN packet is single-channel ("equivalent to AC/DC TCP"), by a
//!   SYN scattered again. lbsim's persistent connections have no handshake:
//!   their first state is made by the first data segment with N channels
//!   (our choice: otherwise they would never scatter), but once expired it
//!   comes back single-channel like any state recreated mid-flow. When only
//!   rVMS's state expired (its idle gap includes an RTT more than sVMS's),
//!   it signals SIN so that both ends are single-channel (our choice).

use crate::edge::IdMap;
use crate::params::{num, DefaultValue, ParamDef, ParamError, Params, GUEST_SEES_CE};
use crate::reseq::Reseq;
use crate::SchemeEnv;
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, HostRx, LbHeader, LoadBalancer, NodeId, Payload, PktId};
use lbsim_tcp::header::SYN;

pub const PARAMS: &[ParamDef] = &[
    num("channels", "channels", 8.0, "N: channels per flow, 1 to 8 (§III-B: 8 unless stated)"),
    num("g", "", 1.0 / 16.0, "alpha gain (§V-B: 1/16)"),
    num("reseq_timeout_us", "us", 0.0, "T: resequencing timeout; 0 = T'/2 with T' = kB/C of eq. 3 for this fabric: the longest drain of full switch buffers (B each, at the port's rate C) on any routed path, not counting the destination ToR's port to the host, which every path of a pair shares (§III-C; 0.83 ms for the 10G benchmark with 690-packet buffers). Printed in the summary (scheme.resolved)"),
    num("reseq_buffer_bytes", "bytes", 0.0, "S: resequencing buffer per host, all flows; 0 = C'T (eq. 4, C' the receiving host's link rate)"),
    ParamDef { name: GUEST_SEES_CE, unit: "", default: DefaultValue::Bool(false), help: "false: rVMS clears CE, the guests never see underlay ECN (Q1, AC/DC-style; §III-A, §III-F, §V-A); true: CE reaches the receiving guest (the other reading, for comparison)" },
    num("init_window_pkts", "packets", 10.0, "initial sum of the channel windows, in MSS (our choice, Q2: a normal TCP's initial window, split over the channels)"),
    ParamDef { name: "cut", unit: "", default: DefaultValue::Str("every_rtt"), help: "\"every_rtt\": Algorithm 2 literally (every channel that carried data is cut by alpha/2 each RTT); \"on_ce\": only in RTTs with CE (DCTCP's rule; Q6)" },
    num("state_idle_ms", "ms", 1000.0, "a flow's state at each end is dropped, when the flow next sends, if it has been idle this long (each end times its own packets; nothing is swept); recreated by a non-SYN packet as one channel (§III-I: \"e.g. 1 second\")"),
    ParamDef { name: "enabled_hosts", unit: "host indices", default: DefaultValue::List, help: "the VMS-enable table: flows between two listed hosts are scattered (empty = every host; §III-A)" },
    ParamDef { name: "one_channel_hosts", unit: "host indices", default: DefaultValue::List, help: "hosts whose flows use one channel (Fig. 10b's 1-channel VMS)" },
];

/// Feedback option bytes on the wire (§III-E: two 32-bit words).
pub const FEEDBACK_BYTES: u32 = 8;

/// Eq. 1: the source port of channel `c` for original port `p`.
pub fn channel_port(p: u16, c: u8) -> u16 {
    (p.wrapping_sub(c as u16) & 7) + (p & !7)
}

/// Eq. 2: the original port from channel port `q` of channel `c`.
pub fn original_port(q: u16, c: u8) -> u16 {
    (q.wrapping_add(c as u16) & 7) + (q & !7)
}

/// One channel's sender state (Table I), sizes in payload bytes.
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    pub w: f64,
    pub ssthresh: f64,
    pub alpha: f64,
    pub send_seq: u64,
    pub fbk_seq: u64,
    pub rtt_size: u64,
    pub rtt_ce: u64,
}

/// sVMS per-flow state.
#[derive(Clone, Debug)]
pub struct Sender {
    pub next_seq: u64,
    pub milestone: u64,
    pub sum_w: f64,
    pub current: usize,
    /// Channels in use (N, or 1 after Reset) and the divisor D.
    pub n: usize,
    pub d: f64,
    pub reset: bool,
    pub ch: Vec<Channel>,
    /// Time of the flow's last packet through sVMS (either direction).
    pub last: SimTime,
}

impl Sender {
    pub fn new(n: usize, init_bytes: f64, mss: f64) -> Sender {
        let w = (init_bytes / n as f64).max(mss / n as f64);
        let ch = vec![Channel { w, ssthresh: f64::INFINITY, alpha: 0.0, send_seq: 0, fbk_seq: 0, rtt_size: 0, rtt_ce: 0 }; n];
        Sender { next_seq: 0, milestone: 0, sum_w: w * n as f64, current: 0, n, d: n as f64, reset: false, ch, last: SimTime::ZERO }
    }

    /// Algorithm 1: the channel for a segment of `len` payload bytes.
    pub fn pick(&mut self, len: u64) -> usize {
        if self.reset {
            self.ch[0].send_seq += len;
            self.current = 0;
            return 0;
        }
        let mut c = self.current;
        let (mut pick, mut best) = (None, f64::NEG_INFINITY);
        for _ in 0..self.n {
            c = (c + 1) % self.n;
            let ch = &self.ch[c];
            let onfly = (ch.send_seq - ch.fbk_seq.min(ch.send_seq)) as f64;
            if onfly + len as f64 <= ch.w {
                pick = Some(c);
                break;
            }
            if ch.w - onfly > best {
                best = ch.w - onfly;
                pick = Some(c);
            }
        }
        let p = pick.unwrap_or(0);
        self.ch[p].send_seq += len;
        self.current = p;
        p
    }

    /// Algorithm 2, lines 5–17: one feedback report.
    pub fn feedback(&mut self, c: usize, rce: bool, size: u64, number: u64, mss: f64) {
        if size == 0 || c >= self.ch.len() {
            return;
        }
        let d = self.d;
        let ch = &mut self.ch[c];
        ch.fbk_seq = ch.fbk_seq.max(number);
        ch.rtt_size += size;
        if !rce {
            let adder = if ch.w < ch.ssthresh { size as f64 / 2.0 } else { mss * size as f64 / 2.0 / d / ch.w };
            ch.w += adder;
            if c < self.n {
                self.sum_w += adder;
            }
        } else {
            ch.rtt_ce += size;
            ch.ssthresh = ch.w / 2.0;
        }
    }

    /// Algorithm 2, lines 18–29: once per RTT (the ACK number passed the
    /// milestone), the DCTCP-like cut of the channels that carried data.
    pub fn on_ack(&mut self, ack: u64, g: f64, floor: f64, cut_every_rtt: bool) {
        if self.milestone > ack {
            return;
        }
        for ch in self.ch.iter_mut().take(self.n) {
            if ch.rtt_size == 0 {
                continue; // Q5
            }
            let f = ch.rtt_ce as f64 / ch.rtt_size as f64;
            ch.rtt_size = 0;
            ch.rtt_ce = 0;
            ch.alpha = ch.alpha * (1.0 - g) + f * g;
            if cut_every_rtt || f > 0.0 {
                ch.w = (ch.w * (1.0 - ch.alpha / 2.0)).max(floor);
            }
        }
        self.sum_w = self.ch.iter().take(self.n).map(|c| c.w).sum();
        self.milestone = self.next_seq + 1;
    }

    /// VMS Reset (§III-G, Q14): channel 0 only, D = 1, ΣW = W_0.
    pub fn reset(&mut self) -> bool {
        if self.reset {
            return false;
        }
        self.reset = true;
        self.n = 1;
        self.d = 1.0;
        self.current = 0;
        self.sum_w = self.ch[0].w;
        true
    }
}

/// rVMS per-flow state.
#[derive(Clone, Debug, Default)]
struct Receiver {
    recv_seq: [u64; 8],
    recv_count: [u64; 8],
    rce: [bool; 8],
    fb_channel: usize,
    last_ack: Option<u64>,
    reset: bool,
    /// Time of the flow's last packet through rVMS (either direction).
    last: SimTime,
}

/// Eq. 3's T' = kB/C for the fabric: the longest time, over the routed
/// paths between any two hosts, that full switch buffers of `buffer_bytes`
/// take to drain at their ports' rates. The destination ToR's port to the
/// host is left out: every path of a host pair ends in it, so it delays
/// all of a flow's packets alike and cannot reorder them (with it the
/// paper's k would be 5, not 4, in its 3-tier example). The host's own
/// NIC is left out for the same reason.
pub fn eq3_bound(topo: &lbsim_net::Topology, routing: &lbsim_net::Routing, buffer_bytes: u64) -> SimTime {
    let n = topo.nodes.len();
    let mut worst = SimTime::ZERO;
    // one destination per rack: switches route to a rack's hosts alike up
    // to the last hop, which is not counted
    for rack in 0..topo.racks.len() as u32 {
        let Some(d) = topo.rack_hosts(rack).next() else { continue };
        let mut memo: Vec<Option<SimTime>> = vec![None; n];
        fn drain(node: NodeId, d: u32, topo: &lbsim_net::Topology, routing: &lbsim_net::Routing, b: u64, memo: &mut Vec<Option<SimTime>>) -> SimTime {
            if let Some(t) = memo[node.idx()] {
                return t;
            }
            let mut best = SimTime::ZERO;
            for &p in routing.next_hops(node, d) {
                let port = topo.port(p);
                let next = topo.port(port.peer).node;
                if topo.is_host(next) {
                    continue; // the shared last hop (or the NIC's wire)
                }
                let t = port.rate.tx_time(lbsim_engine::Bytes(b)) + drain(next, d, topo, routing, b, memo);
                best = best.max(t);
            }
            memo[node.idx()] = Some(best);
            best
        }
        for &tor in &topo.racks {
            worst = worst.max(drain(tor, d, topo, routing, buffer_bytes, &mut memo));
        }
    }
    worst
}

pub struct Vms {
    n: usize,
    g: f64,
    mss: f64,
    init_bytes: f64,
    cut_every_rtt: bool,
    state_idle: SimTime,
    /// Flow states dropped after `state_idle` and recreated.
    pub expired: u64,
    enabled: Vec<bool>,
    one_channel: Vec<bool>,
    /// sVMS state per (sending host) → connection.
    senders: Vec<IdMap<u32, Sender>>,
    /// rVMS state per (receiving host) → connection.
    receivers: Vec<IdMap<u32, Receiver>>,
    pub reseq: Reseq,
    guest_sees_ce: bool,
    /// T', T and S as used (µs, µs, bytes), for the summary.
    pub resolved: Vec<(&'static str, f64)>,
    pub resets: u64,
    /// What made each flow fall back (at the end that noticed): sVMS saw a
    /// retransmission, rVMS saw a duplicate ACK, rVMS's state was recreated.
    pub resets_retransmission: u64,
    pub resets_dup_ack: u64,
    pub resets_state_expired: u64,
    pub feedback_options: u64,
    /// Data bytes sent per channel index.
    pub channel_bytes: [u64; 8],
}

impl Vms {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Vms, ParamError> {
        let n = p.count("channels", 8)? as usize;
        let g = p.positive("g")?;
        if g > 1.0 {
            return Err(ParamError { key: "g".into(), msg: format!("must be from 0 to 1, got {}", lbsim_engine::fmt_num(g)) });
        }
        let hosts = env.topo.num_hosts();
        let list = |k: &str| -> Result<Vec<bool>, ParamError> {
            let v = p.list(k)?;
            let mut m = vec![false; hosts];
            for x in &v {
                if x.fract() != 0.0 || *x < 0.0 || *x >= hosts as f64 {
                    return Err(ParamError { key: k.into(), msg: format!("host {x} does not exist ({hosts} hosts)") });
                }
                m[*x as usize] = true;
            }
            Ok(m)
        };
        let mut enabled = list("enabled_hosts")?;
        if !enabled.iter().any(|&e| e) {
            enabled = vec![true; hosts];
        }
        let mss = env.mss as f64;
        // §III-C: T <= T' = kB/C (eq. 3), T = T'/2 recommended; S = C'T (eq. 4)
        let bound = eq3_bound(env.topo, env.routing, env.switch_buffer_bytes);
        let timeout = match p.duration("reseq_timeout_us", true)? {
            SimTime::ZERO => SimTime(bound.0 / 2),
            t => t,
        };
        if timeout == SimTime::ZERO {
            return Err(ParamError {
                key: "reseq_timeout_us".into(),
                msg: "is 0 and eq. 3 gives no bound for this fabric (no switch hop between racks); set it".into(),
            });
        }
        let host_rate = (0..hosts as u32).map(|h| env.topo.port(env.topo.nic(env.topo.host(h))).rate).min().unwrap_or(lbsim_engine::BitsPerSec(0));
        let buffer = if p.num("reseq_buffer_bytes")? == 0.0 { host_rate.bytes_in(timeout).max(1) } else { p.count("reseq_buffer_bytes", 1 << 40)? };
        let resolved = vec![("eq3_bound_us", bound.as_us_f64()), ("reseq_timeout_us", timeout.as_us_f64()), ("reseq_buffer_bytes", buffer as f64)];
        Ok(Vms {
            n,
            g,
            mss,
            init_bytes: p.count("init_window_pkts", 1000)? as f64 * mss,
            cut_every_rtt: p.string("cut", &["every_rtt", "on_ce"])? == "every_rtt",
            state_idle: p.duration("state_idle_ms", false)?,
            expired: 0,
            enabled,
            one_channel: list("one_channel_hosts")?,
            senders: (0..hosts).map(|_| IdMap::default()).collect(),
            receivers: (0..hosts).map(|_| IdMap::default()).collect(),
            reseq: Reseq::new(timeout, buffer, hosts),
            guest_sees_ce: p.boolean(GUEST_SEES_CE)?,
            resolved,
            resets: 0,
            resets_retransmission: 0,
            resets_dup_ack: 0,
            resets_state_expired: 0,
            feedback_options: 0,
            channel_bytes: [0; 8],
        })
    }

    fn scattered(&self, a: u32, b: u32) -> bool {
        self.enabled[a as usize] && self.enabled[b as usize]
    }

    /// sVMS state of a connection (tests and reporting).
    pub fn sender(&self, host: u32, conn: u32) -> Option<&Sender> {
        self.senders[host as usize].get(&conn)
    }

    /// Every sVMS flow's state now (a = sending host, b = connection): the
    /// window ΣW it allows the guest, the channels in use, and channel 0's
    /// window and alpha (the only channel after a Reset).
    pub fn sample(&self, out: &mut Vec<crate::SchemeSample>) {
        for (h, states) in self.senders.iter().enumerate() {
            let mut conns: Vec<(&u32, &Sender)> = states.iter().collect();
            conns.sort_unstable_by_key(|c| *c.0);
            for (&conn, s) in conns {
                out.push((SimTime::ZERO, "vms_sum_w_bytes", h as u32, conn, s.sum_w));
                out.push((SimTime::ZERO, "vms_channels", h as u32, conn, s.n as f64));
                out.push((SimTime::ZERO, "vms_w0_bytes", h as u32, conn, s.ch[0].w));
                out.push((SimTime::ZERO, "vms_alpha0", h as u32, conn, s.ch[0].alpha));
            }
        }
    }
}

impl LoadBalancer for Vms {
    /// Host-side only: switches forward by plain ECMP.
    fn wants_switch_hook(&self) -> bool {
        false
    }
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        let p = *ctx.pkt(pkt);
        let Payload::Tcp { conn, to_receiver, hdr } = p.payload else { return };
        let (me, peer) = (ctx.topo.host_index(host), ctx.topo.host_index(p.dst));
        if !self.scattered(me, peer) {
            return;
        }
        if to_receiver {
            // sVMS: outbound data (or SYN)
            let mut n = if self.one_channel[me as usize] { 1 } else { self.n };
            let states = &mut self.senders[me as usize];
            if states.get(&conn).is_some_and(|s| ctx.now - s.last > self.state_idle) {
                // expired (§III-I): recreated below; by a non-SYN packet as one channel
                states.remove(&conn);
                self.expired += 1;
                if hdr.flags & SYN == 0 {
                    n = 1;
                }
            }
            let s = states.entry(conn).or_insert_with(|| Sender::new(n, self.init_bytes, self.mss));
            s.last = ctx.now;
            let mut channel = 0;
            if hdr.len > 0 {
                let end = hdr.seq + hdr.len as u64;
                if end <= s.next_seq && s.reset() {
                    self.resets += 1; // a retransmission: a loss (§III-G)
                    self.resets_retransmission += 1;
                }
                s.next_seq = s.next_seq.max(end);
                channel = s.pick(hdr.len as u64);
                self.channel_bytes[channel] += hdr.len as u64;
            }
            let sin = s.reset;
            let pm = ctx.pkt_mut(pkt);
            pm.set_sport(channel_port(p.sport, channel as u8));
            pm.lb = LbHeader::Vms { channel: channel as u8, sin, fb: None };
            pm.ect = true;
        } else {
            // rVMS: outbound ACK from the receiving guest
            let Some(r) = self.receivers[me as usize].get_mut(&conn) else { return };
            r.last = ctx.now;
            if hdr.flags & SYN == 0 {
                if r.last_ack == Some(hdr.ack) && hdr.len == 0 && !r.reset {
                    r.reset = true; // a duplicate ACK: a loss (§III-G)
                    self.resets_dup_ack += 1;
                }
                r.last_ack = Some(hdr.ack);
            }
            // one feedback option per ACK: the next channel with unreported bytes
            let mut fb = None;
            for k in 1..=8 {
                let i = (r.fb_channel + k) % 8;
                if r.recv_count[i] > 0 {
                    fb = Some((i as u8, r.rce[i], r.recv_count[i] as u32, r.recv_seq[i] as u32));
                    r.recv_count[i] = 0;
                    r.rce[i] = false;
                    r.fb_channel = i;
                    break;
                }
            }
            let sin = r.reset;
            if fb.is_some() {
                self.feedback_options += 1;
            }
            let pm = ctx.pkt_mut(pkt);
            pm.lb = LbHeader::Vms { channel: 0, sin, fb };
            if fb.is_some() {
                pm.size += FEEDBACK_BYTES;
            }
        }
    }

    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        let p = *ctx.pkt(pkt);
        let (LbHeader::Vms { channel, sin, fb }, Payload::Tcp { conn, to_receiver, hdr }) = (p.lb, p.payload) else { return HostRx::Deliver };
        let me = ctx.topo.host_index(host);
        let pm = ctx.pkt_mut(pkt);
        pm.lb = LbHeader::None;
        if !self.guest_sees_ce {
            pm.ce = false; // the guests never see underlay ECN (Q1)
        }
        if to_receiver {
            // rVMS: inbound data (or SYN) — restore the port, count, resequence
            pm.set_sport(original_port(p.sport, channel));
            let states = &mut self.receivers[me as usize];
            let mut recreated = false;
            if states.get(&conn).is_some_and(|r| ctx.now - r.last > self.state_idle) {
                states.remove(&conn); // expired (§III-I): counters start afresh
                self.expired += 1;
                recreated = hdr.flags & SYN == 0;
            }
            let r = states.entry(conn).or_default();
            r.last = ctx.now;
            // state recreated mid-flow is single-channel (§III-I); rVMS says
            // so with SIN, so an sVMS whose own state survived (its idle gap
            // is an RTT shorter) does not go on scattering against
            // restarted feedback counters
            if recreated && !r.reset {
                self.resets_state_expired += 1;
            }
            r.reset |= sin || recreated;
            let c = (channel & 7) as usize;
            if hdr.len > 0 {
                r.recv_seq[c] += hdr.len as u64;
                r.recv_count[c] += hdr.len as u64;
                r.rce[c] |= p.ce;
                return self.reseq.on_data(ctx, host, me, conn, pkt, hdr.seq, hdr.len, p.size);
            }
            if hdr.flags & SYN != 0 {
                self.reseq.on_syn(me, conn, hdr.seq);
            }
            return HostRx::Deliver;
        }
        // sVMS: inbound ACK — Algorithm 2, then the window rewrite
        // (the feedback option is stripped before the guest, §III-E: its 8
        // bytes stay counted as delivered to the edge)
        let Some(s) = self.senders[me as usize].get_mut(&conn) else { return HostRx::Deliver };
        s.last = ctx.now;
        if sin && s.reset() {
            self.resets += 1;
        }
        if let Some((c, rce, bytes, number)) = fb {
            // 32-bit wire counters, unwrapped against the local copy
            let local = s.ch.get(c as usize).map_or(0, |ch| ch.fbk_seq);
            let number = (local & !0xFFFF_FFFF) | number as u64;
            let number = if number + (1 << 31) < local { number + (1 << 32) } else { number };
            s.feedback(c as usize, rce, bytes as u64, number, self.mss);
        }
        if hdr.has(lbsim_tcp::header::ACK) {
            s.on_ack(hdr.ack, self.g, self.mss / self.n as f64, self.cut_every_rtt);
        }
        let wnd = (s.sum_w.max(self.mss).min(u32::MAX as f64)) as u32;
        if let Payload::Tcp { hdr, .. } = &mut ctx.pkt_mut(pkt).payload {
            hdr.wnd = hdr.wnd.min(wnd);
        }
        HostRx::Deliver
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.reseq.on_timer(ctx, token);
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("resets", self.resets as f64),
            ("resets_retransmission", self.resets_retransmission as f64),
            ("resets_dup_ack", self.resets_dup_ack as f64),
            ("resets_state_expired", self.resets_state_expired as f64),
            ("feedback_options", self.feedback_options as f64),
            ("packets_held", self.reseq.held_total as f64),
            ("reseq_timeouts", self.reseq.timeouts as f64),
            ("reseq_overflows", self.reseq.overflows as f64),
            ("states_expired", self.expired as f64),
        ];
        let total: u64 = self.channel_bytes.iter().sum();
        const NAMES: [&str; 8] =
            ["channel0_share", "channel1_share", "channel2_share", "channel3_share", "channel4_share", "channel5_share", "channel6_share", "channel7_share"];
        for (i, b) in self.channel_bytes.iter().enumerate() {
            if *b > 0 {
                v.push((NAMES[i], *b as f64 / total.max(1) as f64));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_ports_round_trip_and_stay_in_the_aligned_block() {
        for p in 0..=u16::MAX {
            let mut block: Vec<u16> = (0..8).map(|c| channel_port(p, c)).collect();
            for c in 0..8u8 {
                assert_eq!(original_port(channel_port(p, c), c), p, "p {p} c {c}");
            }
            assert_eq!(channel_port(p, 0), p);
            block.sort();
            assert_eq!(block, ((p & !7)..=(p & !7) + 7).collect::<Vec<_>>(), "p {p}");
        }
    }

    #[test]
    fn eq3_counts_the_buffers_where_paths_differ() {
        use lbsim_engine::BitsPerSec;
        use lbsim_net::topology::{fat_tree, leaf_spine, LeafSpine, LinkSpec};
        let l = |g| LinkSpec { rate: BitsPerSec::gbps(g), delay: SimTime::from_us(1) };
        let b = 690 * 1500; // the benchmark's 1 MB buffers: 827.9 us at 10G
        let drain = BitsPerSec::gbps(10).tx_time(lbsim_engine::Bytes(b));
        // the 2-tier benchmark (Fig. 5): ToR uplink and spine downlink, k = 2
        let bench =
            leaf_spine(&LeafSpine { leaves: 2, spines: 4, links_per_pair: 1, hosts_per_leaf: vec![4, 4], host_link: l(10), fabric_link: l(10) }).unwrap();
        let mut env = crate::testutil::Env::from_topology(bench);
        assert_eq!(eq3_bound(&env.topo, &env.routing, b), SimTime(2 * drain.0));
        // a 3-tier fat-tree: k = 4 as in the paper's example
        let ft = crate::testutil::Env::from_topology(fat_tree(4, l(10), l(10)).unwrap());
        assert_eq!(eq3_bound(&ft.topo, &ft.routing, b), SimTime(4 * drain.0));
        // Fig. 8's link L at 5 Gb/s: a path through it drains its buffer twice as slowly
        for i in 0..env.topo.ports.len() {
            if env.topo.ports[i].name == "L0->S0#0" {
                env.topo.ports[i].rate = BitsPerSec::gbps(5);
            }
        }
        assert_eq!(eq3_bound(&env.topo, &env.routing, b), SimTime(3 * drain.0));
        // the default T is half the bound, S = C'T; a set T wins
        let given = std::collections::BTreeMap::new();
        let v = Vms::new(&Params::new(&given, PARAMS, "vms").unwrap(), &env.scheme_env()).unwrap();
        let env250 = eq3_bound(&env.topo, &env.routing, 250 * 1500);
        assert_eq!(v.reseq.timeout, SimTime(env250.0 / 2));
        assert_eq!(v.reseq.limit_bytes, BitsPerSec::gbps(10).bytes_in(v.reseq.timeout));
        let mut given = std::collections::BTreeMap::new();
        given.insert("reseq_timeout_us".to_string(), crate::params::Value::Num(2000.0));
        let v = Vms::new(&Params::new(&given, PARAMS, "vms").unwrap(), &env.scheme_env()).unwrap();
        assert_eq!((v.reseq.timeout, v.reseq.limit_bytes), (SimTime::from_us(2000), 2_500_000));
        given.insert("reseq_timeout_us".to_string(), crate::params::Value::Num(-1.0));
        let e = Vms::new(&Params::new(&given, PARAMS, "vms").unwrap(), &env.scheme_env()).err().unwrap();
        assert_eq!(e.key, "reseq_timeout_us");
    }

    #[test]
    fn algorithm_1_takes_the_next_channel_with_room_else_the_most_room() {
        let mss = 1448.0;
        let mut s = Sender::new(4, 4.0 * mss, mss); // one MSS per channel
        assert_eq!((0..4).map(|_| s.pick(1448)).collect::<Vec<_>>(), vec![1, 2, 3, 0]);
        // every channel is full: the largest (least negative) room wins, first in scan order
        s.ch[2].w = 2.0 * mss;
        assert_eq!(s.pick(1448), 2);
        assert_eq!(s.ch[2].send_seq, 2 * 1448);
        // all equally over: the first after the current one (2) is 3
        assert_eq!(s.pick(1448), 3);
        s.reset();
        assert_eq!((0..3).map(|_| s.pick(100)).collect::<Vec<_>>(), vec![0, 0, 0]);
    }

    #[test]
    fn algorithm_2_grows_cuts_and_sums_the_windows() {
        let mss = 1000.0;
        let mut s = Sender::new(2, 4000.0, mss);
        s.next_seq = 10_000;
        // slow start: + size/2
        s.feedback(0, false, 2000, 2000, mss);
        assert_eq!(s.ch[0].w, 3000.0);
        assert_eq!(s.sum_w, 5000.0);
        // CE: no increase, ssthresh = W/2
        s.feedback(1, true, 1000, 1000, mss);
        assert_eq!((s.ch[1].w, s.ch[1].ssthresh, s.ch[1].rtt_ce), (2000.0, 1000.0, 1000));
        // congestion avoidance on channel 1 (W >= ssthresh): MSS*size/2/D/W
        s.feedback(1, false, 1000, 2000, mss);
        assert!((s.ch[1].w - (2000.0 + 1000.0 * 1000.0 / 2.0 / 2.0 / 2000.0)).abs() < 1e-9);
        // the milestone: alpha = g*F, W *= 1 - alpha/2 for channels with data
        let (w0, w1) = (s.ch[0].w, s.ch[1].w);
        s.on_ack(0, 1.0 / 16.0, mss / 2.0, true);
        let a1 = 0.5 / 16.0; // F = 1000 CE / 2000 bytes
        assert!((s.ch[1].alpha - a1).abs() < 1e-12);
        assert!((s.ch[1].w - w1 * (1.0 - a1 / 2.0)).abs() < 1e-9);
        assert_eq!(s.ch[0].alpha, 0.0);
        assert_eq!(s.ch[0].w, w0, "alpha 0: the literal cut removes nothing");
        assert_eq!(s.sum_w, s.ch[0].w + s.ch[1].w);
        assert_eq!(s.milestone, 10_001);
        // before the next milestone nothing is cut
        s.feedback(0, true, 1000, 3000, mss);
        s.on_ack(5000, 1.0 / 16.0, mss / 2.0, true);
        assert_eq!(s.ch[0].alpha, 0.0);
    }

    #[test]
    fn in_congestion_avoidance_n_channels_grow_like_one_tcp() {
        // no CE: per RTT a flow's whole window is reported once; with D = N
        // the sum grows MSS/2 per RTT whatever N is (§III-F)
        let mss = 1448.0;
        for n in [1usize, 8] {
            let mut s = Sender::new(n, 80.0 * mss, mss);
            for c in s.ch.iter_mut() {
                c.ssthresh = 0.0;
            }
            let before = s.sum_w;
            let per = (s.sum_w / n as f64) as u64;
            for c in 0..n {
                // the channel's window reported in MSS-sized pieces
                let mut left = per;
                while left > 0 {
                    let k = left.min(1448);
                    s.feedback(c, false, k, 0, mss);
                    left -= k;
                }
            }
            let growth = (s.sum_w - before) / mss;
            assert!((growth - 0.5).abs() < 0.025, "N = {n}: {growth} MSS per RTT");
        }
    }
}
