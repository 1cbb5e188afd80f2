//! Scenario-level checks of Expeditus and Clairvoyant (issue 15; the
//! mechanism of docs/schemes/expeditus.md §1): the two stages pin whole flows end
//! to end, the destination's ingress load steers the choice, no reordering
//! and no delay in per-flow mode, failures, determinism and conservation.

mod common;

use common::{flow_file, run_err, run_ok, sets};
use lbsim_sim::RunOutput;

/// A 4-pod 10G fat-tree with the transport of docs/schemes/expeditus.md §4.1
/// (Fig. 13's fabric).
const FT4: &str = r#"
[topology]
kind = "fat_tree"
k = 4
host_rate_gbps = 10
fabric_rate_gbps = 10
link_delay_us = 2
[network]
buffer_pkts = 100
[transport]
cc = "newreno"
sack = false
mss_bytes = 1400
delayed_ack = 1
min_rto_ms = 0.2
init_ssthresh_bytes = 65535
[workload]
kind = "flow_list"
"#;

fn tx(o: &RunOutput, name: &str) -> u64 {
    o.ports.iter().find(|p| p.name == name).unwrap_or_else(|| panic!("{name}")).tx_bytes
}

#[test]
fn a_flow_crosses_exactly_one_agg_and_one_core_each_way() {
    // host 0 (T0_0, pod 0) -> host 8 (T2_0, pod 2), 3 MB
    let f = flow_file("x1", &[(0, 8, 3_000_000, 0.0)]);
    for scheme in ["expeditus", "clairvoyant"] {
        let o = run_ok(FT4, &sets(&[&f, &format!("lb.scheme={scheme}")]));
        let ups = ["T0_0->A0_0#0", "T0_0->A0_1#0"].map(|n| tx(&o, n));
        let cores = ["A0_0->C0#0", "A0_0->C1#0", "A0_1->C2#0", "A0_1->C3#0"].map(|n| tx(&o, n));
        // the data (3 MB + headers) on one uplink and one core link; at most the SYN elsewhere
        assert_eq!(ups.iter().filter(|&&b| b > 3_000_000).count(), 1, "{scheme}: {ups:?}");
        assert!(ups.iter().all(|&b| !(200..=3_000_000).contains(&b)), "{scheme}: {ups:?}");
        assert_eq!(cores.iter().filter(|&&b| b > 3_000_000).count(), 1, "{scheme}: {cores:?}");
        assert!(cores.iter().all(|&b| !(200..=3_000_000).contains(&b)), "{scheme}: {cores:?}");
        // the ACKs too: one of the destination ToR's uplinks carries them
        let back = ["T2_0->A2_0#0", "T2_0->A2_1#0"].map(|n| tx(&o, n));
        assert!(back.iter().filter(|&&b| b > 50_000).count() == 1 && back.iter().any(|&b| b < 300), "{scheme}: {back:?}");
        assert_eq!(o.flows[0].counters.out_of_order, 0);
    }
    let o = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus"]));
    let st = &o.summary["scheme"]["stats"];
    // one selection per direction; both responses came back and were consumed
    assert_eq!((st["selections"].as_f64(), st["responses_sent"].as_f64(), st["responses_received"].as_f64()), (Some(2.0), Some(2.0), Some(2.0)), "{st}");
    assert_eq!(st["stage2_decisions"], 2.0);
    assert_eq!(o.summary["network"]["consumed_by_scheme"], 2, "the two responses");
    // the tag's bytes: 3 + 1 on the two requests (2 entries), 3 + 1 on the responses after
    // the agg appended 2 entries, minus the requests' tags stripped at the destination ToR
    assert_eq!(o.summary["conservation"]["header_bytes_added_in_network"], 2, "{}", o.summary["conservation"]);
}

