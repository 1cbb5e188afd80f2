#!/usr/bin/env python3
"""Benchmark B1 in ns-3 3.44 (the `ns3` package on PyPI), for bench/b1_compare.py.

B1 is the scenario of examples/b1.toml, rebuilt in ns-3 parameter for
parameter so that both simulators can run the same flow list:

- 2 leaves, 2 spines, 2 parallel 40 Gb/s links per leaf-spine pair (4 paths
  from leaf to leaf), 16 hosts per leaf on 10 Gb/s links, 1 us per link,
  MTU 1500;
- every port: a 250-packet FIFO queue disc (traffic control) in front of a
  1-packet device queue, drop-tail, host NICs included;
- per-flow ECMP at every switch: a hash of the 5-tuple with a per-switch
  salt picks one of the equal-cost next hops (ns-3's own global routing
  only offers per-packet random ECMP, so a small routing protocol,
  `B1FlowEcmp` below, does it in C++);
- TCP NewReno with SACK and timestamps (1448 B of payload + 52 B of headers
  = 1500 B packets), initial window 10, delayed ACKs every 2 segments with a
  1 ms timeout, minimum RTO 10 ms, SYN timeout 10 ms, 4 MB socket buffers;
- one new connection per flow (BulkSend to a PacketSink on a port of its
  own); a flow's FCT runs from its start to the moment its sink has all its
  bytes.

Usage (run it from an empty directory: the ns-3 loader scans the current
directory for shared libraries):

    python3 -m venv /tmp/ns3-venv && /tmp/ns3-venv/bin/pip install ns3==3.44.post0
    lbsim flows examples/b1.toml --out flows.csv
    /tmp/ns3-venv/bin/python bench/ns3_b1.py --flow-list flows.csv --fct-out fct.csv

The flow list is lbsim's CSV (`src,dst,size_bytes,start_us`; hosts 0-15
under leaf 0, 16-31 under leaf 1). The script prints `key=value` lines
(flows_completed, mean_fct_ms, p99_fct_ms, drops, tx_packets_all_links,
retransmits, timeouts, fast_recoveries, wall_run_s = wall time of
Simulator::Run alone, ...) and, with --fct-out, a
CSV `id,src,dst,size,start_s,fct_s,retransmits,timeouts,fast_recoveries`
(fct_s = -1 for a flow that did not finish).

Besides the FCTs it counts each sender's loss response from its socket's
trace sources: retransmitted segments ("Retransmission"), data
retransmission timeouts (each doubles the RTO: "RTO") and entries into fast
recovery ("CongState" to CA_RECOVERY); the FCT CSV has them per flow.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from importlib.metadata import version

HOSTS_PER_LEAF = 16
LEAVES = 2
SPINES = 2
LINKS_PER_PAIR = 2

CPP = r"""
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include "ns3/applications-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"
#include <unordered_map>
#include <vector>

