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

# squid_start NODE ADDR PORT USER PASSWORD: Debian's squid in NODE on
# ADDR:PORT, in the foreground with a config of the run's own, asking for
# Basic authentication (basic_ncsa_auth, a htpasswd file of USER with
# PASSWORD hashed by openssl passwd -apr1) and refusing CONNECT to any port
# but 443 (403, before it asks for credentials).  SQUID_PID, SQUID_LOG
# (its access log).
squid_start() {
	local node=$1 addr=$2 port=$3 dir=$E2E_DIR/squid auth=/usr/lib/squid/basic_ncsa_auth
	need_cmd squid openssl
	[ -x "$auth" ] || skip_all "no $auth (squid's helpers)"
	mkdir -p "$dir"
	printf '%s:%s\n' "$4" "$(openssl passwd -apr1 "$5")" >"$dir/htpasswd"
	SQUID_LOG=$dir/access.log
	# It drops to nobody; its logs must be writable for it there.
	: >"$SQUID_LOG"
	: >"$dir/cache.log"
	chmod 755 "$dir"
	chmod 644 "$dir/htpasswd"
	chown nobody "$SQUID_LOG" "$dir/cache.log"
	cat >"$dir/squid.conf" <<-EOC
	http_port $addr:$port
	cache_effective_user nobody
	pid_filename none
	cache_log $dir/cache.log
	access_log stdio:$SQUID_LOG
	cache deny all
	cache_mem 8 MB
	coredump_dir $dir
	shutdown_lifetime 0 seconds
	auth_param basic program $auth $dir/htpasswd
	auth_param basic realm toud-e2e
	acl SSL_ports port 443
	acl CONNECT method CONNECT
	acl authed proxy_auth REQUIRED
	http_access deny CONNECT !SSL_ports
	http_access allow authed
	http_access deny all
	EOC
	bg_start "$node" "$dir/squid.out" squid -N -f "$dir/squid.conf"
	SQUID_PID=$BG_PID
	wait_for 30 port_listening "$node" t "$port" ||
	    bail_out "squid on $node $addr:$port did not start: $(tail -n 20 "$dir/squid.out" "$dir/cache.log")"
}
