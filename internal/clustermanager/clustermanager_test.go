package clustermanager_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/clustermanager"
	"github.com/ovn-udn/ovn-udn/internal/clustermanager/cmtest"
	"github.com/ovn-udn/ovn-udn/internal/config"
	"github.com/ovn-udn/ovn-udn/internal/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

// TestHealthEndpoints: --health-addr serves /healthz and /readyz (200 once
// the caches have synced), not 404.
func TestHealthEndpoints(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	mgr, err := clustermanager.New(cmtest.Identity(t, env), clustermanager.Options{Cluster: config.Default(), HealthAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
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
