package render

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"github.com/ovn-org/libovsdb/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
	"github.com/ovn-udn/ovn-udn/internal/ovsdbsync"
	"github.com/ovn-udn/ovn-udn/internal/rows/services"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
	"github.com/ovn-udn/ovn-udn/internal/zone"
)

// Result is what the controllers would write, in a stable order.
type Result struct {
	// Problems are input objects left out; Warnings are assumptions and
	// controller errors (see Input).
	Problems []Problem `json:"problems,omitempty"`
	Warnings []Problem `json:"warnings,omitempty"`
	// Events the controllers would emit.
	Events                       []Event         `json:"events,omitempty"`
	UserDefinedNetworks          []NetworkStatus `json:"userDefinedNetworks,omitempty"`
	ClusterUserDefinedNetworks   []NetworkStatus `json:"clusterUserDefinedNetworks,omitempty"`
	NetworkAttachmentDefinitions []NAD           `json:"networkAttachmentDefinitions,omitempty"`
	Nodes                        []Node          `json:"nodes,omitempty"`
	Pods                         []Pod           `json:"pods,omitempty"`
	ClusterNetworkConnects       []ConnectStatus `json:"clusterNetworkConnects,omitempty"`
	Zones                        []Zone          `json:"zones,omitempty"`
}

// Event is one Event a controller would emit.
type Event struct {
	Object  string `json:"object"` // "Kind namespace/name"
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Condition is a status condition without its timestamps (they would make
// the output differ between runs).
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// NetworkStatus is the status a UDN or CUDN would get.
type NetworkStatus struct {
	Namespace        string      `json:"namespace,omitempty"`
	Name             string      `json:"name"`
	Conditions       []Condition `json:"conditions,omitempty"`
	ActiveNamespaces []string    `json:"activeNamespaces,omitempty"`
}

// NAD is a NetworkAttachmentDefinition as it would be stored.
type NAD struct {
	Namespace   string            `json:"namespace"`
	Name        string            `json:"name"`
	Owner       string            `json:"owner,omitempty"` // "Kind name" of its controller
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Config      json.RawMessage   `json:"config"`
}

// Node is a node's ovn-udn annotations.
type Node struct {
	Name        string            `json:"name"`
	Zone        string            `json:"zone"`
	Annotations map[string]string `json:"annotations"`
}

// Pod is a pod's attachments.
type Pod struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Node      string          `json:"node,omitempty"`
	Networks  podnet.Networks `json:"networks,omitempty"`
}

// Zone is one zone's Northbound rows.
type Zone struct {
	Name     string        `json:"name"`
	Networks []NetworkRows `json:"networks"`
	Services []ServiceRows `json:"services,omitempty"`
	Policies []PolicyRows  `json:"policies,omitempty"`
	Connects []ConnectRows `json:"connects,omitempty"`
	// Links are the links between the primary networks of namespaces
	// with several.
	Links []LinkRows `json:"links,omitempty"`
	// EgressIPs are the networks' EgressIP rows.
	EgressIPs []EgressIPRows `json:"egressIPs,omitempty"`
	// EgressFirewalls are the namespaces' EgressFirewall rows.
	EgressFirewalls []EgressFirewallRows `json:"egressFirewalls,omitempty"`
	// EgressQoSes are the namespaces' EgressQoS rows.
	EgressQoSes []EgressQoSRows `json:"egressQoSes,omitempty"`
	// Pods are the ports each pod writes as its own rows (already shown,
	// merged, in Networks).
	Pods []PodRows `json:"-"`
}

// PodRows are the rows one pod writes in one zone (its ports) and the
// members it adds to its networks' rows.
type PodRows struct {
	Pod           string // "<namespace>/<name>"
	NotRendered   string
	Models        []model.Model
	Contributions []ovsdbsync.Contribution
}

// ServiceRows are the rows of one Service in one zone, and the members it
// adds to rows its network owns.
type ServiceRows struct {
	Service     string `json:"service"` // "<namespace>/<name>"
	NotRendered string `json:"notRendered,omitempty"`
	Rows        []Row  `json:"rows,omitempty"`
	// Contributions are the members the service adds to its network's rows.
	Contributions []Contribution `json:"contributions,omitempty"`
	// Output is the rows and contributions as the zone controller hands
	// them to the database.
	Output services.Output `json:"-"`
}

// Contribution is a set of members a service adds to a set column of a row
// another owner (its network) holds.
type Contribution struct {
	Table   string   `json:"table"`
	Target  string   `json:"target"` // the row's name
	Column  string   `json:"column"`
	Members []string `json:"members"` // IDs of the service's rows
}

// NetworkRows are the rows of one network in one zone.
type NetworkRows struct {
	Network string `json:"network"`
	// NotRendered says why the zone would leave the network's rows as they
	// are (malformed, not allocated, not ready).
	NotRendered string `json:"notRendered,omitempty"`
	Rows        []Row  `json:"rows,omitempty"`
	// Models are the rows as the zone's Northbound holds them: the
	// network's, with its pods' ports in its switches.
	Models []model.Model `json:"-"`
	// Own are the rows the network's owner writes (Models without the
	// pods' ports, which each pod writes as its own: see Zone.Pods).
	Own []model.Model `json:"-"`
	// Definition is the network's topology, role and subnets, as far as
	// the input defines them (for -o dot's labels).
	Definition topology.Network `json:"-"`
}

// Row is one Northbound row: its table, its stable ID (references between
// rows use it) and its columns (empty ones left out).
type Row struct {
	Table   string         `json:"table"`
	ID      string         `json:"id"`
	Columns map[string]any `json:"columns"`
}

// collect reads the results back from the in-memory API.
func (e *engine) collect(ctx context.Context, res *Result, zones []string) error {
	var udns v1.UserDefinedNetworkList
	var cudns v1.ClusterUserDefinedNetworkList
	var nads nadv1.NetworkAttachmentDefinitionList
	var nodes corev1.NodeList
	var pods corev1.PodList
	var cncs v1.ClusterNetworkConnectList
	for _, l := range []client.ObjectList{&udns, &cudns, &nads, &nodes, &pods, &cncs} {
		if err := e.c.List(ctx, l); err != nil {
			return err
		}
	}
	for _, u := range udns.Items {
		res.UserDefinedNetworks = append(res.UserDefinedNetworks, NetworkStatus{Namespace: u.Namespace, Name: u.Name, Conditions: conditions(u.Status.Conditions)})
	}
	for _, c := range cudns.Items {
		res.ClusterUserDefinedNetworks = append(res.ClusterUserDefinedNetworks,
			NetworkStatus{Name: c.Name, Conditions: conditions(c.Status.Conditions), ActiveNamespaces: c.Status.ActiveNamespaces})
	}
	for _, n := range nads.Items {
		out := NAD{Namespace: n.Namespace, Name: n.Name, Labels: n.Labels, Annotations: n.Annotations, Config: json.RawMessage(n.Spec.Config)}
		if !json.Valid(out.Config) {
			b, _ := json.Marshal(n.Spec.Config)
			out.Config = b
		}
		if ref := metav1.GetControllerOf(&n); ref != nil {
			out.Owner = ref.Kind + " " + ref.Name
		}
		res.NetworkAttachmentDefinitions = append(res.NetworkAttachmentDefinitions, out)
	}
	for _, n := range nodes.Items {
		out := Node{Name: n.Name, Zone: e.zoneOf[n.Name], Annotations: map[string]string{}}
		for k, v := range n.Annotations {
			if strings.HasPrefix(k, "k8s.ovn.org/") {
				out.Annotations[k] = v
			}
		}
		res.Nodes = append(res.Nodes, out)
	}
	for _, p := range pods.Items {
		nets, err := podnet.Parse(p.Annotations)
		if err != nil {
			e.warn(Problem{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, Reason: err.Error()})
		}
		res.Pods = append(res.Pods, Pod{Namespace: p.Namespace, Name: p.Name, Node: p.Spec.NodeName, Networks: nets})
	}
	res.ClusterNetworkConnects = connectStatuses(cncs.Items)
	want := map[string]bool{}
	for _, z := range zones {
		want[z] = true
		if e.zones[z] == nil {
			return fmt.Errorf("zone %q: no node of the input is in it", z)
		}
	}
	var names []string
	for name := range e.zones {
		if len(want) == 0 || want[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	defs := definitions(nads.Items, e.nodes.Config)
	for _, name := range names {
		rows, err := zoneRows(ctx, e.zones[name], defs)
		if err != nil {
			return err
		}
		svcs, err := serviceRows(ctx, e.zones[name])
		if err != nil {
			return err
		}
		pols, err := policyRows(ctx, e.zones[name])
		if err != nil {
			return err
		}
		cns, err := connectRows(ctx, e.zones[name], cncs.Items)
		if err != nil {
			return err
		}
		links, err := linkRows(ctx, e.zones[name])
		if err != nil {
			return err
		}
		pods, err := podRows(ctx, e.c, e.zones[name])
		if err != nil {
			return err
		}
		eips, err := egressIPRows(ctx, e.zones[name], rows)
		if err != nil {
			return err
		}
		efs, err := egressFirewallRows(ctx, e.c, e.zones[name])
		if err != nil {
			return err
		}
		qoses, err := egressQoSRows(ctx, e.c, e.zones[name])
		if err != nil {
			return err
		}
		res.Zones = append(res.Zones, Zone{Name: name, Networks: rows, Services: svcs, Policies: pols, Connects: cns, Links: links, Pods: pods,
			EgressIPs: eips, EgressFirewalls: efs, EgressQoSes: qoses})
	}
	return nil
}

// definitions returns the networks' names, topologies, roles and subnets:
// the default network's from the cluster configuration, the others' from
// the first NAD, in namespace and name order, whose config parses.
func definitions(nads []nadv1.NetworkAttachmentDefinition, cfg config.Cluster) map[string]topology.Network {
	out := map[string]topology.Network{nodeinfo.DefaultNetwork: topology.DefaultNetwork(cfg)}
	sorted := make([]*nadv1.NetworkAttachmentDefinition, len(nads))
	for i := range nads {
		sorted[i] = &nads[i]
	}
	sort.Slice(sorted, func(i, j int) bool {
		return key(sorted[i].Namespace, sorted[i].Name) < key(sorted[j].Namespace, sorted[j].Name)
	})
	for _, nad := range sorted {
		c, err := netconf.Parse(nad)
		if err != nil || c == nil {
			continue
		}
		if _, ok := out[c.Name]; ok {
			continue
		}
		out[c.Name] = topology.Network{Name: c.Name, Topology: c.Topology, Role: c.Role, Subnets: c.ParsedSubnets()}
	}
	return out
}

func conditions(cs []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(cs))
	for _, c := range cs {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// toRows turns models into rows through their ovsdb struct tags.
func toRows(models []model.Model) []Row {
	out := make([]Row, 0, len(models))
	for _, m := range models {
		v := reflect.ValueOf(m).Elem()
		t := v.Type()
		row := Row{Table: tableOf(m), ID: topology.RowID(m), Columns: map[string]any{}}
		for i := 0; i < t.NumField(); i++ {
			col := t.Field(i).Tag.Get("ovsdb")
			if col == "" || col == "_uuid" {
				continue
			}
			f := v.Field(i)
			switch f.Kind() {
			case reflect.Pointer:
				if f.IsNil() {
					continue
				}
				row.Columns[col] = f.Elem().Interface()
			case reflect.Map, reflect.Slice:
				if f.Len() == 0 {
					continue
				}
				row.Columns[col] = f.Interface()
			default:
				if f.IsZero() && f.Kind() == reflect.String {
					continue
				}
				row.Columns[col] = f.Interface()
			}
		}
		out = append(out, row)
	}
	return out
}

// tableNames maps the zone's model types to their tables.
var tableNames = sync.OnceValue(func() map[reflect.Type]string {
	out := map[reflect.Type]string{}
	for i, name := range zone.NBTableNames {
		out[reflect.TypeOf(zone.NBTables[i])] = name
	}
	return out
})

// tableOf names a model's table.
func tableOf(m model.Model) string {
	if name, ok := tableNames()[reflect.TypeOf(m)]; ok {
		return name
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", m), "*nbdb.")
}

// Invalid reports whether any input object was left out.
func (r *Result) Invalid() bool { return len(r.Problems) > 0 }
