//! Collective jobs (`[[jobs]]`): the steps of each iteration started by
//! dependency, not by a clock.
//!
//! An iteration starts every rank's step 0. A flow of a job completes when
//! its receiver has every byte in order (`tcp_input` / `mp_receive` queue it
//! in `done_coll`); a rank that has then received everything sent to it in
//! steps `0..=s` starts its step `s + 1` at that instant. The iteration ends
//! with its last flow; the next starts `gap_us` later (all ranks together:
//! the compute phase between iterations is a barrier). Each send of a step
//! is split evenly over the rank pair's `channels` connections, opened once
//! per job and pair, established (collective libraries set up their
//! connections before the first operation) and never closed.

use super::{Ev, World};
use crate::metrics::{path_profiles, PathProfile};
use lbsim_engine::{Bytes, SimTime};
use lbsim_workload::{CollOp, FlowSpec, Send};

/// A job as the scenario gives it (`[[jobs]]`, ranks placed on hosts).
pub(crate) struct JobSpec {
    pub name: String,
    pub op: CollOp,
    /// Rank -> host index.
    pub hosts: Vec<u32>,
    pub size: u64,
    pub iterations: u32,
    /// The pause between iterations.
    pub gap: SimTime,
    pub channels: u32,
    pub start: SimTime,
}

/// One iteration of a job: when it started and ended.
#[derive(Clone, Copy, Debug)]
pub struct IterRun {
    pub start: SimTime,
    pub end: Option<SimTime>,
}

/// One step of one iteration, over every rank.
#[derive(Clone, Copy, Debug)]
pub struct StepRun {
    /// The first of its flows' starts (`SimTime::MAX` before any).
    pub start: SimTime,
    /// The last of its flows' finishes, once all have finished.
    pub end: Option<SimTime>,
    pub flows: u32,
    pub done: u32,
    pub bytes: u64,
    /// The finished flow with the longest FCT (`u32::MAX`: none yet), and
    /// the index among its source leaf's uplinks of the uplink its
    /// connection last sent data on (`u32::MAX`: not recorded).
    pub slowest: u32,
    pub slowest_fct: SimTime,
    pub slowest_uplink: u32,
}

/// A job: its plan, its progress through the current iteration, and the
/// records of every iteration and step so far.
pub(crate) struct JobRun {
    pub spec: JobSpec,
    /// Per step, its sends.
    pub steps: Vec<Vec<Send>>,
    /// Per step and rank, the indices of the rank's sends in `steps[step]`.
    by_rank: Vec<Vec<Vec<u32>>>,
    /// Per step and rank, the flows the rank receives in the step.
    expect: Vec<Vec<u32>>,
    /// Host index -> rank (`u32::MAX`: not in the job).
    rank_of: Vec<u32>,
    /// The idle non-blocking fabric's time of each step (see [`World::add_job`]).
    pub ideal_steps: Vec<SimTime>,
    // progress through the current iteration
    recv_left: Vec<Vec<u32>>,
    /// Per rank: steps fully received, and the next step to start.
    recv_done: Vec<u32>,
    next_step: Vec<u32>,
    flows_left: u64,
    pub iters: Vec<IterRun>,
    /// Iteration-major: iteration i's step s is `i * steps.len() + s`.
    pub step_runs: Vec<StepRun>,
}

impl JobRun {
    pub fn ideal_iteration(&self) -> SimTime {
        self.ideal_steps.iter().fold(SimTime::ZERO, |a, &b| a + b)
    }

    pub fn finished(&self) -> bool {
        self.iters.len() as u32 == self.spec.iterations && self.iters.last().is_some_and(|i| i.end.is_some())
    }

    /// `bytes` split into `channels` flows: the first `bytes % channels`
    /// one byte larger.
    fn channel_bytes(&self, bytes: u64, ch: u32) -> u64 {
        bytes / self.spec.channels as u64 + u64::from((ch as u64) < bytes % self.spec.channels as u64)
    }
}

/// The bytes on the wire of a `b`-byte flow: its payload plus one header
/// per segment.
fn wire(b: u64, mss: u64, hb: u64) -> u64 {
    b + b.div_ceil(mss) * hb
}

