// Package v1test holds test data for the k8s.ovn.org/v1 API shared by tests
// that check it against a real API server and offline.
package v1test

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/ovn-udn/ovn-udn/internal/manifest"
)

// Case is one object and what validation must say about it.
type Case struct {
	Name string
	// Doc is the object as YAML.
	Doc string
	// WantErr is a substring of the rejection; empty when it must be accepted.
	WantErr string
}

const sel = "namespaceSelector: {matchLabels: {tenant: a}}\n"

// ValidationCases are networks a user could write, each accepted or rejected
// by one rule with its message. The real API server must agree with every
// case (api/v1 tests), and so must the offline validator render uses
// (internal/apivalidate tests).
var ValidationCases = []Case{
	// Accepted: the seed's examples and the common shapes.
	{"layer3 primary", UDN("l3", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/24]"), ""},
	{"layer3 dual stack host prefixes", UDN("l3ds", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/24, 2001:db8::/60/64]"), ""},
	{"layer3 without host prefix", UDN("l3np", "topology: Layer3\nrole: Secondary\nsubnets: [10.129.0.0/16]"), ""},
	{"seed db-network layer2", UDN("db-network", "topology: Layer2\nrole: Primary\nmtu: 9000\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.0/26]\nipam: {lifecycle: Persistent}"), ""},
	{"layer2 dual stack with join", UDN("l2ds", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, fd00:10::/64]\njoinSubnets: [100.66.0.0/16, fd9a::/64]"), ""},
	{"layer2 secondary ipam disabled", UDN("l2noipam", "topology: Layer2\nrole: Secondary\nipam: {mode: Disabled}"), ""},
	{"layer3 secondary with egress", CUDN("l3egress", sel+"template: {topology: Layer3, role: Secondary, subnets: [10.130.0.0/16/24], egress: Gateway}"), ""},
	{"layer2 secondary with egress", CUDN("l2egress", sel+"template: {topology: Layer2, role: Secondary, subnets: [10.0.0.0/24], egress: Gateway}"), ""},
	{"localnet secondary with vlan", UDN("ln", "topology: Localnet\nrole: Secondary\nsubnets: [192.168.50.0/24]\nlocalnet: {physicalNetworkName: physnet1, vlanID: 100}"), ""},
	{"cudn seed example", CUDN("db-network", sel+"vrf: db-network\ntemplate: {topology: Layer2, role: Primary, mtu: 9000, subnets: [10.0.0.0/24], excludeSubnets: [10.0.0.100/26]}"), ""},
	{"cudn seed example, exclusion without host bits", CUDN("db-network-2", sel+"vrf: db-network-2\ntemplate: {topology: Layer2, role: Primary, mtu: 9000, subnets: [10.0.0.0/24], excludeSubnets: [10.0.0.0/26]}"), ""},
	{"seed udn after creation: exclusion with host bits", UDN("db-network-hb", "topology: Layer2\nrole: Primary\nmtu: 9000\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.100/26]\nipam: {lifecycle: Persistent}"), ""},
	{"ipv6 exclusion with host bits", UDN("ex6", "topology: Layer2\nrole: Secondary\nsubnets: [fd00:7::/64]\nexcludeSubnets: [\"fd00:7::5/120\"]"), ""},

	// Integer fields with every rule that reads them. Documents are decoded
	// as render reads manifests (numbers as float64), so these cases catch an
	// offline judge that hands CEL a float64 where the schema says integer.
	{"mtu 9000 dual stack layer2", UDN("mtu-ds", "topology: Layer2\nrole: Primary\nmtu: 9000\nsubnets: [10.5.0.0/24, \"fd00:5::/64\"]"), ""},
	{"mtu 1500 dual stack layer3 host prefixes", UDN("mtu-ds3", "topology: Layer3\nrole: Primary\nmtu: 1500\nsubnets: [10.128.0.0/16/24, \"fd00:10::/60/64\"]"), ""},
	{"mtu 1280 ipv6 only", UDN("mtu-1280", "topology: Layer2\nrole: Primary\nmtu: 1280\nsubnets: [\"fd00::/64\"]"), ""},
	{"mtu 576 ipv4 only", UDN("mtu-576", "topology: Layer2\nrole: Primary\nmtu: 576\nsubnets: [10.0.0.0/24]"), ""},
	{"mtu 65536 dual stack", UDN("mtu-max", "topology: Layer2\nrole: Secondary\nmtu: 65536\nsubnets: [10.0.0.0/24, \"fd00::/64\"]"), ""},
	{"mtu without subnets", UDN("mtu-noipam", "topology: Layer2\nrole: Secondary\nmtu: 1000\nipam: {mode: Disabled}"), ""},
	{"cudn mtu 9000 dual stack", CUDN("mtu-ds", sel+"template: {topology: Layer2, role: Primary, mtu: 9000, subnets: [10.0.0.0/24, \"fd00::/64\"]}"), ""},
	{"mtu 1279 dual stack", UDN("mtu-x1", "topology: Layer2\nrole: Primary\nmtu: 1279\nsubnets: [10.0.0.0/24, \"fd00::/64\"]"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
	{"mtu 1279 ipv6 host prefix", UDN("mtu-x2", "topology: Layer3\nrole: Primary\nmtu: 1279\nsubnets: [\"fd00::/60/64\"]"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
	{"cudn mtu 1000 ipv6", CUDN("mtu-x3", sel+"template: {topology: Layer2, role: Primary, mtu: 1000, subnets: [\"fd00::/64\"]}"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
	{"mtu 575", UDN("mtu-x4", "topology: Layer2\nrole: Primary\nmtu: 575\nsubnets: [10.0.0.0/24]"), "should be greater than or equal to 576"},
	{"mtu 65537", UDN("mtu-x5", "topology: Layer2\nrole: Primary\nmtu: 65537\nsubnets: [10.0.0.0/24]"), "should be less than or equal to 65536"},
	{"mtu 100 with ipv6: both rules", UDN("mtu-x6", "topology: Layer2\nrole: Primary\nmtu: 100\nsubnets: [\"fd00::/64\"]"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
	{"vlan 1", UDN("vlan-1", "topology: Localnet\nrole: Secondary\nsubnets: [192.168.50.0/24]\nlocalnet: {vlanID: 1}"), ""},
	{"vlan 4094 dual stack with mtu", UDN("vlan-max", "topology: Localnet\nrole: Secondary\nmtu: 1500\nsubnets: [192.168.50.0/24, \"fd00:50::/64\"]\nlocalnet: {physicalNetworkName: physnet1, vlanID: 4094}"), ""},
	{"cudn localnet vlan", CUDN("vlan", sel+"template: {topology: Localnet, role: Secondary, mtu: 1280, subnets: [\"fd00:50::/64\"], localnet: {vlanID: 42}}"), ""},
	{"vlan 0", UDN("vlan-x1", "topology: Localnet\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 0}"), "should be greater than or equal to 1"},
	{"vlan 4095", UDN("vlan-x2", "topology: Localnet\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 4095}"), "should be less than or equal to 4094"},
	{"cudn vlan 5000", CUDN("vlan-x3", sel+"template: {topology: Localnet, role: Secondary, subnets: [10.0.0.0/24], localnet: {vlanID: 5000}}"), "should be less than or equal to 4094"},
	{"vlan on layer2 with mtu", UDN("vlan-x4", "topology: Layer2\nrole: Secondary\nmtu: 1500\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 7}"), "localnet is supported only for Localnet topology"},

	// Host prefixes: a node's slice holds the gateway, the management port and
	// at least one pod (/29 for IPv4, /126 for IPv6 at the smallest).
	{"host prefix /29", UDN("hp29", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/29]"), ""},
	{"host prefix /126", UDN("hp126", "topology: Layer3\nrole: Primary\nsubnets: [\"fd00::/64/126\"]"), ""},
	{"layer3 /28 without host prefix", UDN("l3-28", "topology: Layer3\nrole: Secondary\nsubnets: [10.0.0.0/28]"), ""},
	{"layer3 /125 without host prefix", UDN("l3-125", "topology: Layer3\nrole: Secondary\nsubnets: [\"fd00::/125\"]"), ""},
	{"layer2 /30 is not sliced", UDN("l2-30", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/30]"), ""},
	{"host prefix /30", UDN("hp-x1", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/30]"), "at most 29 for IPv4 or 126 for IPv6"},
	{"host prefix /31", UDN("hp-x2", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/31]"), "at most 29 for IPv4 or 126 for IPv6"},
	{"host prefix /32", UDN("hp-x3", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/32]"), "at most 29 for IPv4 or 126 for IPv6"},
	{"host prefix /127", UDN("hp-x4", "topology: Layer3\nrole: Primary\nsubnets: [10.128.0.0/16/24, \"fd00::/64/127\"]"), "at most 29 for IPv4 or 126 for IPv6"},
	{"host prefix /128", UDN("hp-x5", "topology: Layer3\nrole: Primary\nsubnets: [\"fd00::/64/128\"]"), "at most 29 for IPv4 or 126 for IPv6"},
	{"cudn host prefix /31", CUDN("hp-x6", sel+"template: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/31]}"), "at most 29 for IPv4 or 126 for IPv6"},
	{"layer3 /29 without host prefix", UDN("l3-x1", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/29]"), "a Layer3 subnet without a host prefix must be at most /28 for IPv4 or /125 for IPv6"},
	{"layer3 /30 without host prefix", UDN("l3-x2", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/30]"), "a Layer3 subnet without a host prefix must be at most /28 for IPv4 or /125 for IPv6"},
	{"layer3 /32 without host prefix", UDN("l3-x3", "topology: Layer3\nrole: Secondary\nsubnets: [10.0.0.1/32]"), "a Layer3 subnet without a host prefix must be at most /28 for IPv4 or /125 for IPv6"},
	{"layer3 /126 without host prefix", UDN("l3-x4", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16, \"fd00::/126\"]"), "a Layer3 subnet without a host prefix must be at most /28 for IPv4 or /125 for IPv6"},
	{"layer3 /29 with host prefix /29", UDN("l3-x5", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/29/29]"), "host prefix must be longer than the subnet's prefix length"},

	{"exclusion with host bits outside the subnets", UDN("np-x7", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.1.100/26]"), "every excludeSubnets entry must lie inside one of the subnets"},

	// Rejected, one rule each.
	{"layer3 without subnets", UDN("x1", "topology: Layer3\nrole: Primary"), "subnets is required for Layer3 topology"},
	{"localnet primary", UDN("x2", "topology: Localnet\nrole: Primary\nsubnets: [10.0.0.0/24]"), "Localnet topology is not supported for a Primary network"},
	{"persistent on layer3", UDN("x3", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16]\nipam: {lifecycle: Persistent}"), "ipam.lifecycle Persistent is supported only for Layer2 and Localnet topologies"},
	{"persistent with ipam disabled", UDN("x4", "topology: Layer2\nrole: Secondary\nipam: {mode: Disabled, lifecycle: Persistent}"), "ipam.lifecycle Persistent requires ipam.mode Enabled"},
	{"ipam disabled on primary", UDN("x5", "topology: Layer2\nrole: Primary\nipam: {mode: Disabled}"), "ipam.mode Disabled is supported only for Secondary Layer2 and Localnet networks"},
	{"ipam disabled on layer3", UDN("x6", "topology: Layer3\nrole: Secondary\nsubnets: [10.0.0.0/16]\nipam: {mode: Disabled}"), "ipam.mode Disabled is supported only for Secondary Layer2 and Localnet networks"},
	{"ipam disabled with subnets", UDN("x7", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\nipam: {mode: Disabled}"), "subnets must be omitted when ipam.mode is Disabled"},
	{"ipam enabled without subnets", UDN("x8", "topology: Layer2\nrole: Secondary\nipam: {mode: Enabled}"), "subnets is required when ipam.mode is Enabled"},
	{"layer2 without subnets or ipam", UDN("x9", "topology: Layer2\nrole: Primary"), "subnets is required when ipam.mode is Enabled"},
	{"invalid cidr", UDN("x10", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.300/24]"), "must be a CIDR, or CIDR/hostPrefix for Layer3"},
	{"cidr with host bits", UDN("x11", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.1/24]"), "must be a network address"},
	{"host prefix on layer2", UDN("x12", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/16/24]"), "a host prefix (CIDR/hostPrefix) is supported only for Layer3 subnets"},
	{"host prefix shorter than prefix", UDN("x13", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16/8]"), "host prefix must be longer than the subnet's prefix length"},
	{"host prefix too long", UDN("x14", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16/33]"), "host prefix must be longer than the subnet's prefix length"},
	{"two ipv4 subnets", UDN("x15", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, 10.1.0.0/24]"), "two subnets must be of different IP families"},
	{"three subnets", UDN("x16", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24, fd00::/64, 10.1.0.0/24]"), "must have at most 2 items"},
	{"two ipv6 join subnets", UDN("x17", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [fd99::/64, fd98::/64]"), "two join subnets must be of different IP families"},
	{"empty join subnets", UDN("x18", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: []"), "should have at least 1 items"},
	{"three join subnets", UDN("x19", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [100.65.0.0/16, fd99::/64, 100.66.0.0/16]"), "must have at most 2 items"},
	{"invalid join subnet", UDN("x20", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [not-a-cidr]"), "must be a valid CIDR"},
	{"egress on a namespace's own network", UDN("x21d", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\negress: Gateway"), "egress is allowed only in a ClusterUserDefinedNetwork"},
	{"egress on primary", CUDN("x21e", sel+"template: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24], egress: Gateway}"), "egress is supported only for Secondary Layer3 and Layer2 networks with IPAM enabled"},
	{"egress on localnet", CUDN("x21f", sel+"template: {topology: Localnet, role: Secondary, subnets: [10.0.0.0/24], egress: Gateway}"), "egress is supported only for Secondary Layer3 and Layer2 networks with IPAM enabled"},
	{"egress without ipam", CUDN("x21g", sel+"template: {topology: Layer2, role: Secondary, ipam: {mode: Disabled}, egress: Gateway}"), "egress is supported only for Secondary Layer3 and Layer2 networks with IPAM enabled"},
	{"unknown egress", CUDN("x21h", sel+"template: {topology: Layer2, role: Secondary, subnets: [10.0.0.0/24], egress: Local}"), `supported values: "Gateway"`},
	{"join subnets on secondary", UDN("x21", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\njoinSubnets: [100.65.0.0/16]"), "joinSubnets is supported only for Primary networks"},
	{"exclude outside subnets", UDN("x22", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.9.0.0/26]"), "every excludeSubnets entry must lie inside one of the subnets"},
	{"invalid exclude", UDN("x23", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.0/33]"), "must be a valid CIDR"},
	{"bad topology", UDN("x24", "topology: Layer4\nrole: Primary\nsubnets: [10.0.0.0/24]"), `supported values: "Layer2", "Layer3", "Localnet"`},
	{"bad role", UDN("x25", "topology: Layer2\nrole: Tertiary\nsubnets: [10.0.0.0/24]"), `supported values: "Primary", "Secondary"`},
	{"missing role", UDN("x26", "topology: Layer2\nsubnets: [10.0.0.0/24]"), "spec.role: Required value"},
	{"small mtu with ipv6", UDN("x27", "topology: Layer2\nrole: Primary\nmtu: 1000\nsubnets: [fd00::/64]"), "mtu must be at least 1280 when the network has an IPv6 subnet"},
	{"mtu too small", UDN("x28", "topology: Layer2\nrole: Primary\nmtu: 100\nsubnets: [10.0.0.0/24]"), "should be greater than or equal to 576"},
	{"localnet fields on layer2", UDN("x29", "topology: Layer2\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 10}"), "localnet is supported only for Localnet topology"},
	{"vlan out of range", UDN("x30", "topology: Localnet\nrole: Secondary\nsubnets: [10.0.0.0/24]\nlocalnet: {vlanID: 5000}"), "should be less than or equal to 4094"},
	{"vrf too long", CUDN("y1", sel+"vrf: a-very-long-vrf-name\ntemplate: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"), "may not be more than 15 bytes"},
	{"cudn template rules apply", CUDN("y2", sel+"template: {topology: Layer3, role: Primary}"), "subnets is required for Layer3 topology"},
	{"cudn without selector", CUDN("y3", "template: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}"), "spec.namespaceSelector: Required value"},

	// ClusterNetworkConnect: the seed's example, and each rule of the seed.
	{"cnc seed example", CNC("colored-enterprise", cncSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}, {cidr: \"fd01::/64\", networkPrefix: 96}]\nconnectivityEnabled: [PodNetwork, ClusterIPServiceNetwork]"), ""},
	{"cnc services only, one family", CNC("svc-only", cncUDNSel+"connectSubnets: [{cidr: 10.200.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [ClusterIPServiceNetwork]"), ""},
	{"cnc networkPrefix 31", CNC("p31", cncUDNSel+"connectSubnets: [{cidr: 10.200.0.0/16, networkPrefix: 31}]\nconnectivityEnabled: [PodNetwork]"), ""},
	{"cnc selects secondary networks", CNC("c1", "networkSelectors: [{networkSelectionType: SecondaryUserDefinedNetworks}]\n"+cncNet), "Only ClusterUserDefinedNetworks or PrimaryUserDefinedNetworks can be selected"},
	{"cnc selects the default network", CNC("c2", cncSel+"- {networkSelectionType: DefaultNetwork}\n"+cncNet), "Only ClusterUserDefinedNetworks or PrimaryUserDefinedNetworks can be selected"},
	{"cnc selects NADs", CNC("c3", "networkSelectors: [{networkSelectionType: NetworkAttachmentDefinitions}]\n"+cncNet), "Only ClusterUserDefinedNetworks or PrimaryUserDefinedNetworks can be selected"},
	{"cnc unknown selection type", CNC("c4", "networkSelectors: [{networkSelectionType: AllNetworks}]\n"+cncNet), `supported values: "DefaultNetwork", "ClusterUserDefinedNetworks"`},
	{"cnc selector of the wrong kind", CNC("c5", "networkSelectors: [{networkSelectionType: ClusterUserDefinedNetworks, primaryUserDefinedNetworkSelector: {namespaceSelector: {}}}]\n"+cncNet), "clusterUserDefinedNetworkSelector must be set when, and only when, networkSelectionType is ClusterUserDefinedNetworks"},
	{"cnc selector missing", CNC("c6", "networkSelectors: [{networkSelectionType: PrimaryUserDefinedNetworks}]\n"+cncNet), "primaryUserDefinedNetworkSelector must be set when, and only when, networkSelectionType is PrimaryUserDefinedNetworks"},
	{"cnc two selectors of one type", CNC("c7", "networkSelectors: [{networkSelectionType: PrimaryUserDefinedNetworks, primaryUserDefinedNetworkSelector: {namespaceSelector: {}}}, {networkSelectionType: PrimaryUserDefinedNetworks, primaryUserDefinedNetworkSelector: {namespaceSelector: {}}}]\n"+cncNet), "Duplicate value"},
	{"cnc no selectors", CNC("c8", "networkSelectors: []\n"+cncNet), "should have at least 1 items"},
	{"cnc connect subnet with host bits", CNC("c9", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.1/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"), "CIDR must be a valid network address"},
	{"cnc connect subnet not a cidr", CNC("c10", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"), "CIDR must be a valid network address"},
	{"cnc networkPrefix not longer than the cidr", CNC("c11", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 16}]\nconnectivityEnabled: [PodNetwork]"), "networkPrefix must be smaller than CIDR subnet"},
	{"cnc networkPrefix 32 for ipv4", CNC("c12", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 32}]\nconnectivityEnabled: [PodNetwork]"), "networkPrefix must < 32 for ipv4 CIDR"},
	{"cnc networkPrefix 128", CNC("c13", cncUDNSel+"connectSubnets: [{cidr: \"fd01::/64\", networkPrefix: 128}]\nconnectivityEnabled: [PodNetwork]"), "should be less than or equal to 127"},
	{"cnc networkPrefix 0", CNC("c14", cncUDNSel+"connectSubnets: [{cidr: 10.0.0.0/8, networkPrefix: 0}]\nconnectivityEnabled: [PodNetwork]"), "should be greater than or equal to 1"},
	{"cnc two ipv4 connect subnets", CNC("c15", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}, {cidr: 10.200.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"), "When 2 CIDRs are set, they must be from different IP families"},
	{"cnc three connect subnets", CNC("c16", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}, {cidr: \"fd01::/64\", networkPrefix: 96}, {cidr: 10.200.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"), "must have at most 2 items"},
	{"cnc no connect subnets", CNC("c17", cncUDNSel+"connectSubnets: []\nconnectivityEnabled: [PodNetwork]"), "should have at least 1 items"},
	{"cnc duplicate connectivity", CNC("c18", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork, PodNetwork]"), "connectivityEnabled cannot contain duplicate values"},
	{"cnc unknown connectivity", CNC("c19", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [NodePortNetwork]"), `supported values: "PodNetwork", "ClusterIPServiceNetwork"`},
	{"cnc no connectivity", CNC("c20", cncUDNSel+"connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: []"), "should have at least 1 items"},
}

// Parts of ClusterNetworkConnect cases.
const (
	cncSel = "networkSelectors:\n- networkSelectionType: ClusterUserDefinedNetworks\n  clusterUserDefinedNetworkSelector: {networkSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [blue-network, green-network]}]}}\n" +
		"- networkSelectionType: PrimaryUserDefinedNetworks\n  primaryUserDefinedNetworkSelector: {namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [yellow, red]}]}}\n"
	cncUDNSel = "networkSelectors: [{networkSelectionType: PrimaryUserDefinedNetworks, primaryUserDefinedNetworkSelector: {namespaceSelector: {matchLabels: {connect: a}}}}]\n"
	cncNet    = "connectSubnets: [{cidr: 192.168.0.0/16, networkPrefix: 24}]\nconnectivityEnabled: [PodNetwork]"
)

// SoleErrorCases are malformed values that must get their own message and no
// other: every error of the rejection contains WantErr. Rules that take a
// value apart (at "/") must not fail on it, nor report it in their terms.
var SoleErrorCases = []Case{
	{"subnet without prefix length", UDN("np-x1", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0]"), "must be a CIDR, or CIDR/hostPrefix for Layer3"},
	{"layer3 subnet without prefix length", UDN("np-x2", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0]\nexcludeSubnets: [10.0.0.0/26]"), "must be a CIDR, or CIDR/hostPrefix for Layer3"},
	{"cudn ipv6 subnet without prefix length", CUDN("np-x3", sel+"template: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24, \"fd00::\"]}"), "must be a CIDR, or CIDR/hostPrefix for Layer3"},
	{"host prefix without digits", UDN("np-x4", "topology: Layer3\nrole: Primary\nsubnets: [10.0.0.0/16/]"), "host prefix must be longer than the subnet's prefix length"},
	{"exclusion without prefix length", UDN("np-x5", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\nexcludeSubnets: [10.0.0.5]"), "must be a valid CIDR"},
	{"join subnet without prefix length", UDN("np-x6", "topology: Layer2\nrole: Primary\nsubnets: [10.0.0.0/24]\njoinSubnets: [100.66.0.0]"), "must be a valid CIDR"},
}

// Check compares what a judge (the API server, or the offline validator) said
// about tc's object, one message per error ("field: detail"), with what the
// case wants. sole makes every message have to contain WantErr
// (SoleErrorCases).
func (tc Case) Check(msgs []string, sole bool) error {
	all := strings.Join(msgs, "\n")
	switch {
	case tc.WantErr == "" && len(msgs) > 0:
		return fmt.Errorf("valid object rejected:\n%s", all)
	case tc.WantErr != "" && len(msgs) == 0:
		return fmt.Errorf("invalid object accepted; want an error containing %q", tc.WantErr)
	case strings.Contains(all, CELRuntimeError):
		return fmt.Errorf("a CEL rule failed to evaluate (%q):\n%s", CELRuntimeError, all)
	case !strings.Contains(all, tc.WantErr):
		return fmt.Errorf("no error contains %q:\n%s", tc.WantErr, all)
	}
	if sole {
		for _, m := range msgs {
			if !strings.Contains(m, tc.WantErr) {
				return fmt.Errorf("error beside %q: %s", tc.WantErr, m)
			}
		}
	}
	return nil
}

// CELRuntimeError is in a rejection when a CEL rule failed to evaluate (for
// example "invalid data, expected int, got float64 evaluating rule: ..." or
// "invalid substring range ... evaluating rule: ..."). No case may produce
// one: rules must guard what they take apart, and objects must reach CEL
// typed as the schema says.
const CELRuntimeError = "evaluating rule"

// Object decodes a case's document the way ovn-udn render reads manifest
// files (internal/manifest), so numbers are float64 as in any file read.
func Object(doc string) (*unstructured.Unstructured, error) {
	docs, err := manifest.Parse("case.yaml", []byte(doc))
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("case has %d documents, want 1", len(docs))
	}
	return docs[0].Object, nil
}

// JSON returns a case's YAML document as JSON text, for checking the JSON
// reading path too.
func JSON(doc string) (string, error) {
	b, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// UDN is a UserDefinedNetwork named name in "default" with the given spec.
func UDN(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
}

// CNC is a ClusterNetworkConnect.
func CNC(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: ClusterNetworkConnect\nmetadata: {name: %s}\nspec:\n%s", name, indent(spec))
}

// CUDN is a ClusterUserDefinedNetwork.
func CUDN(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: ClusterUserDefinedNetwork\nmetadata: {name: %s}\nspec:\n%s", name, indent(spec))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = "  " + lines[i]
	}
	return strings.Join(lines, "\n")
}
