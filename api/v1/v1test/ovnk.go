package v1test

// OVNKubernetesCases are networks in ovn-kubernetes' released shape
// (spec.layer3 / spec.layer2 on a UserDefinedNetwork, spec.network on a
// ClusterUserDefinedNetwork), written from the rules of its v1.3.0 CRDs:
// what it accepts is accepted, and what it refuses is refused with its
// message, except where ovn-udn is stricter (a Layer3 node slice must hold
// a gateway, a management port and a pod) or refuses a field it does not
// implement rather than drop it. Mixing the two shapes is refused.
var OVNKubernetesCases = []Case{
	// Accepted.
	{"ovnk layer3 primary", UDN("k-l3", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}]}"), ""},
	{"ovnk layer3 dual stack with join subnets", UDN("k-l3ds", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 24}, {cidr: \"fd00:20::/48\", hostSubnet: 64}], joinSubnets: [100.70.0.0/16, \"fd9b::/64\"]}"), ""},
	{"ovnk layer3 secondary without hostSubnet", UDN("k-l3s", "topology: Layer3\nlayer3: {role: Secondary, mtu: 1300, subnets: [{cidr: 10.21.0.0/16}]}"), ""},
	{"ovnk layer2 primary persistent", UDN("k-l2", "topology: Layer2\nlayer2: {role: Primary, subnets: [10.30.0.0/24], ipam: {lifecycle: Persistent}}"), ""},
	{"ovnk layer2 secondary ipam disabled", UDN("k-l2n", "topology: Layer2\nlayer2: {role: Secondary, ipam: {mode: Disabled}}"), ""},
	{"ovnk layer2 primary reserved subnets", UDN("k-l2r", "topology: Layer2\nlayer2: {role: Primary, subnets: [192.168.1.0/24], reservedSubnets: [192.168.1.0/28]}"), ""},
	{"ovnk cudn layer3", CUDN("k-c3", sel+"network: {topology: Layer3, layer3: {role: Primary, subnets: [{cidr: 10.40.0.0/16, hostSubnet: 24}]}}"), ""},
	{"ovnk cudn layer2 ipv6 only", CUDN("k-c2", sel+"network: {topology: Layer2, layer2: {role: Primary, subnets: [\"2001:db8::/64\"]}}"), ""},
	{"ovnk cudn localnet minimal", CUDN("k-ln", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, subnets: [192.168.100.0/24]}}"), ""},
	{"ovnk cudn localnet dual stack persistent vlan", CUDN("k-ln2", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, subnets: [192.168.100.0/24, \"2001:dbb::/64\"], excludeSubnets: [192.168.100.1/32, \"2001:dbb::1/128\"], ipam: {lifecycle: Persistent}, vlan: {mode: Access, access: {id: 3}}, mtu: 9000}}"), ""},
	{"ovnk cudn localnet ipam disabled", CUDN("k-ln3", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, ipam: {mode: Disabled}, vlan: {mode: Access, access: {id: 4094}}}}"), ""},

	// Mixed or missing shapes.
	{"ovnk and flat role", UDN("k-x1", "topology: Layer3\nrole: Primary\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16}]}"), "are two shapes of one network"},
	{"ovnk and flat subnets", UDN("k-x2", "topology: Layer2\nsubnets: [10.0.0.0/24]\nlayer2: {role: Primary, subnets: [10.0.0.0/24]}"), "are two shapes of one network"},
	{"ovnk block of another topology", UDN("k-x3", "topology: Layer3\nlayer2: {role: Primary, subnets: [10.0.0.0/24]}"), "spec.layer2 is required when topology is Layer2 and forbidden otherwise"},
	{"neither role nor block", UDN("k-x4", "topology: Layer2\nsubnets: [10.0.0.0/24]"), "role is required"},
	{"cudn template and network", CUDN("k-x5", sel+"template: {topology: Layer2, role: Primary, subnets: [10.0.0.0/24]}\nnetwork: {topology: Layer2, layer2: {role: Primary, subnets: [10.0.0.0/24]}}"), "exactly one of template"},
	{"cudn neither template nor network", CUDN("k-x6", sel), "exactly one of template"},
	{"cudn localnet with a layer2 block", CUDN("k-x7", sel+"network: {topology: Localnet, layer2: {role: Secondary, subnets: [10.0.0.0/24]}}"), "spec.localnet is required when topology is Localnet and forbidden otherwise"},
	{"cudn evpn transport", CUDN("k-x8", sel+"network: {topology: Layer3, transport: EVPN, evpn: {vtep: v}, layer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16}]}}"), "not supported by ovn-udn"},

	// Layer3.
	{"ovnk hostSubnet not longer than cidr", UDN("k-3a", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 16}]}"), "HostSubnet must be smaller than CIDR subnet"},
	{"ovnk hostSubnet 32 ipv4", UDN("k-3b", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 32}]}"), "HostSubnet must < 32 for ipv4 CIDR"},
	{"ovnk hostSubnet 30: too small a slice", UDN("k-3c", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16, hostSubnet: 30}]}"), "hostSubnet must be at most 29 for IPv4"},
	{"ovnk two ipv4 layer3 subnets", UDN("k-3d", "topology: Layer3\nlayer3: {role: Primary, subnets: [{cidr: 10.20.0.0/16}, {cidr: 10.21.0.0/16}]}"), "When 2 CIDRs are set, they must be from different IP families"},
	{"ovnk join subnets on a secondary", UDN("k-3e", "topology: Layer3\nlayer3: {role: Secondary, subnets: [{cidr: 10.20.0.0/16}], joinSubnets: [100.70.0.0/16]}"), "JoinSubnets is only supported for Primary network"},
	{"ovnk layer3 without subnets", UDN("k-3f", "topology: Layer3\nlayer3: {role: Primary}"), "subnets: Required value"},
	{"ovnk layer3 unknown role", UDN("k-3g", "topology: Layer3\nlayer3: {role: Tertiary, subnets: [{cidr: 10.20.0.0/16}]}"), `supported values: "Primary", "Secondary"`},

	// Layer2.
	{"ovnk layer2 without subnets", UDN("k-2a", "topology: Layer2\nlayer2: {role: Primary}"), "Subnets is required with ipam.mode is Enabled or unset"},
	{"ovnk ipam disabled on a primary", UDN("k-2b", "topology: Layer2\nlayer2: {role: Primary, ipam: {mode: Disabled}}"), "Disabled ipam.mode is only supported for Secondary network"},
	{"ovnk subnets with ipam disabled", UDN("k-2c", "topology: Layer2\nlayer2: {role: Secondary, subnets: [10.0.0.0/24], ipam: {mode: Disabled}}"), "Subnets must be unset when ipam.mode is Disabled"},
	{"ovnk mtu 1279 with ipv6", UDN("k-2d", "topology: Layer2\nlayer2: {role: Primary, mtu: 1279, subnets: [\"fd00::/64\"]}"), "MTU should be greater than or equal to 1280 when IPv6 subnet is used"},
	{"ovnk mtu 575", UDN("k-2e", "topology: Layer2\nlayer2: {role: Primary, mtu: 575, subnets: [10.0.0.0/24]}"), "should be greater than or equal to 576"},
	{"ovnk persistent with ipam disabled", UDN("k-2f", "topology: Layer2\nlayer2: {role: Secondary, ipam: {mode: Disabled, lifecycle: Persistent}}"), "lifecycle Persistent is only supported when ipam.mode is Enabled"},
	{"ovnk reserved subnets on a secondary", UDN("k-2g", "topology: Layer2\nlayer2: {role: Secondary, subnets: [192.168.1.0/24], reservedSubnets: [192.168.1.0/28]}"), "reservedSubnets is only supported for Primary network"},
	{"ovnk reserved subnets outside", UDN("k-2h", "topology: Layer2\nlayer2: {role: Primary, subnets: [192.168.1.0/24], reservedSubnets: [192.168.2.0/28]}"), "reservedSubnets must be subnetworks of the networks specified in the subnets field"},
	{"ovnk infrastructure subnets", UDN("k-2i", "topology: Layer2\nlayer2: {role: Primary, subnets: [192.168.1.0/24], infrastructureSubnets: [192.168.1.0/28]}"), "infrastructureSubnets is not supported by ovn-udn"},
	{"ovnk default gateway ips", UDN("k-2j", "topology: Layer2\nlayer2: {role: Primary, subnets: [192.168.1.0/24], defaultGatewayIPs: [192.168.1.1]}"), "defaultGatewayIPs is not supported by ovn-udn"},
	{"ovnk two ipv6 layer2 subnets", UDN("k-2k", "topology: Layer2\nlayer2: {role: Secondary, subnets: [\"fd00:1::/64\", \"fd00:2::/64\"]}"), "When 2 CIDRs are set, they must be from different IP families"},

	// Localnet.
	{"ovnk localnet primary", CUDN("k-la", sel+"network: {topology: Localnet, localnet: {role: Primary, physicalNetworkName: test, subnets: [192.168.100.0/24]}}"), `supported values: "Secondary"`},
	{"ovnk localnet without physical network", CUDN("k-lb", sel+"network: {topology: Localnet, localnet: {role: Secondary, subnets: [192.168.100.0/24]}}"), "physicalNetworkName: Required value"},
	{"ovnk localnet physical network with a colon", CUDN("k-lc", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: \"a:b\", subnets: [192.168.100.0/24]}}"), "physicalNetworkName cannot contain"},
	{"ovnk localnet without subnets", CUDN("k-ld", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test}}"), "Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise"},
	{"ovnk localnet exclusion without subnets", CUDN("k-le", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, ipam: {mode: Disabled}, excludeSubnets: [192.168.100.1/32]}}"), "excludeSubnets must be unset when subnets is unset"},
	{"ovnk localnet vlan without access", CUDN("k-lf", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, subnets: [192.168.100.0/24], vlan: {mode: Access}}}"), "vlan access config is required when vlan mode is 'Access'"},
	{"ovnk localnet vlan 4095", CUDN("k-lg", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, subnets: [192.168.100.0/24], vlan: {mode: Access, access: {id: 4095}}}}"), "should be less than or equal to 4094"},
	{"ovnk localnet vlan mode disabled", CUDN("k-lh", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, subnets: [192.168.100.0/24], vlan: {mode: Disabled}}}"), `supported values: "Access"`},
	{"ovnk localnet mtu 1279 with ipv6", CUDN("k-li", sel+"network: {topology: Localnet, localnet: {role: Secondary, physicalNetworkName: test, mtu: 1279, subnets: [\"2001:dbb::/64\"]}}"), "MTU should be greater than or equal to 1280 when an IPv6 subnet is used"},
}
