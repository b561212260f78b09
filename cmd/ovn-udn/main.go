// Command ovn-udn is the single binary of the project; see internal/cli for its
// subcommands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ovn-udn/ovn-udn/internal/cli"
)

func main() {
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
