#!/bin/sh
# touctl genkey: creates a missing directory 0700, refuses to replace an
# existing identity without --force, and never follows a symlink planted
# at its temporary files (.key.pem.new, .cert.pem.new).  Also touctl -V.
# TAP output.
set -u
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }
fp_ok() { printf '%s\n' "$1" | grep -q '^sha256:[0-9a-f]\{64\}$'; }
fp_of() { "$TOUCTL" fingerprint "$1/cert.pem" 2>&1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 022

out=$("$TOUCTL" -V)
case "$out" in "touctl "[0-9]*) ok "touctl -V prints the version ($out)";; *) nok "touctl -V: '$out'";; esac

# A missing directory is created, 0700.
d=$work/etc/tou
mkdir -p "$work/etc"
if fp=$("$TOUCTL" genkey "$d" 2>"$work/err") && fp_ok "$fp"; then
	ok "genkey into a missing directory succeeds ($fp)"
else
	nok "genkey into a missing directory: $fp $(cat "$work/err")"
fi
mode=$(stat -c %a "$d" 2>&1)
[ "$mode" = 700 ] && ok "the directory it made is 0700" || nok "directory mode '$mode', want 700"
[ "$(stat -c %a "$d/key.pem" 2>&1)" = 600 ] && ok "key.pem is 0600" || nok "key.pem mode $(stat -c %a "$d/key.pem")"
[ "$(fp_of "$d")" = "$fp" ] && ok "the printed fingerprint is cert.pem's" || nok "fingerprint $(fp_of "$d") != $fp"

# A missing parent is an error that names the directory, not a temp file.
err=$("$TOUCTL" genkey "$work/no/such/dir" 2>&1)
rc=$?
case "$err" in
	*"cannot create directory $work/no/such/dir"*) [ $rc -eq 1 ] && ok "a missing parent: rc 1, names the directory" || nok "missing parent rc $rc";;
	*) nok "missing parent: '$err'";;
esac

# An existing identity stays without --force.
key0=$(sha256sum "$d/key.pem")
err=$("$TOUCTL" genkey "$d" 2>&1)
rc=$?
if [ $rc -eq 1 ] && [ "$(sha256sum "$d/key.pem")" = "$key0" ] && [ "$(fp_of "$d")" = "$fp" ]; then
	ok "genkey over an existing key fails (rc 1) and changes nothing"
else
	nok "genkey over an existing key: rc $rc, '$err'"
fi
case "$err" in *"--force"*) ok "and says how to replace it (--force)";; *) nok "message without --force: '$err'";; esac
# A certificate alone counts as an identity too.
d2=$work/certonly
mkdir "$d2" && cp "$d/cert.pem" "$d2/cert.pem"
"$TOUCTL" genkey "$d2" >/dev/null 2>&1 && nok "genkey over a lone cert.pem succeeded" ||
    ok "genkey over a lone cert.pem fails too"

if fp2=$("$TOUCTL" genkey --force "$d" 2>"$work/err") && fp_ok "$fp2" && [ "$fp2" != "$fp" ] &&
    [ "$(fp_of "$d")" = "$fp2" ]; then
	ok "genkey --force replaces the pair ($fp2)"
else
	nok "genkey --force: '$fp2' $(cat "$work/err")"
fi
"$TOUCTL" genkey --bogus "$d" >/dev/null 2>&1
[ $? -eq 2 ] && ok "an unknown genkey option is a usage error (rc 2)" || nok "genkey --bogus not rc 2"

# Planted symlinks at the temporary names are not followed: neither an
# existing target is overwritten nor a missing one created.
for tmp in .cert.pem.new .key.pem.new; do
	for kind in existing missing; do
		dd=$work/plant-$kind$tmp
		mkdir -m 700 "$dd"
		target=$work/target-$kind$tmp
		[ $kind = existing ] && echo "precious" >"$target"
		ln -s "$target" "$dd/$tmp"
		if fp3=$("$TOUCTL" genkey "$dd" 2>"$work/err") && fp_ok "$fp3"; then
			if [ $kind = existing ]; then
				[ "$(cat "$target")" = precious ] && ok "a $tmp symlink to an existing file: the file is untouched" ||
				    nok "$tmp symlink: the target was written"
			else
				[ ! -e "$target" ] && ok "a $tmp symlink to a missing file: nothing is created there" ||
				    nok "$tmp symlink: the target was created"
			fi
			[ -f "$dd/key.pem" ] && [ ! -L "$dd/key.pem" ] && [ -f "$dd/cert.pem" ] && [ ! -L "$dd/cert.pem" ] &&
			    [ "$(fp_of "$dd")" = "$fp3" ] && ok "... and key.pem, cert.pem are regular files of the new pair" ||
			    nok "$tmp: key.pem/cert.pem not regular files of the new pair"
		else
			# Refusing is fine too, as long as nothing was followed.
			if { [ $kind = existing ] && [ "$(cat "$target")" = precious ]; } ||
			    { [ $kind = missing ] && [ ! -e "$target" ]; }; then
				ok "a $tmp symlink ($kind target): refused, target untouched ($(cat "$work/err"))"
				ok "... (no pair written)"
			else
				nok "a $tmp symlink ($kind target) was followed"
				nok "..."
			fi
		fi
	done
done

echo "1..$n"
[ $fails -eq 0 ]
