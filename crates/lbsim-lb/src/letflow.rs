//! LetFlow (Vanini et al., NSDI 2017): flowlet switching with a *random*
//! next hop per new flowlet, at every switch with more than one equal-cost
//! next hop. Congestion-oblivious, yet flowlet sizes adapt to path
//! congestion (a congested path's flowlets end sooner). Same hashed
//! valid/age-bit flowlet table as CONGA §3.4, or (`flowlet_mode = "exact"`)
//! one that ends a flowlet exactly after a gap of T_fl.

use crate::flowlet::{FlowletMode, FlowletTable, Lookup};
use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Forward, LoadBalancer, NodeId, PktId, PortId};

pub const PARAMS: &[ParamDef] = &[
    ParamDef { name: "flowlet_us", unit: "us", default: DefaultValue::Num(500.0), help: "flowlet inactivity timeout T_fl" },
    ParamDef {
        name: "flowlet_mode",
        unit: "",
        default: DefaultValue::Str("age_bit"),
        help:
            "\"age_bit\": CONGA's valid + age bit table (gaps of T_fl..2 T_fl end a flowlet); \"exact\": a gap longer than T_fl ends it (AG's 500 us setting)",
    },
    ParamDef { name: "flowlet_table_size", unit: "entries", default: DefaultValue::Num(65536.0), help: "flowlet table entries per switch" },
];

pub struct LetFlow {
    t_fl: SimTime,
    size: usize,
    mode: FlowletMode,
    tables: Vec<Option<FlowletTable>>,
    pub flowlets_started: u64,
}

impl LetFlow {
    pub fn new(p: &Params, nodes: usize) -> Result<LetFlow, ParamError> {
        Ok(LetFlow {
            t_fl: p.duration("flowlet_us", false)?,
            size: p.count("flowlet_table_size", 1 << 24)? as usize,
            mode: FlowletMode::param(p)?,
            tables: vec![None; nodes],
            flowlets_started: 0,
        })
    }
}

impl LoadBalancer for LetFlow {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    fn on_switch(&mut self, ctx: &mut Ctx, sw: NodeId, _in: PortId, pkt: PktId, c: &[PortId]) -> Forward {
        if c.len() == 1 {
            return Forward::Port(c[0]);
        }
        let hash = ctx.pkt(pkt).hash;
        let t = self.tables[sw.idx()].get_or_insert_with(|| FlowletTable::with_mode(self.size, self.t_fl, self.mode));
        match t.lookup(hash, ctx.now) {
            Lookup::Active(p) if c.contains(&p) => Forward::Port(p),
            _ => {
                self.flowlets_started += 1;
                let p = c[ctx.rng.below(c.len() as u64) as usize];
                t.set(hash, p);
                Forward::Port(p)
            }
        }
    }

    fn stats(&self) -> Vec<(&'static str, f64)> {
        vec![("flowlets", self.flowlets_started as f64)]
    }
}
