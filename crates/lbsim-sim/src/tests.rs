//! Scenario-level tests: analytic checks of the transport over the network
//! model, routing around failures, conservation, determinism and scenario
//! validation. Every run goes through `run_ok`, which asserts packet and
//! byte conservation.

use super::*;

fn scenario(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::from_toml(text, &sets).unwrap_or_else(|e| panic!("{e}"))
}

pub(crate) fn run_ok(text: &str, sets: &[&str]) -> RunOutput {
    let out = run(&scenario(text, sets), None, &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let c = &out.summary["conservation"];
    assert_eq!(c["ok"], true, "conservation violated: {c}");
    out
}

/// n senders under leaf 0 (10G), receivers under leaf 1, one 10G spine
/// link: the spine downlink to leaf 1 (or the receiver's access link) is
/// the single bottleneck.
/// (8 senders into one 10G uplink make L0->S0#0 the bottleneck.)
fn dumbbell(n: u32) -> String {
    format!(
        r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 1
links_per_pair = 1
hosts_per_leaf = {n}
host_rate_gbps = 10
fabric_rate_gbps = 10
link_delay_us = 2
[network]
buffer_pkts = 250
[workload]
kind = "flow_list"
"#
    )
}

pub(crate) fn flow_file(name: &str, rows: &[(u32, u32, u64, f64)]) -> String {
    let dir = std::env::temp_dir().join(format!("lbsim-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flows.csv");
    let mut s = String::from("src,dst,size_bytes,start_us\n");
    for r in rows {
        s.push_str(&format!("{},{},{},{}\n", r.0, r.1, r.2, r.3));
    }
    std::fs::write(&path, s).unwrap();
    path.display().to_string()
}

fn goodput_gbps(f: &FlowRecord) -> f64 {
    f.size as f64 * 8.0 / f.fct().unwrap().as_secs_f64() / 1e9
}

#[test]
fn model_revision_carries_a_schemes_own_revision() {
    assert_eq!(model_revision("ecmp"), MODEL_REVISION);
    let r = model_revision("clove_int");
    assert!(r.starts_with(MODEL_REVISION) && r.len() > MODEL_REVISION.len(), "{r}");
}

#[test]
fn single_flow_reaches_line_rate() {
    let file = flow_file("single", &[(0, 1, 100_000_000, 0.0)]);
    let out = run_ok(&dumbbell(1), &[&format!("workload.flow_list=\"{file}\"")]);
    let f = &out.flows[0];
    assert!(f.finish.is_some());
    let payload_line_rate = 10.0 * 1448.0 / 1500.0;
    let g = goodput_gbps(f);
    assert!(g >= 0.95 * payload_line_rate, "goodput {g:.3} Gb/s of {payload_line_rate:.3}");
    assert_eq!(f.counters.retransmits, 0);
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    s * s / (x.len() as f64 * s2)
}

#[test]
fn eight_newreno_flows_share_a_bottleneck_fairly() {
    // 8 senders under leaf 0 to 8 receivers under leaf 1 through one 10G
    // spine link; equal sizes, same start: fair sharing = equal goodput.
    let rows: Vec<_> = (0..8).map(|i| (i, 8 + i, 40_000_000u64, 0.0)).collect();
    let file = flow_file("fair", &rows);
    let out = run_ok(&dumbbell(8), &[&format!("workload.flow_list=\"{file}\"")]);
    let g: Vec<f64> = out.flows.iter().map(goodput_gbps).collect();
    let j = jain(&g);
    assert!(j >= 0.99, "Jain {j:.4}, goodputs {g:?}");
    // and the bottleneck is kept busy: 320 MB take little more than 320 MB / 9.65 Gb/s
    let last = out.flows.iter().map(|f| f.finish.unwrap()).max().unwrap();
    let util = 320e6 * 8.0 / last.as_secs_f64() / (10e9 * 1448.0 / 1500.0);
    assert!(util > 0.95, "utilisation {util:.3}");
}

#[test]
fn eight_dctcp_flows_hold_the_queue_near_k_at_full_utilisation() {
    let rows: Vec<_> = (0..8).map(|i| (i, 8 + i, 40_000_000u64, 0.0)).collect();
    let file = flow_file("dctcp", &rows);
    let k = 20.0;
    let out = run_ok(
        &dumbbell(8),
        &[
            &format!("workload.flow_list=\"{file}\""),
            "transport.cc=dctcp",
            "network.ecn_k_pkts=20",
            "metrics.queue_samplers=[\"L0->S0#0\"]",
            "metrics.queue_sample_interval_us=10",
            "metrics.link_samplers=[\"L0->S0#0\"]",
            "metrics.utilization_window_ms=1",
        ],
    );
    // steady state: from 20 ms until the first flow finishes
    let first_done = out.flows.iter().map(|f| f.finish.unwrap()).min().unwrap();
    let t0 = SimTime::from_ms(20);
    let qs: Vec<f64> = out.queue_samples.iter().filter(|q| q.t >= t0 && q.t < first_done).map(|q| q.pkts as f64).collect();
    assert!(qs.len() > 100);
    let mean = qs.iter().sum::<f64>() / qs.len() as f64;
    assert!(mean >= 0.5 * k && mean <= 2.0 * k, "mean queue {mean:.1} pkts, K = {k}");
    let ls: Vec<f64> = out.link_samples.iter().filter(|s| s.t > t0 && s.t <= first_done).map(|s| s.bytes as f64 * 8.0 / 1e-3 / 10e9).collect();
    let util = ls.iter().sum::<f64>() / ls.len() as f64;
    assert!(util > 0.97, "utilisation {util:.3}");
    assert_eq!(out.summary["network"]["drops"]["total"], 0, "DCTCP at K = 20 with 250-packet buffers does not drop");
    assert!(out.summary["network"]["ecn_marks"].as_u64().unwrap() > 0);
}

#[test]
fn a_host_nic_never_marks_ecn_and_fabric_only_spares_the_tor_downlinks() {
    // H0 sends four DCTCP flows at once (its NIC queue builds far past K),
    // and H1, H2 send to H3 in the same rack (the ToR port to H3 builds).
    let rows = [
        (0, 8, 20_000_000u64, 0.0),
        (0, 9, 20_000_000, 0.0),
        (0, 10, 20_000_000, 0.0),
        (0, 11, 20_000_000, 0.0),
        (1, 3, 20_000_000, 0.0),
        (2, 3, 20_000_000, 0.0),
    ];
    let file = flow_file("nic_ecn", &rows);
    let marks = |out: &RunOutput, pat: &str| -> u64 { out.ports.iter().filter(|p| lbsim_net::topology::glob(pat, &p.name)).map(|p| p.ecn_marks).sum() };
    let base =
        [format!("workload.flow_list=\"{file}\""), "transport.cc=\"dctcp\"".into(), "network.ecn_k_pkts=5".into(), "network.host_nic=\"drop_tail\"".into()];
    let sets: Vec<&str> = base.iter().map(|s| s.as_str()).collect();
    let out = run_ok(&dumbbell(8), &sets);
    let nic = out.ports.iter().find(|p| p.name == "H0->L0#0").unwrap();
    assert!(nic.max_qlen_pkts > 5, "the sender's NIC queue exceeded K ({} pkts), so it would have marked", nic.max_qlen_pkts);
    assert_eq!(marks(&out, "H*->*"), 0, "a host NIC marked CE");
    assert!(marks(&out, "L0->H3#*") > 0, "the ToR port toward the shared receiver marks by default");
    let mut sets = sets.clone();
    sets.push("network.ecn_ports=\"fabric\"");
    let out = run_ok(&dumbbell(8), &sets);
    assert_eq!(marks(&out, "H*->*") + marks(&out, "L*->H*"), 0, "fabric-only marking touched a host-facing port");
    assert_eq!(out.summary["network"]["ecn_threshold"]["ports"], "fabric");
}

const TESTBED: &str = r#"
name = "testbed"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
links_per_pair = 2
hosts_per_leaf = 16
host_rate_gbps = 10
fabric_rate_gbps = 40
[workload]
kind = "poisson"
cdf = "websearch"
load = 0.5
flows = 400
src_racks = [0]
dst_racks = [1]
"#;

#[test]
fn failed_link_carries_nothing_and_traffic_uses_the_other_paths() {
    let out = run_ok(TESTBED, &["failures=[{link=\"L1-S1#0\"}]"]);
    let port = |n: &str| out.ports.iter().find(|p| p.name == n).unwrap();
    assert_eq!(port("S1->L1#0").tx_pkts, 0);
    assert_eq!(port("L1->S1#0").tx_pkts, 0);
    assert!(!port("S1->L1#0").up);
    // all four uplinks of L0 and the three surviving spine->L1 links carry data
    for n in ["L0->S0#0", "L0->S0#1", "L0->S1#0", "L0->S1#1", "S0->L1#0", "S0->L1#1", "S1->L1#1"] {
        assert!(port(n).tx_bytes > 10_000_000, "{n}: {}", port(n).tx_bytes);
    }
    // ECMP at L0 is oblivious: S1 gets about half, all of it on one downlink
    let s1 = port("S1->L1#1").tx_bytes as f64;
    let s0 = (port("S0->L1#0").tx_bytes + port("S0->L1#1").tx_bytes) as f64;
    assert!(s1 / (s0 + s1) > 0.3 && s1 / (s0 + s1) < 0.7, "S1 share {}", s1 / (s0 + s1));
    assert_eq!(out.summary["flows"]["unfinished"], 0);
}

#[test]
fn mid_run_failure_reroutes_and_loses_only_packets_on_the_link() {
    let out = run_ok(TESTBED, &["failures=[{link=\"L0-S0#*\", at_ms=2.0}]"]);
    let port = |n: &str| out.ports.iter().find(|p| p.name == n).unwrap();
    assert!(port("L0->S0#0").tx_pkts > 0, "used before the failure");
    assert_eq!(out.summary["flows"]["unfinished"], 0, "every flow completes over S1");
    assert_eq!(out.summary["topology"]["links_down_at_end"].as_array().unwrap().len(), 2);
}

#[test]
fn same_seed_same_results_and_scheme_does_not_change_traffic() {
    let a = run_ok(TESTBED, &["flows=0"].iter().filter(|_| false).copied().collect::<Vec<_>>());
    let b = run_ok(TESTBED, &[]);
    let key = |o: &RunOutput| o.flows.iter().map(|f| (f.src, f.dst, f.size, f.start, f.finish, f.counters.retransmits)).collect::<Vec<_>>();
    assert_eq!(key(&a), key(&b));
    let sc = scenario(TESTBED, &[]);
    let sp = scenario(TESTBED, &["lb.scheme=spray"]);
    assert_eq!(flow_list(&sc, None).unwrap(), flow_list(&sp, None).unwrap());
    let c = run_ok(TESTBED, &["lb.scheme=spray"]);
    let spec = |o: &RunOutput| o.flows.iter().map(|f| (f.src, f.dst, f.size, f.start)).collect::<Vec<_>>();
    assert_eq!(spec(&a), spec(&c));
    assert_ne!(key(&a), key(&c), "spraying changes the outcome");
    let d = run_ok(TESTBED, &["seed=2"]);
    assert_ne!(spec(&a), spec(&d));
}

#[test]
fn persistent_connections_skip_the_handshake_and_reuse_connections() {
    let out = run_ok(TESTBED, &["transport.connections=persistent"]);
    assert_eq!(out.summary["flows"]["unfinished"], 0);
    let opened = out.summary["transport"]["connections_opened"].as_u64().unwrap();
    let pairs: std::collections::BTreeSet<(u32, u32)> = out.flows.iter().map(|f| (f.src, f.dst)).collect();
    assert_eq!(opened, 3 * pairs.len() as u64, "3 connections per pair, opened on first use");
    assert!(pairs.len() < out.flows.len(), "some pair carried several flows");
    // no handshake: small flows finish sooner than with a connection each
    let per_flow = run_ok(TESTBED, &[]);
    let p50 = |o: &RunOutput| o.summary["buckets"][0]["fct_us"]["p50"].as_f64().unwrap();
    assert!(p50(&out) < p50(&per_flow), "persistent {} vs per-flow {}", p50(&out), p50(&per_flow));
}

#[test]
fn incast_completes_every_request() {
    let out = run_ok(
        TESTBED,
        &[
            "workload.kind=incast",
            "workload.incast.fan_in=8",
            "workload.incast.requests=5",
            "workload.incast.request_bytes=1000000",
            "workload.incast.client=0",
        ],
    );
    let i = &out.summary["incast"];
    assert_eq!(i["requests_completed"], 5);
    assert_eq!(out.flows.len(), 40);
    assert!(out.flows.iter().all(|f| f.dst == 0 && f.size == 125_000));
    let g8 = i["goodput_gbps"].as_f64().unwrap();
    // fan-in 1: one 1 MB transfer per request runs near line rate
    let one = run_ok(
        TESTBED,
        &[
            "workload.kind=incast",
            "workload.incast.fan_in=1",
            "workload.incast.requests=5",
            "workload.incast.request_bytes=1000000",
            "workload.incast.client=0",
        ],
    );
    let g1 = one.summary["incast"]["goodput_gbps"].as_f64().unwrap();
    assert!(g1 > 8.0 && g1 <= 10.0, "fan-in 1: {g1}");
    assert!(g8 <= g1, "fan-in 8 ({g8}) cannot beat fan-in 1 ({g1})");
}

#[test]
fn udp_background_is_delivered_at_its_rate() {
    let out = run_ok(TESTBED, &["workload.flows=50", "udp=[{src=1, dst=20, rate_gbps=2.0, stop_ms=5.0}]"]);
    let u = &out.summary["udp"][0];
    // 5 ms at 2 Gb/s in 1500-byte packets = 833 packets
    let sent = u["sent_pkts"].as_u64().unwrap();
    assert!((832..=834).contains(&sent), "{sent}");
    assert_eq!(u["recv_pkts"], sent);
}

/// The one-line error TESTBED with `sets` fails with (validation or the
/// run's setup); panics if it runs.
fn testbed_error(sets: &[&str]) -> ScenarioError {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match Scenario::from_toml(TESTBED, &sets).map_err(SimError::from).and_then(|sc| run(&sc, None, &mut |_| true)) {
        Err(SimError::Scenario(e)) => e,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted {sets:?}"),
    }
}

#[test]
fn malformed_scenarios_fail_with_the_field_named() {
    let e = testbed_error;
    assert_eq!(e(&["topology.fabric_rate_gbps=-40"]).field, "topology.fabric_rate_gbps");
    assert_eq!(e(&["workload.load=1.0"]).field, "workload.load");
    assert_eq!(e(&["lb.scheme=nope"]).field, "lb.scheme");
    assert_eq!(e(&["lb.scheme=spray", "lb.params.mode=sideways"]).field, "lb.params.mode");
    assert_eq!(e(&["lb.params.x=1"]).field, "lb.params.x");
    assert_eq!(e(&["failures=[{link=\"L9-S0\"}]"]).field, "failures[0].link");
    assert_eq!(e(&["workload.src_racks=[7]"]).field, "workload.src_racks");
    // a topology that leaves hosts unreachable
    let cut = e(&["failures=[{link=\"L1-S*\"}]"]);
    assert_eq!(cut.field, "topology");
    assert!(cut.msg.contains("cannot reach"), "{}", cut.msg);
    let unk = e(&["workload.lod=0.3"]);
    assert!(unk.to_string().contains("lod"), "{unk}");
    // inside [topology] the key survives, in words, not Rust type names
    let t = e(&["topology.leaves=\"2\""]);
    assert_eq!(t.field, "topology.leaves");
    assert!(t.msg.contains("non-negative integer") && !t.msg.contains("u32"), "{}", t.msg);
    assert_eq!(e(&["topology.leavs=2"]).field, "topology.leavs");
    assert_eq!(e(&["topology.kind=\"ring\""]).field, "topology.kind");
    // TOML syntax errors say where
    let syn = Scenario::from_toml("[topology]\nkind = \"leaf_spine\"\nleaves = \n", &[]).unwrap_err();
    assert!(syn.msg.contains("line 3, column"), "{}", syn.msg);
}

/// Issue 18's examples: values that pass a "> 0" check but round to zero
/// picoseconds or bits per second (divide-by-zero panics, events that
/// reschedule themselves at the same instant), times that overflow the
/// clock, and nonsense that used to run: each fails with its field named,
/// checked after conversion to the engine's units.
#[test]
fn values_are_checked_after_conversion_to_engine_units() {
    let e = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match Scenario::from_toml(TESTBED, &sets).map_err(SimError::from).and_then(|sc| run(&sc, None, &mut |_| true)) {
            Err(SimError::Scenario(e)) => e.to_string(),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted {sets:?}"),
        }
    };
    for (sets, field, words) in [
        (&["topology.host_rate_gbps=1e-10"][..], "topology.host_rate_gbps", "below the 1 Mb/s minimum"),
        (&["lb.scheme=letflow", "lb.params.flowlet_us=1e-7"][..], "lb.params.flowlet_us", "rounds to 0"),
        (&["lb.scheme=conga", "lb.params.flowlet_us=1e-7"][..], "lb.params.flowlet_us", "rounds to 0"),
        (&["metrics.utilization_window_ms=1e-10"][..], "metrics.utilization_window_ms", "rounds to 0"),
        (&["transport.min_rto_ms=1e-12"][..], "transport.min_rto_ms", "rounds to 0"),
        (&["metrics.queue_sample_interval_us=1e-7"][..], "metrics.queue_sample_interval_us", "rounds to 0"),
        (&["topology.link_delay_us=1e30"][..], "topology.link_delay_us", "1-day limit"),
        (&["run.stop_after_last_start_ms=1e300"][..], "run.stop_after_last_start_ms", "1e300 ms"),
        (&["workload.load=1e-300"][..], "workload.load", "1e-300"),
        (&["transport.header_bytes=4294967295"][..], "transport.header_bytes", "from 20 to 1000"),
        (&["lb.scheme=conga", "lb.params.flowlet_table_size=1e12"][..], "lb.params.flowlet_table_size", "whole number"),
        (&["lb.scheme=mptcp", "lb.params.subflows=2.5"][..], "lb.params.subflows", "whole number"),
        (&["lb.scheme=clove_ecn", "lb.params.flowlet_gap_us=1e-9"][..], "lb.params.flowlet_gap_us", "rounds to 0"),
        (&["workload.cdf_unit_bytes=nan"][..], "workload.cdf_unit_bytes", "bytes >= 1"),
        (&["workload.size_bytes=0"][..], "workload.size_bytes", "at least 1 byte"),
        (&["lb.scheme=drill", "lb.params.d=0"][..], "lb.params.d", "whole number"),
        (&["lb.scheme=drill", "lb.params.d=5"][..], "lb.params.d", "widest equal-cost group of this fabric has 4"),
        (&["lb.scheme=hula", "lb.params.probe_us=0"][..], "lb.params.probe_us", "must be a positive number"),
        (&["lb.scheme=hula", "lb.params.probe_us=1e-9"][..], "lb.params.probe_us", "rounds to 0"),
        (&["lb.scheme=hermes", "lb.params.ecn_threshold=1.5"][..], "lb.params.ecn_threshold", "from 0 to 1"),
        (&["lb.scheme=hermes", "lb.params.change_probability=-0.1"][..], "lb.params.change_probability", "must be >= 0"),
        (&["lb.scheme=letflow", "lb.params.flowlet_mode=\"precise\""][..], "lb.params.flowlet_mode", "age_bit, exact"),
        (&["udp=[{src=0,dst=0,rate_gbps=1}]"][..], "udp[0].dst", "itself"),
        (&["udp=[{src=0,dst=1,rate_gbps=1,start_ms=5,stop_ms=2}]"][..], "udp[0].stop_ms", "not after"),
        (&["udp=[{src=0,dst=1,rate_gbps=1,start_ms=nan}]"][..], "udp[0].start_ms", "non-negative"),
    ] {
        let msg = e(sets);
        assert!(msg.contains(field) && msg.contains(words), "{sets:?}: {msg}");
        assert!(!msg.contains('\n') && msg.len() < 200, "one short line: {msg}");
    }
}

/// ns-3 3.44 (B1's ns-3 scenario, see bench/ns3_b1.py: tc FIFO 250p + 1p
/// device queue) on B1's fabric and TCP, run on 2026-11-23 for these flow lists: per-flow FCT
/// in µs and total drops. lbsim (B1's example, host jitter off, the only
/// randomness ns-3 lacks) must agree where the outcome is not chaotic:
/// one flow's slow-start overshoot at its own NIC, and a second flow
/// joining it.
#[test]
fn b1_tiny_cases_agree_with_ns3() {
    let b1 = include_str!("../../../examples/b1.toml");
    // (name, flows as (src, dst, bytes, start us), ns-3 FCTs in us, ns-3 drops)
    type Case<'a> = (&'a str, &'a [(u32, u32, u64, f64)], &'a [f64], u64);
    let cases: [Case; 2] = [
        ("b1-one", &[(0, 16, 5_000_000, 0.0)], &[4164.671], 131),
        ("b1-two", &[(0, 16, 3_000_000, 0.0), (0, 17, 3_000_000, 300.0)], &[2589.847, 4697.222], 128),
    ];
    for (name, rows, ns3_fct_us, ns3_drops) in cases {
        let file = flow_file(name, rows);
        let out = run_ok(b1, &["workload.kind=\"flow_list\"", &format!("workload.flow_list=\"{file}\""), "network.host_jitter_ns=0"]);
        for (i, (f, ns3)) in out.flows.iter().zip(ns3_fct_us).enumerate() {
            let fct = f.fct().unwrap().as_secs_f64() * 1e6;
            assert!((fct / ns3 - 1.0).abs() < 0.01, "{name}: flow {i} FCT {fct:.1} µs, ns-3 {ns3} µs");
        }
        let drops = out.summary["network"]["drops"]["total"].as_u64().unwrap();
        assert!(drops.abs_diff(ns3_drops) <= 3, "{name}: {drops} drops, ns-3 {ns3_drops}");
        assert_eq!(out.summary["network"]["drops"]["queue_at"]["host_nic"].as_u64().unwrap(), drops, "{name}: all at the sender's NIC");
    }
}

