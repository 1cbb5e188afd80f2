//! Parameters shared by the host-edge schemes (path discovery, the RTT the
//! papers express timers in), declared once.

use crate::edge::{DiscoveryMode, DiscoveryParams};
use crate::params::{DefaultValue, ParamDef, ParamError, Params};
use lbsim_engine::SimTime;

pub use crate::params::num;

pub const DISCOVERY: [ParamDef; 6] = [
    ParamDef {
        name: "discovery",
        unit: "",
        default: DefaultValue::Str("probe"),
        help: "\"probe\": traceroute probes (Clove §3.1), real packets; \"oracle\": read the ECMP mapping from routing state",
    },
    num("paths", "ports", 4.0, "source ports kept per destination, on distinct paths chosen greedily by fewest shared links (§3.1)"),
    num("probe_ports", "ports", 32.0, "random outer source ports probed per destination per round"),
    num("max_ttl", "hops", 6.0, "probes are sent with TTL 1..max_ttl"),
    num("probe_period_ms", "ms", 500.0, "re-discovery period for destinations with traffic (§3.1: hundreds of ms)"),
    num("probe_wait_us", "us", 500.0, "time to collect probe replies before the new mapping is used"),
];

/// A scheme's parameter table followed by the shared discovery parameters.
#[macro_export]
macro_rules! with_discovery {
    ($($p:expr),* $(,)?) => {
        &[
            $($p,)*
            $crate::edge_params::DISCOVERY[0],
            $crate::edge_params::DISCOVERY[1],
            $crate::edge_params::DISCOVERY[2],
            $crate::edge_params::DISCOVERY[3],
            $crate::edge_params::DISCOVERY[4],
            $crate::edge_params::DISCOVERY[5],
        ]
    };
}

pub const RTT: ParamDef = num(
    "rtt_us",
    "us",
    0.0,
    "the network RTT that RTT-denominated timers use (state the paper's or your fabric's loaded RTT); 0 = the fabric's idle host-to-host RTT. Printed in the summary (scheme.resolved)",
);

pub const FLOWLET_GAP_US: ParamDef = num("flowlet_gap_us", "us", 0.0, "idle gap that starts a new flowlet in µs; when > 0 it replaces flowlet_gap_rtts");

/// The flowlet gap: `flowlet_gap_us` if given, else `flowlet_gap_rtts` × RTT.
pub fn flowlet_gap(p: &Params, rtt: SimTime) -> Result<SimTime, ParamError> {
    // 0 = not given; any other value must survive rounding to picoseconds
    if p.non_negative("flowlet_gap_us")? > 0.0 {
        p.duration("flowlet_gap_us", false)
    } else {
        p.in_rtts("flowlet_gap_rtts", rtt)
    }
}

pub fn discovery(p: &Params) -> Result<DiscoveryParams, ParamError> {
    let mode = match p.string("discovery", &["probe", "oracle"])?.as_str() {
        "oracle" => DiscoveryMode::Oracle,
        _ => DiscoveryMode::Probe,
    };
    let ttl = p.count("max_ttl", 64)?;
    Ok(DiscoveryParams {
        mode,
        paths: p.count("paths", 256)? as usize,
        probe_ports: p.count("probe_ports", 4096)? as usize,
        max_ttl: ttl as u8,
        period: p.duration("probe_period_ms", false)?,
        wait: p.duration("probe_wait_us", false)?,
    })
}

/// The RTT timers are expressed in: `rtt_us`, or the fabric's idle RTT.
pub fn rtt(p: &Params, base: SimTime) -> Result<SimTime, ParamError> {
    Ok(if p.non_negative("rtt_us")? > 0.0 { p.duration("rtt_us", false)? } else { base })
}
