#!/bin/sh
# Build htsim's sim library from a checkout and link bench/htsim/k8_driver.cpp
# against it (bench/htsim/README.md).
#
#   bench/htsim/build.sh CHECKOUT [--rfc] [--out DIR]
#
# CHECKOUT is a clone of https://github.com/Broadcom/csg-htsim (the
# comparison used commit 841d9e7). The checkout is not modified: its sim/
# directory is copied to DIR/sim and the edits below are made to the copy.
# Prints the driver's path (DIR/htsim_k8) on success.
#
# Always: the SYN is stamped with its send time (TcpSrc leaves a SYN's
# timestamp unset, so its first RTT sample reads a recycled packet's time).
# --rfc: TcpSrc's four loss-response rules changed to the RFCs'
# (docs/fidelity.md, "Where htsim's TCP departs"):
#   fr_ssthresh   deflate_window(): ssthresh = max(FlightSize / 2, 2 MSS)
#   rto_ssthresh  a timeout: FlightSize / 2, held on a repeated timeout,
#                 no more than the recovery's ssthresh during fast recovery
#   recovery_exit a full ACK ends recovery with cwnd = ssthresh
#   recover       `recover` = snd.max, kept apart from _highest_sent
# FlightSize = snd.max - snd.una. The 10 ms timer scan stays.
set -eu

usage() { echo "usage: bench/htsim/build.sh CHECKOUT [--rfc] [--out DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
checkout=$1; shift
rfc=0
here=$(cd "$(dirname "$0")" && pwd)
out=
while [ $# -gt 0 ]; do
    case $1 in
        --rfc) rfc=1 ;;
        --out) [ $# -ge 2 ] || usage; out=$2; shift ;;
        *) usage ;;
    esac
    shift
done
[ -f "$checkout/sim/tcp.cpp" ] || { echo "build.sh: $checkout/sim/tcp.cpp not found (CHECKOUT must be an htsim clone)" >&2; exit 2; }
if [ -z "$out" ]; then
    if [ $rfc = 1 ]; then out=$here/build/htsim-rfc; else out=$here/build/htsim; fi
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the library's sources only (not its datacenter/ or tests/ drivers), edited
# in a staging copy; an earlier build from the same edited sources is kept
rm -rf "$out/sim.new"
mkdir -p "$out/sim.new"
cp "$checkout"/sim/*.cpp "$checkout"/sim/*.h "$checkout"/sim/Makefile "$out/sim.new/"
src=$out/sim.new

# edit FILE MATCH SUBSTITUTION COUNT NAME: apply SUBSTITUTION, fail unless MATCH
# finds it COUNT times (the checkout is not the version these edits read)
edit() {
    n=$(perl -0 -ne "\$n = () = ($2); print \$n" "$src/$1" 2>/dev/null || true)
    perl -0pi -e "$3" "$src/$1"
    if [ "$n" != "$4" ]; then
        echo "build.sh: edit '$5' matched $n times in $1, expected $4" >&2
        exit 1
    fi
}

edit tcp.cpp 'm/Packet\s*\*\s*p\s*=\s*TcpPacket::new_syn_pkt\(/g' \
    's/Packet\s*\*\s*p\s*=\s*TcpPacket::new_syn_pkt\(([^;]*)\);/TcpPacket* p = TcpPacket::new_syn_pkt($1); p->set_ts(eventlist().now());/g' \
    2 syn_ts

if [ $rfc = 1 ]; then
    edit tcp.h 'm/bool _rtx_timeout_pending;/g' \
        's/bool _rtx_timeout_pending;/bool _rtx_timeout_pending;\n    uint64_t _snd_max = 0;\n    bool _rto_repeat = false;/' \
        1 state
    edit tcp.cpp 'm/_highest_sent \+= _mss;/g' \
        's/(_highest_sent \+= _mss;[^\n]*)/$1\n        if (_highest_sent > _snd_max) _snd_max = _highest_sent;/' \
        1 snd_max
    edit tcp.cpp 'm/_ssthresh = max\(_cwnd\/2, \(uint32_t\)\(2 \* _mss\)\);/g' \
        's/_ssthresh = max\(_cwnd\/2, \(uint32_t\)\(2 \* _mss\)\);/_ssthresh = max((uint32_t)((_snd_max - _last_acked)\/2), (uint32_t)(2 * _mss));/' \
        1 fr_ssthresh
    edit tcp.cpp 'm/if \(_in_fast_recovery\) \{\s*uint32_t flightsize = _highest_sent - _last_acked;\s*_cwnd = min\(_ssthresh, flightsize \+ _mss\);\s*\}\s*deflate_window\(\);/g' \
        's/if \(_in_fast_recovery\) \{\s*uint32_t flightsize = _highest_sent - _last_acked;\s*_cwnd = min\(_ssthresh, flightsize \+ _mss\);\s*\}\s*deflate_window\(\);/if (!_rto_repeat) { uint32_t rec = _ssthresh; deflate_window(); if (_in_fast_recovery && _ssthresh > rec) _ssthresh = rec; }\n        _rto_repeat = true;/' \
        1 rto_ssthresh
    edit tcp.cpp 'm/if \(seqno > _last_acked\) \{/g' \
        's/if \(seqno > _last_acked\) \{/if (seqno > _last_acked) { _rto_repeat = false;/' \
        1 rto_repeat_reset
    edit tcp.cpp 'm/uint32_t flightsize = _highest_sent - seqno;\s*_cwnd = min\(_ssthresh, flightsize \+ _mss\);/g' \
        's/uint32_t flightsize = _highest_sent - seqno;\s*_cwnd = min\(_ssthresh, flightsize \+ _mss\);/_cwnd = _ssthresh;/' \
        1 recovery_exit
    edit tcp.cpp 'm/_recoverq = _highest_sent;/g' \
        's/_recoverq = _highest_sent;/_recoverq = _snd_max;/g' \
        2 recover
fi

if [ -d "$out/sim" ] && diff -rq -x '*.o' -x '*.a' -x parse_output "$out/sim.new" "$out/sim" >/dev/null 2>&1; then
    rm -rf "$out/sim.new"
else
    rm -rf "$out/sim"
    mv "$out/sim.new" "$out/sim"
fi
src=$out/sim
make -s -C "$src" -j"${JOBS:-2}" libhtsim.a >"$out/make.log" 2>&1 || { tail -20 "$out/make.log" >&2; exit 1; }
${CXX:-g++} -O3 -std=c++17 -I"$src" "$here/k8_driver.cpp" "$src/libhtsim.a" -o "$out/htsim_k8"
# the checkout's commit beside the driver, for compare.py's record
git -C "$checkout" rev-parse HEAD >"$out/htsim_commit.txt" 2>/dev/null || rm -f "$out/htsim_commit.txt"
echo "$out/htsim_k8"
