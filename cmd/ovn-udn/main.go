// Command ovn-udn is the single binary of the project; see internal/cli for its
// subcommands.
package main

import (
	"fmt"
	"os"

	"github.com/ovn-udn/ovn-udn/internal/cli"
)

func main() {
	if err := cli.NewRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ovn-udn:", err)
		os.Exit(1)
	}
}
