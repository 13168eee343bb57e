#!/bin/sh
# toud -t: every good configuration passes, every broken fixture fails with
# exactly the FILE:LINE: message its .expect file names.  TAP output.
set -u
data=${TOUD_TESTDATA:?}/conf
srcdir=${TOUD_SRCDIR:?}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

out=$("$TOUD" -V)
case "$out" in "toud "[0-9]*) ok "toud -V prints the version ($out)";; *) nok "toud -V: '$out'";; esac

# toud -t loads the key pair and looks up the user: the good files run
# from a copy where key.pem/cert.pem are a real pair (the fixtures are
# placeholders) and 'user = toud' names a user that exists here.
good=$(mktemp -d)
trap 'rm -rf "$good"' EXIT
cp "$data"/good-*.conf "$data"/*.pem "$good"/
"$TOUCTL" genkey --force "$good" >/dev/null 2>&1 || echo "Bail out! touctl genkey failed"
me=$(id -un)
for f in "$good"/good-*.conf; do
	sed -i "s/^\(user *= *\)toud\$/\1$me/" "$f"
	if err=$("$TOUD" -t -c "$f" 2>&1); then ok "accepts $(basename "$f")"
	else nok "rejects good $(basename "$f"): $err"; fi
done

# The example, with its files under /etc/tou moved into a directory of
# ours (a key pair, its certificate as carol's CA) and its user ours:
# whatever this host's /etc/tou holds (a running toud's keys) plays no
# part.
mkdir "$good/etc"
"$TOUCTL" genkey "$good/etc" >/dev/null 2>&1 || echo "Bail out! touctl genkey failed"
cp "$good/etc/cert.pem" "$good/etc/ca.pem"
sed -e "s|/etc/tou/|$good/etc/|g" -e "s/^\(user *= *\)toud\$/\1$me/" \
    "$srcdir/conf/tou.conf.example" >"$good/example.conf"
if err=$("$TOUD" -t -c "$good/example.conf" 2>&1); then
	ok "tou.conf.example passes with its key files and user made real"
else
	nok "tou.conf.example: $err"
fi

for f in "$data"/bad-*.conf; do
	exp=$(sed "s|@DIR@|$data|" "${f%.conf}.expect")
	err=$("$TOUD" -t -c "$f" 2>&1)
	rc=$?
	if [ $rc -eq 1 ] && [ "$err" = "$exp" ]; then ok "rejects $(basename "$f")"
	else nok "$(basename "$f"): rc $rc, got '$err', want '$exp'"; fi
done

err=$("$TOUD" -t -c /nonexistent/tou.conf 2>&1)
rc=$?
case "$err" in "/nonexistent/tou.conf: "*) [ $rc -eq 1 ] && ok "missing file named" || nok "missing file rc $rc";;
	*) nok "missing file: $err";; esac

echo "1..$n"
[ $fails -eq 0 ]
