//! Every column of every output table, declared once: its name, type, unit,
//! meaning and how it is read from a run. The Python bindings build their
//! tables from [`table_cells`], the Python API its Arrow schemas from
//! [`tables`], and docs/metrics.md is generated from the same list (a test
//! fails when it is stale).
//!
//! Adding a per-flow counter: a line in [`flow_counters!`] below and its
//! computation where the connection counts it (`Conn::counters` in
//! world.rs). Nothing else lists columns.

use crate::metrics::FlowRecord;
use crate::RunOutput;
use std::borrow::Cow;

/// A column's type in the Parquet / Arrow tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    I64,
    F64,
    Bool,
    Str,
}

impl Ty {
    /// The type's name in the docs.
    pub fn name(self) -> &'static str {
        match self {
            Ty::Bool => "bool",
            t => t.arrow(),
        }
    }

    /// The Arrow type name (`pyarrow.<name>()`).
    pub fn arrow(self) -> &'static str {
        match self {
            Ty::I64 => "int64",
            Ty::F64 => "float64",
            Ty::Bool => "bool_",
            Ty::Str => "string",
        }
    }
}

/// One value of a row; `Null` where the run did not record it (any type:
/// the Arrow column is nullable).
pub enum Cell<'a> {
    I(i64),
    F(f64),
    B(bool),
    S(Cow<'a, str>),
    Null,
}

/// One column's values, typed; `None` is a null (a value not recorded).
pub enum Cells {
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Str(Vec<Option<String>>),
}

/// A column of a table whose rows are `R`; `get` reads row `i`.
pub struct Column<R> {
    pub name: &'static str,
    pub ty: Ty,
    pub unit: &'static str,
    pub doc: &'static str,
    pub get: for<'a> fn(usize, &'a R, &'a RunOutput) -> Cell<'a>,
}

/// A column without its reader: what the schema and the docs need.
#[derive(Clone, Debug)]
pub struct ColumnInfo {
    pub name: &'static str,
    pub ty: Ty,
    pub unit: &'static str,
    pub doc: &'static str,
}

/// An output table: its name (the Python API's attribute and the Parquet
/// file's stem), what a row is, and its columns.
#[derive(Clone, Debug)]
pub struct TableInfo {
    pub name: &'static str,
    pub row: &'static str,
    pub columns: Vec<ColumnInfo>,
}

/// Counters as signed integers, so that differences in pandas never wrap.
fn signed(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// Whether a run recorded a conditional column (`when` reads its output).
fn recorded(when: fn(&RunOutput) -> bool, o: &RunOutput) -> bool {
    when(o)
}

/// Declares the per-flow counters: each is a field of [`FlowCounters`]
/// (a connection's running count; a flow's is the growth while it ran)
/// and an integer column of the flows table.
///
/// A counter recorded only when its run asks for it names the condition
/// after its description: `if |o| o.path_record` (null otherwise).
macro_rules! flow_counters {
    ($($field:ident => $col:literal, $unit:literal, $doc:literal $(if $when:expr)?;)*) => {
        /// A connection's cumulative counters; a flow's are the difference
        /// between its connection's at its end and at its start.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct FlowCounters {
            $(#[doc = $doc] pub $field: u64,)*
        }
        impl FlowCounters {
            /// Field by field `f(self, o)`.
            pub fn zip(self, o: FlowCounters, f: impl Fn(u64, u64) -> u64) -> FlowCounters {
                FlowCounters { $($field: f(self.$field, o.$field),)* }
            }
        }
        const COUNTER_COLUMNS: &[Column<FlowRecord>] = &[
            $(Column {
                name: $col,
                ty: Ty::I64,
                unit: $unit,
                doc: $doc,
                get: |_, f, _o| {
                    $(if !recorded($when, _o) { return Cell::Null; })?
                    Cell::I(signed(f.counters.$field))
                },
            },)*
        ];
    };
}

flow_counters! {
    retransmits => "retransmits", "segments",
        "Data segments the sender sent again (fast retransmit, SACK recovery or timeout), MPTCP subflows summed.";
    timeouts => "timeouts", "events",
        "Retransmission timeouts (RFC 6298) of the flow's connection while the flow ran.";
    out_of_order => "out_of_order_segments", "segments",
        "Data segments that reached the receiver above its next expected byte, whatever the cause (out_of_order_after_loss + reordered_segments).";
    ooo_loss => "out_of_order_after_loss", "segments",
        "Out-of-order arrivals that overtook no segment: every earlier-sent data segment of the connection had arrived or been dropped, so the hole before them was left by a drop (simulator truth).";
    reordered => "reordered_segments", "segments",
        "Out-of-order arrivals that overtook an earlier-sent data segment of the connection still in the network: the network reordered (simulator truth).";
    duplicates => "duplicate_segments", "segments",
        "Data segments the receiver already had (spurious retransmissions).";
    fast_recoveries => "fast_recoveries", "episodes",
        "Entries into fast recovery (three duplicate ACKs or SACK loss detection, RFC 5681/6675), whatever set them off, by the flow's connection until the flow completed (its last byte in order at the receiver); those its sender enters later, before the last ACK reaches it, count only in summary.json's total.";
    fr_reorder => "fast_recoveries_reordering", "episodes",
        "Fast recoveries whose first retransmitted segment (at snd.una) had not been dropped and was overtaken by a later-sent segment (simulator truth: set off by reordering).";
    fr_loss => "fast_recoveries_loss", "episodes",
        "Fast recoveries whose first retransmitted segment (at snd.una) had been dropped (simulator truth: set off by a loss).";
    fr_other => "fast_recoveries_other", "episodes",
        "Fast recoveries whose first retransmitted segment had neither been dropped nor overtaken (docs/metrics.md, \"Reordering and loss\", names the mechanisms).";
    path_changes => "path_changes", "segments",
        "Data segments that left the source leaf by another uplink than the connection's previous one (metrics.path_record; null without)."
        if |o| o.path_record;
    cnps => "cnps", "ACKs",
        "RDMA: ACKs and NACKs carrying the CNP flag (the receiver saw CE) that reached the sender (transport.kind = \"rdma\"; null otherwise)."
        if |o| o.rdma;
    nacks => "nacks", "NACKs",
        "RDMA: NACKs the sender took (each sends it back to the first missing byte, go-back-N)."
        if |o| o.rdma;
    paused_ns => "paused_ns", "ns",
        "RDMA: time the source NIC's data class was paused by PFC while the flow ran."
        if |o| o.rdma;
}

fn opt_us(t: Option<lbsim_engine::SimTime>) -> Cell<'static> {
    Cell::F(t.map_or(f64::NAN, |t| t.as_us_f64()))
}

