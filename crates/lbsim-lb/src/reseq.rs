//! A receive-side resequencer by TCP sequence number, shared by the schemes
//! that spray a flow over several paths and hide the reordering from the
//! guest's TCP: VMS's rVMS (VMS §III-C) and the "PerPacket with sufficient
//! reorder buffers" baseline (`spray` with `resequence = true`).
//!
//! Per (receiving host, connection): `expected` is the next byte to pass up
//! (set by the SYN, or without one by the first data segment). A segment at or below it goes up at
//! once (retransmissions included), followed by every held segment that is
//! now in order; one above it is held. Held segments are flushed in order
//! when no segment was passed up for `timeout` since the later of the last
//! delivery and the moment the buffer became non-empty (VMS §III-C: "If no
//! packet is delivered to rEnd after timeout, all the packets in the
//! re-sequence buffer should be delivered to rEnd in sequence"; measuring
//! from the hold start is our choice, so an idle flow does not flush at
//! once); the hole is then the guest TCP's to recover. The buffer is
//! limited per host (all flows: "4MB is not for one flow, but for all flows
//! in one virtual switch"); a segment that would exceed it flushes its own
//! flow (our choice).

use crate::edge::IdMap;
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, HostRx, NodeId, PktId};
use std::collections::BTreeMap;

/// Timer token kind of resequencing timeouts (above discovery's kinds).
pub const TOKEN_RESEQ: u64 = 16 << 56;

#[derive(Debug, Default)]
struct Flow {
    started: bool,
    expected: u64,
    /// seq -> (packet, payload bytes, wire bytes)
    held: BTreeMap<u64, (PktId, u32, u32)>,
    hold_since: SimTime,
    last_delivery: SimTime,
    timer_at: Option<SimTime>,
}

pub struct Reseq {
    pub timeout: SimTime,
    pub limit_bytes: u64,
    flows: Vec<IdMap<u32, Flow>>,
    held_bytes: Vec<u64>,
    /// Segments that had to wait, flushes by timeout and by overflow.
    pub held_total: u64,
    pub timeouts: u64,
    pub overflows: u64,
}

impl Reseq {
    pub fn new(timeout: SimTime, limit_bytes: u64, hosts: usize) -> Reseq {
        Reseq {
            timeout,
            limit_bytes,
            flows: (0..hosts).map(|_| IdMap::default()).collect(),
            held_bytes: vec![0; hosts],
            held_total: 0,
            timeouts: 0,
            overflows: 0,
        }
    }

    /// A SYN of connection `conn` arriving at host index `h`: its data
    /// starts at `seq` (lbsim's SYN takes no sequence space), so the
    /// first data segment to arrive is held if earlier ones are still on
    /// their way. Without a SYN (a connection opened before the run), the
    /// first data segment to arrive sets the start.
    pub fn on_syn(&mut self, h: u32, conn: u32, seq: u64) {
        let f = self.flows[h as usize].entry(conn).or_default();
        if !f.started {
            f.started = true;
            f.expected = seq;
        }
    }

    /// A data segment (`seq`, `len` payload bytes, `size` on the wire) of
    /// connection `conn` arriving at `host` (host index `h`).
    // the segment's fields, each named at the one call site
    #[allow(clippy::too_many_arguments)]
    pub fn on_data(&mut self, ctx: &mut Ctx, host: NodeId, h: u32, conn: u32, pkt: PktId, seq: u64, len: u32, size: u32) -> HostRx {
        let now = ctx.now;
        let f = self.flows[h as usize].entry(conn).or_default();
        if !f.started {
            f.started = true;
            f.expected = seq;
        }
        if seq <= f.expected {
            f.expected = f.expected.max(seq + len as u64);
            f.last_delivery = now;
            if f.held.is_empty() {
                return HostRx::Deliver;
            }
            ctx.deliver(host, pkt);
            self.release(ctx, host, h, conn, false);
            return HostRx::Held;
        }
        if f.held.contains_key(&seq) {
            return HostRx::Deliver; // a second copy: TCP sees the duplicate
        }
        if f.held.is_empty() {
            f.hold_since = now;
        }
        f.held.insert(seq, (pkt, len, size));
        self.held_bytes[h as usize] += size as u64;
        self.held_total += 1;
        if self.held_bytes[h as usize] > self.limit_bytes {
            self.overflows += 1;
            self.release(ctx, host, h, conn, true);
            return HostRx::Held;
        }
        self.arm(ctx, h, conn);
        HostRx::Held
    }

