#!/bin/bash
# demo.sh - see toud work: two network namespaces ("alice" and "bob") on a
# virtual Ethernet link, a toud in each, and a file fetched with curl across
# the tunnel.  Everything is removed at the end.
#
#   sudo scripts/demo.sh
#
# DEMO_SKIP_DEPS=1 skips scripts/deps.sh, DEMO_SKIP_BUILD=1 the build;
# ENCRYPTION=dtls (default) or none picks the mode.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: run as root: sudo scripts/demo.sh" >&2
	exit 1
fi
enc=${ENCRYPTION:-dtls}
step=0
say() {
	step=$((step + 1))
	printf '[%2d] %s\n' "$step" "$*"
	if [ -n "${step_file:-}" ]; then echo "$step" >"$step_file"; fi
}
die() { echo "demo.sh: $*" >&2; exit 1; }

if [ "${DEMO_SKIP_DEPS:-0}" != 1 ]; then
	say "installing build and test dependencies (scripts/deps.sh)"
	scripts/deps.sh
fi
if [ "${DEMO_SKIP_BUILD:-0}" != 1 ]; then
	say "building toud in _build/ (scripts/build.sh _build)"
	scripts/build.sh _build
fi
toud=$top/_build/src/toud
touctl=$top/_build/src/touctl
[ -x "$toud" ] && [ -x "$touctl" ] || die "no toud/touctl in _build/src"

alice=toud-demo$$-alice
bob=toud-demo$$-bob
dir=$(mktemp -d /tmp/toud-demo.XXXXXX)
step_file=$dir/.step
# The demo itself runs in a subshell; this shell only waits for it and
# cleans up, also after Ctrl-C (its INT/TERM traps just let it get here).
cleanup() {
	local pid
	trap - EXIT
	[ -f "$step_file" ] && step=$(cat "$step_file")
	say "stopping toud and tearing down"
	if [ -f "$dir/pids" ]; then
		while read -r pid; do
			kill "$pid" 2>/dev/null || true
		done <"$dir/pids"
		sleep 0.5
	fi
	ip netns del "$alice" 2>/dev/null || true
	ip netns del "$bob" 2>/dev/null || true
	rm -rf "$dir"
	echo "     removed the namespaces, processes and $dir"
}
trap cleanup EXIT
trap : INT TERM
# start_bg CMD...: a background process the clean-up will stop.
start_bg() {
	"$@" &
	echo $! >>"$dir/pids"
}

(
say "creating namespaces $alice and $bob, veth 10.200.0.1 <-> 10.200.0.2"
for ns in "$alice" "$bob"; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
ip link add ul0 netns "$alice" type veth peer name ul0 netns "$bob"
ip -n "$alice" addr add 10.200.0.1/24 dev ul0
ip -n "$bob" addr add 10.200.0.2/24 dev ul0
ip -n "$alice" link set ul0 up
ip -n "$bob" link set ul0 up

# conf NAME MY-ADDR PEER PEER-ADDR PEER-ENDPOINT
conf() {
	cat >"$dir/$1.conf" <<EOF
[interface]
name = tou0
address = $2/24
listen = 6080
encryption = $enc
control = $dir/$1.sock
EOF
	if [ "$enc" = dtls ]; then
		printf 'private-key = %s\ncertificate = %s\n' "$dir/$1/key.pem" "$dir/$1/cert.pem" >>"$dir/$1.conf"
	fi
	printf '\n[peer %s]\nendpoint = %s\naddress = %s\n' "$3" "$5" "$4" >>"$dir/$1.conf"
	if [ "$enc" = dtls ]; then
		echo "fingerprint = $(cat "$dir/$3/fingerprint")" >>"$dir/$1.conf"
	fi
}
if [ "$enc" = dtls ]; then
	say "generating a key pair for each (touctl genkey)"
	for n in alice bob; do
		mkdir -p "$dir/$n"
		"$touctl" genkey "$dir/$n" >"$dir/$n/fingerprint"
	done
fi
say "writing $dir/alice.conf (10.77.0.1) and bob.conf (10.77.0.2), encryption = $enc"
conf alice 10.77.0.1 bob 10.77.0.2 10.200.0.2:6080
conf bob 10.77.0.2 alice 10.77.0.1 10.200.0.1:6080

say "starting toud in both namespaces (logs in $dir)"
for n in alice bob; do
	ns=toud-demo$$-$n
	start_bg ip netns exec "$ns" "$toud" -c "$dir/$n.conf" </dev/null >"$dir/$n.log" 2>&1
done
for n in alice bob; do
	for i in $(seq 100); do
		"$touctl" -s "$dir/$n.sock" show >/dev/null 2>&1 && break
		[ "$i" -eq 100 ] && die "toud ($n) did not start: $(tail -n 5 "$dir/$n.log")"
		sleep 0.1
	done
done

say "alice pings bob's tunnel address 10.77.0.2"
for i in $(seq 50); do
	ip netns exec "$alice" ping -n -q -c 1 -W 1 10.77.0.2 >/dev/null 2>&1 && break
	[ "$i" -eq 50 ] && die "no answer through the tunnel"
	sleep 0.1
done
ip netns exec "$alice" ping -n -q -c 3 -i 0.2 10.77.0.2 | sed -n 's/^/     /; /rtt\|packets/p'

say "bob serves a 10 MB random file on http://10.77.0.2:8080/"
mkdir "$dir/www"
head -c $((10 * 1024 * 1024)) /dev/urandom >"$dir/www/file"
start_bg ip netns exec "$bob" python3 -m http.server --bind 10.77.0.2 --directory "$dir/www" 8080 \
    </dev/null >"$dir/http.log" 2>&1
for i in $(seq 100); do
	[ -n "$(ip netns exec "$bob" ss -Hltn 'sport = :8080')" ] && break
	sleep 0.1
done

say "alice fetches it with curl through the tunnel"
ip netns exec "$alice" curl -sS --noproxy '*' --max-time 60 -o "$dir/got" \
    -w '     %{size_download} bytes in %{time_total} s\n' http://10.77.0.2:8080/file
sent=$(sha256sum <"$dir/www/file" | cut -d' ' -f1)
got=$(sha256sum <"$dir/got" | cut -d' ' -f1)
echo "     sha256 sent     $sent"
echo "     sha256 received $got"
[ "$sent" = "$got" ] || die "the checksums differ"
echo "     checksums match"

say "touctl show on alice"
"$touctl" -s "$dir/alice.sock" show | sed 's/^/     /'
say "touctl show on bob"
"$touctl" -s "$dir/bob.sock" show | sed 's/^/     /'
)
