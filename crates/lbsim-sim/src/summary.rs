//! The outputs of a finished run: the per-flow records closed, the port
//! totals, the samples and captures, and summary.json's statistics.

use crate::build::random_failures;
use crate::scenario::Scenario;
use crate::world::World;
use crate::{metrics, model_revision, PortReport, RunOutput};
use lbsim_engine::SimTime;
use lbsim_net::{LoadBalancer, NodeId, Payload, PortId, RdmaKind, ReportTable, ReportValue};
use serde_json::{json, Value};

/// What a run learnt beside its world, for the outputs.
pub(crate) struct Ran {
    pub events: u64,
    pub workload_info: Value,
    pub rtt: SimTime,
    pub ecn_desc: Value,
    pub setup_s: f64,
    pub run_s: f64,
}

/// The outputs of a finished run.
pub(crate) fn finish(sc: &Scenario, mut w: World, ran: Ran) -> RunOutput {
    let Ran { events, workload_info, rtt, ecn_desc, setup_s, run_s } = ran;
    w.finalize_unfinished();
    w.rdma_finalize();
    w.record_unstarted();
    w.flush_flow_rates();
    let mut summary = summarize(sc, &w, events, workload_info, rtt, setup_s, run_s);
    summary["network"]["ecn_threshold"] = ecn_desc;
    if let Some(d) = w.lb.discovery_mode() {
        summary["scheme"]["path_discovery"] = json!(d);
    }
    if let Some(d) = w.lb.discovery() {
        // the paths host 0 uses at the end, per destination, as link names
        let mut m = serde_json::Map::new();
        for (dst, set) in d.path_sets(0) {
            let paths: Vec<Value> = set
                .paths
                .iter()
                .zip(&set.ports)
                .map(|(p, port)| json!({"port": port, "links": p.iter().map(|q| w.topo.links[w.topo.ports[q.idx()].link.idx()].name.clone()).collect::<Vec<_>>()}))
                .collect();
            m.insert(dst.to_string(), Value::Array(paths));
        }
        summary["scheme"]["paths_from_host0"] = Value::Object(m);
    }
    if let Some(n) = w.tcp.mptcp_n {
        summary["transport"]["mptcp_subflows"] = json!(n);
    }
    if let Some(r) = &w.rdma {
        summary["rdma"] = rdma_summary(&w, r);
    }
    let fct_txt = w.rdma.as_ref().map(|r| crate::hpcc::fct_lines(&w.topo, &w.flows, r.fct.iter().map(|x| (x.flow, x.sport, x.dport)))).unwrap_or_default();
    let (jobs, steps) = job_records(&w);
    if !jobs.is_empty() {
        summary["jobs"] = job_summary(&w, &jobs);
    }
    RunOutput {
        jobs,
        steps,
        ports: w
            .topo
            .ports
            .iter()
            .zip(&w.ports)
            .map(|(t, q)| {
                let st = q.stats();
                PortReport {
                    name: t.name.clone(),
                    rate_bps: q.rate.0,
                    tx_pkts: st.tx_pkts,
                    tx_bytes: st.tx_bytes,
                    drops: st.drops,
                    ecn_marks: st.ecn_marks,
                    max_qlen_pkts: st.max_qlen_pkts,
                    up: q.up,
                }
            })
            .collect(),
        flows: std::mem::take(&mut w.flows),
        link_samples: std::mem::take(&mut w.samplers.link_samples),
        queue_samples: std::mem::take(&mut w.samplers.queue_samples),
        cwnd_samples: std::mem::take(&mut w.samplers.cwnd_samples),
        qp_rates: std::mem::take(&mut w.samplers.qp_rates),
        flow_rates: std::mem::take(&mut w.samplers.flow_rates),
        flow_rate_window: w.samplers.flow_rate_window,
        scheme_samples: std::mem::take(&mut w.samplers.scheme_samples),
        link_window: w.samplers.link_window,
        pcap: w.samplers.pcap.iter().map(|(t, port, p)| captured(&w, *t, *port, p)).collect(),
        class_names: sc.workload.classes.iter().map(|c| c.name.clone()).collect(),
        path_record: w.path_record,
        rdma: w.rdma.is_some(),
        fct_txt,
        summary,
    }
}