/// The flows table's columns before its counters.
const FLOW_HEAD: &[Column<FlowRecord>] = &[
    Column { name: "flow_id", ty: Ty::I64, unit: "", doc: "The flow's index in generation order (its row).", get: |i, _, _| Cell::I(i as i64) },
    Column { name: "src", ty: Ty::I64, unit: "host", doc: "Sending host's index.", get: |_, f, _| Cell::I(f.src as i64) },
    Column { name: "dst", ty: Ty::I64, unit: "host", doc: "Receiving host's index.", get: |_, f, _| Cell::I(f.dst as i64) },
    Column { name: "size_bytes", ty: Ty::I64, unit: "bytes", doc: "Application bytes the flow carries.", get: |_, f, _| Cell::I(signed(f.size)) },
    Column {
        name: "start_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "When the flow arrived (its first byte was handed to TCP).",
        get: |_, f, _| Cell::F(f.start.as_us_f64()),
    },
    Column {
        name: "finish_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "When the receiver had every byte in order; NaN if unfinished.",
        get: |_, f, _| opt_us(f.finish),
    },
    Column { name: "fct_us", ty: Ty::F64, unit: "µs", doc: "Flow completion time, finish_us - start_us; NaN if unfinished.", get: |_, f, _| opt_us(f.fct()) },
    Column {
        name: "ideal_fct_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "The flow alone in the idle network on its best equal-cost route at line rate (no slow start).",
        get: |_, f, _| Cell::F(f.ideal.as_us_f64()),
    },
    Column {
        name: "slowdown",
        ty: Ty::F64,
        unit: "",
        doc: "fct_us / ideal_fct_us; NaN if unfinished.",
        get: |_, f, _| {
            Cell::F(match f.fct() {
                Some(t) if f.ideal.0 > 0 => t.0 as f64 / f.ideal.0 as f64,
                _ => f64::NAN,
            })
        },
    },
    Column { name: "completed", ty: Ty::Bool, unit: "", doc: "Whether the flow finished before the run stopped.", get: |_, f, _| Cell::B(f.finish.is_some()) },
    Column { name: "started", ty: Ty::Bool, unit: "", doc: "False for a flow whose arrival came after the run stopped.", get: |_, f, _| Cell::B(f.started) },
];

/// The flows table's columns after its counters.
const FLOW_TAIL: &[Column<FlowRecord>] = &[
    Column {
        name: "uplinks_used",
        ty: Ty::I64,
        unit: "uplinks",
        doc: "Distinct source-leaf uplinks the flow's connection sent data on (metrics.path_record; null without).",
        get: |_, f, o| if o.path_record { Cell::I(f.uplinks_used as i64) } else { Cell::Null },
    },
    Column {
        name: "incast_request",
        ty: Ty::I64,
        unit: "",
        doc: "The incast request the flow answers; -1 if none.",
        get: |_, f, _| Cell::I(f.incast_request.map_or(-1, |r| r as i64)),
    },
    Column {
        name: "class",
        ty: Ty::Str,
        unit: "",
        doc: "The flow's size class (workload.classes); \"all\" without classes.",
        get: |_, f, o| Cell::S(Cow::Borrowed(o.class_names.get(f.class as usize).map_or("all", |n| n.as_str()))),
    },
    Column {
        name: "job",
        ty: Ty::I64,
        unit: "",
        doc: "The collective job ([[jobs]] index) the flow belongs to; -1 if none.",
        get: |_, f, _| Cell::I(host(f.job)),
    },
    Column {
        name: "job_iteration",
        ty: Ty::I64,
        unit: "",
        doc: "The job's iteration the flow belongs to; -1 if none.",
        get: |_, f, _| Cell::I(host(f.job_iteration)),
    },
    Column {
        name: "job_step",
        ty: Ty::I64,
        unit: "",
        doc: "The step of the iteration the flow belongs to (its sender started it once it had received everything of the earlier steps); -1 if none.",
        get: |_, f, _| Cell::I(host(f.job_step)),
    },
];

