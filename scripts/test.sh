#!/bin/sh
# The test command: install dependencies, build with warnings as errors in
# _build/, and run every test (unit, CLI and the namespace end-to-end tests,
# which need root).  Prints each suite's result line and fails if anything
# failed or was skipped.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh _build --enable-werror
status=0
make -C _build -s -j"$(nproc)" check || status=$?
scripts/summary.sh _build || status=1
exit $status
