package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestWhereUsed is `make demo`'s section on rendering a network only where
// it is used: every primary network's rows are in the zones of exactly the
// nodes that use it; a pod of examples/shared-cudn.yaml's network on a node
// without one brings the network to that node's zone and is reached from
// another node with real packets; once deleted, the zone lets the network
// go after the grace period (the e2e sandbox's, 2 s), not before.
func TestWhereUsed(t *testing.T) {
	serve(t, demo.WhereUsedPeer)
	var out bytes.Buffer
	err := demo.WhereUsedDemo(context.Background(), dir, binary, admin, e2eGracePeriod, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "rendered where used") || strings.Count(out.String(), "PASS") < 4 {
		t.Errorf("the section checked too little:\n%s", out.String())
	}
	t.Log("\n" + out.String())
}