#[test]
fn the_artifacts_synack_response_pins_flows_without_extra_packets() {
    // response = "synack": no separate response packets; the SYN-ACK carries
    // the answer, so every flow is still pinned end to end (inter-pod), and
    // inside a pod the source ToR decides from the SYN-ACK's loads
    let f = flow_file("x5", &[(0, 8, 3_000_000, 0.0), (1, 3, 3_000_000, 0.0)]);
    let o = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", "lb.params.response=\"synack\""]));
    let st = &o.summary["scheme"]["stats"];
    // A's SYN tagged at T0_0, the SYN-ACK answers it; the intra-pod flow's SYN-ACK carries T0_1's loads
    assert_eq!((st["responses_sent"].as_f64(), st["responses_received"].as_f64(), st["stage2_decisions"].as_f64()), (Some(2.0), Some(2.0), Some(1.0)), "{st}");
    assert_eq!(o.summary["network"]["consumed_by_scheme"], 0, "no packets of its own");
    let ups = ["T0_0->A0_0#0", "T0_0->A0_1#0"].map(|n| tx(&o, n));
    assert!(ups.iter().filter(|&&b| b > 3_000_000).count() == 1 && ups.iter().any(|&b| b < 200), "{ups:?}");
    let cores = ["A0_0->C0#0", "A0_0->C1#0", "A0_1->C2#0", "A0_1->C3#0"].map(|n| tx(&o, n));
    assert!(cores.iter().filter(|&&b| b > 3_000_000).count() == 1 && cores.iter().filter(|&&b| b < 200).count() == 3, "{cores:?}");
    // host 1 -> host 3: T0_0 -> T0_1 inside pod 0, one uplink carries it
    assert!(o.flows.iter().all(|f| f.finish.is_some()));
}

#[test]
fn the_destination_ingress_load_steers_stage_one() {
    // 8 Gb/s of UDP from host 10 (T2_1) to host 9 (T2_0) pinned via A2_0 loads
    // the link A2_0 -> T2_0: T2_0's ingress meter of plane 0 reads 6 of 7.
    // Flows 0 -> 8 then all take plane 1, although the source ToR's uplinks are idle.
    let rows: Vec<(u32, u32, u64, f64)> = (0..8).map(|i| (i % 4, 8, 200_000, 1000.0 + 500.0 * i as f64)).collect();
    let f = flow_file("x2", &rows);
    let udp = "udp=[{src=10, dst=9, rate_gbps=8, stop_ms=6, via=\"A2_0\"}]";
    let o = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", udp]));
    let plane0 = tx(&o, "T0_0->A0_0#0") + tx(&o, "T0_1->A0_0#0");
    let plane1 = tx(&o, "T0_0->A0_1#0") + tx(&o, "T0_1->A0_1#0");
    assert!(plane1 > 1_600_000 && plane0 < 1_000, "plane 0 {plane0} B, plane 1 {plane1} B");
    // ECMP hashes the 8 flows over both planes
    let e = run_ok(FT4, &sets(&[&f, "lb.scheme=ecmp", udp]));
    let e0 = tx(&e, "T0_0->A0_0#0") + tx(&e, "T0_1->A0_0#0");
    assert!(e0 > 150_000, "ECMP sent {e0} B on plane 0");
}

#[test]
fn no_added_delay_and_data_moves_at_most_once_per_flow() {
    // idle network: every flow's FCT equals ECMP's within 1 us (the response
    // is back before the SYN-ACK, so the first data packet is not held)
    let rows: Vec<(u32, u32, u64, f64)> = (0..8).map(|i| (i, (i + 4) % 16, 100_000, 2000.0 * i as f64)).collect();
    let f = flow_file("x3", &rows);
    let a = run_ok(FT4, &sets(&[&f, "lb.scheme=ecmp"]));
    for scheme in ["expeditus", "clairvoyant"] {
        let b = run_ok(FT4, &sets(&[&f, &format!("lb.scheme={scheme}")]));
        for (x, y) in a.flows.iter().zip(&b.flows) {
            let (fx, fy) = (x.finish.unwrap().as_us_f64(), y.finish.unwrap().as_us_f64());
            // the tag's 4 bytes on the SYN cost a few ns
            assert!((fx - fy).abs() < 1.0, "{scheme}: ECMP {fx} vs {fy} us");
        }
    }
    // a loaded run: no flow's data changes its source-ToR uplink (the
    // path record), so per-flow pinning cannot reorder data; with the
    // 500 us timeout (flowlet mode, §3.4) paths do change
    let load = [
        "workload.kind=\"poisson\"",
        "workload.cdf=\"websearch\"",
        "workload.pattern=\"random_inter_pod\"",
        "workload.load=0.4",
        "workload.load_of=\"bottleneck_tier\"",
        "workload.flows=300",
        "metrics.path_record=true",
        "lb.scheme=expeditus",
    ];
    let changes = |o: &RunOutput| o.flows.iter().map(|f| f.counters.path_changes).sum::<u64>();
    let x = run_ok(FT4, &sets(&load));
    // A flow's data moves at most once: from ECMP (while its selection is
    // pending) to the pinned uplink, when the Exp-response queued behind
    // more than the SYN-ACK and the first data did (the paper assumes it never does)
    let moved = x.flows.iter().filter(|f| f.counters.path_changes > 0).count();
    eprintln!("per-flow mode: {moved} of {} flows moved once, {} changes", x.flows.len(), changes(&x));
    assert!(x.flows.iter().all(|f| f.counters.path_changes <= 1), "per-flow pinning moves data at most once");
    assert!(moved * 10 < x.flows.len(), "{moved} flows moved");
    assert!(x.summary["transport"]["timeouts"].as_u64().unwrap() > 0, "the run is loaded enough to idle flows for an RTO");
    let fl = run_ok(FT4, &sets(&[&load[..], &["lb.params.pst_timeout_us=100"]].concat()));
    eprintln!("flowlet mode: {} changes", changes(&fl));
    assert!(changes(&fl) > 3 * changes(&x).max(1), "flowlet mode moves flows");
}