    fn due(f: &Flow, timeout: SimTime) -> SimTime {
        f.last_delivery.max(f.hold_since) + timeout
    }

    fn arm(&mut self, ctx: &mut Ctx, h: u32, conn: u32) {
        let f = self.flows[h as usize].get_mut(&conn).unwrap();
        if f.timer_at.is_none() && !f.held.is_empty() {
            let at = Self::due(f, self.timeout);
            f.timer_at = Some(at);
            ctx.schedule(at, TOKEN_RESEQ | ((h as u64) << 32) | conn as u64);
        }
    }

    /// Passes up the held segments now in order (all of them with `all`).
    fn release(&mut self, ctx: &mut Ctx, host: NodeId, h: u32, conn: u32, all: bool) {
        let f = self.flows[h as usize].get_mut(&conn).unwrap();
        while let Some((&seq, &(pkt, len, size))) = f.held.iter().next() {
            if !all && seq > f.expected {
                break;
            }
            f.held.remove(&seq);
            self.held_bytes[h as usize] -= size as u64;
            f.expected = f.expected.max(seq + len as u64);
            f.last_delivery = ctx.now;
            ctx.deliver(host, pkt);
        }
        self.arm(ctx, h, conn);
    }

    /// Handles a resequencing timer; false if the token is not ours.
    pub fn on_timer(&mut self, ctx: &mut Ctx, token: u64) -> bool {
        if token & (0xFF << 56) != TOKEN_RESEQ {
            return false;
        }
        let (h, conn) = (((token >> 32) & 0xFF_FFFF) as u32, token as u32);
        let Some(f) = self.flows[h as usize].get_mut(&conn) else { return true };
        f.timer_at = None;
        if f.held.is_empty() {
            return true;
        }
        if ctx.now >= Self::due(f, self.timeout) {
            self.timeouts += 1;
            let host = ctx.topo.host(h);
            self.release(ctx, host, h, conn, true);
        } else {
            self.arm(ctx, h, conn);
        }
        true
    }

