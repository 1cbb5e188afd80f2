//! The HPCC simulator's file formats (its `third.cc` reads and writes
//! them), so a scenario of that code base runs here as it is:
//!
//! - topology: line 1 `nodes switches links`, line 2 the switch ids, then
//!   one `a b rate delay error_rate` line per link (`100Gbps 0.001ms 0`);
//!   every id not listed as a switch is a host. Nodes keep their ids
//!   (lbsim's node i is the file's node i), hosts are numbered in id order,
//!   switches are named `S<id>` and hosts `H<index>`.
//! - flows: line 1 the count, then `src dst priority dport size start_s`
//!   per flow, src and dst node ids;
//! - FCT output (`fct.txt`): `sip dip sport dport size start_ns fct_ns
//!   standalone_fct_ns` per completed flow in completion order, addresses
//!   in hex as that code forms them from node ids (11.x.y.1).

use crate::metrics::FlowRecord;
use lbsim_engine::{BitsPerSec, SimTime};
use lbsim_net::topology::{ExplicitLink, ExplicitNode, LinkSpec};
use lbsim_net::{NodeId, Topology};
use lbsim_workload::FlowSpec;
use std::fmt::Write;

/// A data rate as ns-3 writes it (`100Gbps`, `25Gbps`, `10Mbps`, `1Tbps`).
fn rate(s: &str) -> Option<BitsPerSec> {
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let x: f64 = num.parse().ok()?;
    let scale = match unit {
        "bps" | "b/s" => 1e-9,
        "Kbps" | "kbps" | "Kb/s" | "kb/s" => 1e-6,
        "Mbps" | "Mb/s" => 1e-3,
        "Gbps" | "Gb/s" => 1.0,
        "Tbps" | "Tb/s" => 1e3,
        _ => return None,
    };
    BitsPerSec::input_gbps(x * scale).ok()
}

/// A time as ns-3 writes it (`0.001ms`, `1000ns`, `1us`, `1s`).
fn delay(s: &str) -> Option<SimTime> {
    let (num, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic())?);
    let x: f64 = num.parse().ok()?;
    let ps = match unit {
        "ps" => 1.0,
        "ns" => 1e3,
        "us" => 1e6,
        "ms" => 1e9,
        "s" => 1e12,
        _ => return None,
    };
    SimTime::input(x, ps, unit, false).ok()
}

/// Reads a topology file; an error says which line and why.
pub fn read_topology(text: &str) -> Result<Topology, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or("the file is empty")?;
    let nums: Vec<u64> = head.split_whitespace().map(|x| x.parse().map_err(|_| format!("line 1: {x:?} is not a count"))).collect::<Result<_, _>>()?;
    let [n, s, l] = nums[..] else { return Err(format!("line 1 must be `nodes switches links`, got {head:?}")) };
    if n == 0 || n > 1_000_000 || s >= n {
        return Err(format!("line 1: {n} nodes of which {s} switches: need at least one host and at most 1,000,000 nodes"));
    }
    let mut switch = vec![false; n as usize];
    let mut listed = 0;
    if s > 0 {
        let (ln, ids) = lines.next().ok_or("line 2 (the switch ids) is missing")?;
        for x in ids.split_whitespace() {
            let id: u64 = x.parse().map_err(|_| format!("line {}: switch id {x:?} is not a number", ln + 1))?;
            if id >= n {
                return Err(format!("line {}: switch id {id} is not below the node count {n}", ln + 1));
            }
            switch[id as usize] = true;
            listed += 1;
        }
        if listed != s {
            return Err(format!("line {}: {listed} switch ids listed, line 1 says {s}", ln + 1));
        }
    }
    let mut host_index = vec![u32::MAX; n as usize];
    let mut hosts = 0;
    let nodes: Vec<ExplicitNode> = (0..n as usize)
        .map(|i| {
            if switch[i] {
                ExplicitNode { name: format!("S{i}"), host: false }
            } else {
                host_index[i] = hosts;
                hosts += 1;
                ExplicitNode { name: format!("H{}", hosts - 1), host: true }
            }
        })
        .collect();
    let mut links = vec![];
    for (ln, line) in lines.by_ref().take(l as usize) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = |what: &str| format!("line {}: {what} in {line:?} (want `a b rate delay error_rate`, e.g. `0 320 100Gbps 0.001ms 0`)", ln + 1);
        if f.len() < 4 {
            return Err(bad("too few fields"));
        }
        let id = |x: &str| x.parse::<u64>().ok().filter(|&i| i < n).map(|i| i as usize);
        let (a, b) = (id(f[0]).ok_or_else(|| bad("node a is not a node id"))?, id(f[1]).ok_or_else(|| bad("node b is not a node id"))?);
        let spec = LinkSpec {
            rate: rate(f[2]).ok_or_else(|| bad("the rate is not a rate like 100Gbps"))?,
            delay: delay(f[3]).ok_or_else(|| bad("the delay is not a time like 0.001ms"))?,
        };
        if f.get(4).is_some_and(|e| e.parse::<f64>() != Ok(0.0)) {
            return Err(bad("a nonzero error rate (random loss is not modelled)"));
        }
        links.push(ExplicitLink { a: nodes[a].name.clone(), b: nodes[b].name.clone(), spec, count: 1 });
    }
    if links.len() as u64 != l {
        return Err(format!("line 1 says {l} links, the file has {}", links.len()));
    }
    for (i, node) in nodes.iter().enumerate() {
        let degree = links.iter().filter(|k| k.a == node.name || k.b == node.name).count();
        if node.host && degree != 1 {
            return Err(format!("host node {i} has {degree} links; a host has exactly one"));
        }
    }
    Topology::explicit(&nodes, &links).map_err(|e| e.msg)
}

