//! # lbsim-lb
//!
//! The load-balancing schemes, one file each, all implementing
//! [`lbsim_net::LoadBalancer`] (the smoltcp `congestion/` layout). The
//! [`Scheme`] enum dispatches statically; [`Scheme::new`] builds one by
//! name from scenario parameters, and [`SCHEMES`] describes each (paper,
//! section, parameters with units and defaults) for `lbsim schemes`.

pub mod conga;
pub mod dre;
pub mod ecmp;
pub mod flowlet;
pub mod letflow;
pub mod params;
pub mod spray;
#[cfg(test)]
pub(crate) mod testutil;

pub use params::{DefaultValue, ParamDef, ParamError, Params, Value};

use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, HostRx, LinkId, LoadBalancer, NodeId, PktId, PortId, Topology};
use std::collections::BTreeMap;

/// What a scheme may need to know when it is built.
pub struct SchemeEnv<'a> {
    pub topo: &'a Topology,
    /// TCP maximum segment size, bytes.
    pub mss: u32,
    /// Round-trip time of the longest host-to-host path in the idle network
    /// (defaults tied to "RTT" in the papers use it).
    pub base_rtt: SimTime,
}

/// A scheme's description for `lbsim schemes` and the docs.
pub struct SchemeInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Paper and section the implementation follows.
    pub follows: &'static str,
    /// Where it acts: "switch", "host edge", "source leaf", "transport".
    pub acts_at: &'static str,
    pub params: &'static [ParamDef],
}

pub const SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "ecmp",
        summary: "Per-flow ECMP: each switch hashes the 5-tuple with a per-switch salt",
        follows: "baseline of every paper (RFC 2992 hash-threshold style; hash mod group size)",
        acts_at: "every switch",
        params: ecmp::PARAMS,
    },
    SchemeInfo {
        name: "spray",
        summary: "Per-packet spraying: random (RPS) or round-robin (DRB) next hop per packet",
        follows: "RPS (Dixit et al. 2013); VMS 'PerPacket', AG and CONGA §2.4 baselines",
        acts_at: "every switch",
        params: spray::PARAMS,
    },
    SchemeInfo {
        name: "letflow",
        summary: "LetFlow: a random next hop per flowlet at every switch",
        follows: "Vanini et al., NSDI 2017 (Clove and AG baseline)",
        acts_at: "every switch",
        params: letflow::PARAMS,
    },
    SchemeInfo {
        name: "conga",
        summary: "CONGA: flowlets to the uplink minimising max(local DRE, remote path metric), leaf-to-leaf feedback",
        follows: "Alizadeh et al., SIGCOMM 2014, §3 (DRE §3.2, feedback §3.3, flowlets §3.4, decision §3.5, defaults §3.6)",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::PARAMS,
    },
    SchemeInfo {
        name: "conga_flow",
        summary: "CONGA-Flow: CONGA with T_fl = 13 ms, about one decision per flow",
        follows: "Alizadeh et al., SIGCOMM 2014, §5 'Schemes compared'",
        acts_at: "leaves (spines: ECMP + CE)",
        params: conga::FLOW_PARAMS,
    },
];

/// A load-balancing scheme, dispatched by `match`.
pub enum Scheme {
    Ecmp(ecmp::Ecmp),
    Spray(spray::Spray),
    LetFlow(letflow::LetFlow),
    Conga(Box<conga::Conga>),
}

impl Scheme {
    /// Builds scheme `name` from its scenario parameters.
    pub fn new(
        name: &str,
        given: &BTreeMap<String, Value>,
        env: &SchemeEnv,
    ) -> Result<Scheme, ParamError> {
        let info = SCHEMES
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ParamError {
                key: "scheme".into(),
                msg: format!(
                    "unknown scheme {name:?}; known: {}",
                    SCHEMES
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
        let p = Params::new(given, info.params, name)?;
        Ok(match name {
            "ecmp" => Scheme::Ecmp(ecmp::Ecmp),
            "spray" => Scheme::Spray(spray::Spray::new(&p, env.topo.nodes.len())?),
            "letflow" => Scheme::LetFlow(letflow::LetFlow::new(&p, env.topo.nodes.len())?),
            "conga" | "conga_flow" => Scheme::Conga(Box::new(conga::Conga::new(&p, env.topo)?)),
            _ => unreachable!("scheme {name} listed but not constructed"),
        })
    }

    /// Scheme counters for the run summary.
    pub fn stats(&self) -> Vec<(&'static str, f64)> {
        match self {
            Scheme::LetFlow(s) => vec![("flowlets", s.flowlets_started as f64)],
            Scheme::Conga(s) => vec![
                ("flowlets", s.flowlets_started as f64),
                ("feedback_metrics_sent", s.feedback_sent as f64),
            ],
            _ => vec![],
        }
    }
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $e:expr) => {
        match $self {
            Scheme::Ecmp($s) => $e,
            Scheme::Spray($s) => $e,
            Scheme::LetFlow($s) => $e,
            Scheme::Conga($s) => $e,
        }
    };
}

impl LoadBalancer for Scheme {
    fn start(&mut self, ctx: &mut Ctx) {
        dispatch!(self, s => s.start(ctx))
    }
    #[inline]
    fn on_host_send(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) {
        dispatch!(self, s => s.on_host_send(ctx, host, pkt))
    }
    #[inline]
    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        dispatch!(self, s => s.on_host_receive(ctx, host, pkt))
    }
    #[inline]
    fn on_switch(
        &mut self,
        ctx: &mut Ctx,
        sw: NodeId,
        in_port: PortId,
        pkt: PktId,
        c: &[PortId],
    ) -> Forward {
        dispatch!(self, s => s.on_switch(ctx, sw, in_port, pkt, c))
    }
    #[inline]
    fn wants_enqueue(&self) -> bool {
        dispatch!(self, s => s.wants_enqueue())
    }
    #[inline]
    fn on_enqueue(&mut self, ctx: &mut Ctx, port: PortId, pkt: PktId) {
        dispatch!(self, s => s.on_enqueue(ctx, port, pkt))
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        dispatch!(self, s => s.on_timer(ctx, token))
    }
    fn on_link_change(&mut self, ctx: &mut Ctx, link: LinkId, up: bool) {
        dispatch!(self, s => s.on_link_change(ctx, link, up))
    }
}
