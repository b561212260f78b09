package pods

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// ConfFile is the CNI configuration list the agent writes into ConfDir.
const ConfFile = "10-ovn-udn.conflist"

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
func install(o node.CNIOptions) error {
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
		if err := writeIfChanged(filepath.Join(o.ConfDir, ConfFile), ConfList(o.PluginSocketPath()), 0o644); err != nil {
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

// refreshPlugged reads the plugged interfaces from OVS again, after a
// change to key's.
func (r *PodReconciler) refreshPlugged(key string) {
	if all, err := r.Opts.Host.Ports(); err == nil {
		// Every key, not only this one: an ADD may have taken an
		// interface over from another pod (a VM's pods share their port,
		// and its veth's name), which must not remove it when it goes.
		r.mu.Lock()
		r.plugged = all
		r.mu.Unlock()
	}
}