#[test]
fn a_lost_response_degrades_to_ecmp_and_the_flow_completes() {
    // both uplinks of the destination ToR T2_0 are down from 9 to 11 us,
    // while A's Exp-response (sent at ~8.3 us) is on one of them: it is
    // lost. A stays pending and its data goes by ECMP, untagged; the SYN-ACK
    // (after 11 us) gets its own selection, answered.
    let f = flow_file("x4", &[(0, 8, 500_000, 0.0)]);
    let drops = "failures=[{link=\"T2_0-A2_0\", at_ms=0.009, restore_ms=0.011}, {link=\"T2_0-A2_1\", at_ms=0.009, restore_ms=0.011}]";
    let o = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", drops]));
    let st = &o.summary["scheme"]["stats"];
    assert_eq!(o.summary["flows"]["completed"], 1);
    assert_eq!(st["selections_unanswered"].as_f64(), Some(1.0), "{st}");
    assert_eq!(o.summary["network"]["drops"]["link_down"], 1, "the response");
    assert!(st["pending_ecmp_packets"].as_f64().unwrap() > 300.0, "A's data went by ECMP: {st}");
    // without the drops every selection is answered and nothing is pending
    let ok = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus"]));
    let st = &ok.summary["scheme"]["stats"];
    assert_eq!((st["selections_unanswered"].as_f64(), st["pending_ecmp_packets"].as_f64()), (Some(0.0), Some(0.0)), "{st}");
}

#[test]
fn failure_multipliers_move_inter_pod_flows_off_a_degraded_aggregation_switch() {
    // A0_0 lost one of its two core links; UDP loads T0_0 -> A0_0 at 4 Gb/s
    // (metric 3) and T0_0 -> A0_1 at 5.5 Gb/s (metric 4), both to T0_1 in the
    // same pod. Inter-pod flows from T0_0: without multipliers stage 1 picks
    // A0_0 (3 < 4); with them the uplink to A0_0 reads 3 x 2 -> 6 and they take A0_1.
    // (100 KB flows 1 ms apart: each one's own load has decayed from the
    // 200 us meters before the next one is placed)
    let rows: Vec<(u32, u32, u64, f64)> = (0..6).map(|i| (1, 8 + (i % 2), 100_000, 1000.0 * (i + 1) as f64)).collect();
    let f = flow_file("x6", &rows);
    let bg = "udp=[{src=0, dst=2, rate_gbps=4, stop_ms=7, via=\"A0_0\"}, {src=0, dst=3, rate_gbps=5.5, stop_ms=7, via=\"A0_1\"}]";
    let fail = "failures=[{link=\"A0_0-C0\"}]";
    let tcp_bytes = |o: &RunOutput, port: &str, udp_gbps: f64| tx(o, port) as f64 - udp_gbps * 1e9 / 8.0 * 7e-3;
    let with = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", bg, fail]));
    let without = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", "lb.params.multipliers=false", bg, fail]));
    let (w0, w1) = (tcp_bytes(&with, "T0_0->A0_0#0", 4.0), tcp_bytes(&with, "T0_0->A0_1#0", 5.5));
    let (n0, n1) = (tcp_bytes(&without, "T0_0->A0_0#0", 4.0), tcp_bytes(&without, "T0_0->A0_1#0", 5.5));
    eprintln!("with multipliers: A0_0 {w0:.0} B, A0_1 {w1:.0} B; without: {n0:.0}, {n1:.0}");
    assert!(w1 > 0.55e6 && w0 < 0.1e6, "with multipliers the flows avoid A0_0: {w0} / {w1}");
    assert!(n0 > 0.55e6 && n1 < 0.1e6, "without them they take it: {n0} / {n1}");
}