impl World {
    /// Adds a job whose ranks sit on `hosts`; `op` and the sizes are
    /// validated. Its ideal step times are computed here, on the idle
    /// fabric at t = 0: a step takes the store-and-forward latency of the
    /// first full packet over the slowest of its sends' best routes, plus
    /// the busiest host's remaining wire bytes (payload plus one header per
    /// segment, every channel's flows) at that host's link rate, sending or
    /// receiving — the fabric non-blocking, no slow start, no ACK bytes on
    /// the reverse link; for one flow this is the flow's ideal FCT.
    pub(super) fn add_job(&mut self, spec: JobSpec) {
        let n = spec.hosts.len() as u32;
        let steps = spec.op.steps(n, spec.size);
        let mut by_rank = vec![vec![vec![]; n as usize]; steps.len()];
        let mut expect = vec![vec![0u32; n as usize]; steps.len()];
        for (s, sends) in steps.iter().enumerate() {
            for (k, x) in sends.iter().enumerate() {
                by_rank[s][x.from as usize].push(k as u32);
                expect[s][x.to as usize] += spec.channels;
            }
        }
        let mut rank_of = vec![u32::MAX; self.topo.num_hosts()];
        for (r, &h) in spec.hosts.iter().enumerate() {
            rank_of[h as usize] = r as u32;
        }
        let mut job = JobRun {
            spec,
            steps,
            by_rank,
            expect,
            rank_of,
            ideal_steps: vec![],
            recv_left: vec![],
            recv_done: vec![],
            next_step: vec![],
            flows_left: 0,
            iters: vec![],
            step_runs: vec![],
        };
        job.ideal_steps = (0..job.steps.len()).map(|s| self.ideal_step(&job, s)).collect();
        self.jobs.push(job);
    }

    fn ideal_step(&self, job: &JobRun, s: usize) -> SimTime {
        let (mss, hb) = match &self.rdma {
            Some(r) => (r.cfg.mtu_bytes as u64, r.cfg.header_bytes as u64),
            None => (self.tcp.cfg.mss as u64, self.tcp.cfg.header_bytes as u64),
        };
        let nh = self.topo.num_hosts();
        let (mut out, mut inb) = (vec![0u64; nh], vec![0u64; nh]);
        let mut first = vec![0u64; nh];
        let mut lat = SimTime::ZERO;
        for x in &job.steps[s] {
            let (src, dst) = (job.spec.hosts[x.from as usize], job.spec.hosts[x.to as usize]);
            for ch in 0..job.spec.channels {
                let b = job.channel_bytes(x.bytes, ch);
                out[src as usize] += wire(b, mss, hb);
                inb[dst as usize] += wire(b, mss, hb);
            }
            let pkt = x.bytes.min(mss) + hb;
            first[src as usize] = first[src as usize].max(pkt);
            first[dst as usize] = first[dst as usize].max(pkt);
            let profs: Vec<PathProfile> = path_profiles(&self.topo, &self.routing, src, dst);
            let best = profs.iter().map(|p| p.iter().fold(SimTime::ZERO, |t, &(r, d)| t + d + r.tx_time(Bytes(pkt)))).min().unwrap_or(SimTime::ZERO);
            lat = lat.max(best);
        }
        let mut ser = SimTime::ZERO;
        for h in 0..nh {
            if out[h] == 0 && inb[h] == 0 {
                continue;
            }
            let nic = self.topo.nic(self.topo.host(h as u32));
            let up = self.topo.ports[nic.idx()].rate;
            let down = self.topo.ports[self.topo.ports[nic.idx()].peer.idx()].rate;
            let t_out = up.tx_time(Bytes(out[h].saturating_sub(first[h])));
            let t_in = down.tx_time(Bytes(inb[h].saturating_sub(first[h])));
            ser = ser.max(t_out).max(t_in);
        }
        lat + ser
    }

    /// Schedules every job's first iteration.
    pub(super) fn start_jobs(&mut self) {
        for j in 0..self.jobs.len() {
            self.q.schedule_later(self.jobs[j].spec.start, Ev::Job { job: j as u32 });
        }
    }

