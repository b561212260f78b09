package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// freePort returns a loopback port nothing listens on at the moment.
func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		return pc.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestServeAndProbeMany: serve listens on TCP and UDP (and on a bare
// address as TCP, the demo's form); probe-many reads its targets as JSON and
// prints each one's answer, or an error for a port nobody serves.
func TestServeAndProbeMany(t *testing.T) {
	tcp, udp, bare, closed := freePort(t, "tcp"), freePort(t, "udp"), freePort(t, "tcp"), freePort(t, "tcp")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		root := NewRootCommand()
		root.SetArgs([]string{"sandbox", "serve", "--reply", "ns/pod",
			"--listen", fmt.Sprintf("tcp:127.0.0.1:%d", tcp), "--listen", fmt.Sprintf("udp:127.0.0.1:%d", udp),
			"--listen", fmt.Sprintf("127.0.0.1:%d", bare)})
		served <- root.ExecuteContext(ctx)
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	target := func(proto string, port int) demo.ReachTarget {
		return demo.ReachTarget{Address: "127.0.0.1", Protocol: proto, Port: port}
	}
	targets := []demo.ReachTarget{target("tcp", tcp), target("udp", udp), target("tcp", bare), target("tcp", closed)}
	in, _ := json.Marshal(targets)
	var answers []demo.ReachAnswer
	// Until serve listens (no sleeps: poll).
	if err := proc.WaitFor(10*time.Second, 50*time.Millisecond, func() (bool, error) {
		root := NewRootCommand()
		var out bytes.Buffer
		root.SetIn(bytes.NewReader(in))
		root.SetOut(&out)
		root.SetArgs([]string{"sandbox", "probe-many", "--timeout", "500ms"})
		if err := root.Execute(); err != nil {
			return false, err
		}
		answers = nil
		if err := json.Unmarshal(out.Bytes(), &answers); err != nil {
			return false, err
		}
		return len(answers) == 4 && answers[0].Answer != "" && answers[1].Answer != "" && answers[2].Answer != "", nil
	}); err != nil {
		t.Fatalf("%v: %+v", err, answers)
	}
	for i, a := range answers[:3] {
		if a.ReachTarget != targets[i] || a.Answer != "ns/pod" || a.Error != "" {
			t.Errorf("answer %d: %+v, want ns/pod from %+v", i, a, targets[i])
		}
	}
	if a := answers[3]; a.Answer != "" || !strings.Contains(a.Error, "refused") {
		t.Errorf("closed port: %+v, want a refused connection", a)
	}
}
