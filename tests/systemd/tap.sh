# tap.sh - the TAP helpers of the systemd tests (sourced, bash).
N=0
FAIL=0

ok() { N=$((N + 1)); echo "ok $N - $*"; }
not_ok() {
	N=$((N + 1)); FAIL=$((FAIL + 1))
	echo "not ok $N - $1"
	[ $# -gt 1 ] && [ -n "$2" ] && sed 's/^/# /' <<<"$2"
	return 0
}
diag() { sed 's/^/# /' <<<"$*"; }