fn secs_or_nan(t: Option<lbsim_engine::SimTime>) -> f64 {
    t.map_or(f64::NAN, |t| t.as_secs_f64())
}

const JOBS: &[Column<crate::metrics::JobRecord>] = &[
    Column { name: "job", ty: Ty::I64, unit: "", doc: "The job's index in [[jobs]].", get: |_, r, _| Cell::I(r.job as i64) },
    Column { name: "name", ty: Ty::Str, unit: "", doc: "jobs[].name (\"job<i>\" without).", get: |_, r, _| Cell::S(Cow::Borrowed(&r.name)) },
    Column { name: "op", ty: Ty::Str, unit: "", doc: "The collective operation (jobs[].op).", get: |_, r, _| Cell::S(Cow::Borrowed(r.op)) },
    Column { name: "ranks", ty: Ty::I64, unit: "ranks", doc: "Ranks in the job.", get: |_, r, _| Cell::I(r.ranks as i64) },
    Column { name: "size_bytes", ty: Ty::I64, unit: "bytes", doc: "The message size (jobs[].size_bytes).", get: |_, r, _| Cell::I(signed(r.size)) },
    Column { name: "channels", ty: Ty::I64, unit: "connections", doc: "Connections per rank pair.", get: |_, r, _| Cell::I(r.channels as i64) },
    Column { name: "iteration", ty: Ty::I64, unit: "", doc: "The iteration, from 0.", get: |_, r, _| Cell::I(r.iteration as i64) },
    Column { name: "start_us", ty: Ty::F64, unit: "µs", doc: "When the iteration started every rank's first step.", get: |_, r, _| Cell::F(r.start.as_us_f64()) },
    Column { name: "end_us", ty: Ty::F64, unit: "µs", doc: "When its last flow finished; NaN if unfinished.", get: |_, r, _| opt_us(r.end) },
    Column { name: "time_us", ty: Ty::F64, unit: "µs", doc: "Iteration (collective completion) time, end_us - start_us; NaN if unfinished.", get: |_, r, _| opt_us(r.time()) },
    Column {
        name: "ideal_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "The iteration on an idle non-blocking fabric: the sum of its steps' ideal_us (steps.parquet).",
        get: |_, r, _| Cell::F(r.ideal.as_us_f64()),
    },
    Column {
        name: "slowdown",
        ty: Ty::F64,
        unit: "",
        doc: "time_us / ideal_us; NaN if unfinished.",
        get: |_, r, _| Cell::F(secs_or_nan(r.time()) / r.ideal.as_secs_f64()),
    },
    Column {
        name: "algbw_gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "Algorithm bandwidth, size_bytes x 8 / time; NaN if unfinished.",
        get: |_, r, _| Cell::F(r.time().map_or(f64::NAN, |t| r.algbw_gbps(t))),
    },
    Column {
        name: "busbw_gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "Bus bandwidth, algbw_gbps x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all (n ranks), as the collective benchmarks report; NaN if unfinished.",
        get: |_, r, _| Cell::F(r.time().map_or(f64::NAN, |t| r.algbw_gbps(t) * r.bus_factor)),
    },
    Column {
        name: "ideal_busbw_gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "busbw_gbps at ideal_us.",
        get: |_, r, _| Cell::F(r.algbw_gbps(r.ideal) * r.bus_factor),
    },
    Column { name: "completed", ty: Ty::Bool, unit: "", doc: "Whether the iteration finished before the run stopped.", get: |_, r, _| Cell::B(r.end.is_some()) },
];