/// The lossless fabric's totals for summary.json.
fn rdma_summary(w: &World, r: &crate::world::RdmaHosts) -> Value {
    let now = w.now();
    let (mut pauses, mut resumes, mut lossless_drops, mut marks) = (0u64, 0u64, 0u64, 0u64);
    let (mut host_paused, mut switch_paused) = (SimTime::ZERO, SimTime::ZERO);
    for (i, p) in r.mmu.ports.iter().enumerate() {
        pauses += p.pauses_sent;
        resumes += p.resumes_sent;
        lossless_drops += p.drops;
        let t = r.mmu.paused_time(PortId(i as u32), now);
        if w.ports[i].ends.at_host {
            host_paused += t;
        } else {
            switch_paused += t;
        }
        marks += w.ports[i].stats().ecn_marks;
    }
    let sum = |f: fn(&crate::metrics::FlowRecord) -> u64| w.flows.iter().map(f).sum::<u64>();
    json!({
        "queue_pairs": r.qp_count(),
        "pfc": r.mmu.cfg.enabled,
        "pause_frames": pauses,
        "resume_frames": resumes,
        "host_paused_ms": host_paused.as_ms_f64(),
        "switch_port_paused_ms": switch_paused.as_ms_f64(),
        "ingress_drops": lossless_drops,
        "ecn_marks": marks,
        "cnps": sum(|f| f.counters.cnps),
        "nacks": sum(|f| f.counters.nacks),
        "timeouts": sum(|f| f.counters.timeouts),
        "pfc_deadlocks": r.deadlocks,
        "first_deadlock_ms": r.first_deadlock.as_ref().map(|d| d.0.as_ms_f64()),
        "first_deadlock_ports": w.deadlock_ports(),
    })
}

/// A captured packet as the pcap table holds it (docs/pcap.md).
fn captured(w: &World, t: SimTime, port: PortId, p: &lbsim_net::Packet) -> metrics::CapturedPacket {
    let mut h = p.tcp().copied().unwrap_or_default();
    if let (Payload::Rdma { qp, kind, seq, len, cnp }, Some(r)) = (p.payload, &w.rdma) {
        // RoCEv2 (docs/pcap.md): the BTH's PSN (packets of the MTU
        // payload, an ACK's the last it acknowledges), opcode,
        // destination QP and the CNP flag as BECN
        let mtu = r.cfg.mtu_bytes as u64;
        h.seq = match kind {
            RdmaKind::Data | RdmaKind::Nack => seq / mtu,
            RdmaKind::Ack => seq.div_ceil(mtu).wrapping_sub(1),
        } & 0xFF_FFFF;
        h.flags = kind as u8;
        h.ack = cnp as u64;
        h.wnd = qp;
        h.len = len;
    }
    if let Payload::Pfc { pause } = p.payload {
        h.flags = pause as u8;
    }
    let host = |n: NodeId| if w.topo.is_host(n) { w.topo.host_index(n) } else { u32::MAX };
    metrics::CapturedPacket {
        t,
        port: port.0,
        src: host(p.src),
        dst: host(p.dst),
        sport: p.sport,
        dport: p.dport,
        outer_sport: p.outer_sport,
        kind: match p.payload {
            Payload::Tcp { .. } => "tcp",
            Payload::Udp { .. } => "udp",
            Payload::Rdma { .. } => "rdma",
            Payload::Pfc { .. } => "pfc",
            _ => "control",
        },
        size: p.size,
        ttl: p.ttl,
        ect: p.ect,
        ce: p.ce,
        inner_ect: w.tcp.cfg.ecn_capable() && h.len > 0 && matches!(p.payload, Payload::Tcp { .. }),
        seq: h.seq,
        ack: h.ack,
        flags: h.flags,
        wnd: h.wnd,
        len: h.len,
        ts_val: h.ts_val,
        ts_ecr: h.ts_ecr,
        sack: h.sack,
        n_sack: h.n_sack,
        sack_ok: w.tcp.cfg.sack,
    }
}

