#!/usr/bin/env bash
# test-failures.sh LOG: print, after a failed `go test` run, each failed
# test's name and the first lines of its own messages (file_test.go:N: ...),
# and the table rows it printed that end in FAIL (the demo's), so that the
# end of a long CI log says why, not only which tests failed.
set -euo pipefail
log=${1:?usage: test-failures.sh LOG}
echo
echo "=== failed tests and their first messages (from $log)"
awk '
  /^[[:space:]]*--- FAIL: / { name = $0; sub(/^[[:space:]]*/, "", name); print name; n = 0; m = 0; infail = 1; next }
  /^[[:space:]]*--- (PASS|SKIP): / || /^=== RUN/ || /^(ok|FAIL|PASS)[[:space:]]/ { infail = 0; next }
  infail && /^[[:space:]]+[A-Za-z0-9_]+_test\.go:[0-9]+: / && n < 6 {
    line = $0; sub(/^[[:space:]]+/, "", line)
    if (length(line) > 400) line = substr(line, 1, 400) "..."
    print "    " line; n++
  }
  infail && /[[:space:]]FAIL[[:space:]]*$/ && m < 10 {
    line = $0; sub(/^[[:space:]]+/, "", line); gsub(/[[:space:]][[:space:]]+/, "  ", line)
    print "      row: " line; m++
  }
  /^panic: / { print; p = 8; next }
  p > 0 { print; p-- }
' "$log"
grep -E '^(FAIL|ok)[[:space:]]' "$log" | grep -E '^FAIL' || true
