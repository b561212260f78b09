package v1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/internal/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// object builds an unstructured object from YAML (so tests can send what a
// user would write, including invalid values the Go types cannot hold).
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatalf("bad test YAML: %v\n%s", err, doc)
	}
	return u
}

func udn(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
}

func cudn(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: ClusterUserDefinedNetwork\nmetadata: {name: %s}\nspec:\n%s", name, indent(spec))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n")
}

// TestValidation applies valid and invalid networks to the real API server:
// each CEL rule rejects its case with its own message.
func TestValidation(t *testing.T) {
	const sel = "namespaceSelector: {matchLabels: {tenant: a}}\n"
	tests := []struct {
		name    string
		doc     string
		wantErr string // empty: must be accepted
	}{
		// Accepted: the seed's examples and the common shapes.
		{"layer3 primary", udn("l3", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/24]"), ""},
		{"layer3 dual stack host prefixes", udn("l3ds", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/24, 2001:db8::/60/64]"), ""},
		{"layer3 without host prefix", udn("l3np", "topology: Layer3\nrole: Secondary\nsubnets: [10.129.0.0/16]"), ""},
		{"seed db-network layer2", udn("db-network", "topology: Layer2\nrole: Primary\nmtu: 9000\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.0/26]\nipam: {lifecycle: Persistent}"), ""},
		{"layer2 dual stack with join", udn("l2ds", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, fd00:10::/64]\njoinSubnets: [100.66.0.0/16, fd9a::/64]"), ""},
		{"layer2 secondary ipam disabled", udn("l2noipam", "topology: Layer2\nrole: Secondary\nipam: {mode: Disabled}"), ""},
		{"localnet secondary with vlan", udn("ln", "topology: Localnet\nrole: Secondary\nsubnets: [192.168.50.0/24]\nlocalnet: {physicalNetworkName: physnet1, vlanID: 100}"), ""},
		{"cudn seed example", cudn("db-network", sel+"vrf: db-network\ntemplate: {topology: Layer2, role: Primary, mtu: 9000, subnets: [10.0.0.0/24], excludeSubnets: [10.0.0.0/26]}"), ""},

		// Rejected, one rule each.
		{"layer3 without subnets", udn("x1", "topology: Layer3\nrole: Primary"), "subnets is required for Layer3 topology"},
		{"localnet primary", udn("x2", "topology: Localnet\nrole: Primary\nsubnets: [10.0.0.0/24]"), "Localnet topology is not supported for a Primary network"},
		{"persistent on layer3", udn("x3", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16]\nipam: {lifecycle: Persistent}"), "ipam.lifecycle Persistent is supported only for Layer2 and Localnet topologies"},
		{"persistent with ipam disabled", udn("x4", "topology: Layer2\nrole: Secondary\nipam: {mode: Disabled, lifecycle: Persistent}"), "ipam.lifecycle Persistent requires ipam.mode Enabled"},
		{"ipam disabled on primary", udn("x5", "topology: Layer2\nrole: Primary\nipam: {mode: Disabled}"), "ipam.mode Disabled is supported only for Secondary Layer2 and Localnet networks"},
		{"ipam disabled on layer3", udn("x6", "topology: Layer3\nrole: Secondary\nsubnets: [10.0.0.0/16]\nipam: {mode: Disabled}"), "ipam.mode Disabled is supported only for Secondary Layer2 and Localnet networks"},
		{"ipam disabled with subnets", udn("x7", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\nipam: {mode: Disabled}"), "subnets must be omitted when ipam.mode is Disabled"},
		{"ipam enabled without subnets", udn("x8", "topology: Layer2\nrole: Secondary\nipam: {mode: Enabled}"), "subnets is required when ipam.mode is Enabled"},
		{"layer2 without subnets or ipam", udn("x9", "topology: Layer2\nrole: Primary"), "subnets is required when ipam.mode is Enabled"},
		{"invalid cidr", udn("x10", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.300/24]"), "must be a CIDR, or CIDR/hostPrefix for Layer3"},
		{"cidr with host bits", udn("x11", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.1/24]"), "must be a network address"},
		{"host prefix on layer2", udn("x12", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/16/24]"), "a host prefix (CIDR/hostPrefix) is supported only for Layer3 subnets"},
		{"host prefix shorter than prefix", udn("x13", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16/8]"), "host prefix must be longer than the subnet's prefix length"},
		{"host prefix too long", udn("x14", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16/33]"), "host prefix must be longer than the subnet's prefix length"},
		{"two ipv4 subnets", udn("x15", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, 10.1.0.0/24]"), "two subnets must be of different IP families"},
		{"three subnets", udn("x16", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, fd00::/64, 10.1.0.0/24]"), "must have at most 2 items"},
		{"two ipv6 join subnets", udn("x17", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [fd99::/64, fd98::/64]"), "two join subnets must be of different IP families"},
		{"empty join subnets", udn("x18", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: []"), "should have at least 1 items"},
		{"three join subnets", udn("x19", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [100.65.0.0/16, fd99::/64, 100.66.0.0/16]"), "must have at most 2 items"},
		{"invalid join subnet", udn("x20", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [not-a-cidr]"), "must be a valid CIDR"},
		{"join subnets on secondary", udn("x21", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\njoinSubnets: [100.65.0.0/16]"), "joinSubnets is supported only for Primary networks"},
		{"exclude outside subnets", udn("x22", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.9.0.0/26]"), "every excludeSubnets entry must lie inside one of the subnets"},
		{"invalid exclude", udn("x23", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.0/33]"), "must be a valid CIDR"},
		{"bad topology", udn("x24", "topology: Layer4\nrole: Primary\nsubnets: [10.0.0.0/24]"), `supported values: "Layer2", "Layer3", "Localnet"`},
		{"bad role", udn("x25", "topology: Layer2\nrole: Tertiary\nsubnets: [10.0.0.0/24]"), `supported values: "Primary", "Secondary"`},
		{"missing role", udn("x26", "topology: Layer2\nsubnets: [10.0.0.0/24]"), "spec.role: Required value"},
		{"small mtu with ipv6", udn("x27", "topology: Layer2\nrole: Primary\nmtu: 1000\nsubnets: [fd00::/64]"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
		{"mtu too small", udn("x28", "topology: Layer2\nrole: Primary\nmtu: 100\nsubnets: [10.0.0.0/24]"), "should be greater than or equal to 576"},
		{"localnet fields on layer2", udn("x29", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 10}"), "localnet is supported only for Localnet topology"},
		{"vlan out of range", udn("x30", "topology: Localnet\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 5000}"), "should be less than or equal to 4094"},
		{"vrf too long", cudn("y1", sel+"vrf: a-very-long-vrf-name\ntemplate: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"), "may not be more than 15 bytes"},
		{"cudn template rules apply", cudn("y2", sel+"template: {topology: Layer3, role: Primary}"), "subnets is required for Layer3 topology"},
		{"cudn without selector", cudn("y3", "template: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"), "spec.namespaceSelector: Required value"},
	}
	c := newClient(t)
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.doc)
			err := c.Create(ctx, obj)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("valid object rejected: %v", err)
				}
				_ = c.Delete(ctx, obj)
				return
			}
			if err == nil {
				_ = c.Delete(ctx, obj)
				t.Fatalf("invalid object accepted; want error containing %q", tc.wantErr)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error does not contain %q:\n%v", tc.wantErr, err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
		})
	}
}

// TestImmutability checks that a UDN's spec and a CUDN's template and VRF
// cannot change, while a CUDN's namespace selector can.
func TestImmutability(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()

	u := object(t, udn("immutable", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, u) })
	_ = unstructured.SetNestedField(u.Object, int64(1500), "spec", "mtu")
	if err := c.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("UDN spec update: got %v, want 'spec is immutable'", err)
	}

	cu := object(t, cudn("immutable", "namespaceSelector: {matchLabels: {a: b}}\nvrf: v1\ntemplate: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"))
	if err := c.Create(ctx, cu); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, cu) })

	changed := cu.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, int64(1500), "spec", "template", "mtu")
	if err := c.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "template is immutable") {
		t.Fatalf("CUDN template update: got %v, want 'template is immutable'", err)
	}
	changed = cu.DeepCopy()
	unstructured.RemoveNestedField(changed.Object, "spec", "vrf")
	if err := c.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "vrf is immutable") {
		t.Fatalf("CUDN vrf removal: got %v, want 'vrf is immutable'", err)
	}
	changed = cu.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "c", "spec", "namespaceSelector", "matchLabels", "a")
	if err := c.Update(ctx, changed); err != nil {
		t.Fatalf("CUDN selector update rejected: %v", err)
	}
}
