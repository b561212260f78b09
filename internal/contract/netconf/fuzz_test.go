package netconf_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// FuzzParseConfig feeds NAD configs to the parser every controller uses on
// NADs anyone may write: it must not panic, a config it accepts must survive
// the controllers' own re-encoding unchanged, and the cheap name probe must
// agree with the full parse.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"cniVersion":"1.0.0","name":"blue.net","type":"ovn-k8s-cni-overlay","topology":"layer3","role":"primary","subnets":"10.128.0.0/16/24","netAttachDefName":"blue/net"}`,
		`{"name":"green.net","type":"ovn-k8s-cni-overlay","topology":"layer2","role":"primary","subnets":"10.100.0.0/24,fd00:100::/64","excludeSubnets":"10.100.0.0/29"}`,
		`{"name":"cluster.udn.phys","type":"ovn-k8s-cni-overlay","topology":"localnet","role":"secondary","physicalNetworkName":"physnet","vlanID":10}`,
		`{"name":"x","type":"ovn-k8s-cni-overlay","topology":"layer3","subnets":"10.0.0.0/16/8"}`,
		`{"name":"x","type":"ovn-k8s-cni-overlay","topology":"ring"}`,
		`{"type":"bridge","name":"other"}`,
		`{"TYPE":"ovn-k8s-cni-overlay","Name":"x","topology":"layer2"}`,
		`not json`, ``, `null`, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, config string) {
		c, err := netconf.ParseConfig(config)
		name, named := netconf.NetworkName(config)
		if err != nil {
			if c != nil {
				t.Fatalf("error %v with a config", err)
			}
			return
		}
		if c == nil {
			return // another plugin's
		}
		if !named || name != c.Name {
			t.Fatalf("NetworkName = %q, %v; the parse says %q", name, named, c.Name)
		}
		again, err := netconf.ParseConfig(c.Marshal())
		if err != nil {
			t.Fatalf("re-encoded config refused: %v\n%s", err, c.Marshal())
		}
		if d := cmp.Diff(c, again); d != "" {
			t.Fatalf("re-encoding changed the config (-first +again):\n%s", d)
		}
		if want := strings.Count(c.Subnets, ",") + 1; strings.TrimSpace(c.Subnets) != "" && len(c.ParsedSubnets()) != want {
			t.Fatalf("%d subnets parsed from %q", len(c.ParsedSubnets()), c.Subnets)
		}
	})
}

// FuzzParseSubnet checks subnet strings ("CIDR" and Layer3's
// "CIDR/hostPrefix"): no panic, an accepted subnet prints back to itself, and
// a refusal quotes what it refused.
func FuzzParseSubnet(f *testing.F) {
	for _, s := range []string{"10.128.0.0/16/24", "10.128.0.0/16", "fd00::/48/64", "10.0.0.1/24", "10.0.0.0/16/16", "10.0.0.0/16/33",
		"10.0.0.0/16/24/8", " 10.0.0.0/8 ", "::/0/128", "0.0.0.0/0/32", "10.0.0.0/16/x", "10.0.0.0/-1"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, hostPrefix bool) {
		sn, err := netconf.ParseSubnet(s, hostPrefix)
		if err != nil {
			if q := strconv.Quote(strings.TrimSpace(s)); !strings.Contains(err.Error(), q) {
				t.Fatalf("error %q does not name the input %s", err, q)
			}
			return
		}
		if sn.CIDR.Masked() != sn.CIDR {
			t.Fatalf("%q accepted with host bits: %v", s, sn.CIDR)
		}
		if sn.HostPrefix != 0 && (!hostPrefix || sn.HostPrefix <= sn.CIDR.Bits() || sn.HostPrefix > sn.CIDR.Addr().BitLen()) {
			t.Fatalf("%q accepted with host prefix %d", s, sn.HostPrefix)
		}
		again, err := netconf.ParseSubnet(sn.String(), hostPrefix)
		if err != nil || again != sn {
			t.Fatalf("%q -> %v does not parse back (%v, %v)", s, sn, again, err)
		}
	})
}

// FuzzParseNetworkSelections reads the k8s.v1.cni.cncf.io/networks
// annotation a tenant writes on its pods, in both its forms, and validates it
// as the controllers do before allocating anything.
func FuzzParseNetworkSelections(f *testing.F) {
	for _, s := range []string{"blue", "blue/net@eth1, other", `[{"name":"net","namespace":"blue","ips":["10.0.0.5/24"],"mac":"0a:58:0a:00:00:05","interface":"net1"}]`,
		"@", "/", ",,", `[{}]`, `[{"name":"a","ips":["x"]}]`, "a@b@c", "[", "ns/a/b"} {
		f.Add(s, "blue")
	}
	f.Fuzz(func(t *testing.T, annotation, namespace string) {
		sels, err := netconf.ParseNetworkSelections(annotation, namespace)
		if err != nil {
			if !strings.Contains(err.Error(), netconf.NetworksAnnotation) {
				t.Fatalf("error %q does not name the annotation", err)
			}
			return
		}
		for _, s := range sels {
			if s.Name == "" {
				t.Fatalf("selection without a name from %q", annotation)
			}
			if namespace != "" && s.Namespace == "" {
				t.Fatalf("selection without a namespace from %q", annotation)
			}
		}
		if err := netconf.ValidateSelections(sels, namespace); err != nil && err.Error() == "" {
			t.Fatal("empty validation error")
		}
	})
}
