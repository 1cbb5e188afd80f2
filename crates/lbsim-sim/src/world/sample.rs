//! Samplers: link utilisation windows, queue lengths, congestion windows
//! and the scheme's own state, each on its own periodic event that stops
//! re-arming once the workload is complete; and the other measurement
//! state (per-flow goodput windows, packet capture, flowlet sizes).

use super::{Ev, World};
use crate::metrics::{FlowletObserver, LinkSample, QueueSample};
use lbsim_engine::SimTime;
use lbsim_net::{Ctx, Packet, PortId};

/// What to measure (`[metrics]`): the settings of [`Samplers`].
pub(crate) struct SampleConfig {
    /// Ports whose transmitted bytes are sampled every `link_window`.
    pub link_sample_ports: Vec<PortId>,
    pub link_window: SimTime,
    /// Ports whose queue length is sampled every `queue_interval`.
    pub queue_sample_ports: Vec<PortId>,
    pub queue_interval: SimTime,
    /// Scheme state samples every `scheme_interval`.
    pub scheme_interval: Option<SimTime>,
    /// `metrics.cwnd_sample_interval_us`.
    pub cwnd_interval: Option<SimTime>,
    /// Receive-side goodput window (`metrics.flow_rate_window_ms`).
    pub flow_rate_window: Option<SimTime>,
    /// Ports to capture (indexed by port; empty: none) and how many
    /// packets may be.
    pub pcap_port: Vec<bool>,
    pub pcap_left: u64,
    /// Flowlet sizes at the senders' NICs (`metrics.flowlet_gaps_us`).
    pub flowlet_obs: Option<FlowletObserver>,
}

/// The measurement state of a run: the settings and what was recorded.
pub(crate) struct Samplers {
    pub link_sample_ports: Vec<PortId>,
    pub link_window: SimTime,
    link_last_bytes: Vec<u64>,
    pub link_samples: Vec<LinkSample>,
    pub queue_sample_ports: Vec<PortId>,
    pub queue_interval: SimTime,
    pub queue_samples: Vec<QueueSample>,
    /// Scheme state samples (time, metric, a, b, value) every `scheme_interval`.
    pub scheme_interval: Option<SimTime>,
    pub scheme_samples: Vec<lbsim_lb::SchemeSample>,
    /// Congestion window samples: (time, flow id, connection, cwnd bytes,
    /// ssthresh bytes) every `cwnd_interval`.
    pub cwnd_interval: Option<SimTime>,
    pub cwnd_samples: Vec<(SimTime, u32, u32, u64, u64)>,
    /// RDMA: every busy queue pair's rates at the same samples.
    pub qp_rates: Vec<crate::QpRateSample>,
    /// Receive-side goodput rows (window end, flow, bytes newly in order).
    pub flow_rate_window: Option<SimTime>,
    pub flow_rates: Vec<(SimTime, u32, u64)>,
    /// Ports to capture (indexed by port; empty: none), the packets captured
    /// and how many more may be.
    pub pcap_port: Vec<bool>,
    pub pcap: Vec<(SimTime, PortId, Packet)>,
    pub pcap_left: u64,
    pub flowlet_obs: Option<FlowletObserver>,
}

impl Samplers {
    pub fn new(c: SampleConfig) -> Samplers {
        Samplers {
            link_last_bytes: vec![0; c.link_sample_ports.len()],
            link_sample_ports: c.link_sample_ports,
            link_window: c.link_window,
            link_samples: Vec::new(),
            queue_sample_ports: c.queue_sample_ports,
            queue_interval: c.queue_interval,
            queue_samples: Vec::new(),
            scheme_interval: c.scheme_interval,
            scheme_samples: Vec::new(),
            cwnd_interval: c.cwnd_interval,
            cwnd_samples: Vec::new(),
            qp_rates: Vec::new(),
            flow_rate_window: c.flow_rate_window,
            flow_rates: Vec::new(),
            pcap_port: c.pcap_port,
            pcap: Vec::new(),
            pcap_left: c.pcap_left,
            flowlet_obs: c.flowlet_obs,
        }
    }
}

impl World {
    /// Schedules each configured sampler's first sample.
    pub(super) fn start_samplers(&mut self) {
        let s = &self.samplers;
        if !s.link_sample_ports.is_empty() {
            self.q.schedule(s.link_window, Ev::SampleLinks);
        }
        if !s.queue_sample_ports.is_empty() {
            self.q.schedule(SimTime::ZERO, Ev::SampleQueues);
        }
        if let Some(dt) = s.scheme_interval {
            self.q.schedule(dt, Ev::SampleScheme);
        }
        if let Some(dt) = s.cwnd_interval {
            self.q.schedule(dt, Ev::SampleCwnd);
        }
    }

    /// The scheme's own state, stamped with the time.
    pub(super) fn sample_scheme(&mut self) {
        let now = self.now();
        let n = self.samplers.scheme_samples.len();
        let mut out = std::mem::take(&mut self.samplers.scheme_samples);
        self.lb.sample(&ctx!(self), &mut out);
        self.samplers.scheme_samples = out;
        for r in &mut self.samplers.scheme_samples[n..] {
            r.0 = now;
        }
        if !self.finished() {
            self.q.schedule_later(now + self.samplers.scheme_interval.unwrap(), Ev::SampleScheme);
        }
    }

    pub(super) fn sample_links(&mut self) {
        let now = self.now();
        for (i, &p) in self.samplers.link_sample_ports.iter().enumerate() {
            let b = self.ports[p.idx()].transmitted_bytes(now);
            self.samplers.link_samples.push(LinkSample { t: now, port: p, bytes: b - self.samplers.link_last_bytes[i] });
            self.samplers.link_last_bytes[i] = b;
        }
        if !self.finished() {
            self.q.schedule_later(now + self.samplers.link_window, Ev::SampleLinks);
        }
    }

    /// Samples the congestion window of every connection with data
    /// outstanding or still to send (AG Fig. 3b; an MPTCP subflow is
    /// labelled with its connection's flow).
    pub(super) fn sample_cwnd(&mut self) {
        let now = self.now();
        if let Some(r) = &self.rdma {
            r.sample_rates(now, &mut self.samplers.qp_rates);
        }
        for (i, c) in self.tcp.conns.iter().enumerate() {
            let Some(c) = c else { continue };
            if c.sender.app_end() <= c.sender.snd_una() {
                continue; // idle
            }
            let ends = match c.parent {
                u32::MAX => &c.flow_ends,
                m => match &self.tcp.mps[m as usize] {
                    Some(mp) => &mp.flow_ends,
                    None => &c.flow_ends,
                },
            };
            // a flow already delivered in full is over, whatever ACKs remain
            let Some(&(_, flow)) = ends.front() else { continue };
            self.samplers.cwnd_samples.push((now, flow, i as u32, c.sender.cwnd(), c.sender.ssthresh()));
        }
        if !self.finished() {
            self.q.schedule_later(now + self.samplers.cwnd_interval.unwrap(), Ev::SampleCwnd);
        }
    }

    pub(super) fn sample_queues(&mut self) {
        let now = self.now();
        for &p in &self.samplers.queue_sample_ports {
            let q = &self.ports[p.idx()];
            self.samplers.queue_samples.push(QueueSample { t: now, port: p, pkts: q.qlen_pkts(now), bytes: q.qlen_bytes(now) });
        }
        if !self.finished() {
            self.q.schedule_later(now + self.samplers.queue_interval, Ev::SampleQueues);
        }
    }
}
