package v1test

import (
	"fmt"
	"strings"
)

// EgressFirewall is an EgressFirewall manifest named name in namespace
// default, with spec (YAML, unindented).
func EgressFirewall(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: EgressFirewall\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
}

// EgressFirewallCases are EgressFirewalls as ovn-kubernetes' users write
// them, and what validation says of each.
var EgressFirewallCases = []Case{
	{"egressfirewall allow and deny", EgressFirewall("default", "egress:\n- {type: Allow, to: {cidrSelector: 198.51.100.10/32}, ports: [{protocol: TCP, port: 9000}]}\n- {type: Deny, to: {cidrSelector: 0.0.0.0/0}}"), ""},
	{"egressfirewall dns name and ipv6", EgressFirewall("default", "egress:\n- {type: Allow, to: {dnsName: www.example.com}}\n- {type: Allow, to: {dnsName: '*.example.org'}}\n- {type: Deny, to: {cidrSelector: '::/0'}}"), ""},
	{"egressfirewall node selector", EgressFirewall("default", "egress:\n- {type: Deny, to: {nodeSelector: {matchLabels: {role: infra}}}}"), ""},
	{"egressfirewall named otherwise", EgressFirewall("second", "egress:\n- {type: Deny, to: {cidrSelector: 0.0.0.0/0}}"), "an EgressFirewall must be named default: one per namespace"},
	{"egressfirewall malformed cidr", EgressFirewall("default", "egress:\n- {type: Deny, to: {cidrSelector: 10.0.0.0/33}}"), "cidrSelector must be an IPv4 or IPv6 CIDR"},
	{"egressfirewall unknown action", EgressFirewall("default", "egress:\n- {type: Reject, to: {cidrSelector: 10.0.0.0/8}}"), "Unsupported value: \"Reject\""},
	{"egressfirewall two destinations", EgressFirewall("default", "egress:\n- {type: Deny, to: {cidrSelector: 10.0.0.0/8, dnsName: example.com}}"), "to must have exactly one of cidrSelector, dnsName and nodeSelector"},
	{"egressfirewall no destination", EgressFirewall("default", "egress:\n- {type: Deny, to: {}}"), "to must have exactly one of cidrSelector, dnsName and nodeSelector"},
	{"egressfirewall bad dns name", EgressFirewall("default", "egress:\n- {type: Allow, to: {dnsName: 'a..b'}}"), "should match"},
	{"egressfirewall bad protocol", EgressFirewall("default", "egress:\n- {type: Allow, to: {cidrSelector: 10.0.0.0/8}, ports: [{protocol: ICMP, port: 1}]}"), "Unsupported value: \"ICMP\""},
	{"egressfirewall too many rules", EgressFirewall("default", "egress:\n"+strings.Repeat("- {type: Deny, to: {cidrSelector: 10.0.0.0/8}}\n", 8001)), "must have at most 8000 items"},
	{"egressfirewall port zero", EgressFirewall("default", "egress:\n- {type: Allow, to: {cidrSelector: 10.0.0.0/8}, ports: [{protocol: TCP, port: 0}]}"), "should be greater than or equal to 1"},
}

// EgressQoS is an EgressQoS manifest named name in namespace default.
func EgressQoS(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: EgressQoS\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
}

// EgressQoSCases are EgressQoSes as ovn-kubernetes' users write them, and
// what validation says of each.
var EgressQoSCases = []Case{
	{"egressqos two rules", EgressQoS("default", "egress:\n- {dscp: 46, dstCIDR: 198.51.100.0/24, podSelector: {matchLabels: {app: voice}}}\n- {dscp: 10}"), ""},
	{"egressqos ipv6", EgressQoS("default", "egress:\n- {dscp: 0, dstCIDR: '2001:db8::/32'}"), ""},
	{"egressqos named otherwise", EgressQoS("second", "egress:\n- {dscp: 46}"), "an EgressQoS must be named default: one per namespace"},
	{"egressqos dscp 64", EgressQoS("default", "egress:\n- {dscp: 64}"), "should be less than or equal to 63"},
	{"egressqos negative dscp", EgressQoS("default", "egress:\n- {dscp: -1}"), "should be greater than or equal to 0"},
	{"egressqos malformed cidr", EgressQoS("default", "egress:\n- {dscp: 46, dstCIDR: 198.51.100.0/33}"), "dstCIDR must be an IPv4 or IPv6 CIDR"},
	{"egressqos without dscp", EgressQoS("default", "egress:\n- {dstCIDR: 198.51.100.0/24}"), "dscp: Required value"},
}

// EgressService is an EgressService manifest named name in namespace
// default.
func EgressService(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: EgressService\nmetadata: {name: %s, namespace: default}\nspec:\n%s", name, indent(spec))
}

// EgressServiceCases are EgressServices as ovn-kubernetes' users write
// them, and what validation says of each.
var EgressServiceCases = []Case{
	{"egressservice load balancer ip", EgressService("web", "sourceIPBy: LoadBalancerIP\nnodeSelector: {matchLabels: {egress: ok}}"), ""},
	{"egressservice network", EgressService("web2", "sourceIPBy: Network\nnetwork: '100'"), ""},
	{"egressservice unknown mode", EgressService("web3", "sourceIPBy: NodeIP"), "Unsupported value: \"NodeIP\""},
}
