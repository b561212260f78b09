package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ovn-udn/ovn-udn/internal/cni"
	"github.com/ovn-udn/ovn-udn/internal/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// CNIOptions put the agent in CNI mode: a container runtime (the kubelet's)
// creates pods' network namespaces and calls ovn-udn's CNI plugin, which
// the agent answers on Socket. The agent then neither creates namespaces
// nor reports pods' status; it removes what a pod that is gone left
// plumbed.
type CNIOptions struct {
	// Socket is where the agent serves the plugin (cniserver.DefaultSocket
	// when empty and ConfDir is set).
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

// enabled reports whether the agent runs in CNI mode.
func (o CNIOptions) enabled() bool { return o.Socket != "" || o.ConfDir != "" }

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

// reconcileCNI is Reconcile in CNI mode: it wakes ADDs waiting for the pod,
// and removes the interfaces of a pod that is gone, finished or moved
// (a DEL the runtime could not deliver).
func (r *PodReconciler) reconcileCNI(ctx context.Context, key string, pod *corev1.Pod, have []cni.Plugged) (reconcile.Result, error) {
	r.poke(key)
	if pod != nil && pod.Spec.NodeName == r.Opts.Node && !isFinished(pod) {
		return reconcile.Result{}, nil
	}
	if len(have) == 0 {
		return reconcile.Result{}, nil
	}
	// The ports only: the namespace is the runtime's to delete.
	ports := make([]string, len(have))
	for i, p := range have {
		ports[i] = p.Port
	}
	if err := r.Opts.Host.Del("", ports); err != nil {
		return reconcile.Result{}, err
	}
	r.setPlugged(key, nil)
	return reconcile.Result{}, nil
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
		r.mu.Lock()
		if r.plugged == nil {
			r.plugged = map[string][]cni.Plugged{}
		}
		r.mu.Unlock()
		r.setPlugged(key, all[key])
	}
}
