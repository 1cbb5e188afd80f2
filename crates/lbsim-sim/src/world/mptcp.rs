//! MPTCP at the connection level (RFC 8684): one data stream split into
//! chunks over subflows that are ordinary connections of the World, each
//! chunk tagged with its data sequence number; LIA couples the subflows'
//! windows (RFC 6356 §3). The subflows' TCP is lbsim-tcp's, unchanged; this
//! module keeps the stream: which subflow sends next, the connection-level
//! receive state, and which flow of the stream ends where.

use super::World;
use crate::metrics::FlowCounters;
use lbsim_workload::FlowSpec;
use std::collections::VecDeque;

/// An MPTCP connection: subflows (ordinary connections) carrying chunks of
/// one data stream, each chunk tagged with its data sequence number (DSS).
pub(crate) struct Mptcp {
    pub(super) subflows: Vec<u32>,
    /// Data sequence numbers handed to subflows so far / written by the app.
    pub(super) next_dsn: u64,
    pub(super) app_end: u64,
    /// Connection-level receive state.
    pub(super) rcv: lbsim_tcp::RangeSet,
    pub(super) rcv_nxt: u64,
    pub(super) flow_ends: VecDeque<(u64, u32)>,
    pub(super) per_flow: bool,
    pub(super) joined: bool,
}

impl World {
    /// Recomputes LIA's alpha (RFC 6356 §3) over `mp`'s subflows for `conn`.
    pub(super) fn couple(&mut self, mp: u32, conn: u32) {
        let m = self.tcp.mps[mp as usize].as_ref().unwrap();
        let subflows = m.subflows.iter().filter_map(|&sf| {
            let c = self.tcp.conns[sf as usize].as_ref()?;
            Some((c.sender.cwnd(), c.sender.srtt()?))
        });
        if let Some((alpha, total)) = lbsim_tcp::lia_alpha(subflows) {
            if let Some(c) = self.tcp.conns[conn as usize].as_mut() {
                c.sender.set_coupling(alpha, total);
            }
        }
    }

    pub(super) fn mp_after_ack(&mut self, mp: u32, conn: u32) {
        let now = self.now();
        // the first subflow is up: open the others (MP_JOIN)
        let join = {
            let m = self.tcp.mps[mp as usize].as_ref().unwrap();
            let c = self.tcp.conns[conn as usize].as_ref().unwrap();
            !m.joined && c.sub_idx == 0 && c.sender.state() == lbsim_tcp::SenderState::Established
        };
        if join {
            let subs = {
                let m = self.tcp.mps[mp as usize].as_mut().unwrap();
                m.joined = true;
                m.subflows.clone()
            };
            let mut out = std::mem::take(&mut self.tcp.out);
            for &sf in &subs[1..] {
                let c = self.tcp.conns[sf as usize].as_mut().unwrap();
                c.sender.connect(now, &mut out);
                self.emit(sf, true, &mut out);
                self.rearm(sf, 0);
            }
            self.tcp.out = out;
        }
        self.mp_schedule(mp);
        // free a finished per-flow MPTCP connection once everything is acknowledged
        let m = self.tcp.mps[mp as usize].as_ref().unwrap();
        if m.per_flow
            && m.flow_ends.is_empty()
            && m.subflows.iter().all(|&sf| self.tcp.conns[sf as usize].as_ref().is_none_or(|c| c.sender.all_acked() && c.receiver.next_wakeup().is_none()))
        {
            for &sf in &m.subflows.clone() {
                self.tcp.conns[sf as usize] = None;
            }
            self.tcp.mps[mp as usize] = None;
        }
    }

