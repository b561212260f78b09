package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	libovsdb "github.com/ovn-org/libovsdb/client"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/manifest"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/primarylinks"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox"
	"github.com/ovn-udn/ovn-udn/internal/zone"
	"github.com/ovn-udn/ovn-udn/internal/zone/feature"
)

// TestRenderMatchesCluster: `ovn-udn render` of the cluster's own objects
// (read back from the sandbox's API server, allocations included) gives the
// NAD, Node and Pod annotations the controllers wrote, and, in every zone,
// exactly the Northbound rows the zone controller wrote: the zone
// controller's own diff finds nothing to insert, update or delete.
func TestRenderMatchesCluster(t *testing.T) {
	ctx := context.Background()
	st, err := sandbox.ReadState(sandbox.NewLayoutMust(dir))
	if err != nil {
		t.Fatal(err)
	}
	syncers := map[string]*ovsdbsync.Syncer{}
	nbs := map[string]libovsdb.Client{}
	for _, n := range st.Nodes {
		nb, err := ovsdb.ConnectNB(ctx, ovsdb.ClientOptions{Endpoint: n.NB, Tables: zone.NBTables, Indexes: ovsdbsync.Indexes(zone.NBTableNames...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nb.Close)
		nbs[n.Name] = nb
		if syncers[n.Name], err = zone.NewSyncer(nb); err != nil {
			t.Fatal(err)
		}
	}
	rendered, policyOwners, links, pods, unused := 0, 0, 0, 0, 0
	eventually(t, func() error {
		docs, live, err := snapshot(ctx)
		if err != nil {
			return err
		}
		in, err := render.Check(docs)
		if err != nil {
			return err
		}
		res, err := render.Run(ctx, in, render.Options{Cluster: config.Default()})
		if err != nil {
			return err
		}
		if len(res.Problems) > 0 {
			return fmt.Errorf("the cluster's own objects have problems: %v", res.Problems)
		}
		if err := sameAnnotations(res, live); err != nil {
			return err
		}
		rendered, policyOwners, links, pods, unused = 0, 0, 0, 0, 0
		for _, z := range res.Zones {
			s := syncers[z.Name]
			if s == nil {
				return fmt.Errorf("render has zone %s, the sandbox has no such node", z.Name)
			}
			owners, err := s.Owners("net:")
			if err != nil {
				return err
			}
			for _, n := range z.Networks {
				if err := sameOwner(s, z.Name, "network "+n.Network, feature.NetworkKey(n.Network).String(), n.NotRendered, owners, n.Own, nil); err != nil {
					return err
				}
				rendered += len(n.Own)
				if len(n.Own) == 0 {
					unused++
				}
			}
			if len(owners) > 0 {
				return fmt.Errorf("zone %s: the Northbound has networks render does not: %v", z.Name, owners)
			}
			// Each pod's ports, its own rows, with their members in the
			// networks' switches (and the isolation group).
			podOwners, err := s.Owners(zone.PodOwner(""))
			if err != nil {
				return err
			}
			for _, pr := range z.Pods {
				if err := sameOwner(s, z.Name, "pod "+pr.Pod, zone.PodOwner(pr.Pod), pr.NotRendered, podOwners, pr.Models, pr.Contributions); err != nil {
					return err
				}
				rendered += len(pr.Models)
				pods++
			}
			if len(podOwners) > 0 {
				return fmt.Errorf("zone %s: the Northbound has pods' ports render does not: %v", z.Name, podOwners)
			}
			svcOwners, err := s.Owners("svc:")
			if err != nil {
				return err
			}
			for _, sv := range z.Services {
				if sv.NotRendered != "" {
					return fmt.Errorf("zone %s: service %s not rendered: %s", z.Name, sv.Service, sv.NotRendered)
				}
				owner := "svc:" + sv.Service
				delete(svcOwners, owner)
				p, err := s.Plan(owner, sv.Output.Rows, sv.Output.Contributions...)
				if err != nil {
					return err
				}
				if !p.Empty() || len(p.Missing) > 0 {
					return fmt.Errorf("zone %s: render and the zone controller differ on service %s: %s (missing %v)\n%v", z.Name, sv.Service, p, p.Missing, p.Ops)
				}
				rendered += len(sv.Output.Rows)
			}
			if len(svcOwners) > 0 {
				return fmt.Errorf("zone %s: the Northbound has services render does not: %v", z.Name, svcOwners)
			}
			// Links between a namespace's primary networks, with their
			// contributions to the networks' routers.
			linkOwners, err := s.Owners(primarylinks.OwnerPrefix)
			if err != nil {
				return err
			}
			for _, l := range z.Links {
				owner := primarylinks.OwnerPrefix + l.Link
				delete(linkOwners, owner)
				p, err := s.Plan(owner, l.Result.Rows, l.Result.Contributions...)
				if err != nil {
					return err
				}
				if !p.Empty() || len(p.Missing) > 0 || len(l.Problems) > 0 {
					return fmt.Errorf("zone %s: render and the zone controller differ on link %s: %s (missing %v, problems %v)\n%v", z.Name, l.Link, p, p.Missing, l.Problems, p.Ops)
				}
				rendered += len(l.Result.Rows)
				links++
			}
			if len(linkOwners) > 0 {
				return fmt.Errorf("zone %s: the Northbound has links render does not: %v", z.Name, linkOwners)
			}
			// Policies: render names ports by their row IDs; the zone's
			// Northbound gives them UUIDs.
			polOwners := map[string]bool{}
			for _, prefix := range []string{"np:", "npdeny:", "npas:"} {
				o, err := s.Owners(prefix)
				if err != nil {
					return err
				}
				maps.Copy(polOwners, o)
			}
			for _, p := range z.Policies {
				if p.NotRendered != "" {
					return fmt.Errorf("zone %s: %s not rendered: %s", z.Name, p.Owner, p.NotRendered)
				}
				rows, err := livePorts(ctx, nbs[z.Name], p.Models)
				if err != nil {
					return fmt.Errorf("zone %s: %s: %w", z.Name, p.Owner, err)
				}
				delete(polOwners, p.Owner)
				plan, err := s.Plan(p.Owner, rows)
				if err != nil {
					return err
				}
				if !plan.Empty() {
					return fmt.Errorf("zone %s: render and the zone controller differ on %s: %s\n%v", z.Name, p.Owner, plan, plan.Ops)
				}
				rendered += len(rows)
				policyOwners++
			}
			for o := range polOwners {
				// A namespace's default-deny groups outlive its policies,
				// empty (the controller keeps what exists; render has no
				// database to know it): those alone may be missing here.
				var groups []nbdb.PortGroup
				if err := nbs[z.Name].WhereCache(func(pg *nbdb.PortGroup) bool {
					return pg.ExternalIDs[ovsdbsync.OwnerKey] == o
				}).List(ctx, &groups); err != nil {
					return err
				}
				if !strings.HasPrefix(o, "npdeny:") || slices.ContainsFunc(groups, func(pg nbdb.PortGroup) bool { return len(pg.Ports) > 0 }) {
					return fmt.Errorf("zone %s: the Northbound has network policy rows render does not: %s", z.Name, o)
				}
			}
		}
		if len(res.Zones) != len(st.Nodes) {
			return fmt.Errorf("render has %d zones, the sandbox %d nodes", len(res.Zones), len(st.Nodes))
		}
		return nil
	})
	if policyOwners == 0 {
		t.Error("no network policy rows compared (examples/ has a policy)")
	}
	if pods == 0 {
		t.Error("no pod's ports compared")
	}
	if links == 0 {
		t.Error("no link between primary networks compared (examples/multi-primary.yaml has one per zone)")
	}
	if unused == 0 {
		// examples/shared-cudn.yaml's network has no pod on node2, and
		// zone controllers render a network only where it is used.
		t.Error("every network has rows in every zone: none is left out where it is not used")
	}
	t.Logf("%d rows in %d zones identical (%d network policy owners, %d links and %d pods' ports among them); %d networks with no row in a zone whose node does not use them, in render and in the cluster",
		rendered, len(st.Nodes), policyOwners, links, pods, unused)
}

// livePorts returns policy rows with their port groups' ports (row IDs of
// logical switch ports, as render names them) replaced by the ports' UUIDs in
// a zone's Northbound.
func livePorts(ctx context.Context, nb libovsdb.Client, rows []model.Model) ([]model.Model, error) {
	out := make([]model.Model, len(rows))
	for i, m := range rows {
		c := model.Clone(m)
		if pg, ok := c.(*nbdb.PortGroup); ok {
			for j, id := range pg.Ports {
				lsp := &nbdb.LogicalSwitchPort{Name: strings.TrimPrefix(id, topology.PortRowID(""))}
				if err := nb.Get(ctx, lsp); err != nil {
					return nil, fmt.Errorf("port %s: %w", lsp.Name, err)
				}
				pg.Ports[j] = lsp.UUID
			}
		}
		out[i] = c
	}
	return out, nil
}

// liveBFD returns network rows with the BFD references of their routes (the
// default network's session IDs, topology.BFDRowID, as render names them)
// replaced by the sessions' UUIDs in a zone's Northbound, and how many it
// replaced.
func liveBFD(ctx context.Context, nb libovsdb.Client, rows []model.Model) ([]model.Model, int, error) {
	var sessions []nbdb.BFD
	if err := nb.List(ctx, &sessions); err != nil {
		return nil, 0, err
	}
	out := make([]model.Model, len(rows))
	n := 0
	for i, m := range rows {
		c := model.Clone(m)
		if r, ok := c.(*nbdb.LogicalRouterStaticRoute); ok && r.BFD != nil {
			for _, b := range sessions {
				hop, err := netip.ParseAddr(b.DstIP)
				if err == nil && *r.BFD == topology.BFDRowID(b.LogicalPort, hop) {
					u := b.UUID
					r.BFD = &u
					n++
				}
			}
		}
		out[i] = c
	}
	return out, n, nil
}

// snapshot reads the objects render takes from the suite's API server, as
// manifest documents, and the annotations the controllers wrote, by
// "Kind namespace/name".
func snapshot(ctx context.Context) ([]manifest.Document, map[string]map[string]string, error) {
	return snapshotFrom(ctx, admin)
}

// snapshotFrom is snapshot from the API server c talks to.
func snapshotFrom(ctx context.Context, c client.Client) ([]manifest.Document, map[string]map[string]string, error) {
	lists := []client.ObjectList{&corev1.NamespaceList{}, &corev1.NodeList{}, &v1.UserDefinedNetworkList{},
		&v1.ClusterUserDefinedNetworkList{}, &nadv1.NetworkAttachmentDefinitionList{}, &corev1.PodList{},
		&corev1.ServiceList{}, &discoveryv1.EndpointSliceList{}, &networkingv1.NetworkPolicyList{}}
	var docs []manifest.Document
	live := map[string]map[string]string{}
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			return nil, nil, err
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, nil, err
		}
		for _, it := range items {
			o := it.(client.Object)
			gvks, _, err := c.Scheme().ObjectKinds(o)
			if err != nil {
				return nil, nil, err
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				return nil, nil, err
			}
			u := &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvks[0])
			docs = append(docs, manifest.Document{File: "cluster", Index: len(docs) + 1, Object: u})
			live[gvks[0].Kind+" "+key(o)] = o.GetAnnotations()
		}
	}
	return docs, live, nil
}