namespace b1 {
using namespace ns3;

// Per-flow ECMP: host routes (/32) with one or more equal-cost next hops;
// the choice is a salted hash of the 5-tuple, so a flow keeps its path.
class B1FlowEcmp : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("b1::B1FlowEcmp").SetParent<Ipv4RoutingProtocol>().SetGroupName("Internet");
        return tid;
    }

    void SetSalt(uint32_t salt) { m_salt = salt; }

    void AddRoute(uint32_t dst, uint32_t iface, uint32_t gateway)
    {
        m_routes[dst].push_back(Hop{iface, Ipv4Address(gateway)});
    }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p, const Ipv4Header& header, Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override
    {
        const Hop* hop = Pick(p, header);
        if (!hop)
        {
            sockerr = Socket::ERROR_NOROUTETOHOST;
            return nullptr;
        }
        sockerr = Socket::ERROR_NOTERROR;
        return MakeRoute(header, *hop);
    }

    bool RouteInput(Ptr<const Packet> p, const Ipv4Header& header, Ptr<const NetDevice> idev,
                    const UnicastForwardCallback& ucb, const MulticastForwardCallback& mcb,
                    const LocalDeliverCallback& lcb, const ErrorCallback& ecb) override
    {
        // local delivery is done by Ipv4ListRouting before it asks us
        const Hop* hop = Pick(p, header);
        if (!hop)
        {
            return false;
        }
        ucb(MakeRoute(header, *hop), p, header);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override {}
    void NotifyInterfaceDown(uint32_t) override {}
    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override {}
    void SetIpv4(Ptr<Ipv4> ipv4) override { m_ipv4 = ipv4; }

    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const override
    {
        *stream->GetStream() << "B1FlowEcmp: " << m_routes.size() << " destinations\n";
    }

  private:
    struct Hop
    {
        uint32_t iface;
        Ipv4Address gateway;
    };

    const Hop* Pick(Ptr<const Packet> p, const Ipv4Header& header) const
    {
        auto it = m_routes.find(header.GetDestination().Get());
        if (it == m_routes.end() || it->second.empty())
        {
            return nullptr;
        }
        const auto& hops = it->second;
        if (hops.size() == 1)
        {
            return &hops[0];
        }
        // the transport ports are the first 4 bytes after the IP header
        uint32_t ports = 0;
        if (p && p->GetSize() >= 4 && header.GetFragmentOffset() == 0)
        {
            uint8_t b[4];
            p->CopyData(b, 4);
            ports = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
        }
        uint64_t h = m_salt;
        h = Mix(h ^ header.GetSource().Get());
        h = Mix(h ^ header.GetDestination().Get());
        h = Mix(h ^ ((uint64_t(header.GetProtocol()) << 32) | ports));
        return &hops[h % hops.size()];
    }

    static uint64_t Mix(uint64_t x)
    {
        // a 64-bit finaliser (splitmix64's)
        x += 0x9e3779b97f4a7c15ULL;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }

    Ptr<Ipv4Route> MakeRoute(const Ipv4Header& header, const Hop& hop) const
    {
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetDestination(header.GetDestination());
        r->SetGateway(hop.gateway);
        r->SetOutputDevice(m_ipv4->GetNetDevice(hop.iface));
        r->SetSource(m_ipv4->GetAddress(hop.iface, 0).GetLocal());
        return r;
    }

    Ptr<Ipv4> m_ipv4;
    uint32_t m_salt{0};
    std::unordered_map<uint32_t, std::vector<Hop>> m_routes;
};

// Puts a B1FlowEcmp in front of the node's list routing (the stack's own
// static and global routing stay below it, empty).
Ptr<B1FlowEcmp> InstallEcmp(Ptr<Node> node, uint32_t salt)
{
    Ptr<Ipv4> ipv4 = node->GetObject<Ipv4>();
    Ptr<Ipv4ListRouting> list = DynamicCast<Ipv4ListRouting>(ipv4->GetRoutingProtocol());
    NS_ABORT_MSG_IF(!list, "expected Ipv4ListRouting");
    Ptr<B1FlowEcmp> ecmp = CreateObject<B1FlowEcmp>();
    ecmp->SetSalt(salt);
    list->AddRoutingProtocol(ecmp, 100);
    ecmp->SetIpv4(ipv4);
    return ecmp;
}

// Flow bookkeeping in C++: a byte count per flow at its sink, the finish
// time once all bytes are in, and a stop when the last flow is done; the
// sender's loss response counted from its socket's trace sources.
struct Flows
{
    std::vector<uint64_t> size, got;
    std::vector<double> start, finish;
    std::vector<Ptr<PacketSink>> sink;
    std::vector<Ptr<BulkSendApplication>> sender;
    // retransmitted segments, retransmission timeouts, fast-recovery entries
    std::vector<uint32_t> retx, rto, recoveries;
    uint32_t done{0};
};

Flows g_flows;

// A finished flow's sink stops listening: every flow has a listening socket
// of its own, and the host's endpoint demultiplexer scans them linearly.
void CloseSink(Ptr<PacketSink> sink)
{
    for (Ptr<Socket> s : sink->GetAcceptedSockets())
    {
        s->Close();
    }
    if (sink->GetListeningSocket())
    {
        sink->GetListeningSocket()->Close();
    }
}

void OnRx(uint32_t id, Ptr<const Packet> p, const Address&)
{
    Flows& f = g_flows;
    if (f.finish[id] >= 0)
    {
        return;
    }
    f.got[id] += p->GetSize();
    if (f.got[id] >= f.size[id])
    {
        f.finish[id] = Simulator::Now().GetSeconds();
        Simulator::ScheduleNow(&CloseSink, f.sink[id]);
        if (++f.done == f.size.size())
        {
            Simulator::Stop();
        }
    }
}

