# lib-proxy.sh - an HTTP CONNECT proxy for the tests of the TCP transport
# (sourced after lib.sh): tinyproxy from Debian, with a config file of the
# run's own, in the foreground, ended by PID with the rest of the test.
# shellcheck disable=SC2034

# proxy_start NODE ADDR PORT ALLOW CONNECT-PORT: tinyproxy in NODE on
# ADDR:PORT for clients in ALLOW (a prefix), tunnelling CONNECT only to
# CONNECT-PORT.  PROXY_PID, PROXY_LOG (its log file).
proxy_start() {
	local node=$1 addr=$2 port=$3 allow=$4 cport=$5 conf=$E2E_DIR/tinyproxy.conf
	need_cmd tinyproxy
	PROXY_LOG=$E2E_DIR/tinyproxy.log
	# It drops to nobody; its log file must be writable for it there.
	: >"$PROXY_LOG"
	chmod 666 "$PROXY_LOG"
	cat >"$conf" <<-EOC
	User nobody
	Group nogroup
	Port $port
	Listen $addr
	Timeout 600
	MaxClients 64
	Allow $allow
	ConnectPort $cport
	DisableViaHeader Yes
	LogFile "$PROXY_LOG"
	LogLevel Info
	EOC
	bg_start "$node" "$E2E_DIR/tinyproxy.out" tinyproxy -d -c "$conf"
	PROXY_PID=$BG_PID
	wait_for 20 port_listening "$node" t "$port" ||
	    bail_out "tinyproxy on $node $addr:$port did not start: $(cat "$E2E_DIR/tinyproxy.out" "$PROXY_LOG")"
}

# proxy_connects: how many CONNECT requests the proxy has logged.
proxy_connects() {
	grep -c 'CONNECT' "$PROXY_LOG" 2>/dev/null || echo 0
}
