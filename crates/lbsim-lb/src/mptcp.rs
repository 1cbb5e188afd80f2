//! MPTCP as a scheme: the switches do plain ECMP; the transport opens
//! `subflows` TCP subflows per connection on distinct source ports, couples
//! their increase with LIA (RFC 6356 §3) and schedules data on the
//! lowest-RTT subflow with room (the Linux default scheduler). The
//! transport logic lives in `lbsim-tcp` (coupling) and `lbsim-sim`
//! (connection-level scheduling and reassembly); this type carries the
//! choice and its parameter.

use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use lbsim_net::LoadBalancer;

pub const PARAMS: &[ParamDef] = &[ParamDef {
    name: "subflows",
    unit: "",
    default: DefaultValue::Num(8.0),
    help: "subflows per connection (CONGA §5 and Raiciu et al. use 8; the Clove testbed used 4)",
}];

#[derive(Debug)]
pub struct Mptcp {
    pub subflows: u32,
}

impl Mptcp {
    pub fn new(p: &Params) -> Result<Self, ParamError> {
        Ok(Mptcp { subflows: p.count("subflows", 64)? as u32 })
    }
}

impl LoadBalancer for Mptcp {
    /// Its logic is in the transport, not in the host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    /// Subflows are spread by ECMP on their source ports.
    fn wants_switch_hook(&self) -> bool {
        false
    }
}
