"""The htsim comparison's scripts (bench/htsim): connection matrices, time
reports, and the build script's checks on the checkout it edits."""

import importlib.util
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("htsim_compare", ROOT / "bench" / "htsim" / "compare.py")
compare = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = compare
spec.loader.exec_module(compare)

CM = """Nodes 128
Connections 3
16->65 id 1 start 3086476 size 7861
120->97 id 2 start 33699340 size 1887234
7->99 id 7 start 35807621 size 1460
"""


def test_a_connection_matrix_survives_the_flow_list_and_back(tmp_path):
    cm = tmp_path / "three.cm"
    cm.write_text(CM)
    flows = compare.segment_list(cm, tmp_path)
    rows = flows.read_text().splitlines()
    assert rows[0] == "src,dst,size_bytes,start_us,cm_id"
    # sizes rounded up to whole 1,460-byte segments, start in us
    assert rows[1:] == ["16,65,8760,3.086476,1", "120,97,1887780,33.69934,2", "7,99,1460,35.807621,7"]
    back = compare.write_cm(flows, tmp_path / "back.cm").read_text().splitlines()
    assert back[:2] == ["Nodes 128", "Connections 3"]
    # start times come back to the picosecond; sizes keep the segment count
    assert back[2:] == ["16->65 id 1 start 3086476 size 8760", "120->97 id 2 start 33699340 size 1887780",
                        "7->99 id 7 start 35807621 size 1460"]


def test_the_time_report_gives_wall_cpu_and_peak_rss():
    text = """\tUser time (seconds): 51.20
\tSystem time (seconds): 0.85
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02.50
\tMaximum resident set size (kbytes): 181248
"""
    t = compare.parse_time_v(text)
    assert (t["wall_s"], t["cpu_s"], t["max_rss_mb"]) == (62.5, 52.05, 177.0)
    assert "exit_status" not in t


def fake_checkout(tmp_path, tcp_cpp):
    (tmp_path / "sim").mkdir(parents=True)
    (tmp_path / "sim" / "tcp.cpp").write_text(tcp_cpp)
    (tmp_path / "sim" / "tcp.h").write_text("bool _rtx_timeout_pending;\n")
    (tmp_path / "sim" / "Makefile").write_text("libhtsim.a:\n\tfalse\n")
    return tmp_path


def build(args):
    return subprocess.run(["sh", str(ROOT / "bench" / "htsim" / "build.sh"), *args], capture_output=True, text=True)


def test_the_build_refuses_a_directory_that_is_not_htsim(tmp_path):
    done = build([str(tmp_path), "--out", str(tmp_path / "out")])
    assert done.returncode == 2
    assert done.stderr.strip().endswith("tcp.cpp not found (CHECKOUT must be an htsim clone)")


def test_an_edit_that_does_not_match_the_checkout_stops_the_build(tmp_path):
    # one SYN where htsim's TcpSrc has two: the edit names itself and the count
    checkout = fake_checkout(tmp_path / "co", "Packet * p  = TcpPacket::new_syn_pkt(_flow, *_route, 1, 1);\n")
    done = build([str(checkout), "--out", str(tmp_path / "out")])
    assert done.returncode == 1
    assert done.stderr.strip() == "build.sh: edit 'syn_ts' matched 1 times in tcp.cpp, expected 2"


def test_flow_readings_split_flows_and_find_the_excess_where_it_sits():
    import pandas as pd

    # four flows: 1 times out in neither, 2 in lbsim only (a cascade of
    # recoveries), 3 in htsim only, 4 lost its handshake in htsim (>= 3 s)
    m = pd.DataFrame({
        "cm_id": [1, 2, 3, 4], "dst": [5, 5, 6, 7], "size_bytes": [50_000, 20_000_000, 2_000_000, 10_000],
        "retransmits": [2, 900, 0, 0], "timeouts": [0, 1, 0, 0], "fast_recoveries": [1, 40, 0, 0],
        "fct_us": [100.0, 500_000.0, 2_000.0, 50.0],
        "retransmits_h": [2, 30, 50, 0], "timeouts_h": [0, 0, 1, 0], "fast_recoveries_h": [1, 2, 0, 0],
        "fct_us_h": [110.0, 40_000.0, 300_000.0, 3_000_050.0],
    })
    r = compare.flow_readings(m, pd.DataFrame({"reordered_segments": [0, 3, 0, 0]}), top=1)
    bf = r["by_flow"]
    assert [bf[k]["flows"] for k in ("all", "no timeout in either", "timeout in lbsim only", "timeout in htsim only",
                                     "timeout in both")] == [4, 2, 1, 1, 0]
    assert bf["timeout in lbsim only"]["lbsim"]["retransmits"] == 900 and bf["timeout in lbsim only"]["htsim"]["retransmits"] == 30
    assert bf["> 10 MB"]["flows"] == 1 and bf["< 100 KB"]["flows"] == 2
    hs = r["lost_handshakes"]
    assert (hs["lbsim"]["flows"], hs["htsim"]["flows"]) == (0, 1)
    assert abs(hs["htsim"]["fct_share"] - 3_000_050 / (110 + 40_000 + 300_000 + 3_000_050)) < 1e-12
    assert abs(hs["htsim"]["others_mean_fct_ms"] - (110 + 40_000 + 300_000) / 3 / 1e3) < 1e-9
    ex = r["fast_recovery_excess"]
    assert ex["total"] == 38 and ex["of_top"] == 38 and ex["flows"][0]["cm_id"] == 2
    assert ex["flows"][0]["lbsim"]["fast_recoveries"] == 40 and ex["flows"][0]["htsim"]["fast_recoveries"] == 2
    assert r["reordered_segments"] == 3


def test_receiver_drops_name_the_ports_that_differ_and_the_flow_behind_it(tmp_path):
    import pandas as pd

    qd = tmp_path / "queue_drops.txt"
    qd.write_text("# queue drops\nLS1->DST5(0) 3000\nLS1->DST6(0) 10\nUS0->CS1(0) 99\n")
    ports = pd.DataFrame({"port": ["T1->H5#0", "T1->H6#0", "T1->H7#0", "S0->T1#0"], "drops": [100, 12, 0, 7]})
    # toward host 5 (htsim drops more): the largest flow (4) retransmits alike in both; flow 2 is where they differ,
    # and flow 5 differs as much the other way (more in lbsim), which does not explain htsim's drops
    m = pd.DataFrame({"cm_id": [1, 2, 3, 4, 5], "dst": [5, 5, 6, 5, 5], "size_bytes": [1_000, 9_000_000, 5_000, 20_000_000, 6_000_000],
                      "retransmits": [0, 40, 0, 500, 4_000], "timeouts": [0, 0, 0, 1, 1], "fast_recoveries": [0, 1, 0, 3, 80],
                      "retransmits_h": [0, 3_000, 0, 510, 900], "timeouts_h": [0, 2, 0, 1, 1], "fast_recoveries_h": [0, 0, 0, 3, 1]})
    r = compare.receiver_drops(ports, qd, m, top=1)
    assert r["top"][0]["host"] == 5 and (r["top"][0]["lbsim"], r["top"][0]["htsim"]) == (100, 3000)
    assert r["top"][0]["flow"]["cm_id"] == 2 and r["top"][0]["flow"]["htsim"]["timeouts"] == 2
    assert r["rest"] == {"ports": 2, "lbsim": 12, "htsim": 10}, "switch-to-switch queues are not receivers"
    assert r["ports_dropping"] == {"lbsim": 2, "htsim": 2}, "H7 dropped nothing in either"
    assert compare.receiver_drops(ports, tmp_path / "missing.txt", m) is None
