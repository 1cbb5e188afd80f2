//! ECMP: every switch hashes the packet's 5-tuple (the outer header when a
//! host encapsulates) with its own salt and takes that member of the
//! equal-cost group (the baseline of every paper; the per-switch salt keeps
//! the tiers of a fabric from making the same choice). This is the
//! trait's default behaviour; the type exists so the scheme has a name.

use crate::params::ParamDef;
use lbsim_net::LoadBalancer;

pub const PARAMS: &[ParamDef] = &[];

#[derive(Debug, Default)]
pub struct Ecmp;

impl LoadBalancer for Ecmp {
    /// Switch-side only: no host hooks.
    fn wants_host_hooks(&self) -> bool {
        false
    }
    /// The default switch hook is ECMP: the simulator picks by it directly.
    fn wants_switch_hook(&self) -> bool {
        false
    }
}
