//! From a validated scenario to what a run is built from: the fabric
//! ([`Scenario::build_topology`], link overrides applied), the TCP
//! configuration ([`Scenario::tcp_config`], the `[transport]` settings in
//! the engine's units) and the scheme's parameters as generic values
//! ([`Scenario::lb_params`]). The scenario module holds the schema and the
//! checks of each value alone; the errors here are the ones that need the
//! fabric or the scheme (a link override naming no link, a topology the
//! builder refuses, a scheme parameter of the wrong kind), each naming its
//! key.

use crate::scenario::{bad, Clos3Cfg, ExplicitCfg, FatTreeCfg, HostsPerLeaf, LeafSpineCfg, Scenario, ScenarioError, TopologyCfg};
use lbsim_engine::{BitsPerSec, SimTime};
use lbsim_lb::Value;
use lbsim_net::topology::{self, Clos3, ExplicitLink, ExplicitNode, LeafSpine, LinkSpec};
use lbsim_net::Topology;
use lbsim_tcp::{CongestionControl, Reordering, TcpConfig};
use std::collections::BTreeMap;

impl Scenario {
    /// Builds the topology with link overrides applied (failures are events).
    pub fn build_topology(&self) -> Result<Topology, ScenarioError> {
        self.build_topology_in(None)
    }

    /// [`Scenario::build_topology`] with files relative to `base_dir`.
    pub fn build_topology_in(&self, base_dir: Option<&std::path::Path>) -> Result<Topology, ScenarioError> {
        let spec = |g: f64, d: f64| LinkSpec { rate: BitsPerSec::from_gbps_f64(g), delay: SimTime::from_us_f64(d) };
        let tr = |e: lbsim_net::TopologyError| bad(e.field, e.msg);
        let mut topo = match &self.topology {
            TopologyCfg::LeafSpine(LeafSpineCfg {
                leaves,
                spines,
                links_per_pair,
                hosts_per_leaf,
                host_rate_gbps,
                fabric_rate_gbps,
                link_delay_us,
                spine_pinning,
            }) => {
                let hpl = match hosts_per_leaf {
                    HostsPerLeaf::Same(n) => vec![*n; *leaves as usize],
                    HostsPerLeaf::Each(v) => v.clone(),
                };
                topology::leaf_spine(&LeafSpine {
                    leaves: *leaves,
                    spines: *spines,
                    links_per_pair: *links_per_pair,
                    hosts_per_leaf: hpl,
                    host_link: spec(*host_rate_gbps, *link_delay_us),
                    fabric_link: spec(*fabric_rate_gbps, *link_delay_us),
                })
                .map(|mut t| {
                    t.pin_lanes = *spine_pinning;
                    t
                })
                .map_err(tr)?
            }
            TopologyCfg::Clos3(Clos3Cfg {
                pods,
                tors_per_pod,
                aggs_per_pod,
                cores,
                hosts_per_tor,
                host_rate_gbps,
                tor_agg_rate_gbps,
                agg_core_rate_gbps,
                link_delay_us,
            }) => topology::clos3(&Clos3 {
                pods: *pods,
                tors_per_pod: *tors_per_pod,
                aggs_per_pod: *aggs_per_pod,
                cores: *cores,
                hosts_per_tor: *hosts_per_tor,
                host_link: spec(*host_rate_gbps, *link_delay_us),
                tor_agg_link: spec(*tor_agg_rate_gbps, *link_delay_us),
                agg_core_link: spec(*agg_core_rate_gbps, *link_delay_us),
            })
            .map_err(tr)?,
            TopologyCfg::FatTree(FatTreeCfg { k, host_rate_gbps, fabric_rate_gbps, link_delay_us }) => {
                topology::fat_tree(*k, spec(*host_rate_gbps, *link_delay_us), spec(*fabric_rate_gbps, *link_delay_us)).map_err(tr)?
            }
            TopologyCfg::Explicit(ExplicitCfg { nodes, links }) => {
                let ns: Vec<ExplicitNode> = nodes.iter().map(|n| ExplicitNode { name: n.name.clone(), host: n.host }).collect();
                let ls: Vec<ExplicitLink> =
                    links.iter().map(|l| ExplicitLink { a: l.a.clone(), b: l.b.clone(), spec: spec(l.rate_gbps, l.delay_us), count: l.count }).collect();
                Topology::explicit(&ns, &ls).map_err(tr)?
            }
            TopologyCfg::Hpcc(c) => {
                let path = crate::build::resolve(base_dir, &c.file);
                let text = std::fs::read_to_string(&path).map_err(|e| bad("topology.file", format!("{}: {e}", path.display())))?;
                crate::hpcc::read_topology(&text).map_err(|m| bad("topology.file", format!("{}: {m}", path.display())))?
            }
        };
        for (i, o) in self.link_overrides.iter().enumerate() {
            let ports = topo.match_ports(&o.link);
            if ports.is_empty() {
                return Err(bad(format!("link_overrides[{i}].link"), format!("no link or port matches {:?}", o.link)));
            }
            for p in ports {
                if let Some(r) = o.rate_gbps {
                    topo.ports[p.idx()].rate = BitsPerSec::from_gbps_f64(r);
                }
                if let Some(d) = o.delay_us {
                    topo.ports[p.idx()].delay = SimTime::from_us_f64(d);
                }
            }
        }
        Ok(topo)
    }

