#!/usr/bin/env bash
# Runs the cargo-fuzz target for the scenario parser and validator for a
# bounded time (default 120 s), seeded with every scenario in examples/,
# experiments' base scenarios aside. Installs cargo-fuzz if it is missing;
# needs a nightly toolchain (rustup toolchain install nightly).
# A crash or slow unit is saved under fuzz/artifacts/scenario/ and fails
# the script; replay one with: cargo +nightly fuzz run scenario FILE
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=${1:-120}
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
mkdir -p corpus/scenario
cp ../examples/*.toml corpus/scenario/
cargo +nightly fuzz run scenario corpus/scenario -- -max_total_time="$secs" -timeout=20 -rss_limit_mb=4096 -max_len=4096
