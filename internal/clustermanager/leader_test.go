package clustermanager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
)

// TestLeaderElection: two cluster-managers with leader election (the
// default of `ovn-udn cluster-manager`), with the cluster-manager's own
// RBAC. One holds the Lease and allocates; the other's controllers do not
// run while it is standby (so the two never both allocate). When the leader
// stops (it releases the Lease), the standby takes over and allocates the
// next network.
func TestLeaderElection(t *testing.T) {
	ns := cmtest.UniqueName("leader")
	admin := cmtest.Admin(t, env)
	start := func() (manager.Manager, func() error) {
		return runManager(t, clustermanager.Options{Cluster: config.Default(),
			LeaderElection: true, LeaderElectionNamespace: "kube-system", MetricsAddr: "0", HealthAddr: "0"})
	}
	elected := func(m manager.Manager) bool {
		select {
		case <-m.Elected():
			return true
		default:
			return false
		}
	}
	a, stopA := start()
	cmtest.Eventually(t, time.Minute, func() error {
		if !elected(a) {
			return fmt.Errorf("the first cluster-manager is not elected")
		}
		return nil
	})
	b, _ := start()
	lease := &coordinationv1.Lease{}
	holder := func() string {
		if err := admin.Get(context.Background(), client.ObjectKey{Namespace: "kube-system", Name: "ovn-udn-cluster-manager"}, lease); err != nil {
			return ""
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}
	first := holder()
	if first == "" {
		t.Fatal("no Lease holder while a cluster-manager is elected")
	}

	udn := func(name string) *v1.UserDefinedNetwork {
		if err := admin.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}}); err != nil {
			t.Fatal(err)
		}
		u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns + "-" + name, Name: "net"},
			Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer2, Role: v1.Secondary, Subnets: []v1.NetworkSubnet{"10.9.0.0/24"}}}
		if err := admin.Create(context.Background(), u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	cmtest.WaitNetworkCreated(t, admin, udn("one"))
	if elected(b) {
		t.Fatal("the standby cluster-manager runs its controllers while the other leads")
	}
	if got := holder(); got != first {
		t.Fatalf("the Lease moved to %q while its holder %q runs", got, first)
	}

	if err := stopA(); err != nil {
		t.Fatalf("leader: %v", err)
	}
	start2 := time.Now()
	cmtest.Eventually(t, time.Minute, func() error {
		if !elected(b) {
			return fmt.Errorf("the standby is not elected after the leader stopped")
		}
		return nil
	})
	t.Logf("standby elected %s after the leader released the Lease", time.Since(start2).Round(10*time.Millisecond))
	if got := holder(); got == first || got == "" {
		t.Errorf("Lease holder %q after failover, want the standby", got)
	}
	cmtest.WaitNetworkCreated(t, admin, udn("two"))
}