void OnRetx(uint32_t id, Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
            Ptr<const TcpSocketBase>)
{
    g_flows.retx[id]++;
}

// A data timeout doubles the RTO (TcpSocketBase::ReTxTimeout, capped at
// 60 s); a new RTT estimate or a SYN's backoff sets it otherwise.
void OnRto(uint32_t id, Time before, Time after)
{
    if (after > before && after == Min(before + before, Seconds(60)))
    {
        g_flows.rto[id]++;
    }
}

void OnCongState(uint32_t id, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    if (now == TcpSocketState::CA_RECOVERY)
    {
        g_flows.recoveries[id]++;
    }
}

// The sender's socket exists once its application has started.
void HookSender(uint32_t id)
{
    Ptr<Socket> s = g_flows.sender[id]->GetSocket();
    s->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&OnRetx, id));
    s->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, id));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, id));
}

void AddFlow(Ptr<Node> src, Ptr<Node> dst, Ipv4Address dstAddr, uint16_t port, uint64_t size, double startS)
{
    uint32_t id = g_flows.size.size();
    g_flows.size.push_back(size);
    g_flows.got.push_back(0);
    g_flows.start.push_back(startS);
    g_flows.finish.push_back(-1.0);
    g_flows.retx.push_back(0);
    g_flows.rto.push_back(0);
    g_flows.recoveries.push_back(0);

    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sinkApp = sinkHelper.Install(dst);
    sinkApp.Start(Seconds(startS));
    sinkApp.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnRx, id));
    g_flows.sink.push_back(DynamicCast<PacketSink>(sinkApp.Get(0)));

    BulkSendHelper sendHelper("ns3::TcpSocketFactory", InetSocketAddress(dstAddr, port));
    sendHelper.SetAttribute("MaxBytes", UintegerValue(size));
    sendHelper.SetAttribute("SendSize", UintegerValue(1448));
    ApplicationContainer sendApp = sendHelper.Install(src);
    sendApp.Start(Seconds(startS));
    g_flows.sender.push_back(DynamicCast<BulkSendApplication>(sendApp.Get(0)));
    Simulator::Schedule(Seconds(startS) + NanoSeconds(1), &HookSender, id);
}

double FinishOf(uint32_t id) { return g_flows.finish[id]; }
uint32_t RetxOf(uint32_t id) { return g_flows.retx[id]; }
uint32_t RtoOf(uint32_t id) { return g_flows.rto[id]; }
uint32_t RecoveriesOf(uint32_t id) { return g_flows.recoveries[id]; }

