package clustermanager_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/testing/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runManager runs a cluster-manager with the cluster-manager's RBAC until the
// test ends; stop ends it earlier (once) and returns how Start returned.
func runManager(t *testing.T, opts clustermanager.Options) (mgr manager.Manager, stop func() error) {
	t.Helper()
	mgr, err := clustermanager.New(cmtest.Identity(t, env), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() { cancel(); result = <-done })
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("cluster-manager: %v", err)
		}
	})
	return mgr, stop
}

// TestHealthEndpoints: --health-addr serves /healthz and /readyz (200 once
// the caches have synced), not 404.
func TestHealthEndpoints(t *testing.T) {
	addr := freeAddr(t)
	runManager(t, clustermanager.Options{Cluster: config.Default(), HealthAddr: addr})
	for _, path := range []string{"/healthz", "/readyz"} {
		cmtest.Eventually(t, 0, func() error {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %d %s", path, resp.StatusCode, body)
			}
			return nil
		})
	}
}

// TestMetricsEndpoint: --metrics-addr serves controller-runtime's reconcile
// metrics and ovn-udn's own: a new Layer3 primary UDN shows in
// ovn_udn_networks and takes a network ID.
func TestMetricsEndpoint(t *testing.T) {
	addr := freeAddr(t)
	runManager(t, clustermanager.Options{Cluster: config.Default(), MetricsAddr: addr, HealthAddr: "0"})
	scrape := func() (map[string]float64, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, err
		}
		out := map[string]float64{}
		for _, line := range strings.Split(string(body), "\n") {
			if name, value, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
				v, _ := strconv.ParseFloat(value, 64)
				out[name] = v
			}
		}
		return out, nil
	}
	const series = `ovn_udn_networks{role="primary",topology="layer3"}`
	var before float64
	cmtest.Eventually(t, time.Minute, func() error {
		m, err := scrape()
		if err != nil {
			return err
		}
		v, ok := m[series]
		if !ok {
			return fmt.Errorf("no %s", series)
		}
		before = v
		return nil
	})
	admin := cmtest.Admin(t, env)
	ns := cmtest.Namespace(t, admin, "metrics", map[string]string{v1.PrimaryNetworkLabel: ""})
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "net"},
		Spec: v1.UserDefinedNetworkSpec{Topology: v1.Layer3, Role: v1.Primary, Subnets: []v1.NetworkSubnet{"10.128.0.0/16/24"}}}
	if err := admin.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	cmtest.WaitNetworkCreated(t, admin, u)
	cmtest.Eventually(t, time.Minute, func() error {
		m, err := scrape()
		if err != nil {
			return err
		}
		if m[series] != before+1 {
			return fmt.Errorf("%s = %v, want %v", series, m[series], before+1)
		}
		if m["ovn_udn_network_ids_allocated"] < 1 || m["ovn_udn_network_ids_capacity"] != float64(config.Default().MaxNetworks) {
			return fmt.Errorf("network IDs allocated %v of %v", m["ovn_udn_network_ids_allocated"], m["ovn_udn_network_ids_capacity"])
		}
		for name := range m {
			if strings.HasPrefix(name, "controller_runtime_reconcile_total{") {
				return nil
			}
		}
		return fmt.Errorf("no controller_runtime_reconcile_total series")
	})
}
