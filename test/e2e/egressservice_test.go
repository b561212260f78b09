package e2e

import (
	"context"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/demo"
)

// TestEgressService: demo.EgressServiceChecks on the suite's sandbox: a
// LoadBalancer Service of a Layer3 tenant (its load-balancer IP written
// into its status, as an announcer would) with an EgressService.
// cluster-manager elects the node running its endpoint and labels it; the
// endpoint's connections to the outside leave from the load-balancer IP,
// and the outside reaches the Service at that IP through the host; when
// the endpoint moves to another node, so do the host and the source; once
// the EgressService is deleted, the pod leaves from its node's address.
func TestEgressService(t *testing.T) {
	checks, err := demo.EgressServiceChecks(context.Background(), dir, binary, admin)
	if err != nil {
		t.Fatal(err)
	}
	expectApps(t, checks)
}
