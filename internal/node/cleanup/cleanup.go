// Package cleanup removes what ovn-udn leaves on a node once it is
// uninstalled (`ovn-udn node cleanup`, run by config/uninstall's
// DaemonSet): the CNI plugin and its configuration, the integration bridge
// with every pod's host-side interface and the management port, the
// external bridge's flows and patch ports (the bridge goes back to a plain
// NORMAL switch), the host's routes to the service CIDRs through it and
// their neighbour entry, the host-isolation nftables table, the chassis
// settings the zone pod set on Open
// vSwitch, and the zone's databases and sockets.
//
// It only removes: each step is idempotent, and a node that never ran
// ovn-udn is left as it was. It leaves what the operator set up (the
// external bridge, its uplink, ovn-bridge-mappings, system-id) and the
// Node's annotations (the API's, not the node's).
package cleanup

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node/hostisolation"
)

// Options say where the node keeps ovn-udn's things (the DaemonSets' host
// paths).
type Options struct {
	// OVSDB is the node's Open vSwitch database remote.
	OVSDB string
	// Bridge is the integration bridge (br-int).
	Bridge string
	// ExternalBridges are the external bridges whose flows the agent kept
	// (br-ex, and further uplinks').
	ExternalBridges []string
	// MasqueradeNextHops are the next hops of the host's routes to the
	// service CIDRs on the first external bridge, which the agent made
	// (config.Cluster.MasqueradeNextHops).
	MasqueradeNextHops []netip.Addr
	// CNIConfDir and CNIBinDir are the runtime's CNI directories.
	CNIConfDir, CNIBinDir string
	// ConfFile is the configuration list the agent wrote in CNIConfDir.
	ConfFile string
	// DBDir holds the zone's databases; RunDir its sockets.
	DBDir, RunDir string
	// Command runs a program (ovs-vsctl, ovs-ofctl, ip).
	Command func(program string, args ...string) *exec.Cmd
}

// ZoneFiles are the zone pod's files, in DBDir and RunDir.
var ZoneFiles = struct{ DB, Run []string }{
	DB:  []string{"ovnnb_db.db", "ovnsb_db.db"},
	Run: []string{"ovnnb_db.sock", "ovnsb_db.sock", "ovnnb_db.ctl", "ovnsb_db.ctl", "ovn-northd.ctl", "ovn-controller.ctl"},
}

// ChassisKeys are the Open_vSwitch external IDs the zone pod's
// ovn-controller container sets (config/deploy/zone.yaml).
var ChassisKeys = []string{"ovn-remote", "ovn-encap-type", "ovn-encap-ip", "ovn-is-interconn"}

// Run removes everything, going on past failures, and returns them joined.
// It reports what it removed through logf.
func Run(o Options, logf func(format string, args ...any)) error {
	var errs []error
	for _, f := range []string{filepath.Join(o.CNIConfDir, o.ConfFile), filepath.Join(o.CNIBinDir, netconf.CNIType)} {
		errs = append(errs, remove(f, logf))
	}
	// The pods' host-side interfaces (veths: deleting one end deletes its
	// pod's end too), then the bridge with the management port.
	if _, err := o.vsctl("br-exists", o.Bridge); err != nil {
		// no bridge (exit status 2), or no database: del-br says which
	} else if out, err := o.vsctl("list-ports", o.Bridge); err != nil {
		errs = append(errs, err)
	} else {
		for _, port := range strings.Fields(out) {
			typ, err := o.vsctl("--if-exists", "get", "Interface", port, "type")
			if err != nil || strings.Trim(strings.TrimSpace(typ), `"`) != "" {
				continue // internal and patch ports go with the bridge
			}
			if err := o.Command("ip", "link", "del", port).Run(); err == nil {
				logf("deleted the interface %s", port)
			}
		}
	}
	if _, err := o.vsctl("--if-exists", "del-br", o.Bridge); err != nil {
		errs = append(errs, err)
	} else {
		logf("deleted the bridge %s (if it was there)", o.Bridge)
	}
	for i, br := range o.ExternalBridges {
		errs = append(errs, o.plainBridge(br, logf))
		if i == 0 {
			o.hostRoutes(br, logf)
		}
	}
	errs = append(errs, o.hostIsolation(logf))
	args := append([]string{"remove", "Open_vSwitch", ".", "external_ids"}, ChassisKeys...)
	if _, err := o.vsctl(args...); err != nil {
		errs = append(errs, err)
	}
	for _, f := range ZoneFiles.DB {
		errs = append(errs, remove(filepath.Join(o.DBDir, f), logf))
	}
	for _, f := range ZoneFiles.Run {
		errs = append(errs, remove(filepath.Join(o.RunDir, f), logf))
	}
	return errors.Join(errs...)
}

