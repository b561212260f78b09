package v1test

import (
	"fmt"
	"math/rand"
	"strings"
)

// Value pools of the generator: mostly valid values, and the edges around
// each rule's bounds.
var (
	randV4      = []string{"10.0.0.0/24", "10.128.0.0/16/24", "10.128.0.0/16/29", "10.0.0.0/28", "192.168.0.0/16", "10.128.0.0/16/30", "10.0.0.0/29", "10.0.0.0/31", "10.0.0.1/24", "10.0.0.0", "10.128.0.0/16/33"}
	randV6      = []string{"fd00::/64", "fd00::/60/64", "fd00::/64/126", "fd00::/125", "fd00::/48", "fd00::/64/127", "fd00::/126", "fd00::1/64", "fd00::"}
	randExclude = []string{"10.0.0.0/26", "10.0.0.100/26", "fd00::/120", "fd00::5/120", "10.128.1.0/24", "10.9.0.0/26", "10.0.0.5"}
	randJoin    = []string{"100.66.0.0/16", "fd9a::/64", "100.67.0.0", "100.66.0.1/16"}
	randMTU     = []int{1400, 9000, 576, 1280, 65536, 575, 1279, 65537, 1000}
	randVLAN    = []int{100, 1, 4094, 0, 4095}
)

// pick returns a value of pool: one of the first valid ones with probability
// 3/4, otherwise any.
func pick[T any](r *rand.Rand, pool []T, valid int) T {
	if r.Intn(4) > 0 {
		return pool[r.Intn(valid)]
	}
	return pool[r.Intn(len(pool))]
}

// RandomSpec returns a random network spec as YAML flow-mapping fields,
// built from pools of values around every rule's bounds; most specs are
// valid.
func RandomSpec(r *rand.Rand) string {
	var f []string
	add := func(format string, args ...any) { f = append(f, fmt.Sprintf(format, args...)) }
	topology := pick(r, []string{"Layer2", "Layer3", "Localnet", "Layer4"}, 3)
	role := "Primary"
	if topology == "Localnet" || r.Intn(3) == 0 {
		role = "Secondary"
	}
	if r.Intn(20) == 0 {
		role = "Primary" // Localnet primary now and then
	}
	add("topology: %s", topology)
	add("role: %s", role)
	if r.Intn(2) == 0 {
		add("mtu: %d", pick(r, randMTU, 5))
	}
	var subnets []string
	switch r.Intn(6) {
	case 0:
		subnets = []string{pick(r, randV4, 5)}
	case 1:
		subnets = []string{pick(r, randV6, 5)}
	case 2, 3, 4:
		subnets = []string{pick(r, randV4, 5), pick(r, randV6, 5)}
	}
	if topology != "Layer3" {
		for i, s := range subnets {
			if strings.Count(s, "/") == 2 && r.Intn(4) > 0 {
				subnets[i] = s[:strings.LastIndex(s, "/")]
			}
		}
	}
	if len(subnets) > 0 {
		add("subnets: [%s]", quoted(subnets))
		if r.Intn(3) == 0 {
			add("excludeSubnets: [%s]", quoted([]string{pick(r, randExclude, 4)}))
		}
	} else if topology != "Layer3" && r.Intn(4) > 0 {
		add("ipam: {mode: Disabled}")
	}
	if role == "Primary" && r.Intn(4) == 0 {
		add("joinSubnets: [%s]", quoted([]string{pick(r, randJoin, 2)}))
	}
	if topology != "Layer3" && len(subnets) > 0 && r.Intn(4) == 0 {
		add("ipam: {lifecycle: Persistent}")
	}
	if topology == "Localnet" || r.Intn(20) == 0 {
		if r.Intn(2) == 0 {
			add("localnet: {physicalNetworkName: physnet1, vlanID: %d}", pick(r, randVLAN, 3))
		}
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// Random returns n random networks (UDNs, and a CUDN for every fourth), named
// rnd-<i>, from seed. Now and then one has an error that keeps the API server
// from evaluating CEL rules (an unknown topology, a VRF name too long).
func Random(seed int64, n int) []Case {
	r := rand.New(rand.NewSource(seed))
	out := make([]Case, 0, n)
	for i := range n {
		name := fmt.Sprintf("rnd-%d", i)
		spec := RandomSpec(r)
		doc := UDN(name, spec)
		if i%4 == 3 {
			vrf := pick(r, []string{"", "blue", "a-very-long-vrf-name"}, 2)
			if vrf != "" {
				vrf = "vrf: " + vrf + "\n"
			}
			doc = CUDN(name, sel+vrf+"template: "+spec)
		}
		out = append(out, Case{Name: name, Doc: doc})
	}
	return out
}

func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
