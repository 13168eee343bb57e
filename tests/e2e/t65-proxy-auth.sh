#!/bin/bash
# t65-proxy-auth: a corporate proxy that wants credentials.  As in t47 the
# router r forwards nothing from c to s, but runs Debian's squid on
# 10.201.0.1:3128, which asks for Basic authentication and allows CONNECT
# to port 443 only.  c's peer s has endpoint-tcp 10.201.1.2:443 (s also
# listens on 8443), proxy = http://10.201.0.1:3128 and proxy-credentials =
# a file of c's (0600).  Then:
#   - with the right credentials the tunnel comes up over TCP through the
#     proxy, and a ping crosses it; toud -T prints the file's name, never
#     the password,
#   - with a wrong password (the file rewritten, c restarted), last_error
#     in touctl show --json is the 407 message about the credentials, and
#     the password is in neither the show output nor c's log,
#   - without proxy-credentials, last_error says the proxy asks for them,
#   - with endpoint-tcp on port 8443, last_error is the 403 message that
#     names the port and asks for 443,
#   - through a proxy that intercepts TLS (a relay in r with a certificate
#     from its own CA, tls-intercept.py), last_error says the server's key
#     is not the peer's and names the certificate's issuer,
#   - a credentials file readable by others is refused at start.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd ping nft squid openssl python3
. "$(dirname "$0")/lib-router.sh"
. "$(dirname "$0")/lib-proxy.sh"

PW=Corr3ct-horse
rt_topo
rt_nft "table ip t63_block {
	chain block {
		type filter hook forward priority -20; policy accept;
		iifname \"rc0\" counter drop
	}
}"
squid_start r 10.201.0.1 3128 jo "$PW"

creds=$E2E_DIR/proxy.pw
(umask 077 && printf 'jo:%s\n' "$PW" >"$creds")
# c_conf PORT [CREDENTIALS-LINE]: c's file, its peer s at endpoint-tcp PORT.
c_conf() {
	conf_interface c "$RT_PORT" "$RT_C_TUN/24"
	rt_conf_peer c s "$RT_S_UL:$RT_PORT" "$RT_S_TUN" 0
	{
		echo "endpoint-tcp = $RT_S_UL:$1"
		echo "proxy = http://10.201.0.1:3128"
		[ -n "${2:-}" ] && echo "$2"
	} >>"$(conf_file c)"
}
conf_interface s "$RT_PORT" "$RT_S_TUN/24"
echo "listen-tcp = 443" >>"$(conf_file s)"
rt_conf_peer s c "" "$RT_C_TUN" 0
toud_start s || bail_out "toud on s did not start"

# last_error_is WANT: c's peer s has last_error containing WANT.
last_error_has() { tq c peers.s.last_error | grep -qF -- "$1"; }
# expect_error WHAT WANT: c (started) sends a packet, then its peer s's
# last_error holds WANT.
expect_error() {
	nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN" >/dev/null 2>&1
	if wait_for 30 last_error_has "$2"; then
		ok "$1: last_error says so ($(tq c peers.s.last_error))"
	else
		not_ok "$1: last_error says so" "last_error: $(tq c peers.s.last_error 2>&1); squid: $(tail -n 3 "$SQUID_LOG")"
	fi
}

# --- the right credentials -------------------------------------------------------

c_conf 443 "proxy-credentials = $creds"
out=$("$TOUD" -T -c "$(conf_file c)" 2>&1)
check "toud -T prints the credentials file" grep -qx "proxy-credentials = $creds" <<<"$out"
if grep -qF "$PW" <<<"$out"; then not_ok "toud -T does not print the password"; else ok "toud -T does not print the password"; fi
toud_start c || bail_out "toud on c did not start"
if wait_for 60 nsx c ping -n -q -c 1 -W 1 "$RT_S_TUN"; then
	ok "with the right credentials the tunnel comes up through squid"
else
	not_ok "with the right credentials the tunnel comes up through squid" \
	    "c's peer s: $(tq c peers.s 2>&1); squid: $(tail -n 5 "$SQUID_LOG")"
