package v1_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/api/v1/v1test"
	"github.com/ovn-udn/ovn-udn/internal/apivalidate"
	"github.com/ovn-udn/ovn-udn/internal/testing/kubetest"
)

var env *kubetest.Env

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}, &env) }

func newClient(t *testing.T) client.Client { t.Helper(); return clientFor(t, env) }

// clientFor is a client of e's API server.
func clientFor(t *testing.T, e *kubetest.Env) client.Client {
	t.Helper()
	c, err := client.New(e.Config, client.Options{})
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

// serverMessages creates obj on the API server (dry run: nothing is stored)
// and returns its rejection as one "field: detail" message per cause, like
// field.Error.Error() offline; none when it is accepted.
func serverMessages(t *testing.T, c client.Client, obj *unstructured.Unstructured) []string {
	t.Helper()
	err := c.Create(context.Background(), obj, client.DryRunAll)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("got %v, want an Invalid error", err)
	}
	var out []string
	for _, cause := range status.Status().Details.Causes {
		out = append(out, cause.Field+": "+cause.Message)
	}
	return out
}

// TestValidation applies valid and invalid networks to the real API server:
// each CEL rule rejects its case with its own message. Objects are decoded as
// render reads manifest files, as internal/apivalidate's test does.
func TestValidation(t *testing.T) {
	c := newClient(t)
	run := func(cases []v1test.Case, sole bool) {
		for _, tc := range cases {
			t.Run(tc.Name, func(t *testing.T) {
				obj, err := v1test.Object(tc.Doc)
				if err != nil {
					t.Fatal(err)
				}
				msgs := serverMessages(t, c, obj)
				if err := tc.Check(msgs, sole); err != nil {
					t.Fatal(err)
				}
				if testing.Verbose() && len(msgs) > 0 {
					t.Log(strings.Join(msgs, "\n"))
				}
			})
		}
	}
	run(v1test.ValidationCases, false)
	run(v1test.OVNKubernetesCases, false)
	run(v1test.EgressIPCases, false)
	run(v1test.EgressFirewallCases, false)
	run(v1test.EgressQoSCases, false)
	run(v1test.EgressServiceCases, false)
	run(v1test.SoleErrorCases, true)
}

// TestJudgesAgree is a property test: for a few hundred random networks
// (seeded; most valid, the rest at the edges of the rules) the offline
// validator render uses and the real API server accept and reject the same
// objects with the same messages.
func TestJudgesAgree(t *testing.T) {
	c := newClient(t)
	v, err := apivalidate.Project()
	if err != nil {
		t.Fatal(err)
	}
	const seed, n = 20260522, 300
	accepted, unchecked := 0, 0
	for _, tc := range v1test.Random(seed, n) {
		obj, err := v1test.Object(tc.Doc)
		if err != nil {
			t.Fatal(err)
		}
		server := serverMessages(t, c, obj.DeepCopy())
		var offline []string
		for _, e := range v.Validate(obj) {
			offline = append(offline, e.Error())
		}
		if len(server) == 0 {
			accepted++
		}
		if strings.Contains(strings.Join(server, "\n"), "some validation rules were not checked") {
			unchecked++
		}
		if d := cmp.Diff(server, offline, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("seed %d %s: judges differ (-server +offline):\n%s\n%s", seed, tc.Name, d, tc.Doc)
		}
		for _, m := range server {
			if strings.Contains(m, v1test.CELRuntimeError) {
				t.Errorf("seed %d %s: a CEL rule failed to evaluate: %s\n%s", seed, tc.Name, m, tc.Doc)
			}
		}
	}
	t.Logf("%d of %d random networks accepted; %d rejected before the CEL rules", accepted, n, unchecked)
	if accepted < n/4 || accepted > n*3/4 || unchecked == 0 {
		t.Errorf("%d of %d accepted, %d before CEL: the generator should mix valid and invalid networks of both kinds", accepted, n, unchecked)
	}
}

// TestImmutability checks that a UDN's spec and a CUDN's template and VRF
// cannot change, while a CUDN's namespace selector can.
func TestImmutability(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()

	u := object(t, v1test.UDN("immutable", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]"))
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, u) })
	_ = unstructured.SetNestedField(u.Object, int64(1500), "spec", "mtu")
	if err := c.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Fatalf("UDN spec update: got %v, want 'spec is immutable'", err)
	}

	cu := object(t, v1test.CUDN("immutable", "namespaceSelector: {matchLabels: {a: b}}\nvrf: v1\ntemplate: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"))
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

// TestConnectSubnetsImmutable checks that a ClusterNetworkConnect's connect
// subnets cannot change, while its selectors and connectivity can.
func TestConnectSubnetsImmutable(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	cnc := object(t, v1test.CNC("immutable", "networkSelectors: [{networkSelectionType: PrimaryUserDefinedNetworks, primaryUserDefinedNetworkSelector: {namespaceSelector: {matchLabels: {a: b}}}}]\nconnectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"))
	if err := c.Create(ctx, cnc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctx, cnc) })

	changed := cnc.DeepCopy()
	_ = unstructured.SetNestedSlice(changed.Object, []any{map[string]any{"cidr": "192.168.0.0/16", "networkPrefix": int64(25)}}, "spec", "connectSubnets")
	if err := c.Update(ctx, changed); err == nil || !strings.Contains(err.Error(), "connectSubnets is immutable") {
		t.Fatalf("connectSubnets update: got %v, want 'connectSubnets is immutable'", err)
	}
	changed = cnc.DeepCopy()
	_ = unstructured.SetNestedStringSlice(changed.Object, []string{"PodNetwork", "ClusterIPServiceNetwork"}, "spec", "connectivityEnabled")
	sel := []any{map[string]any{"networkSelectionType": "PrimaryUserDefinedNetworks",
		"primaryUserDefinedNetworkSelector": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"a": "c"}}}}}
	_ = unstructured.SetNestedSlice(changed.Object, sel, "spec", "networkSelectors")
	if err := c.Update(ctx, changed); err != nil {
		t.Fatalf("selector and connectivity update rejected: %v", err)
	}
}
