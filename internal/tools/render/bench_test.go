package render_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/config"
	"github.com/ovn-udn/ovn-udn/internal/tools/render"
)

// BenchmarkRender renders a generated cluster: nets primary Layer3 UDNs (one
// namespace each, all with the same subnet) over nodes nodes, with one pod
// per network on each node, and every zone's rows.
//
//	go test ./internal/tools/render -run - -bench Render -benchtime 3x
func BenchmarkRender(b *testing.B) {
	for _, size := range []struct{ nets, nodes int }{{10, 3}, {100, 10}, {200, 20}} {
		b.Run(fmt.Sprintf("%dnets-%dnodes", size.nets, size.nodes), func(b *testing.B) {
			var y strings.Builder
			for n := 0; n < size.nodes; n++ {
				fmt.Fprintf(&y, "apiVersion: v1\nkind: Node\nmetadata: {name: n%d}\n---\n", n)
			}
			for i := 0; i < size.nets; i++ {
				fmt.Fprintf(&y, "apiVersion: v1\nkind: Namespace\nmetadata: {name: t%d, labels: {k8s.ovn.org/primary-user-defined-network: \"\"}}\n---\n", i)
				fmt.Fprintf(&y, "apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata: {name: net, namespace: t%d}\nspec: {topology: Layer3, role: Primary, subnets: [10.128.0.0/16/24]}\n---\n", i)
				for n := 0; n < size.nodes; n++ {
					fmt.Fprintf(&y, "apiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: t%d}\nspec: {nodeName: n%d, containers: [{name: c, image: busybox}]}\n---\n", n, i, n)
				}
			}
			docs := docsFrom(b, y.String())
			rows := 0
			for b.Loop() {
				in, err := render.Check(docs)
				if err != nil {
					b.Fatal(err)
				}
				res, err := render.Run(context.Background(), in, render.Options{Cluster: config.Default()})
				if err != nil {
					b.Fatal(err)
				}
				if res.Invalid() {
					b.Fatal(res.Problems)
				}
				rows = 0
				for _, z := range res.Zones {
					for _, n := range z.Networks {
						rows += len(n.Rows)
					}
				}
			}
			b.ReportMetric(float64(rows), "rows")
		})
	}
}
