//! Edge-Flowlet (Clove §3.2, §5): the source hypervisor starts a new
//! flowlet after an idle gap (default 2 RTT, §3.2) and gives it a new outer
//! source port — `choice = "random"`: uniformly among the ports discovered
//! on distinct paths; `choice = "hash"`: a hash of the 5-tuple and flowlet
//! id, as the testbed implementation did (§5), with no discovery.
//! Congestion-oblivious, but a flow whose ACKs are delayed by congestion
//! pauses and so moves (§3.2).

use crate::edge::{hashed_port, Discovery, Flowlets, PathUse};
use crate::edge_params::{self, num, FLOWLET_GAP_US, RTT};
use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use crate::SchemeEnv;
use lbsim_engine::mix64;
use lbsim_net::{Ctx, HostRx, LoadBalancer, NodeId, Payload, PktId};

pub const PARAMS: &[ParamDef] = crate::with_discovery![
    num("flowlet_gap_rtts", "RTT", 2.0, "idle gap that starts a new flowlet, in RTTs (§3.2 recommends 2)"),
    ParamDef {
        name: "choice",
        unit: "",
        default: DefaultValue::Str("random"),
        help: "\"random\": a random discovered port per flowlet (§3.2); \"hash\": hash of (5-tuple, flowlet id) (§5 testbed)",
    },
    FLOWLET_GAP_US,
    RTT,
];

pub struct EdgeFlowlet {
    disc: Option<Discovery>,
    pub flowlets: Flowlets,
    /// The timers as resolved (µs), for the summary.
    pub resolved: Vec<(&'static str, f64)>,
    pub path_use: PathUse,
}

impl EdgeFlowlet {
    pub fn new(p: &Params, env: &SchemeEnv) -> Result<Self, ParamError> {
        let rtt = edge_params::rtt(p, env.base_rtt)?;
        let gap = edge_params::flowlet_gap(p, rtt)?;
        let hosts = env.topo.num_hosts();
        let disc = match p.string("choice", &["random", "hash"])?.as_str() {
            "hash" => None,
            _ => Some(Discovery::new(edge_params::discovery(p)?, hosts)),
        };
        let resolved = vec![("rtt_us", rtt.as_us_f64()), ("flowlet_gap_us", gap.as_us_f64())];
        Ok(EdgeFlowlet { disc, flowlets: Flowlets::new(gap, hosts), resolved, path_use: PathUse::new(env.topo) })
    }

    pub fn discovery(&self) -> Option<&Discovery> {
        self.disc.as_ref()
    }
}

impl LoadBalancer for EdgeFlowlet {
    /// Host-side only: switches forward by plain ECMP.
    fn wants_switch_hook(&self) -> bool {
        false
    }
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        let p = *ctx.pkt(pkt);
        if matches!(p.payload, Payload::Control { .. }) {
            return;
        }
        let (src, dst) = (ctx.topo.host_index(host), ctx.topo.host_index(p.dst));
        let flow = p.inner_hash();
        let (ports, epoch) = match &mut self.disc {
            Some(d) => {
                let s = d.paths(ctx, src, dst);
                (s.ports.clone(), s.epoch)
            }
            None => (vec![], 0),
        };
        let (f, new) = self.flowlets.touch(src, flow, ctx.now, epoch);
        if new {
            f.port = if self.disc.is_none() {
                49152 + (mix64(flow ^ (f.id as u64).wrapping_mul(0x9E37_79B9)) % 16384) as u16
            } else if ports.is_empty() {
                hashed_port(&p)
            } else {
                ports[ctx.rng.below(ports.len() as u64) as usize]
            };
        }
        let port = f.port;
        if p.is_data() {
            if let (Some(d), Some(i)) = (&self.disc, ports.iter().position(|&x| x == port)) {
                self.path_use.record(ctx.topo, &d.get(src, dst).unwrap().paths[i], new, p.size as u64);
            }
        }
        ctx.pkt_mut(pkt).set_outer_sport(port);
    }

    fn on_host_receive(&mut self, ctx: &mut Ctx, _host: NodeId, pkt: PktId) -> HostRx {
        let is_probe = self.disc.as_mut().is_some_and(|d| d.on_receive(ctx, pkt));
        if is_probe {
            HostRx::Consume
        } else {
            HostRx::Deliver
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        if let Some(d) = &mut self.disc {
            d.on_timer(ctx, token);
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![("flowlets", self.flowlets.count as f64)];
        if let Some(d) = self.discovery() {
            v.extend(d.stats());
        }
        v
    }
}
