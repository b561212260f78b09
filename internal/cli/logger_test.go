package cli

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
	"time"
)

// TestDaemonLogTimestamps: the daemons' log lines carry milliseconds, and
// parse as RFC 3339 within the moments around the call.
func TestDaemonLogTimestamps(t *testing.T) {
	var b bytes.Buffer
	before := time.Now().Truncate(time.Millisecond)
	jsonLogger(&b).Info("hello")
	after := time.Now()
	var line struct{ TS string }
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	ts, err := time.Parse(logTimeLayout, line.TS)
	if err != nil {
		t.Fatalf("ts %q: %v", line.TS, err)
	}
	if !regexp.MustCompile(`:\d\d\.\d{3}(Z|[+-]\d\d:\d\d)$`).MatchString(line.TS) {
		t.Errorf("ts %q: want milliseconds", line.TS)
	}
	if ts.Before(before) || ts.After(after) {
		t.Errorf("ts %s outside [%s, %s]", ts, before, after)
	}
}
