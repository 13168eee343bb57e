#!/bin/bash
# t55-dns: [interface] dns and dns-search where systemd-resolved is absent:
# toud hands them to resolvconf.  The system bus is pointed at a socket that
# does not exist, and `resolvconf` is a stand-in first in toud's PATH that
# records its arguments and standard input (and fails when told to).
# Asserted: at start `resolvconf -a tun.tou0` gets the servers in order and
# the search domains without the routing-only one, and touctl show says
# "resolvconf"; a reload that changes dns replaces the entry (-d, then -a);
# one that keeps it calls nothing; one without dns removes it and show
# says "none"; a failing resolvconf and a missing one are reported in
# show's dns_error while the tunnel runs on; SIGTERM removes the entry.
# (With systemd-resolved: tests/systemd/nspawn.sh.)
. "$(dirname "$0")/lib.sh"
need_root

topo_ab
mkdir -p "$E2E_DIR/bin"
FAKE=$E2E_DIR/bin/resolvconf
CALLS=$E2E_DIR/resolvconf.calls
cat >"$E2E_DIR/resolvconf.in" <<EOF
#!/bin/sh
# A stand-in for resolvconf(8): one record per call in $CALLS.
{ echo "call: \$*"; [ "\$1" = -a ] && sed 's/^/  /'; } >>"$CALLS"
[ ! -e "$E2E_DIR/resolvconf.fail" ]
EOF
install -m 0755 "$E2E_DIR/resolvconf.in" "$FAKE"
: >"$CALLS"

conf_ab 4
cp "$(conf_file a)" "$E2E_DIR/a.base"
# conf_dns LINE...: a's file with these [interface] lines added.
conf_dns() {
	{
		sed -n '1,/^\[peer/{/^\[peer/!p}' "$E2E_DIR/a.base"
		printf '%s\n' "$@"
		sed -n '/^\[peer/,$p' "$E2E_DIR/a.base"
	} >"$(conf_file a)"
}
reload_a() { "$TOUCTL" -s "$(sock_of a)" reload >/dev/null 2>"$E2E_DIR/reload.err"; }
dns_show() { tq a interface.dns; }
dns_err() { tq a interface.dns_error; }
# calls_since N: the calls recorded after the first N lines.
calls_since() { tail -n +"$(($1 + 1))" "$CALLS"; }
ncalls() { wc -l <"$CALLS"; }

conf_dns "dns = 10.77.0.2, fd77::2" "dns-search = tun.example, ~lab.example, corp.example"
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$E2E_DIR/no-system-bus"
PATH="$E2E_DIR/bin:$PATH" toud_start a || bail_out "toud on a did not start"
toud_start b || bail_out "toud on b did not start"

is "$(cat "$CALLS")" "call: -a tun.tou0
  nameserver 10.77.0.2
  nameserver fd77::2
  search tun.example corp.example" "start: resolvconf -a tun.tou0 gets the servers and the search domains"
is "$(dns_show)" resolvconf "touctl show: dns resolvconf"
is "$(dns_err)" null "touctl show: no dns_error"

n=$(ncalls)
conf_dns "dns = 10.77.0.3" "dns-search = tun.example"
check "reload with another server" reload_a
is "$(calls_since "$n")" "call: -d tun.tou0
call: -a tun.tou0
  nameserver 10.77.0.3
  search tun.example" "reload: the old entry goes, the new one comes"

n=$(ncalls)
# The same settings, written otherwise: nothing to do.
conf_dns "dns = 10.77.0.3" "dns-search = TUN.example."
check "reload with the same dns" reload_a
is "$(calls_since "$n")" "" "reload without a change calls no resolvconf"

n=$(ncalls)
conf_dns
check "reload without dns" reload_a
is "$(calls_since "$n")" "call: -d tun.tou0" "reload without dns removes the entry"
is "$(dns_show)" none "touctl show: dns none without dns ="

touch "$E2E_DIR/resolvconf.fail"
conf_dns "dns = 10.77.0.4"
check "reload with dns while resolvconf fails" reload_a
is "$(dns_show)" none "touctl show: dns none when resolvconf failed"
is "$(dns_err)" "resolvconf -a tun.tou0 failed (exit status 1)" "touctl show: dns_error says how resolvconf failed"
rm -f "$E2E_DIR/resolvconf.fail"

rm -f "$FAKE"
conf_dns "dns = 10.77.0.5"
check "reload with dns and no resolvconf" reload_a
is "$(dns_err)" "neither systemd-resolved nor resolvconf is there: tou0 keeps the host's name servers" \
    "touctl show: dns_error says there is no resolver to hand dns to"
install -m 0755 "$E2E_DIR/resolvconf.in" "$FAKE"

check "the tunnel works through all of it (ping a -> b)" wait_for 10 nsx a ping -n -q -c 1 -W 1 10.77.0.2

conf_dns "dns = 10.77.0.6"
check "reload with dns once resolvconf is back" reload_a
is "$(dns_show)/$(dns_err)" "resolvconf/null" "touctl show: applied again, no error"
n=$(ncalls)
toud_stop a || not_ok "toud on a stops on SIGTERM"
is "$(calls_since "$n")" "call: -d tun.tou0" "SIGTERM: resolvconf -d tun.tou0"
done_testing
