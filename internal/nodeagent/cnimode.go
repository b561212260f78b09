package nodeagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// CNIOptions say where the agent meets the node's container runtime (the
// kubelet's), which creates pods' network namespaces and calls ovn-udn's
// CNI plugin; the agent answers the plugin on Socket.
type CNIOptions struct {
	// Socket is where the agent serves the plugin (cniserver.DefaultSocket
	// when empty).
	Socket string
	// ConfDir is the node's CNI configuration directory (/etc/cni/net.d):
	// once the agent serves, it writes ConfFile there, which makes the
	// runtime report the node's network ready.
	ConfDir string
	// BinDir is the node's CNI plugin directory (/opt/cni/bin): the agent
	// installs its own binary there as netconf.CNIType ("" leaves it).
	BinDir string
}

// ConfFile is the CNI configuration list the agent writes into ConfDir.
const ConfFile = "10-ovn-udn.conflist"

func (o CNIOptions) socket() string {
	if o.Socket == "" {
		return cniserver.DefaultSocket
	}
	return o.Socket
}

// ConfVersion is the CNI version of the configuration list the agent
// installs: 1.0.0, which every current runtime takes (containerd 1.6 passes
// the list's version to the plugin as it is and cannot read a 1.1.0
// result). A runtime that speaks 1.1 (STATUS, GC) may use the same list
// with its version raised.
const ConfVersion = "1.0.0"

// ConfList is the configuration list the agent installs: the default
// network through ovn-udn's plugin, reached at socket.
func ConfList(socket string) []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"cniVersion": ConfVersion,
		"name":       "ovn-udn",
		"plugins":    []map[string]any{{"type": netconf.CNIType, "socket": socket}},
	}, "", "  ")
	return append(b, '\n')
}

// install puts the plugin binary and the configuration in place, each
// written to a temporary name and renamed, and only when it differs.
func (o CNIOptions) install() error {
	if o.BinDir != "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("installing the CNI plugin: %w", err)
		}
		b, err := os.ReadFile(self)
		if err != nil {
			return fmt.Errorf("installing the CNI plugin: %w", err)
		}
		if err := writeIfChanged(filepath.Join(o.BinDir, netconf.CNIType), b, 0o755); err != nil {
			return fmt.Errorf("installing the CNI plugin: %w", err)
		}
	}
	if o.ConfDir != "" {
		if err := writeIfChanged(filepath.Join(o.ConfDir, ConfFile), ConfList(o.socket()), 0o644); err != nil {
			return fmt.Errorf("writing the CNI configuration: %w", err)
		}
	}
	return nil
}

func writeIfChanged(path string, b []byte, mode os.FileMode) error {
	if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, b) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// pokeChan returns a channel closed at the pod's next reconcile.
func (r *PodReconciler) pokeChan(key string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pokes == nil {
		r.pokes = map[string]chan struct{}{}
	}
	ch, ok := r.pokes[key]
	if !ok {
		ch = make(chan struct{})
		r.pokes[key] = ch
	}
	return ch
}

func (r *PodReconciler) poke(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.pokes[key]; ok {
		close(ch)
		delete(r.pokes, key)
	}
}

// refreshPlugged reads a pod's plugged interfaces from OVS again.
func (r *PodReconciler) refreshPlugged(key string) {
	if all, err := r.Opts.Host.Ports(); err == nil {
		r.setPlugged(key, all[key])
	}
}