// plainBridge turns an external bridge back into a plain switch: its patch
// ports (ovn-controller's, to the deleted integration bridge) gone, and one
// NORMAL flow instead of the agent's.
func (o Options) plainBridge(br string, logf func(string, ...any)) error {
	if _, err := o.vsctl("br-exists", br); err != nil {
		return nil // no such bridge
	}
	out, err := o.vsctl("list-ports", br)
	if err != nil {
		return err
	}
	for _, port := range strings.Fields(out) {
		if typ, err := o.vsctl("get", "Interface", port, "type"); err == nil && strings.TrimSpace(typ) == "patch" {
			if _, err := o.vsctl("--if-exists", "del-port", br, port); err != nil {
				return err
			}
			logf("deleted the patch port %s of %s", port, br)
		}
	}
	if b, err := o.Command("ovs-ofctl", "del-flows", br).CombinedOutput(); err != nil {
		return fmt.Errorf("ovs-ofctl del-flows %s: %v: %s", br, err, b)
	}
	if b, err := o.Command("ovs-ofctl", "add-flow", br, "priority=0,actions=NORMAL").CombinedOutput(); err != nil {
		return fmt.Errorf("ovs-ofctl add-flow %s: %v: %s", br, err, b)
	}
	logf("reset the flows of %s to NORMAL", br)
	return nil
}

// hostRoutes removes the host's routes through br via the masquerade next
// hops, and those hops' neighbour entries (none: nothing to do).
func (o Options) hostRoutes(br string, logf func(string, ...any)) {
	for _, hop := range o.MasqueradeNextHops {
		fam := "-6"
		if hop.Is4() {
			fam = "-4"
		}
		out, err := o.Command("ip", fam, "route", "show", "dev", br, "via", hop.String()).Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			continue
		}
		if o.Command("ip", fam, "route", "flush", "dev", br, "via", hop.String()).Run() == nil {
			logf("removed the routes via %s on %s", hop, br)
		}
		_ = o.Command("ip", "neigh", "del", hop.String(), "dev", br).Run()
	}
}

// hostIsolation removes the agent's nftables tables (package
// hostisolation: its table, and the probe a killed agent may have left),
// where nft is there and so are they.
func (o Options) hostIsolation(logf func(string, ...any)) error {
	var errs []error
	for _, table := range []string{hostisolation.TableName, hostisolation.ProbeName} {
		if o.Command("nft", "list", "table", "inet", table).Run() != nil {
			continue // no nft, or no table
		}
		if out, err := o.Command("nft", "delete", "table", "inet", table).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table inet %s: %v: %s", table, err, strings.TrimSpace(string(out))))
			continue
		}
		logf("deleted the nftables table inet %s", table)
	}
	return errors.Join(errs...)
}

func (o Options) vsctl(args ...string) (string, error) {
	cmd := o.Command("ovs-vsctl", append([]string{"--db=" + o.OVSDB, "--timeout=10"}, args...)...)
	b, err := cmd.Output()
	if err != nil {
		msg := ""
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("ovs-vsctl %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return string(b), nil
}

// remove deletes a file if it is there.
func remove(path string, logf func(string, ...any)) error {
	err := os.Remove(path)
	switch {
	case err == nil:
		logf("removed %s", path)
		return nil
	case errors.Is(err, os.ErrNotExist):
		return nil
	default:
		return err
	}
}
