//! Refusals before anything is allocated: a fabric, flow count or pool of
//! persistent connections whose state would not fit in half of this
//! machine's memory, from the scenario's parameters alone.

use super::{bad, Scenario, ScenarioError, WorkloadKind};

/// Memory this machine has (MemTotal), bytes; 64 GiB where unknown.
fn machine_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find(|l| l.starts_with("MemTotal:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(64 << 30, |kb| kb * 1024)
}

/// Largest fabric and flow count accepted: beyond these, tables that scale
/// with them would not fit (or would take hours to build).
pub const MAX_HOSTS: u64 = 1_000_000;
/// Bytes per flow: its record (`FlowRecord`, 128 bytes), its arrival
/// (`FlowSpec`, 32) and a share of a per-flow connection at peak (most
/// per-flow connections have closed before the last flows start).
pub(crate) const BYTES_PER_FLOW: u64 = 600;
/// Bytes per open connection: the boxed `Conn` (sender, receiver and the
/// simulator's bookkeeping: 1,048 bytes when measured, see the test
/// `connection_state_fits_its_memory_estimate`), its slot in the connection
/// table and in its pair's pool, allocator rounding and the first heap
/// buffers of its queues.
pub(crate) const BYTES_PER_CONN: u64 = 1536;
/// Bytes per node before any traffic: its ports, queues, NIC and scheme
/// state (measured: 24 MB for the 4,176 nodes of a k = 24 fat-tree).
const BYTES_PER_NODE: u64 = 8 << 10;

impl Scenario {
    /// Refuses a fabric or a flow count whose state would not fit in this machine's memory.
    pub(super) fn check_memory(&self) -> Result<(), ScenarioError> {
        // memory: refuse before allocating what cannot fit
        let (hosts, nodes, racks, uplinks) = self.topology.size();
        let mem = machine_memory();
        let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
        // per-node state, plus routing: a next-hop group per (node, rack),
        // plus the scheme's tables that scale with the fabric (AG and CONGA
        // keep state per pair of leaves and uplink)
        let routing = nodes.saturating_mul(BYTES_PER_NODE).saturating_add(nodes.saturating_mul(racks).saturating_mul(4));
        let param = |k: &str| self.lb.params.get(k).and_then(|v| v.as_float().or(v.as_integer().map(|i| i as f64)));
        let tables = lbsim_lb::fabric_table_bytes(&self.lb.scheme, hosts, nodes, racks, uplinks, param);
        let fabric = routing.saturating_add(tables);
        if hosts > MAX_HOSTS || fabric > mem / 2 {
            let limit = if hosts > MAX_HOSTS {
                format!("lbsim runs fabrics of up to {MAX_HOSTS} hosts")
            } else {
                format!("more than half of this machine's {}", gb(mem))
            };
            return Err(bad(
                self.topology.size_key(),
                if tables > 0 {
                    format!(
                        "{hosts} hosts and {nodes} nodes would need ~{} ({} of node state and routing tables, {} of {}'s {}); {limit}",
                        gb(fabric),
                        gb(routing),
                        gb(tables),
                        self.lb.scheme,
                        lbsim_lb::fabric_table_kind(&self.lb.scheme)
                    )
                } else {
                    format!("{hosts} hosts and {nodes} nodes would need ~{} (node state and routing tables); {limit}", gb(fabric))
                },
            ));
        }
        let flows = self.workload.flows as u64 * BYTES_PER_FLOW;
        if flows > mem / 2 {
            return Err(bad(
                "workload.flows",
                format!("{} flows need ~{} of flow state, more than half of this machine's {}", self.workload.flows, gb(flows), gb(mem)),
            ));
        }
        // persistent connections: a pool per (src, dst) pair that carries a
        // flow, opened at the pair's first flow and kept to the end; the
        // pairs are bounded here by the hosts and the flow count (a flow
        // list is checked once read, with its exact pairs)
        let all_pairs = hosts.saturating_mul(hosts.saturating_sub(1));
        let pairs = match self.workload.kind {
            WorkloadKind::Poisson | WorkloadKind::PerSender => Some(all_pairs.min(self.workload.flows as u64)),
            WorkloadKind::Incast => Some(hosts.saturating_sub(1)), // servers to the one client
            WorkloadKind::FlowList | WorkloadKind::Hpcc => None,
            WorkloadKind::Collective | WorkloadKind::Nothing => Some(0),
        };
        match pairs {
            Some(p) => self.check_connections(p, self.workload.flows as u64),
            None => Ok(()),
        }
    }

    /// Refuses persistent connections (`connections_per_pair` for each of
    /// `pairs` host pairs) that, with the state of `flows` flows, would not
    /// fit in half of this machine's memory. Per-flow connections are
    /// counted in the flow state.
    pub(crate) fn check_connections(&self, pairs: u64, flows: u64) -> Result<(), ScenarioError> {
        if self.transport.connections != super::Connections::Persistent {
            return Ok(());
        }
        let mem = machine_memory();
        let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
        let cpp = self.transport.connections_per_pair as u64;
        let conns = pairs.saturating_mul(cpp);
        let need = conns.saturating_mul(BYTES_PER_CONN).saturating_add(flows.saturating_mul(BYTES_PER_FLOW));
        if need > mem / 2 {
            return Err(bad(
                "transport.connections_per_pair",
                format!(
                    "{cpp} persistent connections for each of up to {pairs} host pairs ({conns} connections, ~{BYTES_PER_CONN} bytes each) and the flow state need ~{}, more than half of this machine's {}",
                    gb(need),
                    gb(mem)
                ),
            ));
        }
        Ok(())
    }
}
