//! The `[topology]` section: the fabric's kind and its parameters, checked
//! against the kind's fields (so an error names `topology.<key>`), its size
//! before anything is built, and its rates and delays. `resolve` builds it.

use super::check::{dur_us, rate};
use super::{bad, d1, human, one_u32, ScenarioError};
use serde::Deserialize;
use std::collections::{HashMap, HashSet};

#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum HostsPerLeaf {
    Same(u32),
    Each(Vec<u32>),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TopologyCfg {
    LeafSpine(LeafSpineCfg),
    Clos3(Clos3Cfg),
    FatTree(FatTreeCfg),
    Explicit(ExplicitCfg),
    Hpcc(HpccTopoCfg),
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineCfg {
    /// Leaf (ToR) switches.
    pub leaves: u32,
    /// Spine switches; every leaf connects to every spine.
    pub spines: u32,
    /// Parallel links between each leaf and each spine.
    #[serde(default = "one_u32")]
    pub links_per_pair: u32,
    /// Hosts under each leaf: one number, or a list with one per leaf.
    pub hosts_per_leaf: HostsPerLeaf,
    /// Host-to-leaf link rate.
    pub host_rate_gbps: f64,
    /// Leaf-to-spine link rate.
    pub fabric_rate_gbps: f64,
    /// Propagation delay of every link, microseconds.
    #[serde(default = "d1")]
    pub link_delay_us: f64,
    /// Spines forward in-link k to out-link k toward the destination
    /// leaf (the Clove testbed's static routes; 4 disjoint paths on the
    /// 2×2×2 fabric) instead of re-hashing over the parallel links.
    #[serde(default)]
    pub spine_pinning: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clos3Cfg {
    /// Pods; every ToR of a pod connects to every aggregation switch of it.
    pub pods: u32,
    /// ToRs in each pod.
    pub tors_per_pod: u32,
    /// Aggregation switches in each pod.
    pub aggs_per_pod: u32,
    /// Core switches, split evenly into one plane per aggregation index:
    /// aggregation switch i of every pod connects to the cores of plane i.
    pub cores: u32,
    /// Hosts under each ToR.
    pub hosts_per_tor: u32,
    /// Host-to-ToR link rate.
    pub host_rate_gbps: f64,
    /// ToR-to-aggregation link rate.
    pub tor_agg_rate_gbps: f64,
    /// Aggregation-to-core link rate.
    pub agg_core_rate_gbps: f64,
    /// Propagation delay of every link.
    #[serde(default = "d1")]
    pub link_delay_us: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FatTreeCfg {
    /// Ports per switch (even): k pods, k^3/4 hosts.
    pub k: u32,
    /// Host-to-ToR link rate.
    pub host_rate_gbps: f64,
    /// Rate of every switch-to-switch link.
    pub fabric_rate_gbps: f64,
    /// Propagation delay of every link.
    #[serde(default = "d1")]
    pub link_delay_us: f64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitCfg {
    /// The nodes, hosts and switches.
    pub nodes: Vec<ExplicitNodeCfg>,
    /// The links between them.
    pub links: Vec<ExplicitLinkCfg>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HpccTopoCfg {
    /// The HPCC simulator's topology file (`nodes switches links`, the switch
    /// ids, then `a b rate delay error_rate` per link; docs/rdma.md), relative
    /// to the scenario file.
    pub file: String,
}

impl TopologyCfg {
    /// Checks a `[topology]` table against its kind's fields, so an error
    /// names the key (`topology.leaves`), which serde's tagged-enum path
    /// loses.
    pub(super) fn precheck(t: &toml::Table) -> Result<(), ScenarioError> {
        let kind = match t.get("kind") {
            Some(toml::Value::String(k)) => k.as_str(),
            Some(v) => return Err(bad("topology.kind", format!("must be a string, got {v}"))),
            None => return Err(bad("topology.kind", "missing: one of leaf_spine, clos3, fat_tree, explicit, hpcc")),
        };
        let mut rest = t.clone();
        rest.remove("kind");
        fn check<T: serde::de::DeserializeOwned>(rest: toml::Table) -> Result<(), ScenarioError> {
            serde_path_to_error::deserialize::<_, T>(toml::Value::Table(rest)).map(|_| ()).map_err(|e| {
                let path = e.path().to_string();
                bad(if path == "." { "topology".to_string() } else { format!("topology.{path}") }, human(&e.into_inner().to_string()))
            })
        }
        match kind {
            "leaf_spine" => check::<LeafSpineCfg>(rest),
            "clos3" => check::<Clos3Cfg>(rest),
            "fat_tree" => check::<FatTreeCfg>(rest),
            "explicit" => check::<ExplicitCfg>(rest),
            "hpcc" => check::<HpccTopoCfg>(rest),
            other => Err(bad("topology.kind", format!("unknown kind {other:?}: one of leaf_spine, clos3, fat_tree, explicit, hpcc"))),
        }
    }
}

impl TopologyCfg {
    /// (hosts, nodes, racks, uplinks per rack) the topology will have, from
    /// its parameters alone (racks: host attachment classes, the routing
    /// table's columns; for an explicit topology the switches hosts link to,
    /// their uplinks bounded by their largest degree).
    pub(super) fn size(&self) -> (u64, u64, u64, u64) {
        let m = |a: u64, b: u64| a.saturating_mul(b);
        match self {
            TopologyCfg::LeafSpine(c) => {
                let h: u64 = match &c.hosts_per_leaf {
                    HostsPerLeaf::Same(n) => m(*n as u64, c.leaves as u64),
                    HostsPerLeaf::Each(v) => v.iter().map(|&n| n as u64).sum(),
                };
                (h, h.saturating_add(c.leaves as u64 + c.spines as u64), c.leaves as u64, m(c.spines as u64, c.links_per_pair as u64))
            }
            TopologyCfg::Clos3(c) => {
                let tors = m(c.pods as u64, c.tors_per_pod as u64);
                let h = m(tors, c.hosts_per_tor as u64);
                (h, h.saturating_add(tors).saturating_add(m(c.pods as u64, c.aggs_per_pod as u64)).saturating_add(c.cores as u64), tors, c.aggs_per_pod as u64)
            }
            TopologyCfg::FatTree(c) => {
                let k = c.k as u64;
                let h = m(m(k, k), k) / 4;
                (h, h.saturating_add(m(m(k, k), 5) / 4), m(k, k) / 2, k / 2)
            }
            TopologyCfg::Explicit(c) => {
                // a host has one link, so the racks are the switches linked
                // to a host; their uplinks at most their degree
                let hosts: HashSet<&str> = c.nodes.iter().filter(|n| n.host).map(|n| n.name.as_str()).collect();
                let mut degree: HashMap<&str, u64> = HashMap::new();
                let mut racks: HashSet<&str> = HashSet::new();
                for l in &c.links {
                    *degree.entry(l.a.as_str()).or_default() += l.count as u64;
                    *degree.entry(l.b.as_str()).or_default() += l.count as u64;
                    match (hosts.contains(l.a.as_str()), hosts.contains(l.b.as_str())) {
                        (true, false) => racks.insert(l.b.as_str()),
                        (false, true) => racks.insert(l.a.as_str()),
                        _ => false,
                    };
                }
                let uplinks = racks.iter().map(|r| degree[r]).max().unwrap_or(0);
                (hosts.len() as u64, c.nodes.len() as u64, (racks.len() as u64).min(hosts.len() as u64), uplinks)
            }
            // known once the file is read (its reader bounds it)
            TopologyCfg::Hpcc(_) => (0, 0, 0, 0),
        }
    }

    /// The key that sets the fabric's size (its largest count), named when
    /// it is too large.
    pub(super) fn size_key(&self) -> &'static str {
        let largest = |keys: &[(&'static str, u64)]| keys.iter().max_by_key(|k| k.1).map_or("topology", |k| k.0);
        match self {
            TopologyCfg::LeafSpine(c) => {
                let per_leaf = match &c.hosts_per_leaf {
                    HostsPerLeaf::Same(n) => *n as u64,
                    HostsPerLeaf::Each(v) => v.iter().map(|&n| n as u64).max().unwrap_or(0),
                };
                largest(&[("topology.leaves", c.leaves as u64), ("topology.hosts_per_leaf", per_leaf), ("topology.spines", c.spines as u64)])
            }
            TopologyCfg::Clos3(c) => largest(&[
                ("topology.pods", c.pods as u64),
                ("topology.tors_per_pod", c.tors_per_pod as u64),
                ("topology.hosts_per_tor", c.hosts_per_tor as u64),
                ("topology.aggs_per_pod", c.aggs_per_pod as u64),
                ("topology.cores", c.cores as u64),
            ]),
            TopologyCfg::FatTree(_) => "topology.k",
            TopologyCfg::Explicit(_) => "topology.nodes",
            TopologyCfg::Hpcc(_) => "topology.file",
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitNodeCfg {
    /// Unique name, used by links, failures and samplers.
    pub name: String,
    /// A host (sends and receives, never forwards); else a switch. Hosts
    /// are numbered in the order they are listed.
    #[serde(default)]
    pub host: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplicitLinkCfg {
    /// One end (a node name).
    pub a: String,
    /// The other end.
    pub b: String,
    /// Link rate (both directions).
    pub rate_gbps: f64,
    /// Propagation delay.
    #[serde(default = "d1")]
    pub delay_us: f64,
    /// Parallel links between a and b (at least 1).
    #[serde(default = "one_u32")]
    pub count: u32,
}

impl TopologyCfg {
    /// Checks the link rates and delays.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        match self {
            TopologyCfg::LeafSpine(LeafSpineCfg { host_rate_gbps, fabric_rate_gbps, link_delay_us, .. }) => {
                rate("topology.host_rate_gbps", *host_rate_gbps)?;
                rate("topology.fabric_rate_gbps", *fabric_rate_gbps)?;
                dur_us("topology.link_delay_us", *link_delay_us, false)?;
            }
            TopologyCfg::Clos3(Clos3Cfg { host_rate_gbps, tor_agg_rate_gbps, agg_core_rate_gbps, link_delay_us, .. }) => {
                rate("topology.host_rate_gbps", *host_rate_gbps)?;
                rate("topology.tor_agg_rate_gbps", *tor_agg_rate_gbps)?;
                rate("topology.agg_core_rate_gbps", *agg_core_rate_gbps)?;
                dur_us("topology.link_delay_us", *link_delay_us, false)?;
            }
            TopologyCfg::FatTree(FatTreeCfg { host_rate_gbps, fabric_rate_gbps, link_delay_us, .. }) => {
                rate("topology.host_rate_gbps", *host_rate_gbps)?;
                rate("topology.fabric_rate_gbps", *fabric_rate_gbps)?;
                dur_us("topology.link_delay_us", *link_delay_us, false)?;
            }
            TopologyCfg::Explicit(ExplicitCfg { links, .. }) => {
                for (i, l) in links.iter().enumerate() {
                    rate(&format!("topology.links[{i}].rate_gbps"), l.rate_gbps)?;
                    dur_us(&format!("topology.links[{i}].delay_us"), l.delay_us, false)?;
                }
            }
            TopologyCfg::Hpcc(_) => {}
        }
        Ok(())
    }
}