const STEPS: &[Column<crate::metrics::StepRecord>] = &[
    Column { name: "job", ty: Ty::I64, unit: "", doc: "The job's index in [[jobs]].", get: |_, r, _| Cell::I(r.job as i64) },
    Column { name: "iteration", ty: Ty::I64, unit: "", doc: "The iteration, from 0.", get: |_, r, _| Cell::I(r.iteration as i64) },
    Column { name: "step", ty: Ty::I64, unit: "", doc: "The step, from 0 (ring all-reduce: 2(n-1) steps).", get: |_, r, _| Cell::I(r.step as i64) },
    Column {
        name: "start_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "The first start of the step's flows (ranks start a step when they have received the earlier steps); NaN if none started.",
        get: |_, r, _| opt_us(r.start),
    },
    Column { name: "end_us", ty: Ty::F64, unit: "µs", doc: "The last finish of the step's flows; NaN if any is unfinished.", get: |_, r, _| opt_us(r.end) },
    Column {
        name: "time_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "end_us - start_us; NaN if unfinished.",
        get: |_, r, _| opt_us(r.time()),
    },
    Column {
        name: "ideal_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "The step on the idle non-blocking fabric: the first full packet's store-and-forward latency over the slowest of the step's best routes, plus the busiest host's other wire bytes (payload and one header per segment, all channels) at its link rate, sending or receiving; no slow start (docs/metrics.md, \"Collective jobs\").",
        get: |_, r, _| Cell::F(r.ideal.as_us_f64()),
    },
    Column {
        name: "slowdown",
        ty: Ty::F64,
        unit: "",
        doc: "time_us / ideal_us; NaN if unfinished.",
        get: |_, r, _| Cell::F(secs_or_nan(r.time()) / r.ideal.as_secs_f64()),
    },
    Column { name: "flows", ty: Ty::I64, unit: "flows", doc: "The step's flows (sends x channels).", get: |_, r, _| Cell::I(r.flows as i64) },
    Column { name: "flows_done", ty: Ty::I64, unit: "flows", doc: "Those finished.", get: |_, r, _| Cell::I(r.flows_done as i64) },
    Column { name: "bytes", ty: Ty::I64, unit: "bytes", doc: "Application bytes the step moves, all ranks.", get: |_, r, _| Cell::I(signed(r.bytes)) },
    Column {
        name: "slowest_flow_id",
        ty: Ty::I64,
        unit: "",
        doc: "The finished flow of the step with the longest FCT (flows.parquet's flow_id); -1 if none finished.",
        get: |_, r, _| Cell::I(r.slowest.map_or(-1, |f| f as i64)),
    },
    Column {
        name: "slowest_fct_us",
        ty: Ty::F64,
        unit: "µs",
        doc: "Its FCT; NaN if none finished.",
        get: |_, r, _| opt_us(r.slowest.map(|_| r.slowest_fct)),
    },
    Column { name: "slowest_src", ty: Ty::I64, unit: "host", doc: "Its sending host; -1 if none.", get: |_, r, _| Cell::I(host(r.slowest_src)) },
    Column { name: "slowest_dst", ty: Ty::I64, unit: "host", doc: "Its receiving host; -1 if none.", get: |_, r, _| Cell::I(host(r.slowest_dst)) },
    Column {
        name: "slowest_uplink",
        ty: Ty::Str,
        unit: "",
        doc: "The source-leaf uplink its connection last sent data on (path recording is on whenever there are jobs); null if none or under MPTCP (several subflows).",
        get: |_, r, _| r.slowest_uplink.as_deref().map_or(Cell::Null, |s| Cell::S(Cow::Borrowed(s))),
    },
    Column {
        name: "slowest_uplinks_used",
        ty: Ty::I64,
        unit: "uplinks",
        doc: "Distinct source-leaf uplinks its connection used while it ran (1: one path, as under ECMP; more: the scheme split it).",
        get: |_, r, _| Cell::I(r.slowest_uplinks_used as i64),
    },
];

fn port_name(o: &RunOutput, port: u32) -> Cell<'_> {
    Cell::S(Cow::Borrowed(o.ports[port as usize].name.as_str()))
}

const PORTS: &[Column<crate::PortReport>] = &[
    Column { name: "port", ty: Ty::Str, unit: "", doc: "Egress port, \"A->B#k\" (k-th link between A and B).", get: |_, p, _| Cell::S(Cow::Borrowed(&p.name)) },
    Column { name: "rate_gbps", ty: Ty::F64, unit: "Gb/s", doc: "Line rate.", get: |_, p, _| Cell::F(p.rate_bps as f64 / 1e9) },
    Column { name: "tx_pkts", ty: Ty::I64, unit: "packets", doc: "Packets the port transmitted.", get: |_, p, _| Cell::I(signed(p.tx_pkts)) },
    Column { name: "tx_bytes", ty: Ty::I64, unit: "bytes", doc: "Bytes the port transmitted (headers included).", get: |_, p, _| Cell::I(signed(p.tx_bytes)) },
    Column { name: "drops", ty: Ty::I64, unit: "packets", doc: "Packets the port's queue refused (buffer full).", get: |_, p, _| Cell::I(signed(p.drops)) },
    Column { name: "ecn_marks", ty: Ty::I64, unit: "packets", doc: "ECN-capable packets the port marked CE.", get: |_, p, _| Cell::I(signed(p.ecn_marks)) },
    Column { name: "max_qlen_pkts", ty: Ty::I64, unit: "packets", doc: "Longest queue the port held.", get: |_, p, _| Cell::I(p.max_qlen_pkts as i64) },
    Column { name: "up", ty: Ty::Bool, unit: "", doc: "Whether the port's link was up at the end of the run.", get: |_, p, _| Cell::B(p.up) },
];

