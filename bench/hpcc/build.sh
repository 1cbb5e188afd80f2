#!/bin/bash
# Build the HPCC project's ns-3 simulator (github alibaba-edu/High-Precision-Congestion-Control)
# from a checkout of that repository, then print the path of the program.
#
#   bash bench/hpcc/build.sh CHECKOUT
#
# Its ns-3 3.18 tree ships waf 1.7.11, which only runs under Python 2: set PY2 to a
# Python 2.7 interpreter (default: the pyenv 2.7.18 one). Modern g++ needs permissive
# flags; CXXFLAGS replaces waf's own optimisation flags, so -O3 is given here.
# A tree that is already built is only brought up to date.
set -euo pipefail
if [ $# -ne 1 ]; then
    echo "usage: $0 CHECKOUT" >&2
    exit 2
fi
SIM="$(cd "$1" && pwd)/simulation"
PY2=${PY2:-/root/.pyenv/versions/2.7.18/bin/python}
JOBS=${JOBS:-2}
if [ ! -f "$SIM/waf" ]; then
    echo "error: $SIM/waf not found (CHECKOUT must be the repository root)" >&2
    exit 1
fi
if ! "$PY2" -c 'import sys; sys.exit(sys.version_info[0] != 2)' 2>/dev/null; then
    echo "error: PY2=$PY2 is not a Python 2 interpreter" >&2
    exit 1
fi
cd "$SIM"
if [ ! -f build/c4che/_cache.py ]; then
    CXXFLAGS="-O3 -std=c++11 -fpermissive -Wno-error -Wno-deprecated-declarations" \
        "$PY2" ./waf configure -d release --disable-python --disable-examples \
        --disable-tests --enable-modules=point-to-point,applications,internet >&2
fi
"$PY2" ./waf build -j"$JOBS" >&2
BIN="$SIM/build/scratch/third"
if [ ! -x "$BIN" ]; then
    echo "error: build finished but $BIN is missing" >&2
    exit 1
fi
echo "$BIN"