fi
is "$(tq c peers.s.transport)" tcp "c's peer s is on transport tcp"
toud_stop c
# (squid logs a CONNECT when the tunnel closes)
check "squid logged the authenticated CONNECT (user jo)" \
    wait_for 10 grep -q 'CONNECT 10.201.1.2:443 jo ' "$SQUID_LOG"

# --- a wrong password ---------------------------------------------------------------

(umask 077 && printf 'jo:wrong-%s\n' "$PW" >"$creds")
toud_start c || bail_out "toud on c did not start (wrong password)"
expect_error "a wrong password" "the proxy refused the credentials of proxy-credentials (407 Proxy Authentication Required)"
shown=$(touctl_show c; show_json c)
if grep -qF "$PW" <<<"$shown" "$E2E_DIR/c.log"; then
	not_ok "the password is in neither touctl show nor the log" "$(grep -F "$PW" <<<"$shown" "$E2E_DIR/c.log")"
else
	ok "the password is in neither touctl show nor the log"
fi
toud_stop c

# --- no credentials --------------------------------------------------------------------

c_conf 443
toud_start c || bail_out "toud on c did not start (no credentials)"
expect_error "no credentials" "the proxy asks for credentials (407 Proxy Authentication Required)"
toud_stop c

# --- a port the proxy does not allow ----------------------------------------------------

(umask 077 && printf 'jo:%s\n' "$PW" >"$creds")
c_conf 8443 "proxy-credentials = $creds"
toud_start c || bail_out "toud on c did not start (port 8443)"
expect_error "CONNECT to port 8443" "the proxy does not allow a connection to port 8443 (403 Forbidden): proxies mostly allow only 443; ask for 443"
toud_stop c

# --- a proxy that intercepts TLS ---------------------------------------------------------

# Its own CA and a certificate from it, as an inspection proxy presents.
ca=$E2E_DIR/mitm
mkdir -p "$ca"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/O=Example Corp/CN=Example Corp Inspection CA" -keyout "$ca/ca.key" \
    -out "$ca/ca.pem" >/dev/null 2>&1 &&
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=10.201.1.2" \
    -keyout "$ca/leaf.key" -out "$ca/leaf.csr" >/dev/null 2>&1 &&
openssl x509 -req -in "$ca/leaf.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" -CAcreateserial \
    -days 2 -out "$ca/leaf.pem" >/dev/null 2>&1 || bail_out "openssl could not make the proxy's CA"
bg_start r "$E2E_DIR/mitm.log" python3 "$(dirname "$0")/tls-intercept.py" 10.201.0.1 3129 \
    "$ca/leaf.pem" "$ca/leaf.key"
wait_for 20 port_listening r t 3129 || bail_out "the intercepting proxy did not start: $(cat "$E2E_DIR/mitm.log")"
c_conf 443
sed -i 's|^proxy = .*|proxy = http://10.201.0.1:3129|' "$(conf_file c)"
toud_start c || bail_out "toud on c did not start (intercepting proxy)"
expect_error "a proxy that intercepts TLS" "TLS intercepted? the server's key sha256:"
check "naming the certificate's issuer" last_error_has "issued by 'O = Example Corp, CN = Example Corp Inspection CA'"
check "and what the proxy must do" last_error_has "the proxy must let this connection through uninspected"
check "the proxy did begin the interception" grep -q "intercepted 10.201.1.2:443" "$E2E_DIR/mitm.log"
st=$(tq c peers.s.state); [ "$st" != up ] && ok "c's peer s is not up through it ($st)" || not_ok "c's peer s is not up through it"
toud_stop c

# --- a credentials file others may read ------------------------------------------------

c_conf 443 "proxy-credentials = $creds"
chmod 644 "$creds"
out=$("$TOUD" -t -c "$(conf_file c)" 2>&1)
is "$?" 1 "toud -t refuses a credentials file readable by others"
check "naming the file and the fix ($out)" grep -qF \
    "proxy-credentials '$creds': refused: readable or writable by others; chmod 600 it" <<<"$out"

check "toud on s still running" toud_alive s
done_testing
