# lib-attack.sh - the handshake attack tests' set-up (sourced after lib.sh).
#
#   x xa ---- ax a ul0 ---- ul0 b       (x also has xb ---- bx b)
#   10.201.0.2  .1 10.200.0.1  10.200.0.2  10.202.0.2 -- .1
#
# a serves its configured peer b; x is an attacker whose key nobody knows,
# with a link to each of them (to forge one's address towards the other).
# tests/e2e/attack (built by make check) does the attacking.
# shellcheck disable=SC2034
E2E_ENCRYPTION=dtls
ATTACK=${TOUD_ATTACK:-$E2E_HELPERS/attack}
[ -x "$ATTACK" ] || bail_out "no attack client at $ATTACK (make check builds it)"

# at_topo: the namespaces, links and configs; a and b have each other's
# endpoint, b pings a so that b initiates.
at_topo() {
	netns_add a b x
	veth a ul0 b ul0 "10.200.0.1/24" "10.200.0.2/24"
	veth x xa a ax "10.201.0.2/24" "10.201.0.1/24"
	veth x xb b bx "10.202.0.2/24" "10.202.0.1/24"
	conf_interface a 6080 10.77.0.1/24
	conf_peer a b 10.200.0.2:6080 "10.77.0.2"
	conf_interface b 6080 10.77.0.2/24
	conf_peer b a 10.200.0.1:6080 "10.77.0.1"
}

# The attackers run until the checks are done (attack.c reports and exits on
# SIGTERM): this many seconds is only a backstop, never reached.
AT_LONG=600

# at_connect DESC [PID...]: b's first handshake to a completes and a ping
# passes (a 60 s deadline: a crowded machine, not the protocol, sets how long
# that takes) while each attacker PID is still attacking; the time taken
# goes into the description.
at_connect() {
	local desc=$1 t0 t1 pid
	shift
	t0=$(e2e_now)
	if wait_for 60 nsx b ping -n -q -c 1 -W 1 10.77.0.1; then
		t1=$(e2e_now)
		ok "$desc (ping answered after $((t1 - t0)) ms)"
		for pid; do
			check "$desc: while attacker $pid was still attacking" proc_alive "$pid"
		done
		is "$(tq b peers.a.state)" up "$desc: b's peer a is up"
	else
		not_ok "$desc" "no ping answered in 60 s; b sees a as $(tq b peers.a.state), a's drops: $(tq a interface.drops)"
		not_ok "$desc: b's peer a is up" "state $(tq b peers.a.state)"
	fi
}

# at_stop PID FILE: end the attacker PID (SIGTERM) and set AT_REPORT to its
# report, the last line of FILE.
at_stop() {
	proc_stop "$1" TERM 30 || not_ok "attacker $1 ends on SIGTERM"
	AT_REPORT=$(tail -n 1 "$2")
}
