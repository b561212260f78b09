package ovsdbsync_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	libovsdb "github.com/ovn-org/libovsdb/ovsdb"

	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/testing/ovntest"
)

var lbTables = []model.Model{&nbdb.LoadBalancer{}, &nbdb.LoadBalancerGroup{}, &nbdb.ACL{}, &nbdb.PortGroup{}, &nbdb.LogicalSwitch{}}

// viewed: connectLB's clients monitor with the own monitor, whose view
// holds every table (as a zone's does); TestContributions runs both ways.
var viewed bool

func connectLB(t *testing.T, z *ovntest.Zone) (client.Client, *ovsdbsync.Syncer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts := ovsdb.ClientOptions{Endpoint: z.NB, Indexes: ovsdbsync.Indexes(
		nbdb.LoadBalancerTable, nbdb.LoadBalancerGroupTable, nbdb.ACLTable, nbdb.PortGroupTable, nbdb.LogicalSwitchTable)}
	if viewed {
		opts.OwnMonitor, opts.Views = true, []string{nbdb.LoadBalancerTable, nbdb.LoadBalancerGroupTable, nbdb.ACLTable, nbdb.PortGroupTable, nbdb.LogicalSwitchTable}
	}
	c, err := ovsdb.ConnectNB(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := ovsdbsync.New(c, lbTables...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Share(&nbdb.LoadBalancerGroup{}, "load_balancer"); err != nil {
		t.Fatal(err)
	}
	if err := s.Share(&nbdb.PortGroup{}, "acls"); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// contribs0 is a contribution to a group of network blue.
func contribs0() []ovsdbsync.Contribution {
	return []ovsdbsync.Contribution{{Target: &nbdb.LoadBalancerGroup{Name: "blue_clusterLBGroup"}, Column: "load_balancer", Members: []string{"acl:own"}}}
}

// network is what a network's topology owns: a switch using a load balancer
// group, and a port group with one ACL of its own.
func network(name string, acl string) []model.Model {
	return []model.Model{
		&nbdb.LoadBalancerGroup{UUID: "lbg:cluster", Name: name + "_clusterLBGroup"},
		&nbdb.ACL{UUID: "acl:own", Direction: nbdb.ACLDirectionToLport, Priority: 1000, Match: acl, Action: nbdb.ACLActionDrop},
		&nbdb.PortGroup{UUID: "pg:iso", Name: name + "_iso", ACLs: []string{"acl:own"}},
		&nbdb.LogicalSwitch{UUID: "ls:sw", Name: name + "_sw", LoadBalancerGroup: []string{"lbg:cluster"}},
	}
}

// service is what a service owns: load balancers (one per protocol), put into
// the network's group, and an ACL put into the network's port group.
func service(net, vip string, protos ...string) ([]model.Model, []ovsdbsync.Contribution) {
	var rows []model.Model
	var members []string
	for _, p := range protos {
		proto := nbdb.LoadBalancerProtocol(p)
		id := "lb:" + p
		rows = append(rows, &nbdb.LoadBalancer{UUID: id, Name: net + "_svc_" + p, Protocol: &proto, Vips: map[string]string{vip: "10.0.0.5:8080"}})
		members = append(members, id)
	}
	rows = append(rows, &nbdb.ACL{UUID: "acl:svc", Direction: nbdb.ACLDirectionFromLport, Priority: 1001, Match: "ip4.dst == " + strings.Split(vip, ":")[0], Action: nbdb.ACLActionAllowRelated})
	return rows, []ovsdbsync.Contribution{
		{Target: &nbdb.LoadBalancerGroup{Name: net + "_clusterLBGroup"}, Column: "load_balancer", Members: members},
		{Target: &nbdb.PortGroup{Name: net + "_iso"}, Column: "acls", Members: []string{"acl:svc"}},
	}
}

func groupMembers(t *testing.T, z *ovntest.Zone, group string) []string {
	t.Helper()
	var names []string
	for _, u := range strings.Fields(strings.NewReplacer("[", " ", "]", " ", ",", " ").Replace(
		z.MustNBCtl("--bare", "--columns=load_balancer", "find", "Load_Balancer_Group", "name="+group))) {
		names = append(names, z.MustNBCtl("--bare", "--columns=name", "list", "Load_Balancer", u))
	}
	sort.Strings(names)
	return names
}

func aclCount(t *testing.T, z *ovntest.Zone, pg string) int {
	t.Helper()
	return len(strings.Fields(z.MustNBCtl("--bare", "--columns=acls", "find", "Port_Group", "name="+pg)))
}

func TestContributions(t *testing.T) {
	t.Run("libovsdb monitor", testContributions)
	t.Run("own monitor and views", func(t *testing.T) {
		viewed = true
		defer func() { viewed = false }()
		testContributions(t)
	})
}

func testContributions(t *testing.T) {
	z := ovntest.StartZone(t, "contrib")
	_, s := connectLB(t, z)
	// As a zone declares it: networks own their rows and add to nobody's,
	// so their plans skip the scan for contributions (their re-plans below
	// must still keep the services' members).
	s.NeverContributes("net:")
	ctx := context.Background()
	if _, err := s.Plan("net:red", network("red", "ip4.src == 10.0.0.1"), contribs0()...); err == nil {
		t.Fatal("a contribution from an owner declared never to contribute was planned")
	}

	// A port group without an owner, of another name, is no target (the
	// owner index libovsdb tries first must not match it).
	z.MustNBCtl("pg-add", "stray")
	if p, err := s.Plan("svc:x", []model.Model{&nbdb.ACL{UUID: "acl:x", Direction: nbdb.ACLDirectionToLport, Priority: 1000, Match: "ip4", Action: nbdb.ACLActionDrop}},
		ovsdbsync.Contribution{Target: &nbdb.PortGroup{Name: "nope"}, Column: "acls", Members: []string{"acl:x"}}); err != nil || len(p.Missing) != 1 || len(p.Ops) != 0 {
		t.Fatalf("a contribution to a port group that does not exist: %v %v, want it missing and nothing written", p, err)
	}
	z.MustNBCtl("pg-del", "stray")

	// A service planned before its network exists: its rows are written, its
	// members wait for the targets.
	rows, contribs := service("blue", "10.96.0.10:53", "tcp", "udp")
	p, err := s.Sync(ctx, "svc:a", rows, contribs...)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Missing) != 2 || p.Added != 0 || p.Inserted != 2 {
		t.Fatalf("without targets: %s, missing %v; want both targets missing, the two load balancers written and the ACL (non-root, nothing refers to it yet) not", p, p.Missing)
	}

	// The network appears; the service is planned again and contributes.
	sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.9"))
	p, err = s.Sync(ctx, "svc:a", rows, contribs...)
	if err != nil || p.Added != 3 || len(p.Missing) != 0 || p.Inserted != 1 || p.Updated+p.Deleted != 0 {
		t.Fatalf("with targets: %v %v, want the ACL inserted and 3 members added", p, err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); strings.Join(got, ",") != "blue_svc_tcp,blue_svc_udp" {
		t.Fatalf("group members %v", got)
	}
	if n := aclCount(t, z, "blue_iso"); n != 2 {
		t.Fatalf("port group ACLs %d, want its own and the service's", n)
	}

	// The network re-plans with a change of its own: the contributed members
	// stay; with nothing changed it writes nothing.
	p = sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.10"))
	if p.Updated != 1 || p.Inserted+p.Deleted != 0 {
		t.Fatalf("network change: %s, want only its ACL updated", p)
	}
	if p = sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.10")); !p.Empty() {
		t.Fatalf("network resync: %s, want nothing", p)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); len(got) != 2 {
		t.Fatalf("after network re-plan, group members %v", got)
	}
	if n := aclCount(t, z, "blue_iso"); n != 2 {
		t.Fatalf("after network re-plan, port group ACLs %d", n)
	}

	// A second contributor to the same group does not disturb the first.
	rows2, contribs2 := service("blue", "10.96.0.11:80", "tcp")
	for _, r := range rows2 {
		if lb, ok := r.(*nbdb.LoadBalancer); ok {
			lb.Name = "blue_other_tcp"
		}
	}
	if _, err := s.Sync(ctx, "svc:b", rows2, contribs2...); err != nil {
		t.Fatal(err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); strings.Join(got, ",") != "blue_other_tcp,blue_svc_tcp,blue_svc_udp" {
		t.Fatalf("two contributors: %v", got)
	}

	// A restarted controller (a new Syncer, which never planned svc:b)
	// still finds svc:b's members when it withdraws them; the first Syncer
	// then puts them back.
	_, restarted := connectLB(t, z)
	restarted.NeverContributes("net:")
	p, err = restarted.Sync(ctx, "svc:b", rows2)
	if err != nil || p.Removed != 2 || p.Inserted+p.Updated+p.Deleted != 0 {
		t.Fatalf("withdraw after a restart: %v %v, want the 2 members removed and nothing else", p, err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); strings.Join(got, ",") != "blue_svc_tcp,blue_svc_udp" {
		t.Fatalf("after the restarted Syncer withdrew svc:b: %v", got)
	}
	if p, err = s.Sync(ctx, "svc:b", rows2, contribs2...); err != nil || p.Added != 2 {
		t.Fatalf("contribute again: %v %v", p, err)
	}

	// The first service drops UDP: one load balancer deleted, its member
	// withdrawn, in one transaction; the service re-planned writes nothing.
	before := s.Transactions()
	rows, contribs = service("blue", "10.96.0.10:53", "tcp")
	p, err = s.Sync(ctx, "svc:a", rows, contribs...)
	if err != nil || p.Deleted != 1 || s.Transactions() != before+1 {
		t.Fatalf("drop a protocol: %v %v", p, err)
	}
	if p, err := s.Plan("svc:a", rows, contribs...); err != nil || !p.Empty() {
		t.Fatalf("service resync: %v %v, want empty", p, err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); strings.Join(got, ",") != "blue_other_tcp,blue_svc_tcp" {
		t.Fatalf("after dropping udp: %v", got)
	}

	// A contribution the service no longer asks for is withdrawn while the row
	// it refers to stays.
	p, err = s.Sync(ctx, "svc:a", rows, contribs[1:]...)
	if err != nil || p.Removed != 1 || p.Deleted != 0 {
		t.Fatalf("withdraw from group: %v %v", p, err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); strings.Join(got, ",") != "blue_other_tcp" {
		t.Fatalf("after withdrawing: %v", got)
	}

	// The service goes: its ACL leaves the port group (a strong reference,
	// so it must be withdrawn in the same transaction) and its rows go.
	sync(t, s, "svc:a", nil)
	if n := aclCount(t, z, "blue_iso"); n != 2 { // the network's and svc:b's
		t.Fatalf("after deleting the service, port group ACLs %d, want 2", n)
	}

	// The group goes between a contributor's plan and its commit: the
	// contributor learns it (and plans again).
	rows3, contribs3 := service("blue", "10.96.0.12:80", "sctp")
	p, err = s.Plan("svc:c", rows3, contribs3[:1]...)
	if err != nil || len(p.Missing) != 0 {
		t.Fatalf("plan before the group goes: %v %v", p, err)
	}
	z.MustNBCtl("clear", "Logical_Switch", "blue_sw", "load_balancer_group", "--", "destroy", "Load_Balancer_Group", "blue_clusterLBGroup")
	if err := s.Apply(ctx, p); !errors.Is(err, ovsdbsync.ErrTargetGone) {
		t.Fatalf("commit after the group went: %v, want ErrTargetGone", err)
	}
	if p, err := s.Plan("svc:c", rows3, contribs3[:1]...); err != nil || len(p.Missing) != 1 {
		t.Fatalf("plan again: %v %v, want the group missing", p, err)
	}
	sync(t, s, "svc:c", nil)
	sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.10"))

	// The port group goes between a contributor's plan and its commit: the
	// ACL it was to anchor is collected at commit and never shows, and
	// Apply reports the target gone without waiting for it.
	rows4, contribs4 := service("blue", "10.96.0.13:80", "tcp")
	p, err = s.Plan("svc:d", rows4, contribs4...)
	if err != nil || len(p.Missing) != 0 {
		t.Fatalf("plan before the port group goes: %v %v", p, err)
	}
	z.MustNBCtl("destroy", "Port_Group", "blue_iso")
	wait := s.WaitTimeout
	s.WaitTimeout = 3 * time.Second
	if err := s.Apply(ctx, p); !errors.Is(err, ovsdbsync.ErrTargetGone) {
		t.Fatalf("commit after the port group went: %v, want ErrTargetGone", err)
	}
	s.WaitTimeout = wait
	sync(t, s, "svc:d", nil)
	sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.10"))

	// The network goes: its group goes with it (held through its switch).
	sync(t, s, "net:blue", nil)
	if got := z.MustNBCtl("--bare", "--columns=name", "list", "Load_Balancer_Group"); got != "" {
		t.Fatalf("groups left after the network: %q", got)
	}
	if owners, _ := s.Owners(""); len(owners) != 1 || !owners["svc:b"] {
		t.Fatalf("owners %v, want only svc:b", owners)
	}
}

func TestShareRejectsColumns(t *testing.T) {
	z := ovntest.StartZone(t, "share")
	_, s := connectLB(t, z)
	for _, c := range []struct {
		m   model.Model
		col string
	}{{&nbdb.LoadBalancer{}, "vips"}, {&nbdb.LoadBalancerGroup{}, "name"}, {&nbdb.LogicalSwitch{}, "nope"}, {&nbdb.NAT{}, "external_ids"}} {
		if err := s.Share(c.m, c.col); err == nil {
			t.Errorf("Share(%T, %s) accepted", c.m, c.col)
		}
	}
	if _, err := s.Plan("o", nil, ovsdbsync.Contribution{Target: &nbdb.LogicalSwitch{Name: "x"}, Column: "ports", Members: nil}); err == nil {
		t.Error("a contribution to an unshared column was planned")
	}
}

// TestShareRows: pods contribute their ports to a network's switch and to
// one port group (the only one shared); a policy's port group lists pods'
// ports it does not own, and removing one from it removes it.
func TestShareRows(t *testing.T) {
	z := ovntest.StartZone(t, "sharerows")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: z.NB, Indexes: ovsdbsync.Indexes(
		nbdb.LogicalSwitchPortTable, nbdb.PortGroupTable, nbdb.LogicalSwitchTable)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := ovsdbsync.New(c, &nbdb.LogicalSwitchPort{}, &nbdb.PortGroup{}, &nbdb.LogicalSwitch{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Share(&nbdb.LogicalSwitch{}, "ports"); err != nil {
		t.Fatal(err)
	}
	if err := s.ShareRows(&nbdb.PortGroup{}, "ports", func(m model.Model) bool { return m.(*nbdb.PortGroup).Name == "iso" }); err != nil {
		t.Fatal(err)
	}
	sync(t, s, "net:a", []model.Model{
		&nbdb.LogicalSwitch{UUID: "ls", Name: "sw"},
		&nbdb.PortGroup{UUID: "pg", Name: "iso"},
	})
	pod := func(name string) ([]model.Model, []ovsdbsync.Contribution) {
		id := "lsp:" + name
		return []model.Model{&nbdb.LogicalSwitchPort{UUID: id, Name: name}}, []ovsdbsync.Contribution{
			{Target: &nbdb.LogicalSwitch{Name: "sw"}, Column: "ports", Members: []string{id}},
			{Target: &nbdb.PortGroup{Name: "iso"}, Column: "ports", Members: []string{id}},
		}
	}
	for _, name := range []string{"p1", "p2"} {
		rows, contribs := pod(name)
		if p, err := s.Sync(ctx, "pod:"+name, rows, contribs...); err != nil || p.Inserted != 1 || p.Added != 2 {
			t.Fatalf("pod %s: %v %v, want its port inserted and added to the switch and the group", name, p, err)
		}
	}
	uuid := func(port string) string {
		return z.MustNBCtl("--bare", "--columns=_uuid", "find", "Logical_Switch_Port", "name="+port)
	}
	members := func(table, row string) string {
		var names []string
		for _, u := range strings.Fields(z.MustNBCtl("--bare", "--columns=ports", "list", table, row)) {
			names = append(names, z.MustNBCtl("--bare", "--columns=name", "list", "Logical_Switch_Port", u))
		}
		sort.Strings(names)
		return strings.Join(names, ",")
	}
	// The network re-plans: the pods' members stay.
	if p := sync(t, s, "net:a", []model.Model{&nbdb.LogicalSwitch{UUID: "ls", Name: "sw", OtherConfig: map[string]string{"x": "1"}}, &nbdb.PortGroup{UUID: "pg", Name: "iso"}}); p.Updated != 1 {
		t.Fatalf("network change: %s", p)
	}
	if got := members("Logical_Switch", "sw") + " " + members("Port_Group", "iso"); got != "p1,p2 p1,p2" {
		t.Fatalf("after the network's re-plan: %q", got)
	}
	// A policy's group lists both pods' ports, then only p1: p2 leaves it
	// (the column is not shared in this row, so it is the policy's alone).
	sync(t, s, "np:x", []model.Model{&nbdb.PortGroup{UUID: "pg", Name: "pol", Ports: []string{uuid("p1"), uuid("p2")}}})
	sync(t, s, "np:x", []model.Model{&nbdb.PortGroup{UUID: "pg", Name: "pol", Ports: []string{uuid("p1")}}})
	if got := members("Port_Group", "pol"); got != "p1" {
		t.Fatalf("policy group after dropping p2: %q", got)
	}
	if _, err := s.Plan("pod:p3", nil, ovsdbsync.Contribution{Target: &nbdb.PortGroup{Name: "pol"}, Column: "ports"}); err == nil {
		t.Error("a contribution to a port group that is not shared was planned")
	}
	// A pod goes: its port leaves the switch and the group in one
	// transaction.
	if p := sync(t, s, "pod:p2", nil); p.Deleted != 1 || p.Removed != 2 {
		t.Fatalf("pod p2 gone: %s (removed %d), want its port deleted and 2 members removed", p, p.Removed)
	}
	if got := members("Logical_Switch", "sw") + " " + members("Port_Group", "iso"); got != "p1 p1" {
		t.Fatalf("after p2 went: %q", got)
	}
	// Only p1's targets are remembered: an owner that went is forgotten.
	if n := s.Remembered(); n != 1 {
		t.Errorf("%d owners remembered, want 1 (pod:p1)", n)
	}
}

// TestForgottenContributionHeals: a Syncer whose memory misses where an
// owner's members are (here they were contributed by another Syncer after
// this one had indexed the database; in a zone, a plan made from a cache
// being rebuilt could lose them) fails once to delete the owner's rows, the
// database refusing to leave a strong reference dangling, and the next plan
// looks afresh and withdraws them. Nothing is half-written either time.
func TestForgottenContributionHeals(t *testing.T) {
	z := ovntest.StartZone(t, "heal")
	_, s := connectLB(t, z)
	s.NeverContributes("net:")
	ctx := context.Background()
	sync(t, s, "net:blue", network("blue", "ip4.src == 10.0.0.9"))
	// The Syncer indexes contributions on its first plan of an owner it
	// does not know.
	sync(t, s, "svc:other", nil)

	_, other := connectLB(t, z)
	other.NeverContributes("net:")
	rows, contribs := service("blue", "10.96.0.10:53", "tcp")
	if p, err := other.Sync(ctx, "svc:a", rows, contribs...); err != nil || p.Added != 2 {
		t.Fatalf("contribute through the other Syncer: %v %v", p, err)
	}

	// Once this Syncer's cache shows the rows.
	if err := proc.WaitFor(10*time.Second, time.Millisecond, func() (bool, error) {
		p, err := s.Plan("svc:a", nil)
		return err == nil && p.Deleted == 2, err
	}); err != nil {
		t.Fatalf("svc:a's rows not seen: %v", err)
	}
	p, err := s.Sync(ctx, "svc:a", nil)
	if err == nil {
		t.Fatalf("deleting svc:a without its members found: %v, want a referential integrity violation", p)
	}
	if n := aclCount(t, z, "blue_iso"); n != 2 {
		t.Fatalf("after the refused plan, port group ACLs %d, want 2 (nothing half-written)", n)
	}
	if p, err := s.Sync(ctx, "svc:a", nil); err != nil || p.Removed != 2 || p.Deleted != 2 {
		t.Fatalf("planned again: %v %v, want its 2 members withdrawn and its 2 rows deleted", p, err)
	}
	if got := groupMembers(t, z, "blue_clusterLBGroup"); len(got) != 0 {
		t.Fatalf("group members left: %v", got)
	}
	if n := aclCount(t, z, "blue_iso"); n != 1 {
		t.Fatalf("port group ACLs %d, want only the network's", n)
	}
}

// TestPlanLeavesDesiredAlone: planning and applying (inserts, then updates
// that keep other owners' members and resolve references) never writes
// into the caller's desired rows, whose maps and slices the plan's
// operations share.
func TestPlanLeavesDesiredAlone(t *testing.T) {
	z := ovntest.StartZone(t, "desired")
	_, s := connectLB(t, z)
	ctx := context.Background()
	clone := func(rows []model.Model) []model.Model {
		out := make([]model.Model, len(rows))
		for i, m := range rows {
			out[i] = model.Clone(m)
		}
		return out
	}
	apply := func(owner string, rows []model.Model, contribs ...ovsdbsync.Contribution) {
		t.Helper()
		before := clone(rows)
		p, err := s.Plan(owner, rows, contribs...)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(before, rows); d != "" {
			t.Fatalf("%s: the desired rows changed (-before +after):\n%s", owner, d)
		}
	}
	net := network("red", "ip4.src == 10.0.0.1")
	for _, m := range net {
		if ls, ok := m.(*nbdb.LogicalSwitch); ok {
			ls.LoadBalancerGroup = append(make([]string, 0, 8), ls.LoadBalancerGroup...) // room to append into
		}
	}
	apply("net:red", net)
	rows, contribs := service("red", "10.96.0.10:53", "tcp", "udp")
	apply("svc:red/dns", rows, contribs...)
	net = network("red", "ip4.src == 10.0.0.2")
	apply("net:red", net) // an update keeping the service's members
	rows, contribs = service("red", "10.96.0.10:5353", "tcp")
	apply("svc:red/dns", rows, contribs...)
}

// TestMemberMutationLikeLibovsdb: a contribution's mutation is the one
// libovsdb's Mutate makes for the same members (it is built without
// libovsdb, which copies the target row from the cache to make it).
func TestMemberMutationLikeLibovsdb(t *testing.T) {
	z := ovntest.StartNB(t, "mutation")
	c, s := connectLB(t, z)
	const row, u1, u2 = "6b1d2c3a-0000-4000-8000-0000000000a1", "6b1d2c3a-0000-4000-8000-0000000000b1", "6b1d2c3a-0000-4000-8000-0000000000b2"
	for _, tc := range []struct {
		name     string
		del, add []string
	}{
		{"insert", nil, []string{u1}},
		{"delete", []string{u1, u2}, nil},
		{"both, named UUIDs of rows inserted alongside", []string{u2}, []string{"r17", u1}},
	} {
		m := &nbdb.LoadBalancerGroup{UUID: row}
		var muts []model.Mutation
		if len(tc.del) > 0 {
			muts = append(muts, model.Mutation{Field: &m.LoadBalancer, Mutator: libovsdb.MutateOperationDelete, Value: tc.del})
		}
		if len(tc.add) > 0 {
			muts = append(muts, model.Mutation{Field: &m.LoadBalancer, Mutator: libovsdb.MutateOperationInsert, Value: tc.add})
		}
		want, err := c.Where(m).Mutate(m, muts...)
		if err != nil {
			t.Fatal(err)
		}
		got := s.MemberMutation(m, "load_balancer", tc.del, tc.add)
		if d := cmp.Diff(want, []libovsdb.Operation{got}); d != "" {
			t.Errorf("%s (-libovsdb +Syncer):\n%s", tc.name, d)
		}
	}
}
