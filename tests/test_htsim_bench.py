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