#[test]
fn stage_two_and_clairvoyant_steer_off_a_slow_core_link_that_ecmp_hashes_onto() {
    // A0_0 -> C0 runs at 1 Gb/s: the source aggregation switch's egress meter
    // on it saturates once a flow uses it. Flows from pod 0 to pod 2, 300 us apart.
    let rows: Vec<(u32, u32, u64, f64)> = (0..16).map(|i| (i % 4, 8 + (i % 4), 300_000, 300.0 * i as f64)).collect();
    let f = flow_file("x7", &rows);
    let slow = "link_overrides=[{link=\"A0_0-C0\", rate_gbps=1}]";
    let c0 = |o: &RunOutput| tx(o, "A0_0->C0#0");
    let mean = |o: &RunOutput| o.flows.iter().map(|f| f.finish.unwrap().as_us_f64() - f.start.as_us_f64()).sum::<f64>() / o.flows.len() as f64;
    let e = run_ok(FT4, &sets(&[&f, "lb.scheme=ecmp", slow]));
    let x = run_ok(FT4, &sets(&[&f, "lb.scheme=expeditus", slow]));
    let c = run_ok(FT4, &sets(&[&f, "lb.scheme=clairvoyant", slow]));
    eprintln!(
        "bytes on A0_0->C0: ECMP {}, Expeditus {}, Clairvoyant {}; mean FCT {:.0} / {:.0} / {:.0} us",
        c0(&e),
        c0(&x),
        c0(&c),
        mean(&e),
        mean(&x),
        mean(&c)
    );
    assert!(c0(&e) > 600_000, "ECMP hashes flows onto the slow link");
    assert!(c0(&x) * 2 < c0(&e) && c0(&c) * 2 < c0(&e));
    assert!(mean(&x) < 0.8 * mean(&e) && mean(&c) < 0.8 * mean(&e));
}

