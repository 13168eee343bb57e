#!/bin/sh
# Print the result line of every test log (Check writes its "Checks: N,
# Failures: ..." line there, TAP scripts their ok/not ok lines) and a closing
# "N passed, N failed" line.  Fails if a test failed, errored or was skipped.
set -u
cd "${1:?usage: summary.sh BUILDDIR}"
for log in $(find tests -name '*.log' ! -name 'test-suite.log' | sort); do
	trs=${log%.log}.trs
	[ -f "$trs" ] || continue
	res=$(sed -n 's/^:test-result: //p' "$trs" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')
	took=$(sed -n 's/^# the test took \([0-9]*\) s$/ (\1 s)/p' "$log")
	printf '%-36s %s%s\n' "${log%.log}" "$res" "$took"
	grep -E '^[0-9]+%: Checks:' "$log" | sed 's/^/    /'
	grep -E '^(not ok|ok .*# SKIP)' "$log" | sed 's/^/    /'
done
pass=$(cat $(find tests -name '*.trs') 2>/dev/null | grep -c '^:test-result: PASS')
fail=$(cat $(find tests -name '*.trs') 2>/dev/null | grep -c -E '^:test-result: (FAIL|ERROR|XPASS)')
skip=$(cat $(find tests -name '*.trs') 2>/dev/null | grep -c '^:test-result: SKIP')
checks=$(cat $(find tests/unit -name '*.log') 2>/dev/null | sed -n 's/^[0-9]*%: Checks: \([0-9]*\).*/\1/p' | awk '{s+=$1} END {print s+0}')
echo "Check unit tests: $checks checks"
if [ "$skip" -ne 0 ]; then
	echo "error: $skip test(s) skipped; every test must run here" >&2
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$skip" -eq 0 ] && [ "$pass" -gt 0 ]
