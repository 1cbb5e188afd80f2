//! Per-packet spraying at every switch: RPS (random packet spraying, Dixit
//! et al., INFOCOM 2013) picks a uniformly random equal-cost next hop for
//! each packet; DRB-style round-robin rotates through the group. The
//! "PerPacket" baseline of VMS and the packet-spraying baseline of AG and
//! CONGA §2.4. With `resequence = true` the receiving hosts put TCP data
//! back in order before the transport sees it (VMS §V-B's PerPacket "with
//! sufficient reorder buffers"; the resequencer VMS uses, `reseq.rs`).

use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use crate::reseq::Reseq;
use lbsim_net::{Ctx, Forward, HostRx, LoadBalancer, NodeId, Payload, PktId, PortId, Topology};

pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "mode",
        unit: "",
        default: DefaultValue::Str("random"),
        help: "\"random\": a uniformly random next hop per packet (RPS); \"round_robin\": rotate through the equal-cost group per switch (DRB)",
    },
    ParamDef {
        name: "resequence",
        unit: "",
        default: DefaultValue::Bool(false),
        help: "receivers put TCP data back in order before the transport (VMS's PerPacket baseline)",
    },
    ParamDef {
        name: "reseq_timeout_us",
        unit: "us",
        default: DefaultValue::Num(2000.0),
        help: "resequencing: flush held data after this long without a delivery (VMS §III-C: 2 ms)",
    },
    ParamDef {
        name: "reseq_buffer_bytes",
        unit: "bytes",
        default: DefaultValue::Num(2_500_000.0),
        help: "resequencing buffer per host, all flows (VMS §III-C: 2.5 MB)",
    },
];

pub struct Spray {
    round_robin: bool,
    /// Per switch: next index of the rotation.
    next: Vec<u32>,
    pub reseq: Option<Reseq>,
}

impl Spray {
    pub fn new(p: &Params, topo: &Topology) -> Result<Spray, ParamError> {
        let mode = p.string("mode", &["random", "round_robin"])?;
        let reseq = if p.boolean("resequence")? {
            Some(Reseq::new(p.duration("reseq_timeout_us", false)?, p.count("reseq_buffer_bytes", 1 << 40)?, topo.num_hosts()))
        } else {
            None
        };
        Ok(Spray { round_robin: mode == "round_robin", next: vec![0; topo.nodes.len()], reseq })
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

    fn on_host_receive(&mut self, ctx: &mut Ctx, host: NodeId, pkt: PktId) -> HostRx {
        let Some(r) = self.reseq.as_mut() else { return HostRx::Deliver };
        match ctx.pkt(pkt).payload {
            Payload::Tcp { conn, to_receiver: true, hdr } if hdr.len > 0 => {
                let size = ctx.pkt(pkt).size;
                let h = ctx.topo.host_index(host);
                r.on_data(ctx, host, h, conn, pkt, hdr.seq, hdr.len, size)
            }
            Payload::Tcp { conn, to_receiver: true, hdr } if hdr.flags & lbsim_tcp::header::SYN != 0 => {
                r.on_syn(ctx.topo.host_index(host), conn, hdr.seq);
                HostRx::Deliver
            }
            _ => HostRx::Deliver,
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        if let Some(r) = self.reseq.as_mut() {
            r.on_timer(ctx, token);
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        match &self.reseq {
            Some(r) => vec![("packets_held", r.held_total as f64), ("reseq_timeouts", r.timeouts as f64), ("reseq_overflows", r.overflows as f64)],
            None => vec![],
        }
    }
}