    /// Whether every job has run all its iterations.
    pub(super) fn jobs_done(&self) -> bool {
        self.jobs.iter().all(|j| j.finished())
    }

    /// `Ev::Job`: the job's next iteration starts every rank's step 0.
    pub(super) fn job_iteration(&mut self, j: u32) {
        let now = self.now();
        let job = &mut self.jobs[j as usize];
        let n = job.spec.hosts.len();
        job.recv_left = job.expect.clone();
        job.recv_done = vec![0; n];
        job.next_step = vec![0; n];
        job.flows_left = job.steps.iter().map(|s| s.len() as u64).sum::<u64>() * job.spec.channels as u64;
        job.iters.push(IterRun { start: now, end: None });
        let blank =
            StepRun { start: SimTime::MAX, end: None, flows: 0, done: 0, bytes: 0, slowest: u32::MAX, slowest_fct: SimTime::ZERO, slowest_uplink: u32::MAX };
        job.step_runs.extend(std::iter::repeat_n(blank, job.steps.len()));
        for r in 0..n as u32 {
            self.job_advance(j, r);
        }
    }

    /// Rank `r` of job `j` starts every step whose dependencies have
    /// arrived: step `s` once steps `0..s` are fully received.
    fn job_advance(&mut self, j: u32, r: u32) {
        let job = &mut self.jobs[j as usize];
        let nsteps = job.steps.len() as u32;
        let ru = r as usize;
        while job.recv_done[ru] < nsteps && job.recv_left[job.recv_done[ru] as usize][ru] == 0 {
            job.recv_done[ru] += 1;
        }
        loop {
            let job = &mut self.jobs[j as usize];
            let s = job.next_step[ru];
            if s >= nsteps || s > job.recv_done[ru] {
                break;
            }
            job.next_step[ru] += 1;
            self.job_start_step(j, r, s);
        }
    }

    fn job_start_step(&mut self, j: u32, r: u32, s: u32) {
        let now = self.now();
        let job = &self.jobs[j as usize];
        let iter = job.iters.len() as u32 - 1;
        let rec = (iter as usize) * job.steps.len() + s as usize;
        let mut starts = vec![];
        for &k in &job.by_rank[s as usize][r as usize] {
            let x = job.steps[s as usize][k as usize];
            for ch in 0..job.spec.channels {
                let spec = FlowSpec {
                    src: job.spec.hosts[x.from as usize],
                    dst: job.spec.hosts[x.to as usize],
                    size: job.channel_bytes(x.bytes, ch),
                    start: now,
                    class: 0,
                };
                starts.push((spec, ch));
            }
        }
        for (spec, ch) in starts {
            let fid = self.flows.len() as u32;
            if self.rdma.is_some() {
                self.rdma_start_flow(spec); // a queue pair per flow
            } else {
                self.start_flow_on(spec, None, Some((j, ch)));
            }
            let fr = &mut self.flows[fid as usize];
            fr.job = j;
            fr.job_iteration = iter;
            fr.job_step = s;
            let sr = &mut self.jobs[j as usize].step_runs[rec];
            sr.start = sr.start.min(now);
            sr.flows += 1;
            sr.bytes += spec.size;
        }
    }

