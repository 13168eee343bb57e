#!/bin/sh
# The test command: install dependencies, build with warnings as errors in
# _build/, and run every test (unit, CLI and the namespace end-to-end tests,
# which need root).  Prints each suite's result line and fails if anything
# failed or was skipped.
set -eu
if [ "$(id -u)" -ne 0 ]; then
	# deps.sh and the namespace tests need root: a user with sudo gets it
	# asked for.
	if command -v sudo >/dev/null 2>&1; then
		exec sudo -E "$0" "$@"
	fi
	echo "test.sh: run as root (no sudo here)" >&2
	exit 1
fi
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh _build --enable-werror
status=0
make -C _build -s -j"$(nproc)" check || status=$?
scripts/summary.sh _build || status=1
exit $status