#[test]
fn flowlet_observer_cuts_slow_start_rounds_at_a_gap_shorter_than_the_rtt() {
    // One 1 MB flow, 20 µs links (RTT > 80 µs): each slow-start round
    // leaves the NIC as one back-to-back burst (1.2 µs per packet), then the
    // sender waits for ACKs. A 5 µs gap cuts the rounds apart; a 1 s gap
    // sees the whole flow as one flowlet.
    let file = flow_file("flowlet-obs", &[(0, 1, 1_000_000, 0.0)]);
    let topo = dumbbell(1).replace("link_delay_us = 2", "link_delay_us = 20");
    let out = run_ok(&topo, &[&format!("workload.flow_list=\"{file}\""), "metrics.flowlet_gaps_us=[5.0, 1000000.0]"]);
    let obs = out.summary["flowlets_observed"].as_array().unwrap();
    let (short, long) = (&obs[0], &obs[1]);
    assert_eq!(long["flowlets"], 1);
    assert_eq!(long["bytes"], 1_000_000);
    assert_eq!(long["bytes_weighted_p50"], 1_000_000);
    assert_eq!(short["bytes"], 1_000_000);
    // rounds of 10, 15, 22, ... segments (+1 per ACK of 2) until the window
    // covers the bandwidth-delay product (~80 packets): at least 5 cuts
    let n = short["flowlets"].as_u64().unwrap();
    assert!(n >= 5, "{short}");
    assert!(short["bytes_weighted_p10"].as_u64().unwrap() < 100_000, "{short}");
}

