package cmtest

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// logTail keeps the controllers' most recent log output in memory, so a test
// that fails can show what the controllers were doing without every passing
// test paying for printing it.
type logTail struct {
	mu    sync.Mutex
	buf   []byte
	limit int
	total int64 // bytes ever written, to find where a test started
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	l.total += int64(len(p))
	if over := len(l.buf) - l.limit; over > 0 {
		l.buf = l.buf[over:]
	}
	return len(p), nil
}

// since returns what was written after mark (as much as is still held), at
// most the last maxLines lines.
func (l *logTail) since(mark int64, maxLines int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	start := int64(len(l.buf)) - (l.total - mark)
	if start < 0 {
		start = 0
	}
	out := l.buf[start:]
	if lines := bytes.Count(out, []byte("\n")); lines > maxLines {
		for i := 0; i < lines-maxLines; i++ {
			out = out[bytes.IndexByte(out, '\n')+1:]
		}
	}
	return string(out)
}

func (l *logTail) mark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

var (
	tail    = &logTail{limit: 8 << 20}
	dumping sync.Map // testing.TB → registered
)

// init routes controller-runtime's logs: to stderr with OVN_UDN_TEST_LOGS=1,
// else into an in-memory tail that DumpLogsOnFailure prints.
func init() {
	if os.Getenv("OVN_UDN_TEST_LOGS") == "1" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
		return
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(tail)))
}

// DumpLogsOnFailure prints the controllers' log lines written during the
// rest of the test (the last 400) if the test fails. Calling it again in the
// same test does nothing.
func DumpLogsOnFailure(t testing.TB) {
	if _, dup := dumping.LoadOrStore(t, true); dup {
		return
	}
	mark := tail.mark()
	t.Cleanup(func() {
		dumping.Delete(t)
		if t.Failed() && os.Getenv("OVN_UDN_TEST_LOGS") != "1" {
			t.Logf("controller logs (last 400 lines):\n%s", strings.TrimRight(tail.since(mark, 400), "\n"))
		}
	})
}