    /// The run's TCP configuration: the `[transport]` settings in the
    /// engine's units, with what an absent key means filled in.
    pub fn tcp_config(&self) -> TcpConfig {
        let t = &self.transport;
        let d = TcpConfig::default();
        let min_rto = SimTime::from_us_f64(t.min_rto_ms * 1e3);
        TcpConfig {
            mss: t.mss_bytes,
            header_bytes: t.header_bytes,
            init_cwnd_pkts: t.init_cwnd_pkts,
            init_ssthresh: t.init_ssthresh_bytes.unwrap_or(d.init_ssthresh),
            sack: t.sack,
            delack_count: t.delayed_ack.max(1),
            delack_timeout: SimTime::from_us_f64(t.delayed_ack_timeout_us),
            min_rto,
            rto_tick: SimTime::from_us_f64(t.rto_tick_ms * 1e3),
            max_rto: SimTime::from_us_f64(t.max_rto_ms * 1e3),
            initial_rto: t.initial_rto_ms.map_or(min_rto, |ms| SimTime::from_us_f64(ms * 1e3)),
            dupack_threshold: t.dupack_threshold,
            rcv_wnd: t.rcv_wnd_bytes,
            byte_counting: t.cwnd_growth.byte_counting(),
            tso_bytes: t.tso_bytes,
            cc: match t.cc {
                CongestionControl::Dctcp { .. } => CongestionControl::Dctcp { g: t.dctcp_g },
                cc => cc,
            },
            ecn: t.ecn,
            ece_response: t.ece_response || t.ecn,
            restart_after_idle: t.restart_after_idle,
            reordering: match (t.reordering, t.max_reordering_pkts) {
                (Reordering::Adaptive { .. }, Some(max_pkts)) => Reordering::Adaptive { max_pkts },
                (r, _) => r,
            },
            // D-SACK feeds the adaptive threshold's undo
            dsack: t.dsack.unwrap_or(matches!(t.reordering, Reordering::Adaptive { .. })),
            rto_ssthresh: t.rto_ssthresh,
            fr_ssthresh: t.fr_ssthresh,
            recovery_exit: t.recovery_exit,
            recover: t.recover,
            prr_bound: t.prr_bound,
            lost_retransmission: t.lost_retransmission,
            rescue_retransmission: t.rescue_retransmission,
            partial_ack_timer: t.partial_ack_timer,
            partial_ack_retransmit: t.partial_ack_retransmit,
        }
    }

    /// The scheme parameters as generic values.
    pub fn lb_params(&self) -> Result<BTreeMap<String, Value>, ScenarioError> {
        let mut m = BTreeMap::new();
        for (k, v) in &self.lb.params {
            let val = match v {
                toml::Value::Integer(i) => Value::Num(*i as f64),
                toml::Value::Float(f) => Value::Num(*f),
                toml::Value::Boolean(b) => Value::Bool(*b),
                toml::Value::String(s) => Value::Str(s.clone()),
                toml::Value::Array(a) => Value::List(
                    a.iter()
                        .map(|x| x.as_float().or_else(|| x.as_integer().map(|i| i as f64)))
                        .collect::<Option<Vec<f64>>>()
                        .ok_or_else(|| bad(format!("lb.params.{k}"), "lists must hold numbers"))?,
                ),
                _ => return Err(bad(format!("lb.params.{k}"), "unsupported value type")),
            };
            m.insert(k.clone(), val);
        }
        Ok(m)
    }
}
