// Command coredns is CoreDNS with only the plugins a cluster's DNS uses (the
// full build pulls in every cloud provider's SDK). Built by
// hack/install-deps.sh from the release pinned in go.mod.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// directives is the plugin chain, in CoreDNS's own order (a subset of
// core/dnsserver's list: the order is the order requests go through).
var directives = []string{
	"reload", "ready", "health", "prometheus", "errors", "log", "loadbalance",
	"cache", "hosts", "kubernetes", "loop", "forward", "whoami",
}

func init() { dnsserver.Directives = directives }

func main() { coremain.Run() }
