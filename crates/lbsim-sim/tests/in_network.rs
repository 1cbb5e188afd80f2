//! Scenario-level checks of the in-network schemes (issue: CONGA,
//! CONGA-Flow, LetFlow, spraying): the CONGA paper's Figure 2 case, the
//! hotspot under a link failure (Fig. 11c), uplink imbalance (Fig. 12),
//! determinism and conservation.

mod common;

use common::{run_ok, sets};
use lbsim_sim::RunOutput;

/// CONGA Figure 2: L0 has 100 Gb/s of TCP to L1 over two spines; (S1, L1)
/// has half the capacity of the other leaf-spine pairs (one of its two 40G
/// links down). ECMP splits flows evenly and gets ~90 Gb/s; CONGA ~100.
/// Here: 40 hosts per leaf at 2.5 Gb/s, one long flow per host (so each
/// flow's demand is fixed at 2.5 Gb/s, as in the paper's arithmetic),
/// starting 100 us apart.
const FIG2: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
links_per_pair = 2
hosts_per_leaf = 40
host_rate_gbps = 2.5
fabric_rate_gbps = 40
[[failures]]
link = "S1-L1#1"
[workload]
kind = "flow_list"
[metrics]
link_samplers = ["L1->H*"]
utilization_window_ms = 5
"#;

fn fig2_throughput(scheme: &str) -> f64 {
    let rows: Vec<(u32, u32, u64, f64)> = (0..40).map(|h| (h, 40 + h, 30_000_000, h as f64 * 100.0)).collect();
    let out = run_ok(FIG2, &sets(&[&common::flow_file("fig2", &rows), &format!("lb.scheme={scheme}")]));
    // aggregate delivery rate into L1's hosts over 10..60 ms (all flows active), wire bytes
    let w: Vec<u64> = out.link_samples.iter().filter(|s| s.t.as_ms_f64() > 10.0 && s.t.as_ms_f64() <= 60.0).map(|s| s.bytes).collect();
    assert_eq!(w.len(), 40 * 10, "40 host links x 10 windows");
    w.iter().sum::<u64>() as f64 * 8.0 / 0.050 / 1e9
}

#[test]
fn conga_figure_2_asymmetry() {
    let ecmp = fig2_throughput("ecmp");
    let conga = fig2_throughput("conga");
    eprintln!("Figure 2 case: ECMP {ecmp:.1} Gb/s, CONGA {conga:.1} Gb/s of 100 (paper: 90 and 100)");
    assert!(ecmp > 80.0 && ecmp < 95.0, "ECMP {ecmp:.1}");
    assert!(conga >= 95.0, "CONGA {conga:.1}");
}

const TESTBED: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
links_per_pair = 2
hosts_per_leaf = 32
host_rate_gbps = 10
fabric_rate_gbps = 40
[workload]
kind = "poisson"
cdf = "datamining"
pattern = "inter_rack"
load = 0.6
load_of = "leaf_uplinks"
flows = 4000
"#;

