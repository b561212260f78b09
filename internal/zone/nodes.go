package zone

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/contract/nodeinfo"
)

// nodeCache parses each Node's annotations once per resource version: with
// thousands of networks a node's subnet annotation is large, and every network
// reconcile reads every node.
type nodeCache struct {
	mu     sync.Mutex
	parsed map[string]parsedNode
}

type parsedNode struct {
	version string
	info    nodeinfo.Info
	err     error
}

// nodes returns every node that parsed, sorted by name, and the nodes whose
// annotations are missing or malformed (with the reason).
//
// The Nodes are read from the cache without a copy (each is only parsed,
// once per version): with thousands of networks a Node's annotations are
// large, and copying every Node was most of a network reconcile's CPU when
// a node joined (BenchmarkZoneControllerNodeAdd).
func (c *nodeCache) nodes(ctx context.Context, r client.Reader) ([]nodeinfo.Info, map[string]error, error) {
	var list corev1.NodeList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed == nil {
		c.parsed = map[string]parsedNode{}
	}
	seen := map[string]bool{}
	var out []nodeinfo.Info
	bad := map[string]error{}
	for i := range list.Items {
		n := &list.Items[i]
		seen[n.Name] = true
		p, ok := c.parsed[n.Name]
		if !ok || p.version != n.ResourceVersion {
			info, err := nodeinfo.Parse(n.Name, n.Annotations)
			p = parsedNode{version: n.ResourceVersion, info: info, err: err}
			c.parsed[n.Name] = p
		}
		if p.err != nil {
			bad[n.Name] = p.err
			continue
		}
		out = append(out, p.info)
	}
	for name := range c.parsed {
		if !seen[name] {
			delete(c.parsed, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, bad, nil
}
