package hostisolation

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// Rules are what the table enforces on one node.
type Rules struct {
	// Kubelet is the kubelet's cgroup, the one that reaches Isolated.
	Kubelet Cgroup
	// Isolated are the default addresses of the node's pods that have a
	// primary user-defined network (Isolated).
	Isolated []netip.Addr
	// Confined are the node's host-network pods of namespaces with a
	// primary user-defined network, by the networks they are confined to.
	Confined []Confined
	// Closed is what a confined pod reaches only where Confined.Allowed
	// says: the service CIDRs and the default network's pod subnets.
	Closed []netip.Prefix
}

// Confined are host-network pods of namespaces with the same primary
// user-defined networks: they reach, of Rules.Closed, only Allowed.
type Confined struct {
	// Networks names the networks ("a,b"), for the reader of the table.
	Networks string
	// Allowed are the ClusterIPs of the networks' services and of the
	// infrastructure services (the API server, DNS).
	Allowed []netip.Addr
	// Pods are the pods' cgroups, by "namespace/name".
	Pods []ConfinedPod
}

// ConfinedPod is one confined host-network pod.
type ConfinedPod struct {
	Name   string
	Cgroup Cgroup
}

// Table is the nftables script that (re)creates the table in one
// transaction: the host's new connections to the isolated pods' default
// addresses leave only from the kubelet's cgroup, and confined pods' new
// connections into Closed only toward their Allowed addresses.
func Table(r Rules) string { return script(TableName, r) }

// script is Table under the table name name.
func script(name string, r Rules) string {
	var b strings.Builder
	// Declaring then deleting the table makes the script work whether or
	// not it exists; nft applies the file as one transaction.
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\ntable inet %s {\n", name, name, name)
	v4, v6 := byFamily(r.Isolated)
	b.WriteString(set("isolated4", "ipv4_addr", v4))
	b.WriteString(set("isolated6", "ipv6_addr", v6))
	for i, c := range r.Confined {
		a4, a6 := byFamily(c.Allowed)
		b.WriteString(set(fmt.Sprintf("allowed%d_4", i), "ipv4_addr", a4))
		b.WriteString(set(fmt.Sprintf("allowed%d_6", i), "ipv6_addr", a6))
	}
	b.WriteString("\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n")
	b.WriteString("\t\tct state established,related accept\n")
	// Neighbour discovery comes from the kernel, not from a socket of the
	// kubelet's: without it the node loses the pods' IPv6 neighbours.
	b.WriteString("\t\ticmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept\n")
	// One lookup per cgroup level, not a rule per pod: every packet the
	// host sends passes here.
	byLevel := map[int][]string{}
	for i, c := range r.Confined {
		for _, p := range c.Pods {
			byLevel[p.Cgroup.Level] = append(byLevel[p.Cgroup.Level], fmt.Sprintf("%q comment %s : jump confined%d", p.Cgroup.Path, comment(p.Name), i))
		}
	}
	for _, level := range slices.Sorted(maps.Keys(byLevel)) {
		fmt.Fprintf(&b, "\t\tsocket cgroupv2 level %d vmap { %s }\n", level, strings.Join(byLevel[level], ", "))
	}
	for _, fam := range []string{"ip daddr @isolated4", "ip6 daddr @isolated6"} {
		fmt.Fprintf(&b, "\t\t%s socket cgroupv2 level %d %q accept\n", fam, r.Kubelet.Level, r.Kubelet.Path)
		fmt.Fprintf(&b, "\t\t%s drop\n", fam)
	}
	b.WriteString("\t}\n")
	c4, c6 := byFamily(r.Closed)
	for i, c := range r.Confined {
		// A confined pod's chain: its networks' and the infrastructure
		// ClusterIPs, then nothing else of the cluster's; back in output,
		// the isolation of pods' default addresses applies as to any
		// process.
		networks := c.Networks
		if networks == "" {
			networks = "(no network yet)"
		}
		fmt.Fprintf(&b, "\tchain confined%d {\n\t\tcomment %s\n", i, comment("host-network pods confined to "+networks))
		// The original destination: where kube-proxy runs beside ovn-udn,
		// its DNAT (output, before this hook) has already turned a
		// ClusterIP into an endpoint.
		fmt.Fprintf(&b, "\t\tct original ip daddr @allowed%d_4 accept\n\t\tct original ip6 daddr @allowed%d_6 accept\n", i, i)
		if len(c4) > 0 {
			fmt.Fprintf(&b, "\t\tct original ip daddr { %s } drop\n", strings.Join(c4, ", "))
		}
		if len(c6) > 0 {
			fmt.Fprintf(&b, "\t\tct original ip6 daddr { %s } drop\n", strings.Join(c6, ", "))
		}
		b.WriteString("\t}\n")
	}
	// What the host forwards (its containers, VMs) never comes from the
	// kubelet: new connections toward the pods are dropped.
	b.WriteString("\tchain forward {\n\t\ttype filter hook forward priority filter; policy accept;\n")
	b.WriteString("\t\tct state new ip daddr @isolated4 drop\n\t\tct state new ip6 daddr @isolated6 drop\n\t}\n}\n")
	return b.String()
}

// maxComment is the longest comment nft takes, in bytes.
const maxComment = 128

// comment quotes s as an nft comment: without the quotes and backslashes
// nft cannot take, cut to what it accepts (pod and network names may be
// longer). A comment nft refused would fail the whole table.
func comment(s string) string {
	s = strings.NewReplacer(`"`, "", `\`, "").Replace(s)
	if len(s) > maxComment-1 {
		s = strings.ToValidUTF8(s[:maxComment-1], "")
	}
	return `"` + s + `"`
}

// set declares a named set of type typ holding elems.
func set(name, typ string, elems []string) string {
	s := fmt.Sprintf("\tset %s {\n\t\ttype %s\n", name, typ)
	if len(elems) > 0 {
		s += "\t\telements = { " + strings.Join(elems, ", ") + " }\n"
	}
	return s + "\t}\n"
}

// byFamily splits addresses or prefixes into IPv4 and IPv6, as sorted,
// de-duplicated strings.
func byFamily[T interface {
	netip.Addr | netip.Prefix
	String() string
}](xs []T) (v4, v6 []string) {
	for _, x := range xs {
		var is4 bool
		switch a := any(x).(type) {
		case netip.Addr:
			is4 = a.Is4()
		case netip.Prefix:
			is4 = a.Addr().Is4()
		}
		if is4 {
			v4 = append(v4, x.String())
		} else {
			v6 = append(v6, x.String())
		}
	}
	slices.Sort(v4)
	slices.Sort(v6)
	return slices.Compact(v4), slices.Compact(v6)
}