    /// Hands unsent data, one MSS at a time, to the established subflow with
    /// the lowest smoothed RTT that has window room (Linux's default scheduler).
    pub(super) fn mp_schedule(&mut self, mp: u32) {
        let now = self.now();
        let mss = self.tcp.cfg.mss as u64;
        let mut out = std::mem::take(&mut self.tcp.out);
        while let Some(m) = self.tcp.mps[mp as usize].as_ref() {
            if m.next_dsn >= m.app_end {
                break;
            }
            let len = mss.min(m.app_end - m.next_dsn);
            let mut best: Option<(u64, usize, u32)> = None;
            for (i, &sf) in m.subflows.iter().enumerate() {
                let Some(c) = self.tcp.conns[sf as usize].as_ref() else { continue };
                let s = &c.sender;
                if s.state() != lbsim_tcp::SenderState::Established || s.unsent() > 0 || s.window_space() < len || s.nic_blocked() {
                    continue;
                }
                let key = (s.srtt().map_or(u64::MAX, |r| r.0), i, sf);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
            let Some((_, _, sf)) = best else { break };
            let dsn = m.next_dsn;
            self.tcp.mps[mp as usize].as_mut().unwrap().next_dsn += len;
            let src = self.tcp.conns[sf as usize].as_ref().unwrap().src;
            let budget = self.nic_budget(src);
            let c = self.tcp.conns[sf as usize].as_mut().unwrap();
            c.sender.write_mapped(len, dsn);
            c.sender.set_tx_budget(budget);
            c.sender.poll(now, &mut out);
            self.emit(sf, true, &mut out);
            self.after_send(sf);
            self.rearm(sf, 0);
        }
        self.tcp.out = out;
    }

    /// Connection-level reassembly: data is delivered in data-sequence order
    /// (whatever subflow carried it).
    pub(super) fn mp_receive(&mut self, mp: u32, a: u64, b: u64) {
        let now = self.now();
        let Some(m) = self.tcp.mps[mp as usize].as_mut() else { return };
        m.rcv.insert(a, b);
        if let Some((s, e)) = m.rcv.next_at_or_after(0) {
            if s <= m.rcv_nxt && e > m.rcv_nxt {
                m.rcv_nxt = e;
            }
        }
        let rcv = m.rcv_nxt;
        let mut done = vec![];
        while let Some(&(end, f)) = m.flow_ends.front() {
            if end > rcv {
                break;
            }
            m.flow_ends.pop_front();
            done.push(f);
        }
        if done.is_empty() {
            return;
        }
        let counters = self.mp_stats(mp);
        for f in done {
            let fr = &mut self.flows[f as usize];
            fr.finish = Some(now);
            fr.close(counters);
            self.done += 1;
            if fr.job != u32::MAX {
                self.done_coll.push((f, u32::MAX)); // subflows: several paths
            }
            if let Some(r) = fr.incast_request {
                self.incast_flow_done(r);
            }
        }
        if !self.done_coll.is_empty() {
            self.job_flows_done();
        }
    }

    pub(super) fn mp_stats(&self, mp: u32) -> FlowCounters {
        let m = self.tcp.mps[mp as usize].as_ref().unwrap();
        m.subflows.iter().filter_map(|&sf| self.tcp.conns[sf as usize].as_ref()).fold(FlowCounters::default(), |t, c| t + c.counters())
    }

    pub(super) fn new_mp(&mut self, src: u32, dst: u32, established: bool, per_flow: bool, k: u16) -> u32 {
        let n = self.tcp.mptcp_n.unwrap();
        let id = self.tcp.mps.len() as u32;
        let subflows: Vec<u32> = (0..n)
            .map(|i| {
                let sf = self.new_conn(src, dst, established, false, 5000 + k * 64 + i as u16);
                let c = self.tcp.conns[sf as usize].as_mut().unwrap();
                c.parent = id;
                c.sub_idx = i as u8;
                sf
            })
            .collect();
        self.tcp.mps.push(Some(Box::new(Mptcp {
            subflows,
            next_dsn: 0,
            app_end: 0,
            rcv: Default::default(),
            rcv_nxt: 0,
            flow_ends: VecDeque::new(),
            per_flow,
            joined: established,
        })));
        id
    }

    /// Starts flow `fid` on MPTCP connection `mp` if given (a collective
    /// job's channel), else on a new or pooled one.
    pub(super) fn start_mptcp_flow(&mut self, f: FlowSpec, fid: u32, mp: Option<u32>) -> FlowCounters {
        let now = self.now();
        let mp = match (mp, self.tcp.persistent) {
            (Some(m), _) => m,
            (None, None) => self.new_mp(f.src, f.dst, false, true, 0),
            (None, Some(n)) => self.pooled(
                f.src,
                f.dst,
                n,
                |w, k| w.new_mp(f.src, f.dst, true, false, k),
                |w, m| {
                    let m = w.tcp.mps[m as usize].as_ref().unwrap();
                    m.app_end - m.rcv_nxt
                },
            ),
        };
        let base = self.mp_stats(mp);
        let m = self.tcp.mps[mp as usize].as_mut().unwrap();
        m.app_end += f.size;
        m.flow_ends.push_back((m.app_end, fid));
        if !m.joined {
            let sf = m.subflows[0];
            let mut out = std::mem::take(&mut self.tcp.out);
            self.tcp.conns[sf as usize].as_mut().unwrap().sender.connect(now, &mut out);
            self.emit(sf, true, &mut out);
            self.tcp.out = out;
            self.rearm(sf, 0);
        } else {
            self.mp_schedule(mp);
        }
        base
    }
}
