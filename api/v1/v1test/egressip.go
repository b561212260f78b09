package v1test

import "fmt"

// EgressIP is an EgressIP named name with the given spec.
func EgressIP(name, spec string) string {
	return fmt.Sprintf("apiVersion: k8s.ovn.org/v1\nkind: EgressIP\nmetadata: {name: %s}\nspec:\n%s", name, indent(spec))
}

// EgressIPCases are EgressIPs as ovn-kubernetes' users write them, and
// what validation says of each.
var EgressIPCases = []Case{
	{"egressip two addresses", EgressIP("e1", "egressIPs: [172.18.0.33, 172.18.0.44]\nnamespaceSelector: {matchLabels: {env: prod}}"), ""},
	{"egressip with pod selector", EgressIP("e2", "egressIPs: [\"fd00:18::33\"]\nnamespaceSelector: {matchLabels: {env: prod}}\npodSelector: {matchExpressions: [{key: app, operator: In, values: [web]}]}"), ""},
	{"egressip exists expression", EgressIP("e3", "egressIPs: [172.18.0.35]\nnamespaceSelector: {matchExpressions: [{key: egress, operator: Exists}]}"), ""},
	{"egressip not an address", EgressIP("e4", "egressIPs: [172.18.0.300]\nnamespaceSelector: {matchLabels: {env: prod}}"), "must be an IPv4 or IPv6 address"},
	{"egressip cidr", EgressIP("e5", "egressIPs: [172.18.0.0/24]\nnamespaceSelector: {matchLabels: {env: prod}}"), "must be an IPv4 or IPv6 address"},
	{"egressip repeated", EgressIP("e6", "egressIPs: [172.18.0.33, 172.18.0.33]\nnamespaceSelector: {matchLabels: {env: prod}}"), "egressIPs must not repeat an address"},
	{"egressip repeated ipv6 spelled twice", EgressIP("e7", "egressIPs: [\"fd00::1\", \"fd00:0::1\"]\nnamespaceSelector: {matchLabels: {env: prod}}"), "egressIPs must not repeat an address"},
	{"egressip none", EgressIP("e8", "egressIPs: []\nnamespaceSelector: {matchLabels: {env: prod}}"), "should have at least 1 items"},
	{"egressip without namespace selector", EgressIP("e9", "egressIPs: [172.18.0.33]"), "namespaceSelector: Required value"},
	{"egressip unknown operator", EgressIP("e10", "egressIPs: [172.18.0.33]\nnamespaceSelector: {matchExpressions: [{key: env, operator: Equals, values: [prod]}]}"), "a selector's operator must be In, NotIn, Exists or DoesNotExist"},
	{"egressip In without values", EgressIP("e11", "egressIPs: [172.18.0.33]\nnamespaceSelector: {matchLabels: {env: prod}}\npodSelector: {matchExpressions: [{key: app, operator: In}]}"), "a selector's In and NotIn expressions need values"},
	{"egressip Exists with values", EgressIP("e12", "egressIPs: [172.18.0.33]\nnamespaceSelector: {matchExpressions: [{key: env, operator: Exists, values: [x]}]}"), "a selector's Exists and DoesNotExist expressions take no values"},
}