const LINKS: &[Column<crate::LinkSample>] = &[
    Column { name: "t_ms", ty: Ty::F64, unit: "ms", doc: "End of the window.", get: |_, l, _| Cell::F(l.t.as_ms_f64()) },
    Column { name: "port", ty: Ty::Str, unit: "", doc: "Sampled egress port (metrics.link_samplers).", get: |_, l, o| port_name(o, l.port.0) },
    Column { name: "bytes", ty: Ty::I64, unit: "bytes", doc: "Bytes transmitted in the window.", get: |_, l, _| Cell::I(signed(l.bytes)) },
    Column {
        name: "gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "Throughput over the window (metrics.utilization_window_ms).",
        get: |_, l, o| Cell::F(l.bytes as f64 * 8.0 / o.link_window.as_secs_f64() / 1e9),
    },
    Column {
        name: "utilisation",
        ty: Ty::F64,
        unit: "",
        doc: "Throughput over the window as a fraction of the port's rate.",
        get: |_, l, o| Cell::F(l.bytes as f64 * 8.0 / o.link_window.as_secs_f64() / o.ports[l.port.idx()].rate_bps as f64),
    },
];

const QUEUES: &[Column<crate::QueueSample>] = &[
    Column { name: "t_us", ty: Ty::F64, unit: "µs", doc: "Sample time.", get: |_, q, _| Cell::F(q.t.as_us_f64()) },
    Column { name: "port", ty: Ty::Str, unit: "", doc: "Sampled egress port (metrics.queue_samplers).", get: |_, q, o| port_name(o, q.port.0) },
    Column { name: "qlen_pkts", ty: Ty::I64, unit: "packets", doc: "Packets queued (not yet transmitting).", get: |_, q, _| Cell::I(q.pkts as i64) },
    Column { name: "qlen_bytes", ty: Ty::I64, unit: "bytes", doc: "Bytes queued.", get: |_, q, _| Cell::I(signed(q.bytes)) },
];

const CWND: &[Column<crate::CwndSample>] = &[
    Column { name: "t_us", ty: Ty::F64, unit: "µs", doc: "Sample time (metrics.cwnd_sample_interval_us).", get: |_, c, _| Cell::F(c.0.as_us_f64()) },
    Column { name: "flow_id", ty: Ty::I64, unit: "", doc: "The flow the connection carries.", get: |_, c, _| Cell::I(c.1 as i64) },
    Column { name: "conn", ty: Ty::I64, unit: "", doc: "Connection index (an MPTCP subflow is its own connection).", get: |_, c, _| Cell::I(c.2 as i64) },
    Column { name: "cwnd_bytes", ty: Ty::I64, unit: "bytes", doc: "Congestion window.", get: |_, c, _| Cell::I(signed(c.3)) },
    Column {
        name: "ssthresh_bytes",
        ty: Ty::I64,
        unit: "bytes",
        doc: "Slow-start threshold; -1 before the first reduction (\"infinite\").",
        get: |_, c, _| Cell::I(if c.4 >= i64::MAX as u64 { -1 } else { c.4 as i64 }),
    },
];

