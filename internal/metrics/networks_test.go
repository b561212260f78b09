package metrics

import (
	"net/netip"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

func TestSliceCapacity(t *testing.T) {
	sub := func(cidr string, host int) netconf.Subnet {
		return netconf.Subnet{CIDR: netip.MustParsePrefix(cidr), HostPrefix: host}
	}
	for _, tc := range []struct {
		name    string
		subnets []netconf.Subnet
		want    int
	}{
		{"one /16 in /24s", []netconf.Subnet{sub("10.150.0.0/16", 24)}, 256},
		{"two IPv4 subnets add up", []netconf.Subnet{sub("10.150.0.0/16", 24), sub("10.151.0.0/23", 24)}, 258},
		{"dual stack: the fewer family", []netconf.Subnet{sub("10.244.0.0/16", 24), sub("fd00:10:244::/56", 64)}, 256},
		{"IPv6 /48 in /64s", []netconf.Subnet{sub("fd00::/48", 64)}, 65536},
		{"capped", []netconf.Subnet{sub("fd00::/16", 64)}, 1 << 30},
		{"no host prefix (Layer2)", []netconf.Subnet{sub("10.0.0.0/16", 0)}, 0},
		{"none", nil, 0},
	} {
		if got := sliceCapacity(tc.subnets); got != tc.want {
			t.Errorf("%s: sliceCapacity = %d, want %d", tc.name, got, tc.want)
		}
	}
}
