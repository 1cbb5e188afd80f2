// The k = 8 fat-tree comparison driver for htsim (bench/htsim/README.md).
//
// Built against an htsim checkout's sim/ library by bench/htsim/build.sh;
// it uses htsim's own Queue, Pipe, Route, TcpSrc, TcpSink and
// TcpRtxTimerScanner and adds only the topology, the flow list and the
// counters lbsim's bench/htsim/compare.py reads.
//
//   htsim_k8 FLOWS.cm OUTDIR [--seed N] [--rtx-scan-ms MS] [--stop-after-ms MS]
//
// FLOWS.cm is htsim's connection-matrix format: "Nodes N", "Connections M",
// then one "src->dst id I start T size S" line per flow, T in picoseconds,
// S in bytes. Each flow sends ceil(S / 1460) segments of 1,500 bytes.
//
// Model (bench/htsim/k8.toml is the same in lbsim): k = 8 fat-tree, 128
// hosts, every link 10 Gb/s and 1 us; every switch port a drop-tail Queue
// of 150,000 bytes; every host NIC a Queue that never fills (data and the
// ACKs a host returns share it); one random shortest path per flow, ACKs on
// its reverse; TcpSrc with IW 10, no initial ssthresh, a SYN exchange,
// htsim's 3 s initial and 250 ms minimum RTO, and its timer scan (10 ms).
//
// OUTDIR/flows.txt: one line per flow "id src dst size start_us finish_us
// fct_us data_pkts_sent retransmits timeouts fast_recoveries" (id = the .cm
// id, size = S); OUTDIR/summary.txt: key=value totals (drops_switch, ...);
// OUTDIR/queue_drops.txt: drops per switch queue, htsim's names
// (CS/US/LS = core/aggregation/ToR switch, DST = host).

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "config.h"
#include "eventlist.h"
#include "network.h"
#include "pipe.h"
#include "queue.h"
#include "route.h"
#include "tcp.h"

namespace {

constexpr int K = 8;
constexpr int HOSTS = K * K * K / 4;      // 128
constexpr int TORS = K * K / 2;           // 32, K/2 per pod
constexpr int AGGS = K * K / 2;           // 32, K/2 per pod
constexpr int CORES = K * K / 4;          // 16
constexpr int PER_TOR = K / 2;            // hosts under a ToR
constexpr int PER_POD = K * K / 4;        // hosts in a pod
constexpr uint64_t LINK_MBPS = 10000;
constexpr double LINK_US = 1.0;
constexpr int PKT_BYTES = 1500;           // data packet on the wire
constexpr int PAYLOAD = 1460;             // bytes of a flow per segment
constexpr mem_b SWITCH_QUEUE = 100 * PKT_BYTES;
constexpr mem_b HOST_QUEUE = (mem_b)1000000 * PKT_BYTES;

struct Hop {
    Queue* q;
    Pipe* p;
};

// One direction of one link: htsim's queue and pipe, named as htsim's
// FatTreeTopology names them.
Hop make_hop(const std::string& name, mem_b size, std::vector<Queue*>& all) {
    Queue* q = new Queue(speedFromMbps(LINK_MBPS), size, EventList::getTheEventList(), nullptr);
    q->forceName(name);
    Pipe* p = new Pipe(timeFromUs(LINK_US), EventList::getTheEventList());
    all.push_back(q);
    return {q, p};
}

struct FlowCounters {
    uint64_t id = 0, size = 0, segments = 0;
    int src = 0, dst = 0;
    simtime_picosec start = 0, finish = 0;
    bool done = false;
    uint64_t timeouts = 0;
};

int g_completed = 0;
uint64_t g_acks = 0;

// TcpSrc with what htsim's does not report: how many timeouts fired.
class CountingTcpSrc : public TcpSrc {
public:
    CountingTcpSrc(FlowCounters* c) : TcpSrc(nullptr, nullptr, EventList::getTheEventList()), _c(c) {}
    void doNextEvent() override {
        if (_rtx_timeout_pending) _c->timeouts++;
        TcpSrc::doNextEvent();
    }
private:
    FlowCounters* _c;
};

// TcpSink that notes when the flow's last byte arrives in order (the FCT's
// end, as lbsim's) and counts the ACKs it sends (one per packet).
class CountingTcpSink : public TcpSink {
public:
    CountingTcpSink(FlowCounters* c) : _c(c) {}
    void receivePacket(Packet& pkt) override {
        g_acks++;
        TcpSink::receivePacket(pkt);
        // the SYN is sequence number 1, data segments 2 .. 1 + n * 1500
        if (!_c->done && _cumulative_ack >= 1 + _c->segments * (uint64_t)PKT_BYTES) {
            _c->done = true;
            _c->finish = EventList::now();
            g_completed++;
        }
    }
private:
    FlowCounters* _c;
};

[[noreturn]] void die(const std::string& msg) {
    std::cerr << "htsim_k8: " << msg << std::endl;
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) die("usage: htsim_k8 FLOWS.cm OUTDIR [--seed N] [--rtx-scan-ms MS] [--stop-after-ms MS]");
    std::string cm_path = argv[1], outdir = argv[2];
    uint64_t seed = 1;
    double scan_ms = 10, stop_after_ms = 20000;
    for (int i = 3; i < argc; i += 2) {
        if (i + 1 >= argc) die(std::string(argv[i]) + ": missing value");
        if (!strcmp(argv[i], "--seed")) seed = std::strtoull(argv[i + 1], nullptr, 10);
        else if (!strcmp(argv[i], "--rtx-scan-ms")) scan_ms = std::atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--stop-after-ms")) stop_after_ms = std::atof(argv[i + 1]);
        else die(std::string("unknown option ") + argv[i]);
    }