    /// The job flows `tcp_input` / `mp_receive` / `rdma_input` found
    /// complete (their receiver has every byte): records
    /// them, releases the steps that waited for them, ends iterations.
    pub(super) fn job_flows_done(&mut self) {
        let now = self.now();
        let done = std::mem::take(&mut self.done_coll);
        for &(f, uplink) in &done {
            let fr = &self.flows[f as usize];
            let (j, iter, s, dst) = (fr.job, fr.job_iteration, fr.job_step, fr.dst);
            let fct = now - fr.start;
            let job = &mut self.jobs[j as usize];
            let nsteps = job.steps.len();
            let sr = &mut job.step_runs[iter as usize * nsteps + s as usize];
            sr.done += 1;
            if sr.slowest == u32::MAX || fct > sr.slowest_fct {
                (sr.slowest, sr.slowest_fct, sr.slowest_uplink) = (f, fct, uplink);
            }
            if sr.done == job.steps[s as usize].len() as u32 * job.spec.channels {
                sr.end = Some(now);
            }
            let r = job.rank_of[dst as usize];
            job.recv_left[s as usize][r as usize] -= 1;
            job.flows_left -= 1;
            if job.flows_left == 0 {
                job.iters.last_mut().unwrap().end = Some(now);
                if (job.iters.len() as u32) < job.spec.iterations {
                    let at = now + job.spec.gap;
                    self.q.schedule_later(at, Ev::Job { job: j });
                }
                continue;
            }
            if job.recv_left[s as usize][r as usize] == 0 {
                self.job_advance(j, r);
            }
        }
        let mut done = done;
        done.clear();
        if self.done_coll.is_empty() {
            self.done_coll = done; // keep the allocation
        }
    }

