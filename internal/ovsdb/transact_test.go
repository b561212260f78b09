package ovsdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ovn-org/libovsdb/client"
	libovsdb "github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

// TestOwnTransact: transactions sent on the own connection commit, return
// the server's results matched to their requests (16 at once), report a
// failed operation as libovsdb does, and work again after the server
// restarts.
func TestOwnTransact(t *testing.T) {
	z := ovntest.StartZone(t, "owntransact")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, NoMonitor: true, OwnTransact: true, Reconnect: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	insert := func(name string) (string, error) {
		ops := []libovsdb.Operation{{Op: libovsdb.OperationInsert, Table: "Logical_Switch", UUIDName: "sw",
			Row: libovsdb.Row{"name": name, "other_config": libovsdb.OvsMap{GoMap: map[any]any{"subnet": "10.0.0.0/24"}},
				"external_ids": libovsdb.OvsMap{GoMap: map[any]any{"owner": name}}}}}
		res, err := c.Transact(ctx, ops...)
		if err != nil {
			return "", err
		}
		if _, err := libovsdb.CheckOperationResults(res, ops); err != nil {
			return "", err
		}
		return res[0].UUID.GoUUID, nil
	}
	var wg sync.WaitGroup
	uuids := make([]string, 16)
	errs := make([]error, 16)
	for i := range uuids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			uuids[i], errs[i] = insert(fmt.Sprintf("sw%d", i))
		}()
	}
	wg.Wait()
	for i, u := range uuids {
		if errs[i] != nil {
			t.Fatalf("sw%d: %v", i, errs[i])
		}
		if got := z.MustNBCtl("--bare", "--columns=name", "list", "Logical_Switch", u); got != fmt.Sprintf("sw%d", i) {
			t.Errorf("the reply for sw%d names row %s, which is %q", i, u, got)
		}
	}
	// A select reads back what was written.
	res, err := c.Transact(ctx, libovsdb.Operation{Op: libovsdb.OperationSelect, Table: "Logical_Switch", Columns: []string{"name", "other_config"},
		Where: []libovsdb.Condition{{Column: "name", Function: libovsdb.ConditionEqual, Value: "sw3"}}})
	if err != nil || len(res) != 1 || len(res[0].Rows) != 1 || res[0].Rows[0]["name"] != "sw3" {
		t.Fatalf("select: %+v, %v", res, err)
	}
	// A failed operation is the server's error, in the results.
	ops := []libovsdb.Operation{{Op: libovsdb.OperationMutate, Table: "Logical_Switch", Where: []libovsdb.Condition{{Column: "name", Function: libovsdb.ConditionEqual, Value: "sw0"}},
		Mutations: []libovsdb.Mutation{{Column: "ports", Mutator: libovsdb.MutateOperationInsert, Value: libovsdb.OvsSet{GoSet: []any{libovsdb.UUID{GoUUID: "00000000-0000-4000-8000-000000000000"}}}}}}}
	res, err = c.Transact(ctx, ops...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := libovsdb.CheckOperationResults(res, ops); err == nil || !strings.Contains(err.Error(), "referential integrity") {
		t.Fatalf("a dangling reference: %v, want a referential integrity violation", err)
	}
	// After the server restarts, the next transactions dial again.
	if err := z.RestartDB("nb", false); err != nil {
		t.Fatal(err)
	}
	var last error
	if err := proc.WaitFor(20*time.Second, 50*time.Millisecond, func() (bool, error) {
		_, last = insert("after")
		if last != nil && !errors.Is(last, client.ErrNotConnected) && !strings.Contains(last.Error(), "constraint") {
			return false, last
		}
		return last == nil, nil
	}); err != nil {
		t.Fatalf("no transaction after the server restarted: %v (last %v)", err, last)
	}
}
