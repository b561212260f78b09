package sandbox

import (
	"testing"
	"time"
)

// TestRestartDelay: a process that keeps exiting soon after its start
// waits longer each time, up to 30 s; one that ran a while (killed now and
// then) is restarted after a second, however many times it was before.
func TestRestartDelay(t *testing.T) {
	quick := 0
	for i, tc := range []struct {
		ran  time.Duration
		want time.Duration
	}{
		{ran: time.Hour, want: time.Second},
		{ran: time.Second, want: 2 * time.Second},
		{ran: 2 * time.Second, want: 4 * time.Second},
		{ran: 0, want: 8 * time.Second},
		{ran: 9 * time.Second, want: 16 * time.Second},
		{ran: time.Second, want: 30 * time.Second},
		{ran: time.Second, want: 30 * time.Second},
		{ran: 20 * time.Second, want: time.Second}, // killed after running: not a crash loop
		{ran: 15 * time.Second, want: time.Second},
		{ran: time.Second, want: 2 * time.Second},
	} {
		if got := restartDelay(&quick, tc.ran); got != tc.want {
			t.Errorf("exit %d after %v: delay %v, want %v", i, tc.ran, got, tc.want)
		}
	}
}