    Packet::set_packet_size(PKT_BYTES);
    EventList& ev = EventList::getTheEventList();

    // --- the connection matrix ---
    std::ifstream cm(cm_path);
    if (!cm) die(cm_path + ": cannot read");
    std::vector<FlowCounters> flows;
    std::string line;
    while (std::getline(cm, line)) {
        std::istringstream ls(line);
        std::string pair, kw_id, kw_start, kw_size;
        uint64_t id, start, size;
        if (!(ls >> pair >> kw_id >> id >> kw_start >> start >> kw_size >> size)) continue;
        size_t arrow = pair.find("->");
        if (arrow == std::string::npos || kw_id != "id" || kw_start != "start" || kw_size != "size") continue;
        FlowCounters f;
        f.src = std::stoi(pair.substr(0, arrow));
        f.dst = std::stoi(pair.substr(arrow + 2));
        if (f.src < 0 || f.src >= HOSTS || f.dst < 0 || f.dst >= HOSTS || f.src == f.dst)
            die(cm_path + ": flow id " + std::to_string(id) + ": hosts must differ and lie in 0.." + std::to_string(HOSTS - 1));
        f.id = id;
        f.start = start;
        f.size = size;
        f.segments = (size + PAYLOAD - 1) / PAYLOAD;
        if (f.segments == 0) f.segments = 1;
        flows.push_back(f);
    }
    if (flows.empty()) die(cm_path + ": no 'src->dst id I start T size S' lines");