#[test]
fn flows_that_never_started_stay_in_the_flow_table() {
    // 400 Poisson flows; the run stops at 2 ms, long before the last arrival
    let out = run_ok(TESTBED, &["run.stop_ms=2"]);
    let fl = &out.summary["flows"];
    assert_eq!(out.flows.len(), 400, "every generated flow is recorded");
    assert_eq!(fl["total"], 400);
    let not_started = out.flows.iter().filter(|f| !f.started).count();
    assert!(not_started > 100, "{fl}");
    assert_eq!(fl["not_started"], not_started as u64);
    let c = fl["completed"].as_u64().unwrap() + fl["unfinished"].as_u64().unwrap() + fl["not_started"].as_u64().unwrap();
    assert_eq!(c, 400, "{fl}");
    for f in out.flows.iter().filter(|f| !f.started) {
        assert!(f.finish.is_none() && f.start > SimTime::from_ms(2) && f.ideal > SimTime::ZERO);
    }
}

#[test]
fn the_ideal_fct_takes_the_best_route_on_an_asymmetric_fabric() {
    // S0's links at 4G, S1's at 40G: the first equal-cost next hop (S0)
    // is the slow spine, the ideal must not take it
    let text = TESTBED.replace("fabric_rate_gbps = 40", "fabric_rate_gbps = 40\n[[link_overrides]]\nlink = \"*S0*\"\nrate_gbps = 4");
    let out = run_ok(&text, &["workload.flows=100"]);
    for f in out.flows.iter().filter(|f| f.finish.is_some()) {
        assert!(f.fct().unwrap() >= f.ideal, "slowdown below 1: {f:?}");
    }
    let topo_fast = TESTBED.replace("fabric_rate_gbps = 40", "fabric_rate_gbps = 40\n[[link_overrides]]\nlink = \"*S0*\"\nrate_gbps = 400");
    let fast = run_ok(&topo_fast, &["workload.flows=100"]);
    // a 10G host bottleneck either way, so big flows' ideals agree across the two fabrics within the first-packet latency
    let big = |o: &RunOutput| o.flows.iter().filter(|f| f.size > 1_000_000).map(|f| f.ideal.as_us_f64()).sum::<f64>();
    assert!((big(&out) - big(&fast)).abs() / big(&fast) < 0.01, "{} vs {}", big(&out), big(&fast));
}

