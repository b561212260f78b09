package explain

import (
	"os"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
)

func TestRowDescribe(t *testing.T) {
	ids := func(owner string, kv ...string) map[string]string {
		m := map[string]string{"k8s.ovn.org/owner": owner}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		row  Row
		want string
	}{
		{Row{Table: "ACL", ExternalIDs: ids("np:shop/echo", "k8s.ovn.org/policy-direction", "Ingress")}, "NetworkPolicy shop/echo (Ingress)"},
		{Row{Table: "ACL", ExternalIDs: ids("np:shop/echo")}, "NetworkPolicy shop/echo"},
		{Row{Table: "ACL", ExternalIDs: ids("npdeny:shop", "k8s.ovn.org/policy-direction", "Egress")}, "the default deny of namespace shop's NetworkPolicies (Egress)"},
		{Row{Table: "ACL", ExternalIDs: ids("npdeny:shop")}, "the default deny of namespace shop's NetworkPolicies (direction unknown)"},
		{Row{Table: "Logical_Router_Policy", ExternalIDs: ids("net:l3-blue.tenant")}, "network l3-blue.tenant's routing policy"},
		{Row{Table: "Logical_Router_Static_Route", ExternalIDs: ids("net:default")}, "network default's route"},
		{Row{Table: "Logical_Router_Static_Route", OutputPort: "trtos-l2.net_ovn_layer2_switch-upgrade", ExternalIDs: ids("net:l2.net")},
			"network l2.net's route to a node still at the old Layer2 topology, through the upgrade port (rolling upgrade)"},
		{Row{Table: "Logical_Router_Static_Route", OutputPort: "rtoe-GR_node-upgrade", ExternalIDs: ids("net:default")}, "network default's route"},
		{Row{Table: "NAT", ExternalIDs: ids("net:default")}, "network default's NAT"},
		{Row{Table: "ACL", ExternalIDs: ids("net:default")}, "network default's isolation ACL"},
		{Row{Table: "Load_Balancer", ExternalIDs: ids("net:default")}, "network default"},
		{Row{Table: "ACL", ExternalIDs: ids("svc:kube-system/kube-dns")}, "Service kube-system/kube-dns"},
		{Row{Table: "Logical_Router_Policy", ExternalIDs: ids("cnc:blue")}, "ClusterNetworkConnect blue"},
		{Row{Table: "Logical_Router_Static_Route", ExternalIDs: ids("primary-link:ns.a|ns.b")}, "the link between primary networks ns.a and ns.b"},
		{Row{Table: "ACL", ExternalIDs: ids("npas:shop/x")}, "the address sets of NetworkPolicy peers shop/x"},
		{Row{Table: "Logical_Router_Policy", Action: "reroute", ExternalIDs: ids("egressip:l3-blue.tenant", "k8s.ovn.org/egressip", "prod")}, "EgressIP prod's reroute to its egress nodes (network l3-blue.tenant)"},
		{Row{Table: "Logical_Router_Policy", Action: "allow", ExternalIDs: ids("egressip:l3-blue.tenant")}, "network l3-blue.tenant's EgressIP allow policy: traffic within the cluster keeps its path"},
		{Row{Table: "NAT", ExternalIDs: ids("egressip:default", "k8s.ovn.org/egressip", "prod")}, "EgressIP prod's SNAT to its egress IP (network default)"},
		{Row{Table: "Logical_Router_Static_Route", ExternalIDs: ids("egressip:default")}, "network default's EgressIP route to the egress node's gateway router"},
		{Row{Table: "ACL", Action: "drop", ExternalIDs: ids("egressfirewall:shop", "k8s.ovn.org/rule", "3", "k8s.ovn.org/network", "shop.net")}, "EgressFirewall shop/default rule 3 (network shop.net)"},
		{Row{Table: "Port_Group", ExternalIDs: ids("egressfirewall:shop")}, "EgressFirewall shop/default"},
		{Row{Table: "QoS", ExternalIDs: ids("egressqos:shop", "k8s.ovn.org/rule", "0", "k8s.ovn.org/network", "shop.net")}, "EgressQoS shop/default rule 0 (network shop.net)"},
		{Row{Table: "NAT", ExternalIDs: ids("egressip:shop.net", "k8s.ovn.org/egressip", "egressservice:shop/web")}, "EgressService shop/web's SNAT to its load-balancer IP (network shop.net)"},
		{Row{Table: "Logical_Router_Policy", Action: "reroute", ExternalIDs: ids("egressip:shop.net", "k8s.ovn.org/egressip", "egressservice:shop/web")}, "EgressService shop/web's reroute to its host (network shop.net)"},
		{Row{Table: "Logical_Router_Policy", Action: "reroute", ExternalIDs: ids("egressip:shop.net", "k8s.ovn.org/egressip", "eip1")}, "EgressIP eip1's reroute to its egress nodes (network shop.net)"},
		{Row{Table: "Logical_Switch_Port", ExternalIDs: ids("vm:shop/vm1")}, "VM shop/vm1's port, shared by its pods (live migration)"},
		{Row{Table: "ACL"}, "a ACL row not written by ovn-udn"},
		{Row{Table: "ACL", ExternalIDs: ids("other:x")}, "ACL (owner other:x)"},
	}
	for _, tc := range tests {
		if got := tc.row.Describe(); got != tc.want {
			t.Errorf("Describe(%v) = %q, want %q", tc.row.ExternalIDs, got, tc.want)
		}
	}
	spelled := Row{Table: "ACL", Name: "shop:Ingress:drop", Direction: "to-lport", Priority: 1000, Match: "outport == @pg", Action: "drop"}.Spelled()
	if want := `ACL "shop:Ingress:drop" to-lport priority 1000 match "outport == @pg" action drop`; spelled != want {
		t.Errorf("Spelled = %s, want %s", spelled, want)
	}
}