func key(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// sameAnnotations compares render's NADs, Nodes and Pods with the cluster's.
func sameAnnotations(res *render.Result, live map[string]map[string]string) error {
	var diffs []string
	for _, n := range res.NetworkAttachmentDefinitions {
		for k, v := range n.Annotations {
			if got := live["NetworkAttachmentDefinition "+n.Namespace+"/"+n.Name][k]; got != v {
				diffs = append(diffs, fmt.Sprintf("NAD %s/%s %s: render %q, cluster %q", n.Namespace, n.Name, k, v, got))
			}
		}
	}
	for _, n := range res.Nodes {
		for k, v := range n.Annotations {
			if got := live["Node "+n.Name][k]; got != v {
				diffs = append(diffs, fmt.Sprintf("node %s %s: render %q, cluster %q", n.Name, k, v, got))
			}
		}
	}
	for _, p := range res.Pods {
		want, err := podnet.Parse(live["Pod "+p.Namespace+"/"+p.Name])
		if err != nil {
			return err
		}
		if got, exp := p.Networks.String(), want.String(); got != exp {
			diffs = append(diffs, fmt.Sprintf("pod %s/%s: render %s, cluster %s", p.Namespace, p.Name, got, exp))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		return fmt.Errorf("render and the cluster differ:\n%s", strings.Join(diffs, "\n"))
	}
	return nil
}

// sameOwner checks that what render gives an owner (rows and contributions)
// is what the zone holds: rendered, present among held (and removed from
// it), and a plan against the zone's Northbound with nothing to do.
func sameOwner(s *ovsdbsync.Syncer, zoneName, what, owner, notRendered string, held map[string]bool, rows []model.Model, contribs []ovsdbsync.Contribution) error {
	if notRendered != "" {
		return fmt.Errorf("zone %s: %s not rendered: %s", zoneName, what, notRendered)
	}
	if !held[owner] {
		if len(rows) == 0 && len(contribs) == 0 {
			return nil // nothing, in both (a network the zone's node does not use)
		}
		return fmt.Errorf("zone %s: %s rendered (%d rows) but absent from the Northbound", zoneName, what, len(rows))
	}
	delete(held, owner)
	p, err := s.Plan(owner, rows, contribs...)
	if err != nil {
		return err
	}
	if !p.Empty() || len(p.Missing) > 0 {
		return fmt.Errorf("zone %s: render and the zone controller differ on %s: %s (missing %v)\n%v", zoneName, what, p, p.Missing, p.Ops)
	}
	return nil
}
