package v1test

// PeerDifferences are the OVNKubernetesCases on which ovn-kubernetes' own
// CRDs (v1.3.0) judge differently, by case name, with why. Every other case
// must be judged the same by them: accepted, or refused with the same
// message (api/v1 TestCasesAgainstOVNKubernetesCRDs).
var PeerDifferences = map[string]string{
	"ovnk hostSubnet 30: too small a slice": "ovn-udn refuses node slices without room for a gateway, a management port and a pod",
	"ovnk and flat role":                    "the flat fields are ovn-udn's (the seed's); ovn-kubernetes' schema has no role at spec level",
	"ovnk and flat subnets":                 "as above: no flat subnets in ovn-kubernetes' schema",
	"neither role nor block":                "ovn-kubernetes refuses it too, for its missing layer2 block",
	"cudn template and network":             "template is ovn-udn's flat shape",
	"cudn neither template nor network":     "ovn-kubernetes refuses it too, for its missing network",
	"cudn evpn transport":                   "ovn-kubernetes implements EVPN; ovn-udn refuses it rather than drop it",
	"ovnk infrastructure subnets":           "ovn-kubernetes implements infrastructureSubnets; ovn-udn refuses it",
	"ovnk default gateway ips":              "ovn-kubernetes implements defaultGatewayIPs; ovn-udn refuses it",
}
