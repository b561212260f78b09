// Command ovn-udn is the single binary of the project; see internal/cli for its
// subcommands. Installed in a node's CNI bin directory under the name
// ovn-k8s-cni-overlay (or run as `ovn-udn cni`), it is ovn-udn's CNI plugin
// instead (package cniplugin).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/ovn-udn/ovn-udn/internal/cli"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node/cniplugin"
	"github.com/ovn-udn/ovn-udn/internal/version"
)

func main() {
	if filepath.Base(os.Args[0]) == netconf.CNIType || (len(os.Args) == 2 && os.Args[1] == "cni") {
		cniplugin.Main(version.String())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := cli.NewRootCommand().ExecuteContext(ctx); err != nil {
		code, show := cli.ExitCode(err)
		if show {
			fmt.Fprintln(os.Stderr, "ovn-udn:", err)
		}
		os.Exit(code)
	}
}
