//! Per-packet spraying at every switch: RPS (random packet spraying, Dixit
//! et al., INFOCOM 2013) picks a uniformly random equal-cost next hop for
//! each packet; DRB-style round-robin rotates through the group. The
//! "PerPacket" baseline of VMS and the packet-spraying baseline of AG and
//! CONGA §2.4.

use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use lbsim_net::{Ctx, Forward, LoadBalancer, NodeId, PktId, PortId};

pub const PARAMS: &[ParamDef] = &[ParamDef {
    name: "mode",
    unit: "",
    default: DefaultValue::Str("random"),
    help: "\"random\": a uniformly random next hop per packet (RPS); \"round_robin\": rotate through the equal-cost group per switch (DRB)",
}];

#[derive(Debug)]
pub struct Spray {
    round_robin: bool,
    /// Per switch: next index of the rotation.
    next: Vec<u32>,
}

impl Spray {
    pub fn new(p: &Params, nodes: usize) -> Result<Spray, ParamError> {
        let mode = p.string("mode", &["random", "round_robin"])?;
        Ok(Spray { round_robin: mode == "round_robin", next: vec![0; nodes] })
    }
}

impl LoadBalancer for Spray {
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in: PortId, _pkt: PktId, c: &[PortId]) -> Forward {
        let i = if self.round_robin {
            let n = &mut self.next[sw.idx()];
            *n = n.wrapping_add(1);
            (*n as usize) % c.len()
        } else {
            ctx.rng.below(c.len() as u64) as usize
        };
        Forward::Port(c[i])
    }
}
