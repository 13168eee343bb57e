#!/bin/bash
# The bash completion of toud and touctl: options, commands, and the
# instances under /etc/toud (none here, so none offered).  TAP output.
set -u
srcdir=${TOUD_SRCDIR:?}
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

. "$srcdir/contrib/bash-completion/toud"
. "$srcdir/contrib/bash-completion/touctl"

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
is "$(comp _touctl touctl "")" "-V -h -i -s fingerprint genkey reload show " "touctl <TAB>: options and commands"
is "$(comp _touctl touctl -s /run/x.sock sh)" "show " "touctl -s SOCK sh<TAB>: the command after an option's argument"
is "$(comp _touctl touctl show --j)" "--json " "touctl show --j<TAB>: --json"
is "$(comp _touctl touctl genkey --f)" "--force " "touctl genkey --f<TAB>: --force"

echo "1..$n"
[ $fails -eq 0 ]