const QP_RATES: &[Column<crate::QpRateSample>] = &[
    Column { name: "t_us", ty: Ty::F64, unit: "µs", doc: "Sample time (metrics.cwnd_sample_interval_us).", get: |_, q, _| Cell::F(q.t.as_us_f64()) },
    Column { name: "flow_id", ty: Ty::I64, unit: "", doc: "The flow (one queue pair per flow).", get: |_, q, _| Cell::I(q.flow as i64) },
    Column {
        name: "rate_gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "The rate the NIC paces the queue pair at (DCQCN's current rate Rc; line rate without DCQCN).",
        get: |_, q, _| Cell::F(q.rate.as_gbps_f64()),
    },
    Column { name: "target_gbps", ty: Ty::F64, unit: "Gb/s", doc: "DCQCN's target rate Rt.", get: |_, q, _| Cell::F(q.target.as_gbps_f64()) },
    Column { name: "in_flight_bytes", ty: Ty::I64, unit: "bytes", doc: "Bytes sent and not yet acknowledged.", get: |_, q, _| Cell::I(signed(q.in_flight)) },
];

const FLOW_RATES: &[Column<crate::FlowRate>] = &[
    Column { name: "t_ms", ty: Ty::F64, unit: "ms", doc: "End of the window (metrics.flow_rate_window_ms).", get: |_, r, _| Cell::F(r.0.as_ms_f64()) },
    Column {
        name: "flow_id",
        ty: Ty::I64,
        unit: "",
        doc: "The flow; -1 for UDP background.",
        get: |_, r, _| Cell::I(if r.1 == u32::MAX { -1 } else { r.1 as i64 }),
    },
    Column {
        name: "bytes",
        ty: Ty::I64,
        unit: "bytes",
        doc: "Bytes newly in order at the receiving transport in the window.",
        get: |_, r, _| Cell::I(signed(r.2)),
    },
    Column {
        name: "gbps",
        ty: Ty::F64,
        unit: "Gb/s",
        doc: "Receive-side goodput over the window.",
        get: |_, r, o| Cell::F(r.2 as f64 * 8.0 / o.flow_rate_window.map_or(f64::NAN, |w| w.as_secs_f64()) / 1e9),
    },
];

const SCHEME_SAMPLES: &[Column<lbsim_lb::SchemeSample>] = &[
    Column { name: "t_us", ty: Ty::F64, unit: "µs", doc: "Sample time (metrics.scheme_sample_interval_us).", get: |_, s, _| Cell::F(s.0.as_us_f64()) },
    Column {
        name: "metric",
        ty: Ty::Str,
        unit: "",
        doc: "What is sampled (AG: granularity_pkts, congested_paths, owd_us, true_owd_us; VMS: per-flow windows).",
        get: |_, s, _| Cell::S(Cow::Borrowed(s.1)),
    },
    Column { name: "a", ty: Ty::I64, unit: "", doc: "First key (AG: source leaf).", get: |_, s, _| Cell::I(s.2 as i64) },
    Column { name: "b", ty: Ty::I64, unit: "", doc: "Second key (AG: destination leaf, or leaf x 64 + path for delays).", get: |_, s, _| Cell::I(s.3 as i64) },
    Column { name: "value", ty: Ty::F64, unit: "", doc: "The sampled value, in the unit its metric names.", get: |_, s, _| Cell::F(s.4) },
];

const PCAP: &[Column<crate::metrics::CapturedPacket>] = &[
    Column { name: "t_ps", ty: Ty::I64, unit: "ps", doc: "When the packet's transmission started.", get: |_, c, _| Cell::I(signed(c.t.0)) },
    Column { name: "port", ty: Ty::Str, unit: "", doc: "Captured egress port (metrics.pcap_ports).", get: |_, c, o| port_name(o, c.port) },
    Column { name: "src", ty: Ty::I64, unit: "host", doc: "Source host index (-1 if not a host).", get: |_, c, _| Cell::I(host(c.src)) },
    Column { name: "dst", ty: Ty::I64, unit: "host", doc: "Destination host index (-1 if not a host).", get: |_, c, _| Cell::I(host(c.dst)) },
    Column { name: "sport", ty: Ty::I64, unit: "", doc: "Transport source port.", get: |_, c, _| Cell::I(c.sport as i64) },
    Column { name: "dport", ty: Ty::I64, unit: "", doc: "Transport destination port.", get: |_, c, _| Cell::I(c.dport as i64) },
    Column {
        name: "outer_sport",
        ty: Ty::I64,
        unit: "",
        doc: "Outer (encapsulation) source port; -1 if not encapsulated.",
        get: |_, c, _| Cell::I(c.outer_sport.map_or(-1, |p| p as i64)),
    },
    Column { name: "kind", ty: Ty::Str, unit: "", doc: "\"tcp\", \"udp\", \"rdma\" (RoCEv2: seq is the PSN, flags 0 data / 1 ACK / 2 NACK, ack the CNP flag, wnd the queue pair), \"pfc\" (flags 1 pause, 0 resume) or \"control\".", get: |_, c, _| Cell::S(Cow::Borrowed(c.kind)) },
    Column { name: "size", ty: Ty::I64, unit: "bytes", doc: "Packet size on the wire.", get: |_, c, _| Cell::I(c.size as i64) },
    Column { name: "ttl", ty: Ty::I64, unit: "hops", doc: "Time to live.", get: |_, c, _| Cell::I(c.ttl as i64) },
    Column {
        name: "ect",
        ty: Ty::Bool,
        unit: "",
        doc: "ECN-capable transport, as the network sees the packet (the outer header of an encapsulated one): as the sender or its edge set it.",
        get: |_, c, _| Cell::B(c.ect),
    },
    Column { name: "ce", ty: Ty::Bool, unit: "", doc: "Congestion experienced: a port marked it (this one included).", get: |_, c, _| Cell::B(c.ce) },
    Column {
        name: "inner_ect",
        ty: Ty::Bool,
        unit: "",
        doc: "ECN-capable transport as the sending transport set it (TCP segments with payload when the transport is ECN-capable): the inner header of an encapsulated packet.",
        get: |_, c, _| Cell::B(c.inner_ect),
    },
    Column { name: "seq", ty: Ty::I64, unit: "bytes", doc: "TCP sequence number.", get: |_, c, _| Cell::I(signed(c.seq)) },
    Column { name: "ack", ty: Ty::I64, unit: "bytes", doc: "TCP acknowledgement number.", get: |_, c, _| Cell::I(signed(c.ack)) },
    Column { name: "flags", ty: Ty::I64, unit: "", doc: "TCP flags.", get: |_, c, _| Cell::I(c.flags as i64) },
    Column { name: "wnd", ty: Ty::I64, unit: "bytes", doc: "Advertised receive window.", get: |_, c, _| Cell::I(c.wnd as i64) },
    Column { name: "len", ty: Ty::I64, unit: "bytes", doc: "TCP payload length.", get: |_, c, _| Cell::I(c.len as i64) },
    Column {
        name: "ts_val",
        ty: Ty::I64,
        unit: "ps",
        doc: "TCP timestamp option: the sender's clock when it sent the segment.",
        get: |_, c, _| Cell::I(signed(c.ts_val.0)),
    },
    Column {
        name: "ts_ecr",
        ty: Ty::I64,
        unit: "ps",
        doc: "TCP timestamp option: the echoed timestamp (0 on the SYN and on the data sender's segments, which echo nothing).",
        get: |_, c, _| Cell::I(signed(c.ts_ecr.0)),
    },
    Column {
        name: "n_sack",
        ty: Ty::I64,
        unit: "blocks",
        doc: "SACK blocks carried (0 to 3; a D-SACK block, if any, first).",
        get: |_, c, _| Cell::I(c.n_sack as i64),
    },
    Column {
        name: "sack1_start",
        ty: Ty::I64,
        unit: "bytes",
        doc: "First byte of SACK block 1, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 0 { signed(c.sack[0].0) } else { -1 }),
    },
    Column {
        name: "sack1_end",
        ty: Ty::I64,
        unit: "bytes",
        doc: "End (one past the last byte) of SACK block 1, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 0 { signed(c.sack[0].1) } else { -1 }),
    },
    Column {
        name: "sack2_start",
        ty: Ty::I64,
        unit: "bytes",
        doc: "First byte of SACK block 2, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 1 { signed(c.sack[1].0) } else { -1 }),
    },
    Column {
        name: "sack2_end",
        ty: Ty::I64,
        unit: "bytes",
        doc: "End (one past the last byte) of SACK block 2, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 1 { signed(c.sack[1].1) } else { -1 }),
    },
    Column {
        name: "sack3_start",
        ty: Ty::I64,
        unit: "bytes",
        doc: "First byte of SACK block 3, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 2 { signed(c.sack[2].0) } else { -1 }),
    },
    Column {
        name: "sack3_end",
        ty: Ty::I64,
        unit: "bytes",
        doc: "End (one past the last byte) of SACK block 3, as `seq`; -1 if absent.",
        get: |_, c, _| Cell::I(if c.n_sack > 2 { signed(c.sack[2].1) } else { -1 }),
    },
    Column {
        name: "sack_ok",
        ty: Ty::Bool,
        unit: "",
        doc: "The run's TCP uses SACK (transport.sack): its SYNs carry SACK-permitted.",
        get: |_, c, _| Cell::B(c.sack_ok),
    },
];

fn host(h: u32) -> i64 {
    if h == u32::MAX {
        -1
    } else {
        h as i64
    }
}

fn flow_columns() -> impl Iterator<Item = &'static Column<FlowRecord>> {
    FLOW_HEAD.iter().chain(COUNTER_COLUMNS).chain(FLOW_TAIL)
}