    // --- the fat-tree: one queue + pipe per link direction ---
    std::vector<Queue*> switch_queues, host_queues;
    std::vector<Hop> host_up(HOSTS), tor_down(HOSTS);                  // host -> ToR, ToR -> host
    std::vector<std::vector<Hop>> tor_up(TORS, std::vector<Hop>(K / 2));  // ToR -> agg j of its pod
    std::vector<std::vector<Hop>> agg_down(AGGS, std::vector<Hop>(K / 2));  // agg -> ToR t of its pod
    std::vector<std::vector<Hop>> agg_up(AGGS, std::vector<Hop>(K / 2));    // agg j -> core j*K/2 + c
    std::vector<std::vector<Hop>> core_down(CORES, std::vector<Hop>(K));    // core -> agg of pod p
    for (int h = 0; h < HOSTS; h++) {
        int t = h / PER_TOR;
        host_up[h] = make_hop("SRC" + std::to_string(h) + "->LS" + std::to_string(t) + "(0)", HOST_QUEUE, host_queues);
        tor_down[h] = make_hop("LS" + std::to_string(t) + "->DST" + std::to_string(h) + "(0)", SWITCH_QUEUE, switch_queues);
    }
    for (int t = 0; t < TORS; t++) {
        int pod = t / (K / 2);
        for (int j = 0; j < K / 2; j++) {
            int a = pod * (K / 2) + j;
            tor_up[t][j] = make_hop("LS" + std::to_string(t) + "->US" + std::to_string(a) + "(0)", SWITCH_QUEUE, switch_queues);
            agg_down[a][t % (K / 2)] = make_hop("US" + std::to_string(a) + "->LS" + std::to_string(t) + "(0)", SWITCH_QUEUE, switch_queues);
        }
    }
    for (int a = 0; a < AGGS; a++) {
        int pod = a / (K / 2), j = a % (K / 2);
        for (int c = 0; c < K / 2; c++) {
            int core = j * (K / 2) + c;
            agg_up[a][c] = make_hop("US" + std::to_string(a) + "->CS" + std::to_string(core) + "(0)", SWITCH_QUEUE, switch_queues);
            core_down[core][pod] = make_hop("CS" + std::to_string(core) + "->US" + std::to_string(a) + "(0)", SWITCH_QUEUE, switch_queues);
        }
    }

    // The hops of every shortest path src -> dst (1, K/2 or K^2/4 of them).
    auto paths = [&](int s, int d) {
        std::vector<std::vector<Hop>> out;
        int ts = s / PER_TOR, td = d / PER_TOR, ps = s / PER_POD, pd = d / PER_POD;
        if (ts == td) {
            out.push_back({host_up[s], tor_down[d]});
        } else if (ps == pd) {
            for (int j = 0; j < K / 2; j++) {
                int a = ps * (K / 2) + j;
                out.push_back({host_up[s], tor_up[ts][j], agg_down[a][td % (K / 2)], tor_down[d]});
            }
        } else {
            for (int j = 0; j < K / 2; j++)
                for (int c = 0; c < K / 2; c++) {
                    int as = ps * (K / 2) + j, ad = pd * (K / 2) + j, core = j * (K / 2) + c;
                    out.push_back({host_up[s], tor_up[ts][j], agg_up[as][c], core_down[core][pd],
                                   agg_down[ad][td % (K / 2)], tor_down[d]});
                }
        }
        return out;
    };
    // the same links in the other direction
    auto reverse = [&](int s, int d, const std::vector<Hop>& fwd) {
        std::vector<Hop> back;
        int ts = s / PER_TOR, td = d / PER_TOR, ps = s / PER_POD, pd = d / PER_POD;
        if (fwd.size() == 2) return std::vector<Hop>{host_up[d], tor_down[s]};
        // the aggregation index j is the position of fwd[1] among tor_up[ts]
        int j = 0;
        while (tor_up[ts][j].q != fwd[1].q) j++;
        if (fwd.size() == 4) {
            int a = ps * (K / 2) + j;
            return std::vector<Hop>{host_up[d], tor_up[td][j], agg_down[a][ts % (K / 2)], tor_down[s]};
        }
        int as = ps * (K / 2) + j, ad = pd * (K / 2) + j, c = 0;
        while (agg_up[as][c].q != fwd[2].q) c++;
        int core = j * (K / 2) + c;
        return std::vector<Hop>{host_up[d], tor_up[td][j], agg_up[ad][c], core_down[core][ps],
                                agg_down[as][ts % (K / 2)], tor_down[s]};
    };