#[test]
fn random_failures_respect_the_per_switch_bound_and_pods_restrict_traffic() {
    let sc = r#"
[topology]
kind = "clos3"
pods = 4
tors_per_pod = 4
aggs_per_pod = 4
cores = 16
hosts_per_tor = 1
host_rate_gbps = 10
tor_agg_rate_gbps = 10
agg_core_rate_gbps = 10
link_delay_us = 2
[workload]
kind = "per_sender"
size_bytes = 300000
pattern = "random_inter_pod"
pods = [0, 1]
start_gap_us = 20
"#;
    let base = ["lb.scheme=expeditus", "random_failures=[{tier=\"agg_core\", pod=0, count=6}]"];
    let o = run_ok(sc, &sets(&base));
    let drawn: Vec<String> = o.summary["topology"]["random_failures"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect();
    assert_eq!(drawn.len(), 6);
    for a in 0..4 {
        let n = drawn.iter().filter(|l| l.starts_with(&format!("A0_{a}-"))).count();
        assert!(n <= 2, "A0_{a} lost {n} links: {drawn:?}");
    }
    // only pods 0 and 1 send
    assert!(o.flows.iter().all(|f| f.src < 8 && f.dst < 8 && f.src / 4 != f.dst / 4));
    assert_eq!(o.flows.len(), 8);
    // another seed draws other links; the same seed the same
    let again = run_ok(sc, &sets(&base));
    assert_eq!(again.summary["topology"]["random_failures"], o.summary["topology"]["random_failures"]);
    let e = run_err(sc, &sets(&["random_failures=[{tier=\"agg_core\", pod=0, count=9}]"]));
    assert!(e.contains("random_failures[0].count") && e.contains("at most 2 per switch"), "{e}");
    let e = run_err(sc, &sets(&["random_failures=[{tier=\"agg_core\", pod=7, count=1}]"]));
    assert!(e.contains("random_failures[0].pod"), "{e}");
    let e = run_err(sc, &sets(&["workload.pods=[0, 9]"]));
    assert!(e.contains("workload.pods") && e.contains("pod 9 does not exist"), "{e}");
}

#[test]
fn expeditus_and_clairvoyant_are_deterministic_and_refuse_explicit_fabrics() {
    let load = [
        "workload.kind=\"poisson\"",
        "workload.cdf=\"websearch\"",
        "workload.pattern=\"random_inter_pod\"",
        "workload.load=0.5",
        "workload.load_of=\"bottleneck_tier\"",
        "workload.flows=200",
        "failures=[{link=\"A0_0-C1\", at_ms=2}]",
    ];
    for scheme in ["expeditus", "clairvoyant", "expeditus lb.params.pst_timeout_us=500"] {
        let mut v: Vec<String> = load.iter().map(|x| x.to_string()).collect();
        let parts: Vec<&str> = scheme.split(' ').collect();
        v.push(format!("lb.scheme={}", parts[0]));
        v.extend(parts[1..].iter().map(|x| x.to_string()));
        let (a, b) = (run_ok(FT4, &v), run_ok(FT4, &v));
        let key = |o: &RunOutput| o.flows.iter().map(|f| (f.finish, f.counters.retransmits, f.counters.out_of_order)).collect::<Vec<_>>();
        assert_eq!(key(&a), key(&b), "{scheme} not deterministic");
        assert_eq!(a.summary["flows"]["unfinished"], 0, "{scheme}");
    }
    let explicit = r#"
[topology]
kind = "explicit"
nodes = [{name="a", host=true}, {name="b", host=true}, {name="s", host=false}]
links = [{a="a", b="s", rate_gbps=10}, {a="b", b="s", rate_gbps=10}]
[workload]
kind = "none"
[lb]
scheme = "expeditus"
"#;
    let e = run_err(explicit, &[]);
    assert!(e.contains("topology.kind") && e.contains("expeditus"), "{e}");
}

#[test]
fn a_small_direct_mapped_pst_evicts_pinned_flows_and_a_64k_one_matches_the_exact_table() {
    // eight concurrent inter-pod 2 MB flows: with one slot per switch each
    // new entry evicts another flow's, whose next packet finds nothing and
    // starts a new selection (and its data changes path); 64K slots hold
    // them all, so the run is the exact table's, flow for flow
    let rows: Vec<(u32, u32, u64, f64)> = (0..8).map(|i| (i, (i + 8) % 16, 2_000_000, 5.0 * i as f64)).collect();
    let f = flow_file("pst", &rows);
    let base = ["lb.scheme=expeditus", "metrics.path_record=true"];
    let run = |extra: &[&str]| run_ok(FT4, &sets(&[&[f.as_str()][..], &base[..], extra].concat()));
    let exact = run(&[]);
    let big = run(&["lb.params.pst_entries=65536"]);
    let one = run(&["lb.params.pst_entries=1"]);
    let st = |o: &RunOutput, k: &str| o.summary["scheme"]["stats"][k].as_f64().unwrap();
    assert_eq!(big.summary["flows_digest"], exact.summary["flows_digest"]);
    assert_eq!((st(&exact, "pst_evictions"), st(&big, "pst_evictions")), (0.0, 0.0));
    let changes = |o: &RunOutput| o.flows.iter().map(|f| f.counters.path_changes).sum::<u64>();
    eprintln!(
        "one slot: {} evictions, {} selections (exact {}), {} path changes (exact {})",
        st(&one, "pst_evictions"),
        st(&one, "selections"),
        st(&exact, "selections"),
        changes(&one),
        changes(&exact)
    );
    assert!(st(&one, "pst_evictions") > 100.0);
    assert!(st(&one, "selections") > 10.0 * st(&exact, "selections"));
    assert!(changes(&one) > changes(&exact) + 8);
    assert_eq!(one.flows.iter().filter(|f| f.finish.is_some()).count(), 8);
}