fn pct(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

#[test]
fn conga_controls_the_hotspot_after_a_link_failure() {
    let run_scheme = |scheme: &str| {
        run_ok(
            TESTBED,
            &sets(&[
                &format!("lb.scheme={scheme}"),
                "failures=[{link=\"L1-S1#0\"}]",
                "metrics.queue_samplers=[\"S1->L1#1\"]",
                "metrics.queue_sample_interval_us=100",
            ]),
        )
    };
    let e = run_scheme("ecmp");
    let c = run_scheme("conga");
    let last_start = e.flows.iter().map(|f| f.start).max().unwrap();
    let q = |o: &RunOutput| pct(o.queue_samples.iter().filter(|s| s.t <= last_start).map(|s| s.pkts as f64).collect(), 0.9);
    let fct = |o: &RunOutput| o.summary["fct_us"]["mean"].as_f64().unwrap();
    let (qe, qc) = (q(&e), q(&c));
    eprintln!("hotspot S1->L1 queue p90: ECMP {qe} pkts, CONGA {qc} pkts; mean FCT ECMP {:.0} us, CONGA {:.0} us", fct(&e), fct(&c));
    assert!(qc <= qe / 4.0, "CONGA p90 {qc} vs ECMP {qe}");
    assert!(fct(&c) < fct(&e));
    // what each leaf learnt per path (uplink tag): every live uplink of L0
    // hears about its paths, and CONGA has equalised them (metrics within
    // two quanta of each other, ~60 % utilisation); L1's dead uplink hears
    // nothing
    let r = &c.summary["scheme"]["remote_metric_by_uplink"];
    let m = |p: &str| r[p]["mean_metric"].as_f64().unwrap();
    let l0 = ["L0->S0#0", "L0->S0#1", "L0->S1#0", "L0->S1#1"];
    for p in l0 {
        assert!(r[p]["reports"].as_u64().unwrap() > 100_000 && m(p) > 1.0, "{p}: {r}");
    }
    let (lo, hi) = l0.iter().map(|p| m(p)).fold((f64::MAX, 0f64), |a, x| (a.0.min(x), a.1.max(x)));
    assert!(hi - lo < 2.0, "{r}");
    assert_eq!(r["L1->S1#0"]["reports"], 0, "{r}");
}

/// Web-search flows (a quarter of the data-mining mix's packets) show the
/// same balance in a fifth of the time.
#[test]
fn conga_balances_leaf_uplinks_better_than_ecmp() {
    let ws = TESTBED.replace("datamining", "websearch");
    let imbalance = |scheme: &str| {
        let o = run_ok(&ws, &sets(&[&format!("lb.scheme={scheme}"), "metrics.link_samplers=[\"L0->S*\"]", "metrics.utilization_window_ms=10"]));
        let last_start = o.flows.iter().map(|f| f.start).max().unwrap();
        let mut by_t: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
        for s in &o.link_samples {
            if s.t <= last_start {
                by_t.entry(s.t.0).or_default().push(s.bytes as f64);
            }
        }
        let v: Vec<f64> = by_t
            .values()
            .filter(|w| w.iter().sum::<f64>() > 0.0)
            .map(|w| {
                let (mx, mn) = (w.iter().cloned().fold(f64::MIN, f64::max), w.iter().cloned().fold(f64::MAX, f64::min));
                (mx - mn) / (w.iter().sum::<f64>() / w.len() as f64)
            })
            .collect();
        assert_eq!(by_t.values().next().unwrap().len(), 4, "four uplinks");
        pct(v, 0.5)
    };
    // the summary reports the same statistic (over the whole run)
    let o = run_ok(TESTBED, &sets(&["metrics.link_samplers=[\"L0->S*\"]", "workload.flows=300"]));
    let im = &o.summary["link_samplers"]["imbalance"];
    assert!(im["n"].as_u64().unwrap() > 10 && im["p50"].as_f64().unwrap() > 0.0, "{im}");
    assert_eq!(o.summary["link_samplers"]["mean_utilisation"].as_object().unwrap().len(), 4);
    let (e, c) = (imbalance("ecmp"), imbalance("conga"));
    eprintln!("median uplink imbalance (MAX-MIN)/AVG over 10 ms: ECMP {e:.3}, CONGA {c:.3}");
    assert!(c < e, "CONGA {c:.3} vs ECMP {e:.3}");
}

#[test]
fn every_in_network_scheme_is_deterministic_and_conserves_packets() {
    let small = TESTBED.replace("flows = 4000", "flows = 150").replace("datamining", "websearch");
    for scheme in ["spray", "spray lb.params.mode=round_robin", "letflow", "letflow lb.params.flowlet_mode=exact", "conga", "conga_flow", "drill", "hula", "ag"]
    {
        let mut v: Vec<String> = scheme.split(' ').map(|x| x.to_string()).collect();
        v[0] = format!("lb.scheme={}", v[0]);
        v.push("failures=[{link=\"L1-S1#0\"}]".to_string());
        let (a, b) = (run_ok(&small, &v), run_ok(&small, &v));
        let key = |o: &RunOutput| o.flows.iter().map(|f| (f.finish, f.counters.retransmits, f.counters.out_of_order)).collect::<Vec<_>>();
        assert_eq!(key(&a), key(&b), "{scheme} not deterministic");
        assert_eq!(a.summary["flows"]["unfinished"], 0, "{scheme}");
    }
}

/// One long flow over the testbed with one spine path 50 us longer.
const ONE_FLOW: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
links_per_pair = 2
hosts_per_leaf = 2
host_rate_gbps = 10
fabric_rate_gbps = 40
[[link_overrides]]
link = "S1-L1#0"
delay_us = 50
[workload]
kind = "flow_list"
"#;

#[test]
fn spraying_spreads_packets_and_reorders_under_delay_asymmetry() {
    let flows = common::flow_file("one", &[(0, 2, 20_000_000, 0.0)]);
    let go = |scheme: &str| run_ok(ONE_FLOW, &sets(&[&flows, &format!("lb.scheme={scheme}"), "metrics.path_record=true"]));
    let (e, s, l) = (go("ecmp"), go("spray"), go("letflow"));
    let up = |o: &RunOutput| -> Vec<u64> { o.ports.iter().filter(|p| p.name.starts_with("L0->S")).map(|p| p.tx_pkts).collect() };
    // ECMP and LetFlow (no flowlet gaps in a line-rate flow) keep one uplink; spraying uses all four evenly
    assert_eq!(up(&e).iter().filter(|&&n| n > 100).count(), 1, "{:?}", up(&e));
    assert_eq!(up(&l).iter().filter(|&&n| n > 100).count(), 1, "{:?}", up(&l));
    let su = up(&s);
    let total: u64 = su.iter().sum();
    for n in &su {
        let f = *n as f64 / total as f64;
        assert!((f - 0.25).abs() < 0.02, "{su:?}");
    }
    let ooo = |o: &RunOutput| o.flows[0].counters.out_of_order;
    eprintln!("out-of-order arrivals: ECMP {}, spray {}, LetFlow {}", ooo(&e), ooo(&s), ooo(&l));
    assert_eq!(ooo(&e), 0);
    assert_eq!(ooo(&l), 0);
    assert!(ooo(&s) > 1000, "a quarter of the packets take a 50 us longer path");
    // the path record says the same per flow
    let rec = |o: &RunOutput| (o.flows[0].uplinks_used, o.flows[0].counters.path_changes);
    eprintln!("path record (uplinks used, changes): ECMP {:?}, spray {:?}, LetFlow {:?}", rec(&e), rec(&s), rec(&l));
    assert_eq!(rec(&e), (1, 0));
    assert_eq!(rec(&l), (1, 0));
    assert_eq!(s.flows[0].uplinks_used, 4);
    assert!(s.flows[0].counters.path_changes > 10_000, "random spraying changes uplink on ~3/4 of 13,800 segments");
}

/// Two hosts per leaf, two spines; L0's uplink to S1 optionally at half rate.
const TWO_PATHS: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
links_per_pair = 1
hosts_per_leaf = 4
host_rate_gbps = 10
fabric_rate_gbps = 10
[workload]
kind = "flow_list"
"#;

fn uplink_bytes(o: &RunOutput) -> Vec<u64> {
    o.ports.iter().filter(|p| p.name.starts_with("L0->S")).map(|p| p.tx_bytes).collect()
}

#[test]
fn drill_splits_by_capacity_and_reorders_only_when_paths_differ() {
    // three 10G senders into 20 (or 15) Gb/s of uplinks: the uplink queues
    // are never empty, so DRILL's queue comparison decides every packet
    let flows = common::flow_file("drill", &[(0, 4, 30_000_000, 0.0), (1, 5, 30_000_000, 5.0), (2, 6, 30_000_000, 10.0)]);
    let go = |extra: &[&str]| {
        let mut v = sets(&[&flows, "lb.scheme=drill"]);
        v.extend(extra.iter().map(|s| s.to_string()));
        run_ok(TWO_PATHS, &v)
    };
    let sym = go(&[]);
    let asym = go(&["link_overrides=[{link=\"L0-S1#0\", rate_gbps=5}]"]);
    let share = |o: &RunOutput| {
        let b = uplink_bytes(o);
        b[0] as f64 / (b[0] + b[1]) as f64
    };
    // reordering that hurts: segments the receiver got twice (a spurious
    // retransmission after dup-ACKs from reordering). The raw out-of-order
    // count is no use here: every loss leaves a hole that makes later
    // arrivals "out of order" in every case.
    let spurious = |o: &RunOutput| o.flows.iter().map(|f| f.counters.duplicates).sum::<u64>();
    let longer = go(&["link_overrides=[{link=\"S1-L1#0\", delay_us=50}]"]);
    eprintln!(
        "DRILL fast-uplink byte share: symmetric {:.3}, S1 at half rate {:.3} (capacity share 0.667); spurious retransmissions: symmetric {}, half rate {}, S1 path 50 us longer {}",
        share(&sym),
        share(&asym),
        spurious(&sym),
        spurious(&asym),
        spurious(&longer)
    );
    assert!((share(&sym) - 0.5).abs() < 0.03, "{}", share(&sym));
    assert!((share(&asym) - 2.0 / 3.0).abs() < 0.05, "{}", share(&asym));
    // equal queues drain at equal rates: displacement stays under the
    // dup-ACK threshold; unequal service rates or delays break that
    for o in [&asym, &longer] {
        assert!(spurious(o) > 1000 && spurious(o) > 100 * spurious(&sym), "{} vs {}", spurious(o), spurious(&sym));
    }
}

#[test]
fn hula_separates_two_long_flows_and_replaces_a_dead_best_hop() {
    // flow A from 0 ms, flow B from 5 ms: B's first flowlet at L0 takes the
    // spine A does not load
    let flows = common::flow_file("hula", &[(0, 4, 40_000_000, 0.0), (1, 5, 40_000_000, 5_000.0)]);
    let o = run_ok(TWO_PATHS, &sets(&[&flows, "lb.scheme=hula"]));
    let b = uplink_bytes(&o);
    let share = b[0] as f64 / (b[0] + b[1]) as f64;
    let st = &o.summary["scheme"]["stats"];
    eprintln!("HULA uplink bytes {b:?}; stats {st}");
    assert!((share - 0.5).abs() < 0.1, "both uplinks carry one flow each: {b:?}");
    // probes cost what they should: 64 B each, and the network carried them
    assert_eq!(st["probe_bytes"].as_f64().unwrap(), 64.0 * st["probes_sent"].as_f64().unwrap());
    let t = o.summary["sim_time_s"].as_f64().unwrap();
    // per 200 us: 2 ToRs × 2 uplinks up, each spine forwards to the other ToR
    let rounds = (t / 200e-6).ceil();
    assert!((st["probes_sent"].as_f64().unwrap() - 8.0 * rounds).abs() <= 8.0, "{} probes in {rounds} rounds", st["probes_sent"]);

    // fail one spine's link to L1 at 10 ms (each run fails a different
    // one): L0's entry through it stops being refreshed and must give way
    // to the live spine within keep-alive + T_p, whichever it was
    for dead in [0, 1] {
        let o = run_ok(TWO_PATHS, &sets(&[&flows, "lb.scheme=hula", &format!("failures=[{{link=\"S{dead}-L1#0\", at_ms=10}}]")]));
        let best = &o.summary["scheme"]["best_hop_by_tor"]["L0"]["L1"];
        eprintln!("S{dead}-L1 failed: L0's best hop to L1 {best}");
        assert_eq!(best["hop"], format!("L0->S{}#0", 1 - dead), "{best}");
        assert_eq!(o.summary["flows"]["unfinished"], 0);
    }
}

#[test]
fn drill_hula_and_hermes_beat_ecmp_with_a_failed_link() {
    let ws = TESTBED.replace("datamining", "websearch").replace("flows = 4000", "flows = 2000");
    let fct = |scheme: &str| {
        let o = run_ok(&ws, &sets(&[&format!("lb.scheme={scheme}"), "failures=[{link=\"L1-S1#0\"}]"]));
        o.summary["fct_us"]["mean"].as_f64().unwrap()
    };
    let e = fct("ecmp");
    for s in ["drill", "hula", "hermes"] {
        let f = fct(s);
        eprintln!("web search 60 %, L1-S1#0 down: mean FCT {s} {f:.0} us, ECMP {e:.0} us");
        assert!(f < e, "{s} {f:.0} vs ECMP {e:.0}");
    }
}

/// AG's setting (§VI): 1G links, 30 us per link (RTT about 250 us), four
/// spines; the path via S3 is 50 us longer one way.
const AG_FABRIC: &str = r#"
[topology]
kind = "leaf_spine"
leaves = 2
spines = 4
links_per_pair = 1
hosts_per_leaf = 4
host_rate_gbps = 1
fabric_rate_gbps = 1
link_delay_us = 30
[[link_overrides]]
link = "S3-L1#0"
delay_us = 80
[lb]
scheme = "ag"
[workload]
kind = "flow_list"
"#;

#[test]
fn ag_measures_leaf_to_leaf_delays_and_sizes_trains_from_them() {
    // a long flow each way, so both leaves have packets to carry probes
    // and feedback
    let flows = common::flow_file("ag", &[(0, 4, 5_000_000, 0.0), (5, 1, 5_000_000, 0.0)]);
    let o = run_ok(AG_FABRIC, &sets(&[&flows]));
    let sc = &o.summary["scheme"];
    let owd = |s: &str, p: &str| sc["owd_us"][s][p].as_f64().unwrap_or_else(|| panic!("{sc}"));
    eprintln!("AG one-way delays {}; granularity {}; stats {}", sc["owd_us"], sc["granularity_pkts"], sc["stats"]);
    // true one-way delay leaf to leaf: 2 x 30 us on the wire plus two
    // 12 us serialisations of the 1500-byte data packet the probe rides
    // (probes ride data packets only, §III; an ACK-borne one would read
    // 61 us)
    for dir in ["L0->L1", "L1->L0"] {
        let from = &dir[..2];
        for k in 0..3 {
            let v = owd(dir, &format!("{from}->S{k}#0"));
            assert!((84.0..=90.0).contains(&v), "{dir} via S{k}: {v} us");
        }
        let slow = owd(dir, &format!("{from}->S3#0"));
        assert!((134.0..=140.0).contains(&slow), "{dir} via S3: {slow} us");
    }
    // at most one probe per (destination leaf, path) per T = 500 us; fewer
    // when a path carries no packet in a period (at 1G, 500 us is ~41
    // data packets: about three 15-packet trains, so one uplink of four
    // often sees none). Feedback waits for a train out of the probe's
    // port, and a newer probe's delay replaces one still waiting.
    let st = &sc["stats"];
    let both = o.flows.iter().map(|f| f.finish.unwrap()).min().unwrap();
    let last = o.flows.iter().map(|f| f.finish.unwrap()).max().unwrap();
    let probes = st["probes"].as_f64().unwrap();
    let (lo, hi) = (2.0 * 4.0 * both.as_secs_f64() / 500e-6, 2.0 * 4.0 * (last.as_secs_f64() / 500e-6 + 1.0));
    assert!(probes >= 0.5 * lo && probes <= hi, "{probes} probes, expected up to {lo:.0}..{hi:.0}");
    assert!(st["feedbacks_received"].as_f64().unwrap() >= 0.5 * probes, "{st}");
    // one congested path of four (S3 by 50 us): the model asks for long
    // trains (15 packets at these RTTs, docs/schemes/ag.md §1.4 table
    // for M = 4 gives 11-15 at RTT_b - RTT_g = 25-50 us)
    let g = sc["granularity_pkts"]["L0"]["L1"].as_f64().unwrap();
    assert!((11.0..=22.0).contains(&g), "gran* {g}");
    let mb = st["mean_congested_paths"].as_f64().unwrap();
    assert!((0.9..=1.05).contains(&mb), "M_b {mb}: S3 alone (none before the first delays come back)");
}

/// §VI-D's adaptive T end to end: during the first 10 ms every data
/// packet is a probe; then each leaf sets T from how often its paths
/// changed congestion state. Background pulses on L0's uplink to S1 (on and
/// off every 1 ms) make L0's path via S1 flip; L1's paths carry no
/// background and keep a constant delay (a 2-us margin ignores the
/// sub-microsecond interleaving of ACKs), so L1 keeps the configured 500 us.
#[test]
fn ag_adaptive_interval_follows_state_changes_of_its_paths() {
    let flows = common::flow_file("ag_adapt", &[(0, 4, 5_000_000, 0.0), (5, 1, 5_000_000, 0.0)]);
    let pulses: Vec<String> = (0..10).map(|i| format!("{{src=1, dst=5, rate_gbps=0.6, start_ms={}, stop_ms={}, via=\"S1\"}}", 2 * i, 2 * i + 1)).collect();
    let udp = format!("udp=[{}]", pulses.join(", "));
    let text = AG_FABRIC.replace("[[link_overrides]]\nlink = \"S3-L1#0\"\ndelay_us = 80\n", "");
    let run = |extra: &[&str]| {
        let mut a = vec![flows.as_str(), "lb.params.congested_margin_us=2"];
        a.extend_from_slice(extra);
        run_ok(&text, &sets(&a))
    };
    let t = |o: &RunOutput, leaf: &str| o.summary["scheme"]["sample_interval_us"][leaf].clone();
    let probes = |o: &RunOutput| o.summary["scheme"]["stats"]["probes"].as_f64().unwrap();
    let fixed = run(&[&udp]);
    let adaptive = run(&[&udp, "lb.params.adaptive_window_ms=10"]);
    let quiet = run(&["lb.params.adaptive_window_ms=10"]);
    eprintln!(
        "AG adaptive T: pulses {} / {}, quiet {} / {}; probes fixed {}, adaptive {}",
        t(&adaptive, "L0"),
        t(&adaptive, "L1"),
        t(&quiet, "L0"),
        t(&quiet, "L1"),
        probes(&fixed),
        probes(&adaptive)
    );
    assert_eq!(t(&fixed, "L0")["fixed"], 500.0);
    // L0 learned a T from S1's flips; the pulses last 1 ms, so no T above 1 ms
    let l0 = t(&adaptive, "L0")["learned"].as_f64().unwrap_or_else(|| panic!("{}", adaptive.summary["scheme"]));
    assert!((10.0..1000.0).contains(&l0) && l0 != 500.0, "L0 learned {l0} us");
    assert_eq!(t(&adaptive, "L1")["fixed"], 500.0, "L1's paths never changed state");
    assert_eq!(t(&quiet, "L0")["fixed"], 500.0, "no background: nothing to learn");
    // 10 ms of two 1 Gb/s flows is ~1,600 data packets, every one a probe;
    // a fixed T probes each of 2 x 4 paths at most once per 500 us
    assert!(probes(&adaptive) > probes(&fixed) + 1000.0, "{} vs {}", probes(&adaptive), probes(&fixed));
    assert_eq!(adaptive.summary["flows"]["unfinished"], 0);
}

#[test]
fn ag_trains_have_exactly_the_forced_size_and_spread_uniformly() {
    // 8 spines at 10G, one 60 MB flow, trains forced to 4 packets: about
    // 10^4 trains from L0
    let text = AG_FABRIC.replace("spines = 4", "spines = 8").replace("_gbps = 1\n", "_gbps = 10\n").replace("link_delay_us = 30", "link_delay_us = 1");
    let flows = common::flow_file("ag-trains", &[(0, 4, 60_000_000, 0.0)]);
    let args = sets(&[&flows, "lb.params.fixed_granularity_pkts=4", "link_overrides=[]"]);
    let (a, b) = (run_ok(&text, &args), run_ok(&text, &args));
    assert_eq!(a.flows[0].finish, b.flows[0].finish, "deterministic");
    let st = &a.summary["scheme"]["stats"];
    assert!(st["trains_ended_full"].as_f64().unwrap() > 10_000.0, "{st}");
    assert_eq!(st["trains_ended_short"], 0.0, "every train is exactly 4 packets: {st}");
    let per: Vec<f64> = a.summary["scheme"]["trains_by_uplink"]["L0"].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(per.len(), 8);
    let mean = per.iter().sum::<f64>() / 8.0;
    let chi2: f64 = per.iter().map(|x| (x - mean).powi(2) / mean).sum();
    eprintln!("AG trains per uplink {per:?}, chi2 {chi2:.1}");
    assert!(chi2 < 24.3, "chi2 {chi2:.1} (7 dof, p = 0.001)");
}

#[test]
fn out_of_order_arrivals_and_fast_recoveries_are_split_into_reordering_and_loss_by_the_truth() {
    let ws = TESTBED.replace("datamining", "websearch").replace("flows = 4000", "flows = 1000");
    let t = |o: &RunOutput, k: &str| o.summary["transport"][k].as_u64().unwrap();
    // ECMP keeps a flow on one path: every fast recovery follows a loss
    let e = run_ok(&ws, &sets(&["lb.scheme=ecmp", "failures=[{link=\"L1-S1#0\"}]"]));
    eprintln!(
        "ECMP: fast recoveries by loss {}, by reordering {}, other {}; out-of-order after loss {}, reordered {}",
        t(&e, "fast_recoveries_by_loss"),
        t(&e, "fast_recoveries_by_reordering"),
        t(&e, "fast_recoveries_other"),
        t(&e, "out_of_order_after_loss"),
        t(&e, "reordered_segments")
    );
    assert!(t(&e, "fast_recoveries_by_loss") > 100);
    assert!(t(&e, "out_of_order_after_loss") > 1000);
    assert_eq!(t(&e, "fast_recoveries_by_reordering"), 0);
    assert_eq!(t(&e, "reordered_segments"), 0, "one path per flow, FIFO queues: nothing overtakes");
    assert_eq!(t(&e, "out_of_order_segments"), t(&e, "out_of_order_after_loss"));
    // per-packet spraying over paths 50 us apart reorders without loss
    let flows = common::flow_file("split", &[(0, 2, 20_000_000, 0.0)]);
    let s = run_ok(ONE_FLOW, &sets(&[&flows, "lb.scheme=spray", "transport.reordering=\"fixed\""]));
    let f = &s.flows[0];
    eprintln!(
        "spray, one flow: fast recoveries by reordering {}, by loss {}; drops {}",
        f.counters.fr_reorder, f.counters.fr_loss, s.summary["network"]["drops"]["total"]
    );
    assert_eq!(s.summary["network"]["drops"]["total"], 0);
    assert!(f.counters.fr_reorder > 10 && f.counters.fr_loss == 0 && f.counters.fr_other == 0);
    assert!(f.counters.reordered > 1000 && f.counters.ooo_loss == 0, "{:?}", f.counters);
    assert_eq!(f.counters.fr_reorder, t(&s, "fast_recoveries_by_reordering"));
}

#[test]
fn a_udp_source_pinned_via_a_spine_bypasses_the_load_balancer() {
    // background on a chosen path (AG Fig. 9): spraying would spread it
    let flows = common::flow_file("via", &[(1, 5, 1_000_000, 0.0)]);
    let udp = "udp=[{src=0, dst=4, rate_gbps=2, stop_ms=5, via=\"S1\"}]";
    let o = run_ok(TWO_PATHS, &sets(&[&flows, "lb.scheme=spray", udp]));
    let tx = |n: &str| o.ports.iter().find(|p| p.name == n).unwrap().tx_bytes;
    // 5 ms at 2 Gb/s = 1.25 MB of UDP, all via S1; the TCP flow is sprayed over both
    let udp_bytes = 2e9 / 8.0 * 5e-3;
    eprintln!("L0->S0 {} B, L0->S1 {} B", tx("L0->S0#0"), tx("L0->S1#0"));
    assert!(tx("L0->S1#0") as f64 > udp_bytes + 0.3e6);
    assert!((tx("L0->S0#0") as f64) < 0.8e6, "only TCP via S0");
    let e = common::run_err(TWO_PATHS, &sets(&[&flows, "udp=[{src=0, dst=4, rate_gbps=2, via=\"S9\"}]"]));
    assert!(e.contains("udp[0].via") && e.contains("no switch named \"S9\""), "{e}");
}

/// AG Fig. 12's truth: beside each measured path delay the samples carry
/// the size of the packet that measured it and the delay a packet of that
/// size entering that uplink would see now (ports' busy times read at the
/// sampling instant). On AG's fabric the two agree within a few
/// microseconds, and a truth that left out a hop, the propagation or the
/// packet's own serialisation would fall below the wire-time floors.
#[test]
fn ag_reports_the_true_path_delay_beside_its_measurement() {
    // 5 MB + 700 B: the last segment of each flow is short
    let flows = common::flow_file("ag_truth", &[(0, 4, 5_000_700, 0.0), (5, 1, 5_000_700, 0.0)]);
    let mut s = sets(&[&flows]);
    s.push("metrics.scheme_sample_interval_us=500".into());
    let o = run_ok(AG_FABRIC, &s);
    let get = |m: &str| -> Vec<(u64, u32, u32, f64)> { o.scheme_samples.iter().filter(|x| x.1 == m).map(|x| (x.0 .0, x.2, x.3, x.4)).collect() };
    let (meas, truth, size) = (get("owd_us"), get("true_owd_us"), get("probe_bytes"));
    assert_eq!(meas.len(), truth.len(), "one truth per measurement");
    assert_eq!(meas.len(), size.len(), "one size per measurement");
    assert!(meas.len() > 100, "{}", meas.len());
    // the path via S3 has 80 + 30 us of wire, the others 60; each of the
    // two hops serialises the packet at 1 Gb/s (8 ns per byte)
    for ((m, t), b) in meas.iter().zip(&truth).zip(&size) {
        assert_eq!((m.0, m.1, m.2), (t.0, t.1, t.2));
        assert_eq!((m.0, m.1, m.2), (b.0, b.1, b.2));
        assert!(b.3 > 0.0 && b.3 <= 1500.0, "probe of {} B", b.3);
        let floor = if m.2 % 64 == 3 { 110.0 } else { 60.0 } + 2.0 * 8.0 * b.3 / 1000.0;
        assert!(t.3 >= floor - 1e-6, "truth {} below the wire time {floor} of a {} B packet", t.3, b.3);
        assert!(m.3 >= floor - 1e-3, "measured {} below the wire time {floor} of a {} B packet", m.3, b.3);
    }
    // the measurement follows the truth: mean absolute error under 4 us,
    // and the slow path stands out in both
    let mae = meas.iter().zip(&truth).map(|(m, t)| (m.3 - t.3).abs()).sum::<f64>() / meas.len() as f64;
    assert!(mae < 4.0, "mean |measured - true| = {mae:.1} us");
    eprintln!("AG truth: {} samples, mean |measured - true| {mae:.2} us", meas.len());
    let mean = |k: u32, v: &[(u64, u32, u32, f64)]| {
        let x: Vec<f64> = v.iter().filter(|s| s.2 % 64 == k).map(|s| s.3).collect();
        x.iter().sum::<f64>() / x.len() as f64
    };
    assert!(mean(3, &truth) > mean(0, &truth) + 40.0 && mean(3, &meas) > mean(0, &meas) + 40.0);
}

/// DRILL on an asymmetric fabric (DRILL §3.3): the Clove testbed with
/// S1-L1#0 down (via S1 half the capacity to L1). DRILL hashes each flow to
/// a symmetric component (L0's two uplinks to S0, or its two to S1) in
/// proportion to capacity, 2:1, and balances per packet inside it: L0's
/// uplink bytes split about 2:1, and its mean FCT is below ECMP's on each
/// of three seeds. On the symmetric fabric every group is one component.
#[test]
fn drill_decomposes_an_asymmetric_fabric_into_symmetric_components() {
    let testbed = include_str!("../../../examples/clove_testbed.toml");
    let run = |scheme: &str, seed: u32, failed: bool| {
        let mut v = vec![format!("lb.scheme=\"{scheme}\""), format!("seed={seed}"), "workload.flows=2000".to_string()];
        if failed {
            v.push("failures=[{link=\"S1-L1#0\"}]".to_string());
        }
        run_ok(testbed, &v)
    };
    for seed in 1..=3 {
        let (e, d) = (run("ecmp", seed, true), run("drill", seed, true));
        let fct = |o: &RunOutput| o.summary["fct_us"]["mean"].as_f64().unwrap();
        eprintln!("seed {seed}: mean FCT DRILL {:.0} us, ECMP {:.0} us", fct(&d), fct(&e));
        assert!(fct(&d) <= fct(&e), "seed {seed}: DRILL {:.0} vs ECMP {:.0}", fct(&d), fct(&e));
        let stats = &d.summary["scheme"]["stats"];
        assert!(stats["asymmetric_decisions"].as_f64().unwrap() > 0.0, "{stats}");
        if seed == 1 {
            let bytes = |prefix: &str| d.ports.iter().filter(|p| p.name.starts_with(prefix)).map(|p| p.tx_bytes).sum::<u64>() as f64;
            let split = bytes("L0->S0#") / bytes("L0->S1#");
            assert!((1.6..2.5).contains(&split), "L0's bytes via S0 / via S1: {split:.2}");
        }
    }
    let sym = run("drill", 1, false);
    assert_eq!(sym.summary["scheme"]["stats"]["asymmetric_decisions"], 0.0);
}