    // --- the flows ---
    std::srand((unsigned)seed);  // path choice as htsim's example drivers: rand() % paths
    TcpRtxTimerScanner scanner(timeFromMs(scan_ms), ev);
    std::vector<CountingTcpSrc*> srcs;
    std::map<size_t, uint64_t> paths_per_pair;
    simtime_picosec last_start = 0;
    for (auto& f : flows) {
        auto all = paths(f.src, f.dst);
        paths_per_pair[all.size()]++;
        const auto& fwd = all[(size_t)std::rand() % all.size()];
        auto back = reverse(f.src, f.dst, fwd);
        auto* src = new CountingTcpSrc(&f);
        auto* sink = new CountingTcpSink(&f);
        src->set_ssthresh(0xffffffff);  // no initial ssthresh
        // TcpSrc sends while _highest_sent <= _flow_size + 1: exactly
        // `segments` data packets after the SYN
        src->_flow_size = f.segments * (uint64_t)PKT_BYTES - 1;
        Route* out = new Route();
        for (auto& h : fwd) { out->push_back(h.q); out->push_back(h.p); }
        out->push_back(sink);
        Route* in = new Route();
        for (auto& h : back) { in->push_back(h.q); in->push_back(h.p); }
        in->push_back(src);
        src->connect(*out, *in, *sink, f.start);
        scanner.registerTcp(*src);
        srcs.push_back(src);
        if (f.start > last_start) last_start = f.start;
    }

    // --- run until every flow is done or stop-after-ms past the last start ---
    simtime_picosec end = last_start + timeFromMs(stop_after_ms);
    ev.setEndtime(end);
    uint64_t events = 0;
    int n = (int)flows.size();
    while (g_completed < n && EventList::doNextEvent()) events++;

    // --- results ---
    std::ofstream fo(outdir + "/flows.txt"), so(outdir + "/summary.txt"), qo(outdir + "/queue_drops.txt");
    if (!fo || !so || !qo) die(outdir + ": cannot write flows.txt / summary.txt / queue_drops.txt");
    fo << "# id src dst size start_us finish_us fct_us data_pkts_sent retransmits timeouts fast_recoveries\n";
    uint64_t data_pkts = 0, timeouts = 0, frs = 0;
    fo.setf(std::ios::fixed);
    fo.precision(6);
    for (int i = 0; i < n; i++) {
        const auto& f = flows[i];
        const auto* s = srcs[i];
        uint64_t sent = s->_packets_sent / s->_mss;
        data_pkts += sent;
        timeouts += f.timeouts;
        frs += s->_drops;  // TcpSrc counts an entry into fast recovery as a drop
        fo << f.id << ' ' << f.src << ' ' << f.dst << ' ' << f.size << ' ' << timeAsUs(f.start) << ' ';
        if (f.done) fo << timeAsUs(f.finish) << ' ' << timeAsUs(f.finish - f.start);
        else fo << "nan nan";
        fo << ' ' << sent << ' ' << (sent > f.segments ? sent - f.segments : 0) << ' ' << f.timeouts << ' ' << s->_drops << '\n';
    }
    uint64_t drops_switch = 0, drops_host = 0;
    qo << "# queue drops\n";
    for (auto* q : switch_queues) {
        drops_switch += q->num_drops();
        if (q->num_drops()) qo << q->nodename() << ' ' << q->num_drops() << '\n';
    }
    for (auto* q : host_queues) drops_host += q->num_drops();
    so << "config: cm=" << cm_path << " n=" << n << " k=" << K << " hosts=" << HOSTS << " gbps=" << LINK_MBPS / 1000
       << " link_us=" << LINK_US << " q_bytes=" << SWITCH_QUEUE << " hostq_bytes=" << HOST_QUEUE
       << " rtx_scan_ms=" << scan_ms << " payload=" << PAYLOAD << " mss=" << PKT_BYTES << " seed=" << seed
       << " stop_after_ms=" << stop_after_ms << '\n';
    so << "flows=" << n << "\ncompleted=" << g_completed << "\nunfinished=" << n - g_completed << "\nevents=" << events
       << "\nsim_time_s=" << timeAsSec(EventList::now()) << "\ndata_pkts_sent=" << data_pkts << "\nacks_sent=" << g_acks
       << "\ndrops_switch=" << drops_switch << "\ndrops_host=" << drops_host << "\ntimeouts=" << timeouts
       << "\nfast_recoveries=" << frs << "\npaths_per_pair=";
    bool first = true;
    for (auto& kv : paths_per_pair) {
        so << (first ? "" : ",") << kv.first << ':' << kv.second;
        first = false;
    }
    so << '\n';
    std::cerr << "htsim_k8: " << g_completed << " of " << n << " flows completed, " << events << " events, simulated "
              << timeAsSec(EventList::now()) << " s" << std::endl;
    return 0;
}