/// Reads a flow file over `topo` (built by [`read_topology`]: node ids
/// are lbsim's); flows sorted by start (stable).
pub fn read_flows(text: &str, topo: &Topology) -> Result<Vec<FlowSpec>, String> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, head) = lines.next().ok_or("the file is empty")?;
    let count: usize = head.split_whitespace().next().and_then(|x| x.parse().ok()).ok_or_else(|| format!("line 1 must be the flow count, got {head:?}"))?;
    let mut v = Vec::with_capacity(count.min(10_000_000));
    for (ln, line) in lines.take(count) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = |what: &str| format!("line {}: {what} in {line:?} (want `src dst priority dport size start_s`)", ln + 1);
        if f.len() < 6 {
            return Err(bad("too few fields"));
        }
        let host = |x: &str| x.parse::<u32>().ok().filter(|&i| (i as usize) < topo.nodes.len() && topo.is_host(NodeId(i))).map(|i| topo.host_index(NodeId(i)));
        let src = host(f[0]).ok_or_else(|| bad("src is not a host's node id"))?;
        let dst = host(f[1]).ok_or_else(|| bad("dst is not a host's node id"))?;
        if src == dst {
            return Err(bad("src and dst are the same host"));
        }
        let size: u64 = f[4].parse().map_err(|_| bad("size is not a number of bytes"))?;
        let start: f64 = f[5].parse().map_err(|_| bad("start is not a number of seconds"))?;
        let start = SimTime::input(start, 1e12, "s", false).map_err(|m| bad(&format!("start {m}")))?;
        v.push(FlowSpec { src, dst, size, start, class: 0 });
    }
    if v.len() != count {
        return Err(format!("line 1 says {count} flows, the file has {}", v.len()));
    }
    v.sort_by_key(|f| f.start);
    Ok(v)
}

/// The HPCC simulator's IPv4 address of node `id` (11.x.y.1).
pub fn ip(id: u32) -> u32 {
    0x0b00_0001 + (id / 256) * 0x1_0000 + (id % 256) * 0x100
}

