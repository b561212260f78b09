// Package v1test holds test data for the k8s.ovn.org/v1 API shared by tests
// that check it against a real API server and offline.
package v1test

import (
	"fmt"
	"strings"
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
	{"localnet secondary with vlan", UDN("ln", "topology: Localnet\nrole: Secondary\nsubnets: [192.168.50.0/24]\nlocalnet: {physicalNetworkName: physnet1, vlanID: 100}"), ""},
	{"cudn seed example", CUDN("db-network", sel+"vrf: db-network\ntemplate: {topology: Layer2, role: Primary, mtu: 9000, subnets: [10.0.0.0/24], excludeSubnets: [10.0.0.0/26]}"), ""},

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
}

// UDN is a UserDefinedNetwork named name in "default" with the given spec.
func UDN(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
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
