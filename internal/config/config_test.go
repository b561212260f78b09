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