/// One FCT file line per completed flow `(flow, sport, dport)`, in the
/// order given.
pub fn fct_lines(topo: &Topology, flows: &[FlowRecord], done: impl Iterator<Item = (u32, u16, u16)>) -> String {
    let mut s = String::new();
    for (flow, sport, dport) in done {
        let f = &flows[flow as usize];
        let ns = |t: SimTime| t.0 / 1000;
        let _ = writeln!(
            s,
            "{:08x} {:08x} {sport} {dport} {} {} {} {}",
            ip(topo.host(f.src).0),
            ip(topo.host(f.dst).0),
            f.size,
            ns(f.start),
            ns(f.fct().unwrap_or_default()),
            ns(f.ideal)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOPO: &str = "6 2 5\n4 5\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 1000ns 0\n2 5 100Gbps 0.001ms 0\n3 5 100Gbps 0.001ms 0\n4 5 400Gbps 0.001ms 0\n";

    #[test]
    fn a_topology_keeps_node_ids_and_numbers_hosts_in_id_order() {
        let t = read_topology(TOPO).unwrap();
        assert_eq!((t.nodes.len(), t.num_hosts()), (6, 4));
        assert_eq!(t.host(2), NodeId(2));
        assert!(!t.is_host(NodeId(4)));
        let nic = t.port(t.nic(NodeId(1)));
        assert_eq!((nic.rate, nic.delay), (BitsPerSec::gbps(100), SimTime::from_us(1)));
        assert_eq!(t.ports.iter().filter(|p| p.rate == BitsPerSec::gbps(400)).count(), 2);
    }

    #[test]
    fn flows_and_the_fct_addresses() {
        let t = read_topology(TOPO).unwrap();
        let f = read_flows("2\n0 3 3 100 5000 2.000001\n2 1 3 100 70 2.0000005\n", &t).unwrap();
        assert_eq!((f[0].src, f[0].dst, f[0].size, f[0].start), (2, 1, 70, SimTime::from_ns(2_000_000_500)));
        assert_eq!(ip(0), 0x0b000001);
        assert_eq!(ip(300), 0x0b012c01);
    }

    #[test]
    fn bad_files_say_which_line() {
        let e = |t: &str| read_topology(t).unwrap_err();
        assert!(
            e("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gxps 0.001ms 0\n").starts_with("line 4: the rate"),
            "{}",
            e("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n1 2 100Gxps 0.001ms 0\n")
        );
        assert!(e("3 1 2\n2\n0 2 100Gbps 0.001ms 0\n").contains("says 2 links"));
        assert!(e("3 1 2\n2\n0 2 100Gbps 0.001ms 0.01\n1 2 100Gbps 0.001ms 0\n").contains("error rate"));
        let t = read_topology(TOPO).unwrap();
        assert!(read_flows("1\n0 4 3 100 10 2\n", &t).unwrap_err().contains("dst is not a host"));
        assert!(read_flows("3\n0 1 3 100 10 2\n", &t).unwrap_err().contains("says 3 flows"));
    }
}

#[cfg(test)]
mod run_tests {
    use crate::tests::run_ok;

    #[test]
    fn an_hpcc_scenario_runs_as_it_is_and_writes_its_fct_file() {
        // a 4-host star around one switch (id 4): 2 flows into host 3
        let dir = std::env::temp_dir().join(format!("lbsim-hpcc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("topo.txt"), "5 1 4\n4\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n2 4 100Gbps 0.001ms 0\n3 4 100Gbps 0.001ms 0\n").unwrap();
        std::fs::write(dir.join("flows.txt"), "3\n0 3 3 100 20000 2.0\n1 3 3 100 5000 2.000001\n0 3 3 100 1000 2.000002\n").unwrap();
        let sets = [
            "topology.kind=hpcc".to_string(),
            format!("topology.file={:?}", dir.join("topo.txt").display().to_string()),
            "workload.kind=hpcc".to_string(),
            format!("workload.file={:?}", dir.join("flows.txt").display().to_string()),
        ];
        let sets: Vec<&str> = sets.iter().map(|s| s.as_str()).collect();
        let out = run_ok(include_str!("../../../examples/rdma_dcqcn.toml"), &sets);
        let lines: Vec<Vec<&str>> = out.fct_txt.lines().map(|l| l.split(' ').collect()).collect();
        assert_eq!(lines.len(), 3);
        // 11.0.0.1 and 11.0.3.1; ports from 10000 per pair; start in ns
        let first = lines.iter().find(|l| l[4] == "20000").unwrap();
        assert_eq!(&first[..6], &["0b000001", "0b000301", "10000", "100", "20000", "2000000000"]);
        let third = lines.iter().find(|l| l[4] == "1000").unwrap();
        assert_eq!(third[2], "10001", "the pair's second flow");
        // standalone: 2 x 2 us + 2 x 80 ns (1000 B per hop) + 20 x 1048 B at 100 Gb/s
        assert_eq!(first[7], (4_000 + 160 + 20 * 1048 * 8 / 100).to_string());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rdma_refuses_what_it_cannot_run_naming_the_key() {
        let text = include_str!("../../../examples/rdma_dcqcn.toml");
        let e = crate::Scenario::from_toml(text, &["lb.scheme=hermes".into()]).unwrap_err();
        assert_eq!(e.field, "lb.scheme");
        let e = crate::Scenario::from_toml(text, &["rdma.ecn_kmax_bytes=1000".into()]).unwrap_err();
        assert_eq!(e.field, "rdma.ecn_kmax_bytes");
        let e = crate::Scenario::from_toml(text, &["rdma.dcqcn_rate_ai_mbps=-1".into()]).unwrap_err();
        assert_eq!(e.field, "rdma.dcqcn_rate_ai_mbps");
        let e = crate::Scenario::from_toml(text, &["rdma.rate_control=timely".into()]).unwrap_err();
        assert_eq!(e.field.as_str(), "rdma.rate_control");
        assert!(e.msg.contains("\"dcqcn\"") && e.msg.contains("got \"timely\""), "{}", e.msg);
        let e = crate::Scenario::from_toml(text, &["topology.kind=hpcc".into(), "topology.file=/nonexistent".into()]);
        let e = crate::validate(&e.unwrap(), None).unwrap_err();
        assert!(e.to_string().contains("topology.file"), "{e}");
    }
}