    /// The connection (or MPTCP connection) carrying channel `ch` of job
    /// `j` from host `src` to `dst`, opened established on first use.
    pub(super) fn job_conn(&mut self, j: u32, src: u32, dst: u32, ch: u32, mptcp: bool) -> u32 {
        if !self.job_pools.contains_key(&(j, src, dst)) {
            let n = self.jobs[j as usize].spec.channels;
            let p: Vec<u32> = (0..n)
                .map(|k| if mptcp { self.new_mp(src, dst, true, false, 32 + k as u16) } else { self.new_conn(src, dst, true, false, 6000 + k as u16) })
                .collect();
            self.job_pools.insert((j, src, dst), p);
        }
        self.job_pools[&(j, src, dst)][ch as usize]
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::run_ok;
    use crate::{Scenario, SimError};

    /// `leaves` leaves of `per_leaf` hosts at 10G under `spines` spines at
    /// 10G, 2 us links; no background traffic.
    fn fabric(leaves: u32, spines: u32, per_leaf: u32) -> String {
        format!(
            "[topology]\nkind = \"leaf_spine\"\nleaves = {leaves}\nspines = {spines}\nhosts_per_leaf = {per_leaf}\nhost_rate_gbps = 10\nfabric_rate_gbps = 10\nlink_delay_us = 2\n[network]\nbuffer_pkts = 250\n[workload]\nkind = \"collective\"\n"
        )
    }

    #[test]
    fn two_rank_all_reduce_on_one_idle_path_takes_the_analytic_time() {
        // H0 under L0, H1 under L1, one spine: each of the 2 steps sends
        // 8 MB each way at 10G; the ideal is 2 x (store-and-forward of one
        // packet over 4 hops + the rest at 10G)
        let size: u64 = 16_000_000;
        let out = run_ok(&fabric(2, 1, 1), &[&format!("jobs=[{{ranks=[0, 1], size_bytes={size}, iterations=2, gap_us=50}}]")]);
        assert_eq!(out.jobs.len(), 2);
        let (mss, hb) = (1448u64, 52u64); // the transport defaults
        let chunk = size / 2;
        let pkt = mss + hb;
        let wire = chunk + chunk.div_ceil(mss) * hb;
        let tx = |b: u64| b as f64 * 8.0 / 10e9 * 1e6; // µs at 10G
        let step = 4.0 * (2.0 + tx(pkt)) + tx(wire - pkt);
        for j in &out.jobs {
            assert!((j.ideal.as_us_f64() - 2.0 * step).abs() < 0.01, "ideal {} vs analytic {}", j.ideal.as_us_f64(), 2.0 * step);
            let t = j.time().unwrap().as_us_f64();
            let ratio = t / (2.0 * step);
            assert!((1.0..1.04).contains(&ratio), "iteration {} took {t} us, {ratio}x the analytic {}", j.iteration, 2.0 * step);
        }
        // the second iteration starts the gap after the first ended
        assert_eq!(out.jobs[1].start, out.jobs[0].end.unwrap() + lbsim_engine::SimTime::from_us(50));
        // busbw = size / t x 2(n-1)/n = size / t for 2 ranks
        let s = &out.summary["jobs"][0];
        assert_eq!(s["iterations_completed"], 2);
        let busbw = s["busbw_gbps"]["mean"].as_f64().unwrap();
        let t_mean = s["iteration_us"]["mean"].as_f64().unwrap();
        assert!((busbw - size as f64 * 8.0 / t_mean / 1e3).abs() < 1.0);
    }

    /// Per flow of the job: (iteration, step, src, dst, start, finish).
    fn job_flows(out: &crate::RunOutput) -> Vec<(u32, u32, u32, u32, u64, u64)> {
        out.flows.iter().filter(|f| f.job == 0).map(|f| (f.job_iteration, f.job_step, f.src, f.dst, f.start.0, f.finish.unwrap().0)).collect()
    }

    #[test]
    fn a_step_starts_exactly_when_its_dependencies_have_arrived() {
        // 8 ranks packed on 2 leaves sharing 2 spines with ECMP and 2
        // channels: unequal paths, so ranks reach their steps at different times
        for op in ["all_reduce", "all_reduce_hd", "all_gather"] {
            let out =
                run_ok(&fabric(2, 2, 4), &[&format!("jobs=[{{ranks=8, placement=\"spread\", op=\"{op}\", size_bytes=4000000, channels=2, iterations=2}}]")]);
            let fl = job_flows(&out);
            let steps = out.steps.iter().filter(|s| s.iteration == 0).count() as u32;
            let mut distinct_starts = std::collections::BTreeSet::new();
            for &(it, s, src, _, start, _) in &fl {
                // everything sent to `src` in this iteration's earlier steps
                let dep = fl.iter().filter(|g| g.0 == it && g.1 < s && g.3 == src).map(|g| g.5).max();
                let it_start = out.jobs[it as usize].start.0;
                match dep {
                    Some(d) => assert_eq!(start, d, "{op}: iteration {it} step {s} of host {src} started at {start}, its data arrived at {d}"),
                    None => assert_eq!((s, start), (0, it_start), "{op}: only step 0 starts with the iteration"),
                }
                distinct_starts.insert(start);
            }
            assert!(distinct_starts.len() as u32 > steps * 2, "{op}: ranks reached their steps at different times");
            // every flow of a step counted, iterations end with their last flow
            for j in &out.jobs {
                let last = fl.iter().filter(|g| g.0 == j.iteration).map(|g| g.5).max().unwrap();
                assert_eq!(j.end.unwrap().0, last);
            }
            let sum_step_bytes: u64 = out.steps.iter().filter(|s| s.iteration == 0).map(|s| s.bytes).sum();
            let sum_flow_bytes: u64 = out.flows.iter().filter(|f| f.job == 0 && f.job_iteration == 0).map(|f| f.size).sum();
            assert_eq!(sum_step_bytes, sum_flow_bytes);
        }
    }

    #[test]
    fn ring_all_reduce_bytes_per_rank_match_the_formula_end_to_end() {
        let (n, size) = (4u64, 4_000_000u64);
        let out = run_ok(&fabric(2, 2, 2), &[&format!("jobs=[{{ranks={n}, size_bytes={size}, channels=3}}]")]);
        let steps = out.steps.len() as u64;
        assert_eq!(steps, 2 * (n - 1));
        for h in 0..n as u32 {
            let tx: u64 = out.flows.iter().filter(|f| f.job == 0 && f.src == h).map(|f| f.size).sum();
            let rx: u64 = out.flows.iter().filter(|f| f.job == 0 && f.dst == h).map(|f| f.size).sum();
            assert_eq!((tx, rx), (2 * (n - 1) * size / n, 2 * (n - 1) * size / n), "host {h}");
        }
        assert!(out.steps.iter().all(|s| s.flows == 3 * n as u32 && s.flows_done == s.flows && s.bytes == size));
    }

    #[test]
    fn same_seed_same_jobs_and_steps_tables() {
        let sets = ["jobs=[{ranks=6, placement=\"random\", size_bytes=3000000, channels=2, iterations=2}, {ranks=4, placement=\"random\", op=\"all_to_all\", size_bytes=2000000}]", "workload.kind=\"poisson\"", "workload.flows=100", "workload.load=0.3", "lb.scheme=\"drill\""];
        let text = fabric(2, 2, 8);
        let a = run_ok(&text, &sets);
        let b = run_ok(&text, &sets);
        assert_eq!(format!("{:?}{:?}", a.jobs, a.steps), format!("{:?}{:?}", b.jobs, b.steps));
        assert_eq!(crate::columns::flows_digest(&a), crate::columns::flows_digest(&b));
        assert_eq!(a.jobs.len(), 3);
        assert!(a.jobs.iter().all(|j| j.end.is_some()));
        // another seed places the ranks elsewhere
        let mut sets2 = sets.to_vec();
        sets2.push("seed=2");
        let c = run_ok(&text, &sets2);
        let hosts = |o: &crate::RunOutput| o.flows.iter().filter(|f| f.job != u32::MAX).map(|f| f.src).collect::<std::collections::BTreeSet<_>>();
        assert_ne!(hosts(&a), hosts(&c));
    }

    #[test]
    fn bad_job_specs_fail_with_one_line_naming_the_key() {
        let cases: &[(&str, &str, &str)] = &[
            ("jobs=[{ranks=[0, 300], size_bytes=1000}]", "jobs[0].ranks", "host 300 does not exist (the fabric has 16 hosts)"),
            ("jobs=[{ranks=1, size_bytes=1000}]", "jobs[0].ranks", "at least 2 ranks"),
            ("jobs=[{ranks=[3], size_bytes=1000}]", "jobs[0].ranks", "at least 2 ranks"),
            ("jobs=[{ranks=4, size_bytes=0}]", "jobs[0].size_bytes", "must be >= 1"),
            ("jobs=[{ranks=4, size_bytes=7, channels=2}]", "jobs[0].size_bytes", "some flows would be empty"),
            ("jobs=[{ranks=17, placement=\"spread\", size_bytes=1000}]", "jobs[0].ranks", "17 ranks do not fit"),
            ("jobs=[{ranks=10, size_bytes=1000}, {ranks=7, size_bytes=1000}]", "jobs[1].ranks", "10 taken by earlier jobs"),
            ("jobs=[{ranks=[1, 2, 1], size_bytes=1000}]", "jobs[0].ranks", "appears twice"),
            ("jobs=[{ranks=6, op=\"all_reduce_hd\", size_bytes=1000}]", "jobs[0].ranks", "power-of-two"),
            ("jobs=[{ranks=4, op=\"allreduce\", size_bytes=1000}]", "jobs[0].op", "must be one of"),
            ("jobs=[{ranks=4, placement=\"tight\", size_bytes=1000}]", "jobs[0].placement", "must be \"packed\", \"spread\" or \"random\", got \"tight\""),
            ("jobs=[{ranks=4, size_bytes=1000, channels=0}]", "jobs[0].channels", "1 to 64"),
            ("jobs=[{ranks=4, size_bytes=1000, iterations=0}]", "jobs[0].iterations", ">= 1"),
            ("jobs=[{ranks=4, size_bytes=1000, gap_us=-1}]", "jobs[0].gap_us", ""),
            ("jobs=[{ranks=4, size_bytes=1000, start_us=1e30}]", "jobs[0].start_us", ""),
            ("jobs=[{ranks=4, size_bytes=1000, speed=2}]", "jobs[0]", "speed"),
            ("jobs=[]", "workload.kind", "at least one [[jobs]]"),
        ];
        let text = fabric(2, 2, 8);
        for (set, key, msg) in cases {
            let sets = vec![set.to_string()];
            let err = match Scenario::from_toml(&text, &sets) {
                Err(e) => e,
                Ok(sc) => match crate::validate(&sc, None) {
                    Err(SimError::Scenario(e)) => e,
                    other => panic!("{set}: accepted ({:?})", other.err().map(|e| e.to_string())),
                },
            };
            let line = err.to_string();
            assert!(err.field.starts_with(key), "{set}: field {:?}, want {key}", err.field);
            assert!(line.contains(msg) && !line.contains('\n'), "{set}: {line}");
        }
    }
}
