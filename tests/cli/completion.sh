#!/bin/bash
# The bash completion of toud and touctl: options, commands, and the
# instances under SYSCONFDIR/toud.  The scripts make builds from their .in
# files name the configured sysconfdir, never a hard-coded /etc; copies
# made from the same .in files for a directory of this test's offer the
# instances found there.  TAP output.
set -u
srcdir=${TOUD_SRCDIR:?}
builddir=${TOUD_BUILDDIR:?}
sysconfdir=${TOUD_SYSCONFDIR:?}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/toud-completion.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

. "$builddir/contrib/bash-completion/toud"
. "$builddir/contrib/bash-completion/touctl"

# comp FUNC WORD...: the completions of the last word.
comp() {
	local fn=$1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	"$fn" 2>/dev/null
	printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}
is() { [ "$1" = "$2" ] && ok "$3" || nok "$3: got '$1', want '$2'"; }

is "$(complete -p toud touctl 2>&1 | tr '\n' ' ')" \
    "complete -F _toud toud complete -F _touctl touctl " "both register a completion function"
is "$(comp _toud toud -)" "-T -V -c -d -i -t " "toud -<TAB>: its options"
is "$(comp _touctl touctl s)" "show " "touctl s<TAB>: show"
is "$(comp _touctl touctl m)" "metrics " "touctl m<TAB>: metrics"
is "$(comp _touctl touctl metrics "")" " " "touctl metrics <TAB>: nothing offered"
is "$(comp _touctl touctl "")" "-V -h -i -s export fingerprint genkey genpsk metrics ping reload show wait " \
    "touctl <TAB>: options and commands"
is "$(comp _touctl touctl -s /run/x.sock sh)" "show " "touctl -s SOCK sh<TAB>: the command after an option's argument"
is "$(comp _touctl touctl show --j)" "--json " "touctl show --j<TAB>: --json"
is "$(comp _touctl touctl genkey --f)" "--force " "touctl genkey --f<TAB>: --force"
is "$(comp _touctl touctl genp)" "genpsk " "touctl genp<TAB>: genpsk"
is "$(comp _touctl touctl ping bob -)" "-c " "touctl ping PEER -<TAB>: -c"
is "$(comp _touctl touctl wait bob --)" "--timeout " "touctl wait PEER --<TAB>: --timeout"
is "$(comp _touctl touctl wait bob --timeout "")" " " "touctl wait PEER --timeout <TAB>: a number, nothing offered"
is "$(comp _touctl touctl export --)" "--endpoint --name " "touctl export --<TAB>: --name, --endpoint"
is "$(comp _touctl touctl export --name "")" " " "touctl export --name <TAB>: nothing offered"

# The built scripts look for instances in the configured sysconfdir.
for f in toud touctl; do
	built=$builddir/contrib/bash-completion/$f
	if grep -q "\"$sysconfdir\"/toud/\*\.conf" "$built" && ! grep -q '@sysconfdir@' "$built"; then
		ok "$f's completion looks for instances in $sysconfdir/toud"
	else
		nok "$f's completion looks for instances in $sysconfdir/toud: $(grep -n 'toud/\*' "$built")"
	fi
done
if [ "$sysconfdir" != /etc ] && grep -q -e '"/etc"/toud' -e '[ "]/etc/toud' "$builddir/contrib/bash-completion/toud" \
    "$builddir/contrib/bash-completion/touctl"; then
	nok "no /etc/toud left in the completion of a build for $sysconfdir"
else
	ok "no /etc/toud left in the completion of a build for $sysconfdir"
fi

# The same templates for another sysconfdir (with a space in its name):
# the instances there are offered.
etc="$tmp/my etc"
mkdir -p "$etc/toud"
: >"$etc/toud/office.conf"
: >"$etc/toud/home.conf"
: >"$etc/toud/notes.txt"
for f in toud touctl; do
	sed "s|@sysconfdir@|$etc|g" "$srcdir/contrib/bash-completion/$f.in" >"$tmp/$f"
	. "$tmp/$f"
done
is "$(comp _toud toud -i "")" "home office " "toud -i <TAB>: the instances in SYSCONFDIR/toud"
is "$(comp _touctl touctl -i o)" "office " "touctl -i o<TAB>: the instance office"
is "$(comp _touctl touctl -i office sh)" "show " "touctl -i NAME sh<TAB>: the command after the instance"


# Peer names for show, ping and wait: from the file when no toud answers
# (tou.conf, or the instance's), from the running toud's show --json when
# one does.
printf '[interface]\n[peer alice]\n  [ peer bob ] # the second\n#[peer old]\n' >"$etc/tou.conf"
# An instance by a name of this run's: its socket under /run/toud is
# nobody's (a host's running toud@office plays no part).
inst=toud-test-$$
printf '[interface]\n[peer carol]\n' >"$etc/toud/$inst.conf"
touctl=$builddir/src/touctl
is "$(comp _touctl "$touctl" -s "$tmp/none.sock" show "")" "alice bob " \
    "touctl show <TAB> with no toud: the peers of tou.conf"
is "$(comp _touctl "$touctl" -i "$inst" -s "$tmp/none.sock" wait "")" "alice bob " \
    "-s after -i: the socket's toud, else tou.conf"
is "$(comp _touctl "$touctl" -i "$inst" ping -c 3 "")" "carol " \
    "touctl -i NAME ping -c 3 <TAB>: the instance's peers"
is "$(comp _touctl "$touctl" -s "$tmp/none.sock" wait b)" "bob " "touctl wait b<TAB>: bob"
is "$(comp _touctl "$touctl" -s "$tmp/none.sock" ping bob "")" " " \
    "touctl ping bob <TAB>: one peer only"
is "$(comp _touctl "$touctl" -s "$tmp/none.sock" show --a)" "--all " "touctl show --a<TAB>: --all"
# A toud stand-in on a socket: one reply to show --json.  The socket gets
# its name only once it listens (a connect between bind and listen would
# be refused, and the completion would fall back to tou.conf).
python3 - "$tmp/toud.sock" >"$tmp/fake.log" 2>&1 <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1] + ".new")
s.listen(1)
os.rename(sys.argv[1] + ".new", sys.argv[1])
s.settimeout(30)
c, _ = s.accept()
c.recv(4096)
c.sendall(b'ok\n{"interface": {"name": "tou0"}, "peers": [{"name": "dave", "state": "up"}, '
          b'{"name": "erin", "state": "idle"}]}\n')
c.close()
PY
fake=$!
for i in $(seq 100); do [ -S "$tmp/toud.sock" ] && break; sleep 0.1; done
if [ -S "$tmp/toud.sock" ]; then
	is "$(comp _touctl "$touctl" -s "$tmp/toud.sock" show "")" "dave erin " \
	    "touctl -s SOCK show <TAB>: the running toud's peers"
else
	nok "touctl -s SOCK show <TAB>: the running toud's peers: the stand-in never listened: $(cat "$tmp/fake.log")"
fi
kill "$fake" 2>/dev/null
wait "$fake" 2>/dev/null

echo "1..$n"
[ $fails -eq 0 ]
