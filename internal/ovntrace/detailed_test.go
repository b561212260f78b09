package ovntrace

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// hopLine summarises a hop for comparison: pipeline, datapath, ports, where
// it output the packet, and its last stage.
func hopLine(h Hop) string {
	s := fmt.Sprintf("%s %s %s", h.Pipeline, h.Datapath, h.InPort)
	if h.OutPort != "" {
		s += " -> " + h.OutPort
	}
	if h.Output != nil {
		s += fmt.Sprintf(" [output %s type %q]", h.Output.Port, h.Output.Type)
	}
	if n := len(h.Stages); n > 0 {
		last := h.Stages[n-1]
		s += fmt.Sprintf(" last %d.%s", last.Table, last.Name)
		if last.Drops() {
			s += " drop"
		}
	}
	return s
}

// TestParseHops reads detailed traces captured from a sandbox (2026-11-23,
// OVN 26.03): a Layer3 UDN pod to a pod on another node (out through the
// transit switch's remote port), the same packet entering the other zone,
// a pod to the default network's pod subnet (dropped by the network's
// isolation policy), a pod to a NetworkPolicy-isolated pod (dropped by the
// namespace's default-deny ACL), and egress to the outside (an ARP for the
// next hop generated on the way, the packet flooded on the external switch).
func TestParseHops(t *testing.T) {
	tests := []struct {
		file string
		want []string
		// stage is one stage to check whole: hop index, stage index.
		hop, stage int
		wantStage  Stage
	}{
		{
			file: "remote.txt",
			want: []string{
				`ingress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a -> stor-l3-blue.tenant_node1 [output stor-l3-blue.tenant_node1 type "patch"] last 15.ls_out_apply_port_sec`,
				`ingress l3-blue.tenant_ovn_cluster_router rtos-l3-blue.tenant_node1 last 28.lr_in_ecmp_stateful_egr`,
				`egress l3-blue.tenant_ovn_cluster_router rtos-l3-blue.tenant_node1 -> rtots-l3-blue.tenant_node1 [output rtots-l3-blue.tenant_node1 type "patch"] last 6.lr_out_delivery`,
				`ingress l3-blue.tenant_transit_switch tstor-l3-blue.tenant_node1 last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_transit_switch tstor-l3-blue.tenant_node1 -> tstor-l3-blue.tenant_node2 [output tstor-l3-blue.tenant_node2 type "remote"] last 15.ls_out_apply_port_sec`,
			},
			hop: 2, stage: 4,
			wantStage: Stage{Table: 16, Name: "lr_in_ip_routing", Match: "reg7 == 0 && ip4.dst == 10.128.0.0/24", Priority: 196, UUID: "05c87bad",
				Actions: []string{"ip.ttl--;", "reg8[0..15] = 0;", "reg0 = 100.88.0.3;", "reg5 = 100.88.0.2;", "eth.src = 0a:58:64:58:00:02;",
					`outport = "rtots-l3-blue.tenant_node1";`, "flags.loopback = 1;", "reg9[9] = 1;", "next;"}},
		},
		{
			file: "fromremote.txt",
			want: []string{
				`ingress l3-blue.tenant_transit_switch tstor-l3-blue.tenant_node1 last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_transit_switch tstor-l3-blue.tenant_node1 -> tstor-l3-blue.tenant_node2 [output tstor-l3-blue.tenant_node2 type "patch"] last 15.ls_out_apply_port_sec`,
				`ingress l3-blue.tenant_ovn_cluster_router rtots-l3-blue.tenant_node2 last 28.lr_in_ecmp_stateful_egr`,
				`egress l3-blue.tenant_ovn_cluster_router rtots-l3-blue.tenant_node2 -> rtos-l3-blue.tenant_node2 [output rtos-l3-blue.tenant_node2 type "patch"] last 6.lr_out_delivery`,
				`ingress l3-blue.tenant_node2 stor-l3-blue.tenant_node2 last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_node2 stor-l3-blue.tenant_node2 -> l3-blue.tenant_l3-blue_c [output l3-blue.tenant_l3-blue_c type ""] last 15.ls_out_apply_port_sec`,
			},
			hop: -1,
		},
		{
			file: "policydrop.txt",
			want: []string{
				`ingress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a -> stor-l3-blue.tenant_node1 [output stor-l3-blue.tenant_node1 type "patch"] last 15.ls_out_apply_port_sec`,
				`ingress l3-blue.tenant_ovn_cluster_router rtos-l3-blue.tenant_node1 last 18.lr_in_policy drop`,
			},
			hop: 2, stage: 6,
			wantStage: Stage{Table: 18, Name: "lr_in_policy", Match: "ip4.dst == 10.244.0.0/16", Priority: 1200, UUID: "9d8191ed", Actions: []string{"drop;"}},
		},
		{
			file: "acldrop.txt",
			want: []string{
				`ingress shop.tenant_node2 shop.tenant_shop_b last 32.ls_in_l2_lkup`,
				`egress shop.tenant_node2 shop.tenant_shop_b -> shop.tenant_shop_echo-67cfc5d9b5-5gt59 last 8.ls_out_acl_action`,
			},
			hop: 1, stage: 8,
			wantStage: Stage{Table: 6, Name: "ls_out_acl_eval", Match: "reg8[30..31] == 2 && reg0[9] == 1 && (outport == @np_04e282f482ee98a7_ingressDefaultDeny)",
				Priority: 2000, UUID: "f037085a", Actions: []string{"reg8[17] = 1;", "next;"}},
		},
		{
			file: "egress.txt",
			want: []string{
				`ingress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_node1 l3-blue.tenant_l3-blue_a -> stor-l3-blue.tenant_node1 [output stor-l3-blue.tenant_node1 type "patch"] last 15.ls_out_apply_port_sec`,
				`ingress l3-blue.tenant_ovn_cluster_router rtos-l3-blue.tenant_node1 last 28.lr_in_ecmp_stateful_egr`,
				`egress l3-blue.tenant_ovn_cluster_router rtos-l3-blue.tenant_node1 -> rtoj-l3-blue.tenant_ovn_cluster_router [output rtoj-l3-blue.tenant_ovn_cluster_router type "patch"] last 6.lr_out_delivery`,
				`ingress l3-blue.tenant_join jtor-l3-blue.tenant_ovn_cluster_router last 32.ls_in_l2_lkup`,
				`egress l3-blue.tenant_join jtor-l3-blue.tenant_ovn_cluster_router -> jtor-GR_l3-blue.tenant_node1 [output jtor-GR_l3-blue.tenant_node1 type "l3gateway"] last 15.ls_out_apply_port_sec`,
				`ingress GR_l3-blue.tenant_node1 rtoj-GR_l3-blue.tenant_node1 last 28.lr_in_ecmp_stateful_egr`,
				`egress GR_l3-blue.tenant_node1 rtoj-GR_l3-blue.tenant_node1 -> rtoe-GR_l3-blue.tenant_node1 [output rtoe-GR_l3-blue.tenant_node1 type "l3gateway"] last 6.lr_out_delivery`,
				`ingress ext_l3-blue.tenant_node1 etor-GR_l3-blue.tenant_node1 last 33.ls_in_l2_unknown`,
				`egress ext_l3-blue.tenant_node1 etor-GR_l3-blue.tenant_node1 -> l3-blue.tenant_breth0_node1 [output l3-blue.tenant_breth0_node1 type "localnet"] last 15.ls_out_apply_port_sec`,
			},
			hop: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			hops := ParseHops(string(b))
			var got []string
			for _, h := range hops {
				got = append(got, hopLine(h))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hops (-want +got):\n%s", diff)
			}
			if tc.hop < 0 {
				return
			}
			if tc.hop >= len(hops) || tc.stage >= len(hops[tc.hop].Stages) {
				t.Fatalf("no stage %d in hop %d", tc.stage, tc.hop)
			}
			if diff := cmp.Diff(tc.wantStage, hops[tc.hop].Stages[tc.stage]); diff != "" {
				t.Errorf("hop %d stage %d (-want +got):\n%s", tc.hop, tc.stage, diff)
			}
		})
	}
}