// TestDropStage: with tiered ACLs the decision is the acl_eval stage before
// the acl_action that carries it out; otherwise the last stage.
func TestDropStage(t *testing.T) {
	for _, tc := range []struct {
		file      string
		hop       int
		wantTable int
		wantName  string
	}{
		{"acldrop.txt", 1, 6, "ls_out_acl_eval"},
		{"remote.txt", 2, 28, "lr_in_ecmp_stateful_egr"},
	} {
		b, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		hops := ovntrace.ParseHops(string(b))
		s, ok := dropStage(hops[tc.hop])
		if !ok || s.Table != tc.wantTable || s.Name != tc.wantName {
			t.Errorf("%s hop %d: drop stage %d. %s (%v), want %d. %s", tc.file, tc.hop, s.Table, s.Name, ok, tc.wantTable, tc.wantName)
		}
	}
	if _, ok := dropStage(ovntrace.Hop{}); ok {
		t.Error("a hop without stages has a drop stage")
	}
}

func TestBuiltinReason(t *testing.T) {
	for name, want := range map[string]string{
		"ls_in_check_port_sec": "port security: the packet's source MAC or address is not the port's",
		"lr_in_admission":      "the router does not own the packet's destination MAC",
		"lr_in_ip_routing":     "the router has no route to the destination",
		"ls_in_l2_lkup":        "no port of the switch has the destination MAC",
		"ls_out_acl_eval":      "an ACL (no row of ovn-udn behind it)",
		"lr_out_undnat":        "a flow of northd's",
	} {
		if got := builtinReason(ovntrace.Stage{Name: name}); got != want {
			t.Errorf("builtinReason(%s) = %q, want %q", name, got, want)
		}
	}
}

func TestStageNote(t *testing.T) {
	route := &Row{Table: "Logical_Router_Static_Route", ExternalIDs: map[string]string{"k8s.ovn.org/owner": "net:l3-blue.tenant"}}
	allow := &Row{Table: "ACL", Name: "a", Priority: 1001, Match: "m", Action: "allow-related", Direction: "to-lport",
		ExternalIDs: map[string]string{"k8s.ovn.org/owner": "np:shop/web", "k8s.ovn.org/policy-direction": "Ingress"}}
	drop := &Row{Table: "Logical_Router_Policy", Priority: 1200, Match: "ip4.dst == 10.244.0.0/16", Action: "drop",
		ExternalIDs: map[string]string{"k8s.ovn.org/owner": "net:l3-blue.tenant"}}
	tests := []struct {
		name  string
		stage ovntrace.Stage
		row   *Row
		want  string
	}{
		{"route with owner", ovntrace.Stage{Name: "lr_in_ip_routing", Match: "reg7 == 0 && ip4.dst == 10.128.0.0/24",
			Actions: []string{"ip.ttl--;", `outport = "rtots-x";`}}, route, "route ip4.dst == 10.128.0.0/24 out rtots-x (network l3-blue.tenant's route)"},
		{"route of northd's", ovntrace.Stage{Name: "lr_in_ip_routing", Match: "reg7 == 0 && ip4.dst == 0.0.0.0/0"}, nil, "route ip4.dst == 0.0.0.0/0"},
		{"policy admits", ovntrace.Stage{Name: "ls_out_acl_eval"}, allow, `admitted by NetworkPolicy shop/web (Ingress): ACL "a" to-lport priority 1001 match "m" action allow-related`},
		{"isolation drops", ovntrace.Stage{Name: "lr_in_policy"}, drop, `dropped by network l3-blue.tenant's routing policy: Logical_Router_Policy priority 1200 match "ip4.dst == 10.244.0.0/16" action drop`},
		{"acl of northd's", ovntrace.Stage{Name: "ls_in_acl_eval"}, nil, ""},
		{"load balancer", ovntrace.Stage{Name: "ls_in_lb", Actions: []string{"reg4 = 10.96.0.10;", "ct_lb_mark(backends=10.244.1.3:53,10.244.2.3:53);"}}, nil, "load balancer: backends 10.244.1.3:53,10.244.2.3:53"},
		{"snat", ovntrace.Stage{Name: "lr_out_snat", Actions: []string{"ct_snat(169.254.0.30);"}}, nil, "snat 169.254.0.30"},
		{"snat in czone", ovntrace.Stage{Name: "lr_out_snat", Actions: []string{"ct_snat_in_czone(192.168.100.11);"}}, nil, "snat 192.168.100.11"},
		{"nothing", ovntrace.Stage{Name: "ls_in_pre_lb", Actions: []string{"next;"}}, nil, ""},
	}
	for _, tc := range tests {
		if got := stageNote(tc.stage, tc.row); got != tc.want {
			t.Errorf("%s: stageNote = %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