fn info<'a, R: 'a>(name: &'static str, row: &'static str, cols: impl Iterator<Item = &'a Column<R>>) -> TableInfo {
    TableInfo { name, row, columns: cols.map(|c| ColumnInfo { name: c.name, ty: c.ty, unit: c.unit, doc: c.doc }).collect() }
}

/// Every output table and its columns, in output order.
pub fn tables() -> Vec<TableInfo> {
    vec![
        info("flows", "one row per flow, unfinished and never-started ones included", flow_columns()),
        info("ports", "one row per egress port: totals at the end of the run", PORTS.iter()),
        info("jobs", "one row per collective job and iteration started ([[jobs]])", JOBS.iter()),
        info("steps", "one row per collective job, iteration started and step", STEPS.iter()),
        info("links", "one row per sampled port and window (metrics.link_samplers)", LINKS.iter()),
        info("queues", "one row per sampled port and sample (metrics.queue_samplers)", QUEUES.iter()),
        info("cwnd", "one row per busy connection and sample (metrics.cwnd_sample_interval_us)", CWND.iter()),
        info("qp_rates", "RDMA: one row per busy queue pair and sample (metrics.cwnd_sample_interval_us)", QP_RATES.iter()),
        info("flow_rates", "one row per flow and window with bytes received (metrics.flow_rate_window_ms)", FLOW_RATES.iter()),
        info("scheme_samples", "one row per scheme metric and sample (metrics.scheme_sample_interval_us)", SCHEME_SAMPLES.iter()),
        info("pcap", "one row per captured packet (metrics.pcap_ports; written as .pcap files, not Parquet: docs/pcap.md)", PCAP.iter()),
    ]
}