#[test]
fn traceroute_expiries_are_not_reported_as_drops() {
    let out = run_ok(TESTBED, &["lb.scheme=clove_ecn", "workload.flows=50"]);
    let n = &out.summary["network"];
    assert!(n["probe_ttl_expiries"].as_u64().unwrap() > 100, "{n}");
    assert_eq!(n["drops"]["ttl"], 0, "{n}");
}

/// VMS §V-E's workload: a two-class mixture of Pareto sizes (mean 20 KB and
/// 5 MB here, shape 1.5), each flow labelled with its class, FCTs per class;
/// and a Poisson workload given by its arrival rate instead of a load.
#[test]
fn a_pareto_mixture_labels_its_flows_and_reports_each_class() {
    let mix = [
        "workload.flows=3000",
        "workload.load=0.3",
        r#"workload.classes=[{name="small", fraction=0.95, pareto={shape=1.5, mean_bytes=20000}}, {name="large", fraction=0.05, pareto={shape=1.5, mean_bytes=5000000, max_bytes=50000000}}]"#,
    ];
    let out = run_ok(TESTBED, &mix);
    let classes = out.summary["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    assert_eq!(classes[0]["class"], "small");
    let n = |k: usize| classes[k]["flows"].as_u64().unwrap() as usize;
    assert_eq!(n(0) + n(1), out.flows.len());
    // 5 % large: binomial sd ~ 0.4 %
    let share = n(1) as f64 / out.flows.len() as f64;
    assert!((share - 0.05).abs() < 0.015, "{share}");
    // every flow's label agrees with the summary's counts, and the small
    // class's sizes average near its Pareto mean (heavy tail: loose bound)
    let small: Vec<u64> = out.flows.iter().filter(|f| f.class == 0).map(|f| f.size).collect();
    assert_eq!(small.len(), n(0));
    let mean = small.iter().sum::<u64>() as f64 / small.len() as f64;
    assert!((mean / 20_000.0 - 1.0).abs() < 0.25, "{mean}");
    assert!(small.iter().all(|&s| s >= 6_666), "the Pareto minimum is 20 KB / 3");
    assert!(out.flows.iter().filter(|f| f.class == 1).all(|f| f.size <= 50_000_000 && f.size >= 100_000));
    // the large class is slower per flow (it is 250x larger on average)
    let p50 = |k: usize| classes[k]["fct_us"]["p50"].as_f64().unwrap();
    assert!(p50(1) > 5.0 * p50(0), "{} vs {}", p50(1), p50(0));
    // the offered load printed is the one asked for, from the mixture's mean
    let wl = &out.summary["workload"];
    assert_eq!(wl["load"], 0.3);
    let mean_all = wl["mean_flow_bytes"].as_f64().unwrap();
    assert!((mean_all - (0.95 * 20_000.0 + 0.05 * 5e6)).abs() / mean_all < 0.01, "{mean_all}");
    // by arrival rate: 20,000 flows/s of 1 packet, the load follows
    let out = run_ok(TESTBED, &["workload.flows=2000", "workload.rate_per_s=20000", "workload.size_bytes=1000"]);
    let wl = &out.summary["workload"];
    assert_eq!(wl["arrival_rate_per_s"], 20000.0);
    let span = out.flows.iter().map(|f| f.start.as_secs_f64()).fold(0.0, f64::max);
    assert!((2000.0 / span / 20_000.0 - 1.0).abs() < 0.06, "{}", 2000.0 / span);
    let cap = wl["capacity_gbps"].as_f64().unwrap();
    assert!((wl["load"].as_f64().unwrap() - 20_000.0 * 1448.0 * 8.0 / (cap * 1e9)).abs() < 1e-9, "one MSS per flow at least");
}

#[test]
fn loss_response_variants_are_validated_and_reach_the_senders() {
    let e = testbed_error;
    assert_eq!(e(&["transport.rto_ssthresh=\"half\""]).field, "transport.rto_ssthresh");
    assert_eq!(e(&["transport.fr_ssthresh=\"half\""]).field, "transport.fr_ssthresh");
    assert_eq!(e(&["transport.recovery_exit=\"cwnd\"", "transport.sack=false"]).field, "transport.recovery_exit");
    assert_eq!(e(&["transport.recover=\"una\"", "transport.sack=false"]).field, "transport.recover");
    // NewReno's exit and `recover` rules have no meaning under SACK recovery
    assert!(e(&["transport.recovery_exit=\"flight_size\""]).msg.contains("transport.sack = false"));
    assert_eq!(e(&["transport.recover=\"snd_nxt\""]).field, "transport.recover");
    assert_eq!(e(&["transport.rto_tick_ms=-1"]).field, "transport.rto_tick_ms");
    assert_eq!(Scenario::from_toml(TESTBED, &["transport.rto_tick_ms=10".into()]).unwrap().tcp_config().rto_tick, SimTime::from_ms(10));
    let htsim = [
        "transport.sack=false",
        "transport.fr_ssthresh=\"cwnd\"",
        "transport.rto_ssthresh=\"cwnd\"",
        "transport.recovery_exit=\"flight_size\"",
        "transport.recover=\"snd_nxt\"",
    ];
    let sc = Scenario::from_toml(TESTBED, &htsim.iter().map(|x| x.to_string()).collect::<Vec<_>>()).unwrap();
    let c = sc.tcp_config();
    assert_eq!(
        (c.fr_ssthresh, c.rto_ssthresh, c.recovery_exit, c.recover),
        (lbsim_tcp::FrSsthresh::Cwnd, lbsim_tcp::RtoSsthresh::Cwnd, lbsim_tcp::RecoveryExit::FlightSize, lbsim_tcp::Recover::SndNxt)
    );
    let out = run_ok(TESTBED, &[&htsim[..], &["workload.flows=50"]].concat());
    let t = &out.summary["transport"];
    assert_eq!((t["fr_ssthresh"].as_str(), t["recover"].as_str()), (Some("cwnd"), Some("snd_nxt")));
    // ns-3 3.44's rules (examples/b1.toml) reach the run and its summary
    let ns3 = [
        "transport.lost_retransmission=\"timeout\"",
        "transport.rescue_retransmission=false",
        "transport.partial_ack_timer=\"impatient\"",
        "transport.partial_ack_retransmit=true",
        "workload.flows=50",
    ];
    let t = &run_ok(TESTBED, &ns3).summary["transport"];
    assert_eq!(
        (t["lost_retransmission"].as_str(), t["rescue_retransmission"].as_bool(), t["partial_ack_timer"].as_str(), t["partial_ack_retransmit"].as_bool()),
        (Some("timeout"), Some(false), Some("impatient"), Some(true))
    );
}

#[test]
fn bad_size_distributions_fail_with_the_field_named() {
    let e = testbed_error;
    // issue 14: a Pareto shape <= 1 with no cap has no mean
    let s = e(&["workload.pareto={shape=1.0, mean_bytes=20000}"]);
    assert_eq!(s.field, "workload.pareto.shape");
    assert!(s.msg.contains("max_bytes"), "{}", s.msg);
    assert_eq!(e(&["workload.pareto={shape=0.8, min_bytes=1000}"]).field, "workload.pareto.shape");
    assert_eq!(e(&["workload.pareto={shape=1.5}"]).field, "workload.pareto");
    assert_eq!(e(&["workload.pareto={shape=1.5, mean_bytes=20000, min_bytes=5}"]).field, "workload.pareto");
    assert_eq!(e(&["workload.pareto={shape=1.5, mean_bytes=20000, max_bytes=10000}"]).field, "workload.pareto.max_bytes");
    assert_eq!(e(&["workload.pareto={shape=-1, mean_bytes=20000}"]).field, "workload.pareto.shape");
    assert_eq!(e(&["workload.pareto={shape=1.5, mean_bytes=20000}", "workload.size_bytes=5"]).field, "workload.pareto");
    let two = |a: &str, b: &str| format!("workload.classes=[{{name=\"a\", fraction=0.5, {a}}}, {{name=\"b\", fraction=0.5, {b}}}]");
    assert!(Scenario::from_toml(TESTBED, &[two("size_bytes=1000", "cdf=\"websearch\"")]).is_ok());
    assert_eq!(e(&[&two("size_bytes=1000", "size_bytes=0")]).field, "workload.classes[1].size_bytes");
    assert_eq!(e(&[&two("size_bytes=1000", "pareto={shape=1, mean_bytes=9}")]).field, "workload.classes[1].pareto.shape");
    assert_eq!(e(&[&two("size_bytes=1000", "cdf_unit_bytes=1000")]).field, "workload.classes[1]");
    assert_eq!(e(&[&two("size_bytes=1000", "size_bytes=1, cdf=\"websearch\"")]).field, "workload.classes[1]");
    assert_eq!(e(&[&two("size_bytes=1000", "cdf=\"nope\"")]).field, "workload.classes[1].cdf");
    assert_eq!(e(&[r#"workload.classes=[{name="a", fraction=0.5, size_bytes=1}, {name="a", fraction=0.5, size_bytes=1}]"#]).field, "workload.classes[1].name");
    let sum = e(&[r#"workload.classes=[{name="a", fraction=0.5, size_bytes=1}, {name="b", fraction=0.4, size_bytes=1}]"#]);
    assert_eq!(sum.field, "workload.classes");
    assert!(sum.msg.contains("0.9"), "{}", sum.msg);
    assert_eq!(e(&[r#"workload.classes=[{name="a", fraction=1.5, size_bytes=1}]"#]).field, "workload.classes[0].fraction");
    assert_eq!(e(&["workload.rate_per_s=0"]).field, "workload.rate_per_s");
    assert_eq!(e(&["metrics.percentiles=[99.99, 100]"]).field, "metrics.percentiles");
    assert_eq!(e(&["metrics.percentiles=[0]"]).field, "metrics.percentiles");
    // an arrival rate that overloads the capacity, or spans the clock
    assert_eq!(e(&["workload.rate_per_s=1e6", "workload.size_bytes=100000"]).field, "workload.rate_per_s");
    assert!(
        Scenario::from_toml(TESTBED, &["workload.rate_per_s=1e6".into(), "workload.size_bytes=100000".into(), "workload.allow_overload=true".into()]).is_ok()
    );
    assert_eq!(e(&["workload.rate_per_s=1e-6"]).field, "workload.rate_per_s");
    // size keys that a kind would silently ignore
    assert_eq!(e(&["workload.kind=\"incast\"", "workload.pareto={shape=1.5, mean_bytes=20000}"]).field, "workload.pareto");
    assert_eq!(e(&["workload.kind=\"none\"", "run.stop_ms=1", "workload.rate_per_s=10"]).field, "workload.rate_per_s");
    assert_eq!(e(&[&two("size_bytes=1000", "size_bytes=5, cdf_unit_bytes=1000")]).field, "workload.classes[1].cdf_unit_bytes");
    // a shape so large that min^shape overflows still has its exact mean
    let big = run_ok(TESTBED, &["workload.flows=50", "workload.pareto={shape=60, mean_bytes=1000000}"]);
    assert!((big.summary["workload"]["mean_flow_bytes"].as_f64().unwrap() / 1e6 - 1.0).abs() < 1e-9);
    assert_eq!(e(&["workload.cdf=\"\""]).field, "workload.cdf");
    assert_eq!(e(&["workload.rate_per_s=nan"]).field, "workload.rate_per_s");
}

/// AG Fig. 3b's cwnd trace: one flow alone on the dumbbell starts at the
/// initial window and grows in slow start; a sampler that ignored the
/// sender (or sampled idle connections) would fail here.
#[test]
fn the_cwnd_sampler_traces_slow_start_of_a_lone_flow() {
    let fl = flow_file("cwnd", &[(0, 1, 3_000_000, 0.0)]);
    let out = run_ok(&dumbbell(1), &[&format!("workload.flow_list={fl:?}"), "metrics.cwnd_sample_interval_us=5", "transport.init_cwnd_pkts=10"]);
    let s = &out.cwnd_samples;
    assert!(s.len() > 20, "{}", s.len());
    assert!(s.iter().all(|x| x.1 == 0 && x.2 == 0), "one flow, one connection");
    let mss = 1448u64;
    assert_eq!(s[0].3, 10 * mss, "the first sample is the initial window");
    // slow start: never shrinks before the first loss, and grows well past IW
    let first_drop = s.windows(2).position(|w| w[1].3 < w[0].3).unwrap_or(s.len() - 1);
    assert!(s[first_drop].3 >= 40 * mss, "{}", s[first_drop].3);
    // the last sample is before the flow completed, and none after
    let fin = out.flows[0].finish.unwrap();
    assert!(s.iter().all(|x| x.0 <= fin));
}

/// Two 2 MB flows on one persistent VMS connection, the second 1.5 s after
/// the first, with flow state expiring after `idle_ms`: (channel 0's share
/// of the bytes, states expired, the first flow's finish in us).
fn vms_two_flows_idle(name: &str, idle_ms: f64) -> (f64, f64, f64) {
    let fl = flow_file(name, &[(0, 16, 2_000_000, 0.0), (0, 16, 2_000_000, 1_500_000.0)]);
    let out = run_ok(
        TESTBED,
        &[
            "workload.kind=\"flow_list\"",
            &format!("workload.flow_list={fl:?}"),
            "workload.src_racks=[]",
            "workload.dst_racks=[]",
            "transport.connections=\"persistent\"",
            "transport.cc=\"dctcp\"",
            "network.ecn_k_pkts=65",
            "lb.scheme=\"vms\"",
            &format!("lb.params.state_idle_ms={idle_ms}"),
        ],
    );
    assert!(out.flows.iter().all(|f| f.finish.is_some()));
    let st = &out.summary["scheme"]["stats"];
    (st["channel0_share"].as_f64().unwrap(), st["states_expired"].as_f64().unwrap(), out.flows[0].finish.unwrap().as_us_f64())
}

/// VMS §III-I: a flow's state is dropped after `state_idle_ms` without a
/// packet, and state recreated by a non-SYN packet is single-channel. On a
/// persistent connection, a second flow 1.5 s after the first goes out on
/// channel 0 only; with a 5 s lifetime it is scattered like the first.
#[test]
fn vms_state_expires_when_idle_and_comes_back_single_channel() {
    let (share, expired, _) = vms_two_flows_idle("vms_idle", 1000.0);
    assert_eq!(expired, 2.0, "sVMS and rVMS state of the one connection");
    // first flow: 1/8 on channel 0; second: all of it
    assert!(share > 0.5 && share < 0.65, "{share}");
    let (share, expired, _) = vms_two_flows_idle("vms_idle", 5000.0);
    assert_eq!(expired, 0.0);
    assert!(share < 0.25, "{share}");
}

/// When only rVMS's state expires (its idle gap, from its last ACK sent to
/// the next data arriving, is an RTT longer than sVMS's), it signals SIN:
/// the second flow goes out single-channel, as when both ends expire,
/// instead of scattering against restarted feedback counters.
#[test]
fn vms_receiver_only_expiry_makes_both_ends_single_channel() {
    // sVMS last saw the first flow's final ACK at its finish time f; the
    // second flow starts at 1.5 s: an idle limit 0.5 us above 1.5 s - f
    // expires rVMS only
    let (_, _, f) = vms_two_flows_idle("vms_idle_r", 5000.0);
    let (share, expired, _) = vms_two_flows_idle("vms_idle_r", (1_500_000.0 - f + 0.5) / 1000.0);
    assert_eq!(expired, 1.0, "rVMS only");
    assert!(share > 0.5 && share < 0.65, "the second flow on channel 0 only: {share}");
}

/// Prefetching the next events' state is a hint: forced on or off, a run
/// with links failing mid-run (stale arrival events naming freed packets,
/// which the prefetch must not read: without its generation check this
/// panics with "use of freed") gives identical records. Once fabric links
/// fail, once (for 1 ms) every server's access link, so stale events meet
/// the generation check for a next hop that is a switch and for one that is
/// a host.
#[test]
fn prefetching_changes_nothing_across_a_mid_run_link_failure() {
    let text = include_str!("../../../examples/clove_testbed.toml");
    for failures in ["failures=[{link=\"L*-S1\", at_ms=10.0}]", "failures=[{link=\"H*-L1\", at_ms=10.0, restore_ms=11.0}]"] {
        let sets = ["workload.flows=150", "lb.scheme=\"letflow\"", failures];
        let run_with = |on: bool| {
            crate::world::FORCE_PREFETCH.with(|f| f.set(Some(on)));
            let out = run_ok(text, &sets);
            crate::world::FORCE_PREFETCH.with(|f| f.set(None));
            out
        };
        let (on, off) = (run_with(true), run_with(false));
        // packets lost to the failure: those on the link when it went down
        // (whose arrival events go stale) and any sent to it afterwards
        let lost = on.summary["network"]["drops"]["link_down"].as_u64().unwrap();
        assert!(lost > 0, "{failures}: the failure must catch packets on the link");
        assert_eq!(on.summary["events"], off.summary["events"], "{failures}");
        assert_eq!(format!("{:?}", on.flows), format!("{:?}", off.flows), "{failures}");
    }
}

/// A scheme that declares no host hooks has them skipped for every packet,
/// and one that declares no switch hook has the World pick by ECMP itself;
/// forced to run, the hooks must change nothing end to end. Every scheme
/// that skips either runs on the Clove fabric with a failed link, hooks
/// skipped and forced: same events and per-flow records (state a hook kept
/// for the scheme's switch decisions, or a packet it rewrote, would show
/// here).
#[test]
fn skipping_the_hooks_of_schemes_without_them_changes_nothing() {
    use crate::world::{DECLARED_HOOKS, FORCE_HOOKS};
    let text = include_str!("../../../examples/clove_testbed.toml");
    let (mut no_host, mut no_switch) = (vec![], vec![]);
    for info in lbsim_lb::SCHEMES {
        let scheme = format!("lb.scheme=\"{}\"", info.name);
        let sets = ["workload.flows=100", &scheme, "failures=[{link=\"L1-S1#0\"}]"];
        DECLARED_HOOKS.with(|d| d.set(None));
        let plain = run_ok(text, &sets);
        let (host, switch) = DECLARED_HOOKS.with(|d| d.get()).expect("the run built a world");
        if host && switch {
            continue;
        }
        FORCE_HOOKS.with(|f| f.set(true));
        let forced = run_ok(text, &sets);
        FORCE_HOOKS.with(|f| f.set(false));
        assert_eq!(plain.summary["events"], forced.summary["events"], "{}", info.name);
        assert_eq!(format!("{:?}", plain.flows), format!("{:?}", forced.flows), "{}", info.name);
        if !host {
            no_host.push(info.name);
        }
        if !switch {
            no_switch.push(info.name);
        }
    }
    for name in ["ecmp", "letflow", "drill", "ag", "hula", "conga", "conga_flow", "expeditus", "clairvoyant", "mptcp"] {
        assert!(no_host.contains(&name), "{name} no longer skips its host hooks: {no_host:?}");
    }
    for name in ["ecmp", "clove_ecn", "presto", "hermes", "vms", "mptcp"] {
        assert!(no_switch.contains(&name), "{name} no longer skips its switch hook: {no_switch:?}");
    }
}

/// A connection's list of dropped segments (which splits fast recoveries
/// into loss and reordering) is pruned of entries below snd.una as drops
/// are recorded. Those can never match again, so the incast run, whose
/// lists reach 32 and more, gives the same events and per-flow records
/// (with the loss count) with pruning turned off.
#[test]
fn pruning_the_dropped_segment_lists_changes_nothing() {
    use crate::world::LOST_PRUNES;
    let text = include_str!("../../../examples/incast.toml");
    LOST_PRUNES.with(|p| p.set(Some(0)));
    let pruned = run_ok(text, &[]);
    let prunes = LOST_PRUNES.with(|p| p.get()).unwrap();
    LOST_PRUNES.with(|p| p.set(None));
    let kept = run_ok(text, &[]);
    LOST_PRUNES.with(|p| p.set(Some(0)));
    assert!(prunes >= 10, "the lists must reach the pruning size: {prunes} prunes");
    let by_loss = pruned.summary["transport"]["fast_recoveries_by_loss"].as_u64().unwrap();
    assert!(by_loss > 100, "{by_loss}");
    assert_eq!(pruned.summary["events"], kept.summary["events"]);
    let split = |o: &RunOutput| o.flows.iter().map(|f| (f.counters.fr_loss, f.counters.fr_reorder, f.counters.fr_other)).collect::<Vec<_>>();
    assert_eq!(split(&pruned), split(&kept), "fast recoveries by loss / by reordering, per flow");
    assert!(format!("{:?}", pruned.flows) == format!("{:?}", kept.flows), "per-flow records differ");
}

/// Two one-segment flows start at the same picosecond from the two hosts of
/// leaf 0 (host jitter off), so their packets reach the leaf together and
/// tie for its uplink. The queue admits them as their events were
/// scheduled, so the flow listed first goes first.
#[test]
fn a_tie_in_time_goes_by_insertion_order() {
    // the host whose flow finishes first
    let first = |rows: &[(u32, u32, u64, f64)], name: &str| {
        let flows = flow_file(name, rows);
        let out = run_ok(&dumbbell(2), &[&format!("workload.flow_list=\"{flows}\""), "network.host_jitter_ns=0"]);
        let finish = |src: u32| out.flows.iter().find(|f| f.src == src).and_then(|f| f.finish).unwrap();
        let (f0, f1) = (finish(0), finish(1));
        assert_ne!(f0, f1, "{name}: the two flows tie all the way");
        if f0 < f1 {
            0
        } else {
            1
        }
    };
    let a = first(&[(1, 2, 1448, 0.0), (0, 3, 1448, 0.0)], "tie-a");
    let b = first(&[(0, 3, 1448, 0.0), (1, 2, 1448, 0.0)], "tie-b");
    assert_eq!((a, b), (1, 0), "insertion order: the flow listed first goes first");
}

/// The per-flow fast-recovery count: on the incast scenario (losses at the
/// client's port; persistent connections, so a flow's count is its
/// connection's growth while it ran) the flows' counts add up to the
/// senders' total in summary.json, and each flow's episodes are those
/// classed by loss, by reordering and by neither; the out-of-order arrivals
/// are those after a loss plus those reordered.
#[test]
fn per_flow_fast_recoveries_add_up_to_the_senders_total() {
    let out = run_ok(include_str!("../../../examples/incast.toml"), &[]);
    let total = out.summary["transport"]["fast_recoveries"].as_u64().unwrap();
    let per_flow: u64 = out.flows.iter().map(|f| f.counters.fast_recoveries).sum();
    assert!(total > 100, "the scenario must recover from losses: {total}");
    assert_eq!(per_flow, total);
    for f in &out.flows {
        assert_eq!(f.counters.fast_recoveries, f.counters.fr_loss + f.counters.fr_reorder + f.counters.fr_other, "{f:?}");
        assert_eq!(f.counters.out_of_order, f.counters.ooo_loss + f.counters.reordered, "{f:?}");
    }
}

/// The memory check's per-connection and per-flow estimates cover what a
/// connection and a flow hold: a `Conn` (TcpSender + TcpReceiver + the
/// simulator's bookkeeping), its slot in the connection table and its
/// pair's pool, plus room for allocator rounding and first buffers; a
/// flow's record and its arrival.
#[test]
fn connection_and_flow_state_fit_their_memory_estimates() {
    use std::mem::size_of;
    let conn = size_of::<crate::world::Conn>() + size_of::<Option<Box<crate::world::Conn>>>() + size_of::<u32>();
    assert!(size_of::<crate::world::Conn>() >= size_of::<lbsim_tcp::TcpSender>() + size_of::<lbsim_tcp::TcpReceiver>());
    assert!(conn as u64 + 256 <= scenario::BYTES_PER_CONN, "a connection is {conn} bytes");
    let flow = size_of::<crate::metrics::FlowRecord>() + size_of::<lbsim_workload::FlowSpec>();
    assert!(flow as u64 * 2 <= scenario::BYTES_PER_FLOW, "a flow is {flow} bytes");
}

/// Issue 41 item 5: 100,000 persistent connections per pair used to abort
/// with "memory allocation of 1048 bytes failed" mid-run; the pre-run check
/// counts them and refuses in one line naming the key and the memory.
#[test]
fn persistent_connections_beyond_memory_are_refused_with_the_key_named() {
    let persistent = "transport.connections=\"persistent\"";
    // validation alone refuses (nothing is built): 100,000 flows can use
    // every one of the 32 × 31 pairs
    for cpp in ["100000", "4000000000"] {
        let sets = [persistent.to_string(), format!("transport.connections_per_pair={cpp}"), "workload.flows=100000".into()];
        let e = Scenario::from_toml(TESTBED, &sets).unwrap_err();
        assert_eq!(e.field, "transport.connections_per_pair", "{e}");
        assert!(e.msg.contains(&format!("{cpp} persistent connections")) && e.msg.contains(" GB") && e.msg.contains("992 host pairs"), "{e}");
        assert!(!e.msg.contains('\n'), "one line: {e}");
    }
    // a flow list is checked with its exact pairs once read: 3 pairs here
    let file = flow_file("conns", &[(0, 1, 1000, 0.0), (1, 0, 1000, 1.0), (0, 1, 1000, 2.0), (1, 2, 1000, 3.0)]);
    let sc = scenario(&dumbbell(2), &[&format!("workload.flow_list=\"{file}\""), persistent, "transport.connections_per_pair=4000000000"]);
    match run(&sc, None, &mut |_| true) {
        Err(SimError::Scenario(e)) => {
            assert_eq!(e.field, "transport.connections_per_pair");
            assert!(e.msg.contains("up to 3 host pairs (12000000000 connections"), "{e}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted"),
    }
    // the default 3 per pair passes
    run_ok(&dumbbell(2), &[&format!("workload.flow_list=\"{file}\""), persistent]);
}

/// summary.json's keys, flattened: maps keyed by a port, switch, parameter
/// or the like become `<name>`, array elements `[]`.
fn summary_keys(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    // objects whose keys are data (ports, switches, parameters), by path
    const MAPS: &[(&str, &str)] = &[
        ("link_samplers.mean_utilisation", "<port>"),
        ("queue_samplers", "<port>"),
        ("scheme.params", "<param>"),
        ("scheme.stats", "<stat>"),
        ("scheme.resolved", "<param>"),
        ("scheme.paths_via", "<switch>"),
        ("scheme.remote_metric_by_uplink", "<port>"),
        ("scheme.best_hop_by_tor", "<tor>"),
        ("scheme.best_hop_by_tor.<tor>", "<tor>"),
        ("scheme.paths_from_host0", "<host>"),
        ("events_by_kind", "<kind>"),
    ];
    if v.as_array().is_some_and(|a| a.is_empty()) && ["classes", "buckets", "udp", "flowlets_observed", "network.injected_drops"].contains(&path) {
        return; // a list of objects with no element: its keys come from another run
    }
    if path == "workload" {
        // the workload's resolved parameters: their keys depend on its kind
        out.insert("workload.<key>".to_string());
        return;
    }
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let k = MAPS.iter().find(|(p, _)| *p == path).map_or(k.as_str(), |(_, name)| name);
                summary_keys(x, &if path.is_empty() { k.to_string() } else { format!("{path}.{k}") }, out);
            }
        }
        serde_json::Value::Array(a) if a.iter().any(|x| x.is_object()) => a.iter().for_each(|x| summary_keys(x, &format!("{path}[]"), out)),
        _ => {
            out.insert(path.to_string());
        }
    }
}

/// docs/metrics.md's "summary.json" section lists every key summary.json
/// has, and no key it no longer has: two runs with the optional sections on
/// (CONGA with a parameter, samplers, UDP background, injected drops,
/// flowlet gaps, size classes; then the incast workload under Clove-ECN;
/// then a collective job; then RDMA) give
/// the keys; those of scheme-specific
/// sections, MPTCP and lbsim-run are listed apart in the test.
#[test]
fn docs_metrics_md_lists_every_summary_key() {
    let small = include_str!("../../../examples/small.toml");
    let a = run_ok(
        small,
        &[
            "workload.flows=200",
            "lb.scheme=\"conga\"",
            "lb.params.flowlet_us=500",
            "metrics.queue_samplers=[\"L0->S0#0\"]",
            "metrics.flowlet_gaps_us=[100]",
            "udp=[{src=0, dst=20, rate_gbps=1, stop_ms=2}]",
            "drops=[{port=\"L0->S0#0\", at_ms=1, count=2}]",
            "workload.classes=[{name=\"a\", fraction=0.5, cdf=\"websearch\"}, {name=\"b\", fraction=0.5, cdf=\"datamining\"}]",
        ],
    );
    let b = run_ok(include_str!("../../../examples/incast.toml"), &["lb.scheme=\"clove_ecn\""]);
    let c = run_ok(include_str!("../../../examples/allreduce_leafspine.toml"), &["jobs=[{ranks=4, size_bytes=400000}]"]);
    let d = run_ok(include_str!("../../../examples/rdma_dcqcn.toml"), &["workload.flows=100"]);
    let mut have = std::collections::BTreeSet::new();
    summary_keys(&d.summary, "", &mut have);
    summary_keys(&a.summary, "", &mut have);
    summary_keys(&b.summary, "", &mut have);
    summary_keys(&c.summary, "", &mut have);
    // present only with some schemes, with MPTCP, or in lbsim-run's output
    const ELSEWHERE: &[&str] = &[
        "scheme.flowlets_per_flow",
        "scheme.paths_via.<switch>.flowlets",
        "scheme.paths_via.<switch>.data_bytes",
        "scheme.paths_via.<switch>.flowlet_share",
        "scheme.paths_via.<switch>.byte_share",
        "scheme.paths_via.<switch>.mean_weight",
        "scheme.remote_metric_by_uplink.<port>.reports",
        "scheme.remote_metric_by_uplink.<port>.mean_metric",
        "scheme.best_hop_by_tor.<tor>.<tor>.hop",
        "scheme.best_hop_by_tor.<tor>.<tor>.path_utilisation",
        "scheme.<section>.<row>.<column>",
        "scheme.path_discovery",
        "network.ecn_threshold.k_bytes",
        "transport.mptcp_subflows",
        "flows_digest",
    ];
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
    let text = std::fs::read_to_string(path).unwrap();
    let section = text
        .split("<!-- summary keys: begin -->")
        .nth(1)
        .and_then(|s| s.split("<!-- summary keys: end -->").next())
        .expect("docs/metrics.md has the summary keys markers");
    let documented: std::collections::BTreeSet<String> =
        section.lines().filter_map(|l| l.strip_prefix("| `")).filter_map(|l| l.split('`').next()).map(str::to_string).collect();
    let missing: Vec<_> = have.iter().filter(|k| !documented.contains(*k)).collect();
    assert!(missing.is_empty(), "summary.json keys not in docs/metrics.md's summary section: {missing:?}");
    let gone: Vec<_> = documented.iter().filter(|k| !have.contains(*k) && !ELSEWHERE.contains(&k.as_str())).collect();
    assert!(gone.is_empty(), "docs/metrics.md documents summary keys summary.json no longer has: {gone:?}");
}
