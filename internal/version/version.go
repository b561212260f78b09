// Package version reports which ovn-udn build is running.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is set at link time (-X github.com/ovn-udn/ovn-udn/internal/version.Version=...);
// otherwise it is taken from the module build information.
var Version = ""

// String is a one-line description of the build: version, VCS revision when
// known, and Go version.
func String() string {
	v, rev := Version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	if rev != "" {
		v += "+" + rev
	}
	return fmt.Sprintf("ovn-udn %s (%s %s/%s)", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