fn cells<'a, R: 'a>(cols: impl Iterator<Item = &'a Column<R>>, rows: &[R], out: &RunOutput) -> Vec<(&'static str, Cells)> {
    cols.map(|c| {
        let vals = rows.iter().enumerate().map(|(i, r)| (c.get)(i, r, out));
        let col = match c.ty {
            Ty::I64 => Cells::I64(
                vals.map(|v| match v {
                    Cell::I(x) => Some(x),
                    Cell::Null => None,
                    _ => unreachable!("{}: not an integer", c.name),
                })
                .collect(),
            ),
            Ty::F64 => Cells::F64(
                vals.map(|v| match v {
                    Cell::F(x) => Some(x),
                    Cell::Null => None,
                    _ => unreachable!("{}: not a float", c.name),
                })
                .collect(),
            ),
            Ty::Bool => Cells::Bool(
                vals.map(|v| match v {
                    Cell::B(x) => Some(x),
                    Cell::Null => None,
                    _ => unreachable!("{}: not a bool", c.name),
                })
                .collect(),
            ),
            Ty::Str => Cells::Str(
                vals.map(|v| match v {
                    Cell::S(x) => Some(x.into_owned()),
                    Cell::Null => None,
                    _ => unreachable!("{}: not a string", c.name),
                })
                .collect(),
            ),
        };
        (c.name, col)
    })
    .collect()
}

/// Every table of a run, column by column, in [`tables`]' order.
pub fn table_cells(out: &RunOutput) -> Vec<(&'static str, Vec<(&'static str, Cells)>)> {
    vec![
        ("flows", cells(flow_columns(), &out.flows, out)),
        ("ports", cells(PORTS.iter(), &out.ports, out)),
        ("jobs", cells(JOBS.iter(), &out.jobs, out)),
        ("steps", cells(STEPS.iter(), &out.steps, out)),
        ("links", cells(LINKS.iter(), &out.link_samples, out)),
        ("queues", cells(QUEUES.iter(), &out.queue_samples, out)),
        ("cwnd", cells(CWND.iter(), &out.cwnd_samples, out)),
        ("qp_rates", cells(QP_RATES.iter(), &out.qp_rates, out)),
        ("flow_rates", cells(FLOW_RATES.iter(), &out.flow_rates, out)),
        ("scheme_samples", cells(SCHEME_SAMPLES.iter(), &out.scheme_samples, out)),
        ("pcap", cells(PCAP.iter(), &out.pcap, out)),
    ]
}

/// A hash of every cell of the flows table (FNV-1a over each value's text),
/// so two builds can be checked for identical per-flow results without
/// writing the table.
pub fn flows_digest(out: &RunOutput) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    let mut eat = |s: &str| {
        for b in s.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100000001b3);
        }
    };
    for (i, f) in out.flows.iter().enumerate() {
        for c in flow_columns() {
            match (c.get)(i, f, out) {
                Cell::I(x) => eat(&x.to_string()),
                Cell::F(x) => eat(&format!("{x:?}")),
                Cell::B(x) => eat(if x { "1" } else { "0" }),
                Cell::S(x) => eat(&x),
                Cell::Null => eat("null"),
            }
            eat(";");
        }
    }
    h
}

/// docs/metrics.md's tables section, generated from [`tables`].
pub fn markdown() -> String {
    let mut s = String::new();
    for t in tables() {
        let file = if t.name == "pcap" { "`<port>.pcap`".to_string() } else { format!("`{}.parquet`", t.name) };
        s += &format!("### {} ({file}; `Result.{}`)\n\n{}.\n\n| column | type | unit | meaning |\n|---|---|---|---|\n", t.name, t.name, capital(t.row));
        for c in &t.columns {
            s += &format!("| `{}` | {} | {} | {} |\n", c.name, c.ty.name(), c.unit, c.doc.replace('|', "\\|"));
        }
        s += "\n";
    }
    s
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/metrics.md carries [`markdown`] between its markers; run with
    /// `LBSIM_BLESS=1` to rewrite it.
    #[test]
    fn docs_metrics_md_lists_every_column() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/metrics.md");
        let text = std::fs::read_to_string(&path).expect("docs/metrics.md exists");
        let (begin, end) = ("<!-- columns: begin (generated by `LBSIM_BLESS=1 cargo test -p lbsim-sim columns`) -->\n", "<!-- columns: end -->");
        let a = text.find(begin).expect("docs/metrics.md has the columns begin marker") + begin.len();
        let b = text.find(end).expect("docs/metrics.md has the columns end marker");
        let want = markdown();
        if std::env::var_os("LBSIM_BLESS").is_some() {
            std::fs::write(&path, format!("{}{}{}", &text[..a], want, &text[b..])).unwrap();
            return;
        }
        assert!(text[a..b] == want, "docs/metrics.md is stale: run `LBSIM_BLESS=1 cargo test -p lbsim-sim columns`");
    }

    #[test]
    fn column_names_are_unique_per_table_and_documented() {
        for t in tables() {
            let mut names: Vec<_> = t.columns.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), t.columns.len(), "{}: a column name repeats", t.name);
            assert!(t.columns.iter().all(|c| !c.doc.is_empty()), "{}: a column has no description", t.name);
        }
    }
}
