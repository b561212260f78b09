package explain

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
	"github.com/ovn-udn/ovn-udn/internal/ovntrace"
	"github.com/ovn-udn/ovn-udn/internal/ovsdb/nbdb"
	"github.com/ovn-udn/ovn-udn/internal/rows/topology"
)

// continuation is where a packet leaving a zone through a remote port
// enters the next one.
type continuation struct {
	node, datapath string
	packet         ovntrace.Packet
}

// traceIn traces pkt entering datapath in zone z, annotates the hops, and
// says where the packet continues when it leaves through a remote port.
func (e *Explainer) traceIn(ctx context.Context, z *zoneReader, datapath string, pkt ovntrace.Packet) (*Segment, *continuation, error) {
	out, err := z.trace(datapath, pkt.Expr())
	if err != nil {
		return nil, nil, err
	}
	v, err := ovntrace.Parse(out)
	if err != nil {
		return nil, nil, err
	}
	v.Datapath, v.Expr = datapath, pkt.Expr()
	seg := &Segment{Node: z.node, Datapath: datapath, Packet: pkt, Hops: ovntrace.ParseHops(out), Verdict: v}
	rows, err := e.rows(ctx, z, seg.Hops)
	if err != nil {
		return nil, nil, err
	}
	for _, h := range seg.Hops {
		var notes []string
		for _, s := range h.Stages {
			if n := stageNote(s, rows[rowKey(h, s)]); n != "" {
				notes = append(notes, n)
			}
		}
		seg.Notes = append(seg.Notes, notes)
	}
	// ovn-trace picks no backend for ct_lb_mark(backends=...) without
	// --lb-dst, and with it rewrites the destination already at the first
	// conntrack pass, before the ACLs that see the VIP in the datapath: no
	// faithful path goes on from a load balancer.
	for _, h := range seg.Hops {
		for _, s := range h.Stages {
			for _, a := range s.Actions {
				if m := backendsRe.FindStringSubmatch(a); m != nil {
					seg.Backends = m[1]
					return seg, nil, nil
				}
			}
		}
	}
	for _, h := range seg.Hops {
		if h.Output == nil || h.Output.Type != "remote" {
			continue
		}
		o, ok := v.DeliveredTo(h.Output.Port)
		if !ok {
			continue
		}
		p, _, err := z.port(ctx, h.Output.Port)
		if err != nil {
			return nil, nil, err
		}
		if p == nil {
			return seg, nil, nil
		}
		node, err := e.nodeOf(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		return seg, &continuation{node: node, datapath: h.Datapath, packet: advance(pkt, h.InPort, o)}, nil
	}
	return seg, nil, nil
}

// advance is the packet as it enters the next zone: through the port it
// entered the remote port's datapath by, with the fields set on the way.
func advance(p ovntrace.Packet, inport string, o ovntrace.Output) ovntrace.Packet {
	p.InPort = inport
	ttl := p.TTL
	if ttl == 0 {
		ttl = 64
	}
	p.TTL = ttl - o.TTLDecrements
	for k, v := range o.Fields {
		switch k {
		case "eth.src":
			p.EthSrc = v
		case "eth.dst":
			p.EthDst = v
		case "ip4.src", "ip6.src":
			p.IPSrc = v
		case "ip4.dst", "ip6.dst":
			p.IPDst = v
		case "tcp.dst", "udp.dst":
			if n, err := strconv.Atoi(v); err == nil {
				p.DstPort = n
			}
		case "tcp.src", "udp.src":
			if n, err := strconv.Atoi(v); err == nil {
				p.SrcPort = n
			}
		}
	}
	return p
}

// nodeOf returns the node a remote port lives on: the node ovn-udn
// recorded on it, else the node whose chassis its requested-chassis names.
func (e *Explainer) nodeOf(ctx context.Context, p *nbdb.LogicalSwitchPort) (string, error) {
	if n := p.ExternalIDs[topology.NodeKey]; n != "" {
		if _, ok := e.Zones[n]; ok {
			return n, nil
		}
	}
	chassis := p.Options["requested-chassis"]
	var nodes corev1.NodeList
	if err := e.Kube.List(ctx, &nodes); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if n.Annotations[nodeinfo.ChassisIDAnnotation] == chassis || n.Name == chassis {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("remote port %s: no node has chassis %q", p.Name, chassis)
}

// rows finds the Northbound rows behind the hops' stages (through the
// logical flows' stage hints), by rowKey.
func (e *Explainer) rows(ctx context.Context, z *zoneReader, hops []ovntrace.Hop) (map[string]*Row, error) {
	seen := map[string]bool{}
	var uuids []string
	for _, h := range hops {
		for _, s := range h.Stages {
			if !seen[s.UUID] && interesting(s) {
				seen[s.UUID] = true
				uuids = append(uuids, s.UUID)
			}
		}
	}
	hints, err := z.stageHints(uuids)
	if err != nil {
		return nil, err
	}
	rows := map[string]*Row{}
	for _, h := range hops {
		for _, s := range h.Stages {
			hint, ok := hints[s.UUID]
			if _, done := rows[rowKey(h, s)]; done || !ok {
				continue
			}
			r, err := z.rowOn(ctx, hint, h.Datapath)
			if err == nil && r == nil && s.Name == "lr_in_policy" {
				// One logical flow stands for the same policy of several
				// routers, and its hint names the row of one of them,
				// which may be gone (its network left the zone): this
				// router's own row.
				r, err = z.policyOn(ctx, h.Datapath, s.Priority, s.Match)
			}
			if err != nil {
				return nil, err
			}
			rows[rowKey(h, s)] = r
		}
	}
	return rows, nil
}

// rowKey keys the row behind a stage of a hop: one logical flow may stand
// for rows of several datapaths.
func rowKey(h ovntrace.Hop, s ovntrace.Stage) string { return h.Datapath + "|" + s.UUID }

// interesting reports whether a stage may be made from a row of ours.
func interesting(s ovntrace.Stage) bool {
	switch {
	case strings.HasSuffix(s.Name, "_acl_eval"), s.Name == "lr_in_policy", s.Name == "lr_in_ip_routing",
		strings.Contains(s.Name, "nat"), strings.HasSuffix(s.Name, "_lb"), s.Drops():
		return true
	}
	return false
}
