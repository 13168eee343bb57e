#!/bin/sh
# touctl export and touctl fingerprint without a running daemon: export
# reads the configuration file (-c FILE, or the default file when no toud
# answers on the socket) and the certificate it names; fingerprint takes a
# certificate or its private key and prints the same value.  TAP output.
set -u
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077

fp=$("$TOUCTL" genkey "$work/keys" 2>"$work/err") || echo "Bail out! touctl genkey: $(cat "$work/err")"
out=$("$TOUCTL" fingerprint "$work/keys/key.pem" 2>&1)
[ "$out" = "$fp" ] && ok "fingerprint of key.pem is cert.pem's ($out)" || nok "fingerprint key.pem: '$out', want $fp"
out=$("$TOUCTL" fingerprint "$work/keys/cert.pem" 2>&1)
[ "$out" = "$fp" ] && ok "fingerprint of cert.pem" || nok "fingerprint cert.pem: '$out', want $fp"
printf 'not a key\n' >"$work/junk.pem"
out=$("$TOUCTL" fingerprint "$work/junk.pem" 2>&1)
rc=$?
case "$out" in
*"$work/junk.pem: neither a PEM certificate nor"*) [ $rc -eq 1 ] && ok "a file that is neither: rc 1, names it" || nok "junk rc $rc";;
*) nok "junk: '$out'";;
esac

cat >"$work/tou.conf" <<CONF
[interface]
address = 10.99.0.1/24, fd99::1/64
listen = 192.0.2.10:6090
private-key = $work/keys/key.pem
certificate = $work/keys/cert.pem
CONF

# -c FILE never asks a daemon, even through a socket that exists.
sec=$("$TOUCTL" -s "$work/no.sock" export -c "$work/tou.conf" --name alice 2>"$work/err")
rc=$?
[ $rc -eq 0 ] && ok "export -c FILE without a daemon exits 0" || nok "export -c: rc $rc: $(cat "$work/err")"
want="[peer alice]
fingerprint = $fp
endpoint = 192.0.2.10:6090
address = 10.99.0.1, fd99::1"
got=$(printf '%s\n' "$sec" | grep -v '^#')
[ "$got" = "$want" ] && ok "the section has the name, fingerprint, endpoint and addresses" \
    || nok "section: '$got'"
[ -s "$work/err" ] && nok "export -c wrote to stderr: $(cat "$work/err")" || ok "and says nothing on stderr"

# The section is a valid [peer] for the other side: toud -t accepts it.
cat >"$work/other.conf" <<CONF
[interface]
address = 10.99.0.2/24, fd99::2/64
private-key = $work/keys/key.pem
certificate = $work/keys/cert.pem

$sec
CONF
sed -i "s/^fingerprint = .*/fingerprint = sha256:$(printf '%064d' 1)/" "$work/other.conf"
if err=$("$TOUD" -t -c "$work/other.conf" 2>&1); then ok "toud -t accepts a config with the exported section"
else nok "toud -t on the exported section: $err"; fi

# No daemon on the socket: the configuration file is read instead, and
# stderr says so.  The file is an instance's that exists nowhere (never
# the default one: this host's own tou.conf plays no part).
inst=toud-test-none-$$
sec2=$("$TOUCTL" -i "$inst" -s "$work/no.sock" export --name alice 2>"$work/err")
rc=$?
case "$(cat "$work/err")" in
*"toud is not running: reading ${TOUD_SYSCONFDIR:?}/toud/$inst.conf"*)
	ok "without a daemon export says it reads the file";;
*) nok "without a daemon: stderr '$(cat "$work/err")'";;
esac
# That file does not exist: a failure naming it, never a socket error.
case "$rc $(cat "$work/err")" in
*"no.sock"*) nok "a socket error without a daemon: $(cat "$work/err")";;
"1 "*"$inst.conf:"*) ok "the missing file is named (rc $rc)";;
*) nok "without a daemon or file: rc $rc, '$(cat "$work/err")'";;
esac

# A broken file: the error names the file and line.
printf '[interface]\naddress = 10.99.0.1/24\nbogus = 1\n' >"$work/bad.conf"
err=$("$TOUCTL" export -c "$work/bad.conf" 2>&1)
rc=$?
case "$err" in
*"$work/bad.conf:3: "*) [ $rc -eq 1 ] && ok "a broken file: rc 1, FILE:LINE in the message" || nok "broken rc $rc";;
*) nok "broken file: '$err'";;
esac
: "$sec2"

echo "1..$n"
[ $fails -eq 0 ]
