package config

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestMasqueradeTooSmall(t *testing.T) {
	c := Default()
	c.MasqueradeSubnets = []netip.Prefix{netip.MustParsePrefix("169.254.169.0/29")}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "masquerade subnet 169.254.169.0/29 holds 8 addresses") {
		t.Fatalf("err = %v, want a clear size error", err)
	}
	c.MaxNetworks = 1 // 2*(1+1)+16 = 20 addresses still do not fit in 8
	if err := c.Validate(); err == nil {
		t.Fatal("a /29 accepted for one network")
	}
	c.MasqueradeSubnets = []netip.Prefix{netip.MustParsePrefix("169.254.169.0/27")}
	if err := c.Validate(); err != nil {
		t.Fatalf("a /27 (32 addresses) must fit one network: %v", err)
	}
}

func TestFlags(t *testing.T) {
	c := Default()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse([]string{"--cluster-subnets=10.10.0.0/16/26", "--service-cidrs=172.30.0.0/16", "--mtu=9000"}); err != nil {
		t.Fatal(err)
	}
	if c.ClusterSubnets[0].String() != "10.10.0.0/16/26" || len(c.ClusterSubnets) != 1 || c.ServiceCIDRs[0].String() != "172.30.0.0/16" || c.MTU != 9000 {
		t.Fatalf("flags not applied: %+v", c)
	}
	if err := fs.Parse([]string{"--service-cidrs=bogus"}); err == nil {
		t.Fatal("bogus CIDR accepted")
	}
}

// TestPrimaryLinkSubnets: the defaults are valid, reserved, settable by flag,
// and a subnet too small for a link at every index 1..4095 is refused with a
// message naming it.
func TestPrimaryLinkSubnets(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[netip.Prefix]bool{netip.MustParsePrefix("169.254.128.0/19"): true, netip.MustParsePrefix("fd69::1:0/115"): true}
	if len(c.PrimaryLinkSubnets) != 2 || !want[c.PrimaryLinkSubnets[0]] || !want[c.PrimaryLinkSubnets[1]] {
		t.Fatalf("default primary link subnets %v, want %v", c.PrimaryLinkSubnets, want)
	}
	for p := range want {
		found := false
		for _, r := range c.Reserved() {
			if r.Prefix == p && r.Name == "primary link subnet" {
				found = true
			}
		}
		if !found {
			t.Errorf("Reserved() %v does not hold the primary link subnet %s", c.Reserved(), p)
		}
	}

	for _, tc := range []struct {
		subnets []string
		want    string // in the error; "" for valid
	}{
		{[]string{"169.254.128.0/19"}, ""},
		{[]string{"fd69::1:0/115"}, ""},
		{[]string{"10.200.0.0/16", "fd69:1::/64"}, ""},
		{[]string{"169.254.128.0/20"}, "primary link subnet 169.254.128.0/20 holds 4096 addresses; links between primary networks need at least 8192"},
		{[]string{"169.254.128.0/19", "fd69::1:0/116"}, "primary link subnet fd69::1:0/116 holds 4096 addresses"},
		{[]string{"169.254.128.0/19", "10.200.0.0/16"}, "primary link subnets 169.254.128.0/19 and 10.200.0.0/16 are of one IP family"},
		{[]string{"169.254.96.0/19"}, "primary link subnet 169.254.96.0/19 overlaps the masquerade subnet 169.254.0.0/17"},
		{[]string{"100.88.0.0/19"}, "primary link subnet 100.88.0.0/19 overlaps the transit subnet 100.88.0.0/16"},
	} {
		c := Default()
		c.PrimaryLinkSubnets = mustPrefixes(tc.subnets...)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.subnets, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: err = %v, want one saying %q", tc.subnets, err, tc.want)
		}
	}

	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse([]string{"--primary-link-subnets=10.200.0.0/19"}); err != nil {
		t.Fatal(err)
	}
	if len(c.PrimaryLinkSubnets) != 1 || c.PrimaryLinkSubnets[0] != netip.MustParsePrefix("10.200.0.0/19") {
		t.Fatalf("--primary-link-subnets not applied: %v", c.PrimaryLinkSubnets)
	}
}