    /// Bytes held now at host `h` (tests).
    pub fn held_bytes(&self, h: u32) -> u64 {
        self.held_bytes[h as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Env;
    use lbsim_net::{Action, Packet, Payload, Proto};
    use lbsim_tcp::TcpHeader;

    fn seg(env: &mut Env, seq: u64) -> PktId {
        let (a, b) = (env.topo.host(0), env.topo.host(16));
        let p = Packet::new(
            a,
            b,
            1000,
            80,
            Proto::Tcp,
            1500,
            Payload::Tcp { conn: 7, to_receiver: true, hdr: TcpHeader { seq, len: 1000, ..Default::default() } },
            SimTime::ZERO,
        );
        env.ctx(SimTime::ZERO).new_packet(p)
    }

    fn delivered(env: &mut Env) -> Vec<u64> {
        let v =
            env.actions.iter().filter_map(|a| if let Action::Deliver { pkt, .. } = a { Some(env.pkts.get(pkt.0).tcp().unwrap().seq) } else { None }).collect();
        env.actions.retain(|a| !matches!(a, Action::Deliver { .. }));
        v
    }

    #[test]
    fn reordered_segments_reach_tcp_in_order_and_a_gap_flushes_after_the_timeout() {
        let mut env = Env::testbed();
        let host = env.topo.host(16);
        let mut r = Reseq::new(SimTime::from_us(2000), 1 << 20, 32);
        let t = |us| SimTime::from_us(us);
        let p0 = seg(&mut env, 0);
        assert_eq!(r.on_data(&mut env.ctx(t(10)), host, 16, 7, p0, 0, 1000, 1500), HostRx::Deliver);
        // 2000 and 3000 arrive before 1000: held
        for s in [2000, 3000] {
            let p = seg(&mut env, s);
            assert_eq!(r.on_data(&mut env.ctx(t(20)), host, 16, 7, p, s, 1000, 1500), HostRx::Held);
        }
        assert_eq!(r.held_bytes(16), 3000);
        let p1 = seg(&mut env, 1000);
        assert_eq!(r.on_data(&mut env.ctx(t(30)), host, 16, 7, p1, 1000, 1000, 1500), HostRx::Held);
        assert_eq!(delivered(&mut env), vec![1000, 2000, 3000], "the late segment first, then the held ones in order");
        assert_eq!(r.held_bytes(16), 0);
        // the timer armed when 2000 was held fires with nothing held
        let first = env.actions.iter().find_map(|a| if let Action::Timer { at, token } = a { Some((*at, *token)) } else { None }).unwrap();
        assert_eq!(first.0, t(2020));
        env.actions.clear();
        assert!(r.on_timer(&mut env.ctx(first.0), first.1));
        assert_eq!(r.timeouts, 0);
        assert!(env.actions.is_empty());
        // a gap: 5000 held at 5 ms after an idle period; the timeout counts
        // from the hold start, not from the last delivery at 30 us
        let p5 = seg(&mut env, 5000);
        assert_eq!(r.on_data(&mut env.ctx(t(5000)), host, 16, 7, p5, 5000, 1000, 1500), HostRx::Held);
        let timer = env.actions.iter().find_map(|a| if let Action::Timer { at, token } = a { Some((*at, *token)) } else { None }).unwrap();
        assert_eq!(timer.0, t(7000));
        assert!(r.on_timer(&mut env.ctx(t(7000)), timer.1));
        assert_eq!(delivered(&mut env), vec![5000]);
        assert_eq!(r.timeouts, 1);
        // the hole (4000) is TCP's now: a retransmission passes at once
        let p4 = seg(&mut env, 4000);
        assert_eq!(r.on_data(&mut env.ctx(t(7100)), host, 16, 7, p4, 4000, 1000, 1500), HostRx::Deliver);
    }

    #[test]
    fn after_a_syn_the_first_arrival_waits_for_the_segments_before_it() {
        let mut env = Env::testbed();
        let host = env.topo.host(16);
        let mut r = Reseq::new(SimTime::from_us(2000), 1 << 20, 32);
        r.on_syn(16, 7, 0);
        let p1 = seg(&mut env, 1000);
        assert_eq!(r.on_data(&mut env.ctx(SimTime::ZERO), host, 16, 7, p1, 1000, 1000, 1500), HostRx::Held);
        let p0 = seg(&mut env, 0);
        assert_eq!(r.on_data(&mut env.ctx(SimTime::ZERO), host, 16, 7, p0, 0, 1000, 1500), HostRx::Held);
        assert_eq!(delivered(&mut env), vec![0, 1000]);
        // without the SYN the first arrival sets the start: 0 would pass up late
        let mut q = Reseq::new(SimTime::from_us(2000), 1 << 20, 32);
        let p1 = seg(&mut env, 1000);
        assert_eq!(q.on_data(&mut env.ctx(SimTime::ZERO), host, 16, 8, p1, 1000, 1000, 1500), HostRx::Deliver);
    }

    #[test]
    fn the_per_host_limit_flushes_the_flow() {
        let mut env = Env::testbed();
        let host = env.topo.host(16);
        let mut r = Reseq::new(SimTime::from_us(2000), 4000, 32);
        let p0 = seg(&mut env, 0);
        r.on_data(&mut env.ctx(SimTime::ZERO), host, 16, 7, p0, 0, 1000, 1500);
        for s in [2000, 3000, 4000] {
            let p = seg(&mut env, s);
            r.on_data(&mut env.ctx(SimTime::ZERO), host, 16, 7, p, s, 1000, 1500);
        }
        assert_eq!(r.overflows, 1, "4,500 held bytes > 4,000");
        assert_eq!(delivered(&mut env), vec![2000, 3000, 4000]);
        assert_eq!(r.held_bytes(16), 0);
    }
}
