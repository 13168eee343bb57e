#!/bin/sh
# The manual pages are clean mdoc: mandoc's linter and groff's warnings
# print nothing.  TAP output.
set -u
n=0
fails=0
for page in toud.8 tou.conf.5 touctl.8; do
	f=${TOUD_SRCDIR:?}/man/$page
	out=$(mandoc -Tlint -W warning "$f" 2>&1)
	n=$((n + 1))
	if [ -z "$out" ]; then echo "ok $n - mandoc -Tlint $page"
	else fails=$((fails + 1)); echo "not ok $n - mandoc -Tlint $page"; echo "$out" | sed 's/^/# /'; fi
	out=$(groff -mandoc -ww -z "$f" 2>&1)
	n=$((n + 1))
	if [ -z "$out" ]; then echo "ok $n - groff -ww $page"
	else fails=$((fails + 1)); echo "not ok $n - groff -ww $page"; echo "$out" | sed 's/^/# /'; fi
done
echo "1..$n"
[ $fails -eq 0 ]
