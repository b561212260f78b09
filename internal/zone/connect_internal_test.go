package zone

import (
	"context"
	"errors"
	"testing"
	"time"

	libovsdb "github.com/ovn-org/libovsdb/client"
)

type fakeClient struct {
	libovsdb.Client
	name string
}

// TestConnectAllRetriesEveryFailure: the first connection succeeds and the
// second fails a few times (the NB server restarting between them), as seen
// in the chaos test; every round retries what is missing until all are up.
func TestConnectAllRetriesEveryFailure(t *testing.T) {
	fails := 3
	dial := func(name string, failures *int) func(context.Context) (libovsdb.Client, error) {
		return func(context.Context) (libovsdb.Client, error) {
			if failures != nil && *failures > 0 {
				*failures--
				return nil, errors.New("connection refused")
			}
			return &fakeClient{name: name}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	clients, err := connectAll(ctx, "z", time.Millisecond, dial("nb", nil), dial("writer", &fails), dial("sb", nil))
	if err != nil {
		t.Fatalf("connectAll: %v", err)
	}
	for i, want := range []string{"nb", "writer", "sb"} {
		if c, ok := clients[i].(*fakeClient); !ok || c.name != want {
			t.Errorf("client %d = %v, want %s", i, clients[i], want)
		}
	}
	if fails != 0 {
		t.Errorf("%d failures left: not retried", fails)
	}
}