/// Per sampled port: mean utilisation over the windows; over all sampled
/// ports: the throughput imbalance (MAX - MIN) / AVG per window (windows in
/// which the ports carried nothing are skipped).
fn link_sampler_summary(w: &World, window_ms: f64) -> Value {
    let mut per: std::collections::BTreeMap<u32, (f64, u64)> = Default::default();
    let mut by_t: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for l in &w.samplers.link_samples {
        let rate = w.ports[l.port.idx()].rate.0 as f64;
        let util = l.bytes as f64 * 8.0 / (rate * window_ms / 1e3);
        let e = per.entry(l.port.0).or_default();
        e.0 += util;
        e.1 += 1;
        by_t.entry(l.t.0).or_default().push(l.bytes as f64);
    }
    let mut imb: Vec<f64> = by_t
        .values()
        .filter(|v| v.len() > 1 && v.iter().sum::<f64>() > 0.0)
        .map(|v| {
            let (mx, mn) = (v.iter().cloned().fold(f64::MIN, f64::max), v.iter().cloned().fold(f64::MAX, f64::min));
            (mx - mn) / (v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    json!({
        "window_ms": window_ms,
        "mean_utilisation": per.iter().map(|(p, (u, n))| (w.topo.ports[*p as usize].name.clone(), json!(u / *n as f64))).collect::<serde_json::Map<_, _>>(),
        "imbalance": metrics::describe(&mut imb),
    })
}

fn summarize(sc: &Scenario, w: &World, events: u64, workload: Value, rtt: SimTime, setup_s: f64, run_s: f64) -> Value {
    let (fct, slow, buckets) = metrics::fct_summary(&w.flows, &sc.metrics.size_buckets_bytes, &sc.metrics.percentiles);
    let completed = w.flows.iter().filter(|f| f.finish.is_some()).count();
    let not_started = w.flows.iter().filter(|f| !f.started).count();
    let (retx, tos) = w.tcp_totals();
    let st = w.sender_totals();
    let c = &w.c;
    let (live, live_bytes) = w.in_flight();
    let ok = c.sent == c.delivered + c.dropped + live && (c.sent_bytes as i64 + c.lb_header_bytes) as u64 == c.delivered_bytes + c.dropped_bytes + live_bytes;
    let failed: Vec<&str> = w.link_up.iter().enumerate().filter(|(_, u)| !**u).map(|(i, _)| w.topo.links[i].name.as_str()).collect();
    let mut s = json!({
        "lbsim_version": env!("CARGO_PKG_VERSION"),
        "model_revision": model_revision(&sc.lb.scheme),
        "scenario": sc.name,
        "seed": sc.seed,
        "scheme": scheme_summary(sc, w),
        "topology": {
            "kind": w.topo.kind,
            "hosts": w.topo.num_hosts(),
            "switches": w.topo.nodes.len() - w.topo.num_hosts(),
            "links": w.topo.links.len(),
            "links_down_at_end": failed,
            "random_failures": random_failures(sc, &w.topo).unwrap_or_default().iter().map(|(_, l)| w.topo.links[l.idx()].name.clone()).collect::<Vec<_>>(),
            "base_rtt_us": rtt.as_us_f64(),
        },
        "transport": {
            "cc": sc.transport.cc,
            "connections": sc.transport.connections,
            "host_nic": if w.host_nic_limit.is_some() { "backpressure" } else { "drop_tail" },
            "mss_bytes": sc.transport.mss_bytes,
            "min_rto_ms": sc.transport.min_rto_ms,
            "connections_opened": w.connections_opened(),
            "retransmits": retx,
            "timeouts": tos,
            "fast_recoveries": st.fast_recoveries,
            "spurious_retransmits": st.spurious_retransmits,
            "fast_recoveries_by_reordering": w.flows.iter().map(|f| f.counters.fr_reorder).sum::<u64>(),
            "fast_recoveries_by_loss": w.flows.iter().map(|f| f.counters.fr_loss).sum::<u64>(),
            "fast_recoveries_other": w.flows.iter().map(|f| f.counters.fr_other).sum::<u64>(),
            "out_of_order_segments": w.flows.iter().map(|f| f.counters.out_of_order).sum::<u64>(),
            "out_of_order_after_loss": w.flows.iter().map(|f| f.counters.ooo_loss).sum::<u64>(),
            "reordered_segments": w.flows.iter().map(|f| f.counters.reordered).sum::<u64>(),
            "undos": st.undos,
            "ecn_reductions": st.ecn_reductions,
            "reordering": sc.transport.reordering,
            "restart_after_idle": sc.transport.restart_after_idle,
            "rto_ssthresh": sc.transport.rto_ssthresh,
            "fr_ssthresh": sc.transport.fr_ssthresh,
            "recovery_exit": sc.transport.recovery_exit,
            "recover": sc.transport.recover,
            "prr_bound": sc.transport.prr_bound,
            "lost_retransmission": sc.transport.lost_retransmission,
            "rescue_retransmission": sc.transport.rescue_retransmission,
            "partial_ack_timer": sc.transport.partial_ack_timer,
            "partial_ack_retransmit": sc.transport.partial_ack_retransmit,
        },
        "workload": workload,
        "flows": {"total": w.flows.len(), "completed": completed, "unfinished": w.flows.len() - completed - not_started, "not_started": not_started},
        "fct_us": fct,
        "slowdown": slow,
        "buckets": buckets,
        "classes": metrics::class_summary(&w.flows, &sc.workload.classes.iter().map(|c| c.name.clone()).collect::<Vec<_>>(), &sc.metrics.percentiles),
        "network": network_summary(w),
        "conservation": {
            "sent": c.sent,
            "delivered": c.delivered,
            "dropped": c.dropped,
            "in_flight": live,
            "sent_bytes": c.sent_bytes,
            "header_bytes_added_in_network": c.lb_header_bytes,
            "delivered_bytes": c.delivered_bytes,
            "dropped_bytes": c.dropped_bytes,
            "in_flight_bytes": live_bytes,
            "ok": ok,
        },
        "sim_time_s": w.now().as_secs_f64(),
        "events": events,
        "events_by_kind": crate::world::Ev::KINDS.iter().zip(w.ev_kinds).filter(|(_, n)| *n > 0).map(|(k, n)| (k.to_string(), serde_json::Value::from(n))).collect::<serde_json::Map<_, _>>(),
        "setup_wall_s": setup_s,
        "wall_s": run_s,
        "events_per_s": if run_s > 0.0 { events as f64 / run_s } else { 0.0 },
    });
    optional_sections(&mut s, sc, w);
    s
}

/// summary.json's `scheme`: its name, parameters, counters and resolved
/// time constants, where an edge scheme's traffic went, and the tables the
/// scheme reports ([`LoadBalancer::report`]).
fn scheme_summary(sc: &Scenario, w: &World) -> Value {
    let named = |v: Vec<(&'static str, f64)>| v.into_iter().map(|(k, x)| (k.to_string(), json!(x))).collect::<serde_json::Map<_, _>>();
    let mut s = json!({
        "name": sc.lb.scheme,
        "params": serde_json::to_value(&sc.lb.params).unwrap_or(Value::Null),
        "stats": named(w.lb.stats()),
        "resolved": named(w.lb.resolved()),
    });
    if let (Some(fl), false) = (s["stats"]["flowlets"].as_f64(), w.flows.is_empty()) {
        // flowlets of both directions (ACK flows too, where a scheme splits them)
        s["flowlets_per_flow"] = json!(fl / w.flows.len() as f64);
    }
    s["rtt_us_stated"] = json!(sc.lb.rtt_us); // null: the idle fabric RTT (topology.base_rtt_us)
    if let Some(u) = w.lb.path_use() {
        let rows = u.rows();
        let (fl, by): (u64, u64) = rows.iter().fold((0, 0), |a, r| (a.0 + r.1, a.1 + r.2));
        let per: serde_json::Map<_, _> = rows
            .iter()
            .map(|&(n, f, b, wt)| {
                let mut v = json!({
                    "flowlets": f,
                    "data_bytes": b,
                    "flowlet_share": if fl > 0 { f as f64 / fl as f64 } else { 0.0 },
                    "byte_share": if by > 0 { b as f64 / by as f64 } else { 0.0 },
                });
                if let Some(wt) = wt {
                    v["mean_weight"] = json!(wt);
                }
                (w.topo.nodes[n.idx()].name.clone(), v)
            })
            .collect();
        s["paths_via"] = per.into();
    }
    write_report(&mut s, w.lb.report(&w.topo));
    s
}

/// Writes a scheme's report tables into `scheme`: each table an object
/// (empty if it has no rows), each row's value at its path of keys.
fn write_report(scheme: &mut Value, tables: Vec<ReportTable>) {
    for t in tables {
        let table = &mut scheme[t.name];
        if table.is_null() {
            *table = json!({});
        }
        for (keys, value) in t.rows {
            let at = keys.iter().fold(&mut *table, |v, k| &mut v[k.as_str()]);
            *at = match value {
                ReportValue::Count(n) => json!(n),
                ReportValue::Real(x) => json!(x),
                ReportValue::Name(name) => json!(name),
            };
        }
    }
}

/// summary.json's `network`: packets and bytes sent, drops by cause and by
/// where the port sits, ECN marks, and the drops the scenario asked for.
fn network_summary(w: &World) -> Value {
    let c = &w.c;
    // queue drops and marks by where the port sits
    let mut at = [[0u64; 2]; 3];
    for (i, q) in w.ports.iter().enumerate() {
        let k = w.topo.port_place(PortId(i as u32)) as usize; // HostNic, ToHost, Fabric: 0, 1, 2
        let st = q.stats();
        at[k][0] += st.drops;
        at[k][1] += st.ecn_marks;
    }
    let marks: u64 = at.iter().map(|a| a[1]).sum();
    let by_place = |j: usize| json!({"host_nic": at[0][j], "switch_to_host": at[1][j], "fabric": at[2][j]});
    let mut n = json!({
        "packets_sent": c.sent,
        "bytes_sent": c.sent_bytes,
        "drops": {"total": c.dropped - c.probe_expiries, "queue": c.drop_queue, "injected": c.drop_injected, "link_down": c.drop_link, "no_route": c.drop_noroute, "ttl": c.drop_ttl, "queue_at": by_place(0)},
        "probe_ttl_expiries": c.probe_expiries,
        "consumed_by_scheme": c.consumed_by_lb,
        "ecn_marks": marks,
        "ecn_marks_at": by_place(1),
    });
    if !w.injected.is_empty() {
        // the drops the scenario asked for, and whom they hit
        let v: Vec<Value> =
            w.injected.iter().map(|d| json!({"port": w.topo.ports[d.port.idx()].name, "at_us": d.at.as_us_f64(), "flow_id": d.flow, "seq": d.seq})).collect();
        n["injected_drops"] = v.into();
    }
    n
}

/// The sections only some runs have: flowlets observed, link and queue
/// samplers, UDP senders, incast.
fn optional_sections(s: &mut Value, sc: &Scenario, w: &World) {
    if let Some(obs) = &w.samplers.flowlet_obs {
        s["flowlets_observed"] = obs.summary();
    }
    if !w.samplers.link_samples.is_empty() {
        s["link_samplers"] = link_sampler_summary(w, sc.metrics.utilization_window_ms);
    }
    if !w.samplers.queue_samples.is_empty() {
        let mut per: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
        for q in &w.samplers.queue_samples {
            per.entry(q.port.0).or_default().push(q.pkts as f64);
        }
        s["queue_samplers"] =
            per.into_iter().map(|(p, mut v)| (w.topo.ports[p as usize].name.clone(), metrics::describe(&mut v))).collect::<serde_json::Map<_, _>>().into();
    }
    if !w.udp.is_empty() {
        s["udp"] = w.udp.iter().map(|u| json!({"sent_pkts": u.sent_pkts, "recv_pkts": u.recv_pkts, "recv_bytes": u.recv_bytes})).collect();
    }
    if let Some(i) = &w.incast {
        let durs: Vec<f64> = i.completed.iter().map(|(a, b)| (*b - *a).as_secs_f64()).collect();
        let total: f64 = durs.iter().sum();
        let bytes = i.request_bytes as f64 * durs.len() as f64;
        s["incast"] = json!({
            "requests_completed": i.completed.len(),
            "requests": i.requests,
            "fan_in": i.fan_in,
            "goodput_gbps": if total > 0.0 { bytes * 8.0 / total / 1e9 } else { 0.0 },
            "mean_request_ms": if durs.is_empty() { Value::Null } else { json!(total / durs.len() as f64 * 1e3) },
        });
    }
}

/// The jobs and steps tables from the jobs' runs.
fn job_records(w: &World) -> (Vec<metrics::JobRecord>, Vec<metrics::StepRecord>) {
    let (mut jobs, mut steps) = (vec![], vec![]);
    let uplinks = w.topo.leaf_uplinks().0;
    for (j, job) in w.jobs.iter().enumerate() {
        let n = job.spec.hosts.len() as u32;
        let nsteps = job.steps.len();
        for (i, it) in job.iters.iter().enumerate() {
            jobs.push(metrics::JobRecord {
                job: j as u32,
                name: job.spec.name.clone(),
                op: job.spec.op.name(),
                ranks: n,
                size: job.spec.size,
                channels: job.spec.channels,
                iteration: i as u32,
                start: it.start,
                end: it.end,
                ideal: job.ideal_iteration(),
                bus_factor: job.spec.op.bus_factor(n),
            });
            for s in 0..nsteps {
                let r = &job.step_runs[i * nsteps + s];
                let slow = (r.slowest != u32::MAX).then(|| &w.flows[r.slowest as usize]);
                let uplink = slow.and_then(|f| {
                    let rack = w.topo.host_rack[f.src as usize] as usize;
                    uplinks.get(rack).and_then(|u| u.get(r.slowest_uplink as usize)).map(|p| w.topo.ports[p.idx()].name.clone())
                });
                steps.push(metrics::StepRecord {
                    job: j as u32,
                    iteration: i as u32,
                    step: s as u32,
                    start: (r.start != SimTime::MAX).then_some(r.start),
                    end: r.end,
                    ideal: job.ideal_steps[s],
                    flows: job.steps[s].len() as u32 * job.spec.channels,
                    flows_done: r.done,
                    bytes: job.steps[s].iter().map(|x| x.bytes).sum(),
                    slowest: slow.map(|_| r.slowest),
                    slowest_fct: r.slowest_fct,
                    slowest_src: slow.map_or(u32::MAX, |f| f.src),
                    slowest_dst: slow.map_or(u32::MAX, |f| f.dst),
                    slowest_uplink: uplink,
                    slowest_uplinks_used: slow.map_or(0, |f| f.uplinks_used),
                });
            }
        }
    }
    (jobs, steps)
}

/// summary.json's `jobs`: per job, its iteration times (mean and
/// nearest-rank percentiles over the completed iterations), bus bandwidth
/// and the ideal.
fn job_summary(w: &World, recs: &[metrics::JobRecord]) -> Value {
    w.jobs
        .iter()
        .enumerate()
        .map(|(j, job)| {
            let mine: Vec<&metrics::JobRecord> = recs.iter().filter(|r| r.job == j as u32).collect();
            let mut times: Vec<f64> = mine.iter().filter_map(|r| r.time()).map(|t| t.as_us_f64()).collect();
            let mut busbw: Vec<f64> = mine.iter().filter_map(|r| r.time().map(|t| r.algbw_gbps(t) * r.bus_factor)).collect();
            let n = job.spec.hosts.len() as u32;
            let ideal = job.ideal_iteration();
            let ideal_busbw = job.spec.size as f64 * 8.0 / ideal.as_secs_f64() / 1e9 * job.spec.op.bus_factor(n);
            let busbw_mean = if busbw.is_empty() { None } else { Some(busbw.iter().sum::<f64>() / busbw.len() as f64) };
            json!({
                "name": job.spec.name,
                "op": job.spec.op.name(),
                "ranks": n,
                "size_bytes": job.spec.size,
                "channels": job.spec.channels,
                "iterations": job.spec.iterations,
                "iterations_completed": times.len(),
                "iteration_us": metrics::describe(&mut times),
                "busbw_gbps": metrics::describe(&mut busbw),
                "ideal_iteration_us": ideal.as_us_f64(),
                "ideal_busbw_gbps": ideal_busbw,
                "busbw_over_ideal": busbw_mean.map(|b| b / ideal_busbw),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scheme's report lands under `scheme` as it says: a table with no
    /// rows is an empty object, keys nest, counts stay integers, a measure
    /// that is not finite is null, and fields already there are kept.
    #[test]
    fn report_tables_are_written_as_nested_objects() {
        let mut hops = ReportTable::new("best_hop_by_tor");
        hops.push(["L0".into(), "L1".into(), "hop".into()], ReportValue::Name("L0->S0#0".into()));
        hops.push(["L0".into(), "L1".into(), "path_utilisation".into()], ReportValue::Real(0.25));
        let mut reports = ReportTable::new("remote_metric_by_uplink");
        reports.push(["L0->S0#0".into(), "reports".into()], ReportValue::Count(3));
        reports.push(["L0->S0#0".into(), "mean_metric".into()], ReportValue::Real(f64::NAN));
        let mut s = json!({"name": "x"});
        write_report(&mut s, vec![hops, reports, ReportTable::new("empty")]);
        let want = json!({
            "name": "x",
            "best_hop_by_tor": {"L0": {"L1": {"hop": "L0->S0#0", "path_utilisation": 0.25}}},
            "remote_metric_by_uplink": {"L0->S0#0": {"reports": 3, "mean_metric": null}},
            "empty": {},
        });
        assert_eq!(s, want);
        assert_eq!(s["remote_metric_by_uplink"]["L0->S0#0"]["reports"].to_string(), "3");
    }
}
