package podnet

import (
	"fmt"
	"net/netip"
)

// ranges is what of a network's addressing a pod's routes depend on: its
// pod subnets and its join subnets, each with what it is.
type ranges struct {
	prefixes []netip.Prefix
	kinds    []string
}

func rangesOf(r Request) ranges {
	var out ranges
	for _, s := range r.Conf.ParsedSubnets() {
		out.prefixes, out.kinds = append(out.prefixes, s.CIDR), append(out.kinds, "subnet")
	}
	for _, p := range r.Conf.JoinPrefixes() {
		out.prefixes, out.kinds = append(out.prefixes, p), append(out.kinds, "join subnet")
	}
	return out
}

// overlap refuses a pod whose user-defined networks overlap: two of them
// whose pod subnets or join subnets share addresses would give the pod two
// routes to the same destination (seed 002, "IP Addressing"). The error
// names both networks and both prefixes. The default network (no Conf) is
// not compared: its ranges are the cluster's, and a user-defined network
// that overlaps them is refused when it is created.
func overlap(reqs []Request) error {
	for i := range reqs {
		if reqs[i].Conf == nil {
			continue
		}
		a := rangesOf(reqs[i])
		for j := i + 1; j < len(reqs); j++ {
			if reqs[j].Conf == nil {
				continue
			}
			b := rangesOf(reqs[j])
			for x, p := range a.prefixes {
				for y, q := range b.prefixes {
					if p.Overlaps(q) {
						return &Waiting{WaitBadSelection, fmt.Sprintf("networks %s and %s overlap (%s %s of %s, %s %s of %s): a pod cannot attach both",
							reqs[i].Key, reqs[j].Key, a.kinds[x], p, reqs[i].Key, b.kinds[y], q, reqs[j].Key)}
					}
				}
			}
		}
	}
	return nil
}