// Packets a node's ports sent and dropped: the queue disc's drops and the
// device queue's, and the packets that left through the device queue.
std::vector<uint64_t> PortCounts(Ptr<Node> node)
{
    uint64_t sent = 0, dropped = 0;
    Ptr<TrafficControlLayer> tc = node->GetObject<TrafficControlLayer>();
    for (uint32_t d = 0; d < node->GetNDevices(); d++)
    {
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(node->GetDevice(d));
        if (!dev)
        {
            continue; // the loopback
        }
        Ptr<Queue<Packet>> q = dev->GetQueue();
        sent += q->GetTotalReceivedPackets() - q->GetTotalDroppedPackets();
        dropped += q->GetTotalDroppedPackets();
        if (tc)
        {
            Ptr<QueueDisc> qd = tc->GetRootQueueDiscOnDevice(dev);
            if (qd)
            {
                dropped += qd->GetStats().nTotalDroppedPackets;
            }
        }
    }
    return {sent, dropped};
}
} // namespace b1
"""


def read_flow_list(path: str) -> list[tuple[int, int, int, float]]:
    flows = []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            src, dst = int(row["src"]), int(row["dst"])
            if not (0 <= src < LEAVES * HOSTS_PER_LEAF and 0 <= dst < LEAVES * HOSTS_PER_LEAF) or src == dst:
                sys.exit(f"{path}: flow {src}->{dst} is not between two of B1's 32 hosts")
            flows.append((src, dst, int(row["size_bytes"]), float(row["start_us"]) * 1e-6))
    if not flows:
        sys.exit(f"{path}: no flows")
    flows.sort(key=lambda f: f[3])
    return flows


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))] if s else float("nan")


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flow-list", required=True, help="lbsim flow list CSV: src,dst,size_bytes,start_us")
    ap.add_argument("--fct-out", default="", help="CSV of per-flow results")
    ap.add_argument("--seed", type=int, default=1, help="ns-3 RNG run number and ECMP salts")
    ap.add_argument("--queue-pkts", type=int, default=250, help="queue disc limit per port, packets")
    ap.add_argument("--stop-after-s", type=float, default=20.0, help="simulated seconds after the last start before giving up")
    a = ap.parse_args()
    flows = read_flow_list(a.flow_list)

    t0 = time.perf_counter()
    import cppyy  # the ns3 package's bindings
    from ns import ns  # the ns3 PyPI package

    cppyy.cppdef(CPP)
    b1 = cppyy.gbl.b1
    t_import = time.perf_counter() - t0

    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(a.seed)
    cfg = ns.Config.SetDefault
    cfg("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
    cfg("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    cfg("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    cfg("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    cfg("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(1)))
    cfg("ns3::TcpSocket::ConnTimeout", ns.TimeValue(ns.MilliSeconds(10)))
    cfg("ns3::TcpSocket::SndBufSize", ns.UintegerValue(4 << 20))
    cfg("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(4 << 20))
    cfg("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    cfg("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(10)))
    # closed sockets leave TIME_WAIT quickly, so thousands of flows do not
    # pile up state (2 x MSL; the default MSL is 120 s)
    cfg("ns3::TcpSocketBase::MaxSegLifetime", ns.DoubleValue(0.001))
    # every port: a FIFO queue disc of --queue-pkts in front of a 1-packet
    # device queue (set as defaults: the helpers' attribute lists are C++
    # variadic templates, awkward to call through the bindings)
    cfg("ns3::FifoQueueDisc::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{a.queue_pkts}p")))
    cfg("ns3::DropTailQueue<Packet>::MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))

    hosts, leaves, spines = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    hosts.Create(LEAVES * HOSTS_PER_LEAF)
    leaves.Create(LEAVES)
    spines.Create(SPINES)
    stack = ns.InternetStackHelper()
    for c in (hosts, leaves, spines):
        stack.Install(c)

    def p2p(rate: str) -> "ns.PointToPointHelper":
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        h.SetDeviceAttribute("Mtu", ns.UintegerValue(1500))
        h.SetChannelAttribute("Delay", ns.StringValue("1us"))
        return h  # device queue: the default DropTailQueue<Packet>, 1 packet (below)

    host_link, fabric_link = p2p("10Gbps"), p2p("40Gbps")
    tch = ns.TrafficControlHelper()
    tch.SetRootQueueDisc("ns3::FifoQueueDisc")  # MaxSize from the default below
    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.0.0.0"), ns.Ipv4Mask("255.255.255.252"))

    def connect(helper, na, nb) -> tuple[int, int, int, int]:
        devs = helper.Install(na, nb)
        tch.Install(devs)  # before addresses: otherwise Assign installs ns-3's default queue disc
        ifs = addr.Assign(devs)
        addr.NewNetwork()
        ia = na.GetObject[ns.Ipv4]().GetInterfaceForDevice(devs.Get(0))
        ib = nb.GetObject[ns.Ipv4]().GetInterfaceForDevice(devs.Get(1))
        return ia, ib, ifs.GetAddress(0).Get(), ifs.GetAddress(1).Get()

    host_addr, host_up = {}, {}  # host -> its address; host -> (its interface, leaf's address)
    leaf_down = {}  # host -> (leaf interface, host address)
    for h in range(LEAVES * HOSTS_PER_LEAF):
        leaf = h // HOSTS_PER_LEAF
        ia, ib, aa, ab = connect(host_link, hosts.Get(h), leaves.Get(leaf))
        host_addr[h] = aa
        host_up[h] = (ia, ab)
        leaf_down[h] = (ib, aa)
    leaf_up = {l: [] for l in range(LEAVES)}  # leaf -> [(interface, spine address)]
    spine_down = {(s, l): [] for s in range(SPINES) for l in range(LEAVES)}  # -> [(interface, leaf address)]
    for l in range(LEAVES):
        for s in range(SPINES):
            for _ in range(LINKS_PER_PAIR):
                ia, ib, aa, ab = connect(fabric_link, leaves.Get(l), spines.Get(s))
                leaf_up[l].append((ia, ab))
                spine_down[(s, l)].append((ib, aa))

    # routes: a /32 per host, every equal-cost next hop listed
    salt = a.seed * 0x10001
    for h in range(LEAVES * HOSTS_PER_LEAF):
        r = b1.InstallEcmp(hosts.Get(h), salt + h)
        for d in range(LEAVES * HOSTS_PER_LEAF):
            if d != h:
                r.AddRoute(host_addr[d], *host_up[h])
    for l in range(LEAVES):
        r = b1.InstallEcmp(leaves.Get(l), salt + 1000 + l)
        for d in range(LEAVES * HOSTS_PER_LEAF):
            for iface, gw in [leaf_down[d]] if d // HOSTS_PER_LEAF == l else leaf_up[l]:
                r.AddRoute(host_addr[d], iface, gw)
    for s in range(SPINES):
        r = b1.InstallEcmp(spines.Get(s), salt + 2000 + s)
        for d in range(LEAVES * HOSTS_PER_LEAF):
            for iface, gw in spine_down[(s, d // HOSTS_PER_LEAF)]:
                r.AddRoute(host_addr[d], iface, gw)

    # flows: a port of its own at the destination for each flow
    next_port: dict[int, int] = {}
    for src, dst, size, start in flows:
        port = next_port.get(dst, 1024)
        if port > 65535:
            sys.exit(f"more than {65535 - 1024 + 1} flows to host {dst}: out of ports")
        next_port[dst] = port + 1
        b1.AddFlow(hosts.Get(src), hosts.Get(dst), ns.Ipv4Address(host_addr[dst]), port, size, start)
    last_start = flows[-1][3]
    ns.Simulator.Stop(ns.Seconds(last_start + a.stop_after_s))
    t_setup = time.perf_counter() - t0 - t_import

    c0, w0 = time.process_time(), time.perf_counter()
    ns.Simulator.Run()
    wall_run, cpu_run = time.perf_counter() - w0, time.process_time() - c0
    sim_end = ns.Simulator.Now().GetSeconds()

    fct, small, large, rows = [], [], [], []
    counts = {"retransmits": 0, "timeouts": 0, "fast_recoveries": 0}
    for i, (src, dst, size, start) in enumerate(flows):
        fin = b1.FinishOf(i)
        f = fin - start if fin >= 0 else -1.0
        retx, rto, rec = int(b1.RetxOf(i)), int(b1.RtoOf(i)), int(b1.RecoveriesOf(i))
        counts["retransmits"] += retx
        counts["timeouts"] += rto
        counts["fast_recoveries"] += rec
        rows.append((i, src, dst, size, start, f, retx, rto, rec))
        if f >= 0:
            fct.append(f)
            if size < 100_000:
                small.append(f)
            elif size > 10_000_000:
                large.append(f)
    tx, drops = 0, 0
    for c in (hosts, leaves, spines):
        for n in range(c.GetN()):
            port = b1.PortCounts(c.Get(n))
            tx += int(port[0])
            drops += int(port[1])

    if a.fct_out:
        with open(a.fct_out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["id", "src", "dst", "size", "start_s", "fct_s", "retransmits", "timeouts", "fast_recoveries"])
            w.writerows(rows)
    print(f"scenario=B1 ns3={version('ns3')} flows={len(flows)} seed={a.seed} last_start_s={last_start:.6f}")
    print(f"flows_completed={len(fct)}/{len(flows)}")
    print(f"mean_fct_ms={mean(fct) * 1e3:.4f}")
    print(f"p99_fct_ms={pct(fct, 0.99) * 1e3:.4f}")
    print(f"mean_fct_lt100KB_ms={mean(small) * 1e3:.4f} (n={len(small)})")
    print(f"mean_fct_gt10MB_ms={mean(large) * 1e3:.4f} (n={len(large)})")
    print(f"sim_time_s={sim_end:.6f}")
    print(f"tx_packets_all_links={tx} drops={drops}")
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    print(f"wall_import_s={t_import:.2f} wall_setup_s={t_setup:.2f} wall_run_s={wall_run:.3f} cpu_run_s={cpu_run:.3f}")
    sys.stdout.flush()
    # Simulator::Destroy and the bindings' teardown are not part of the
    # measurement and can take as long as the run
    os._exit(0)


if __name__ == "__main__":
    main()
