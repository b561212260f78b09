package pods

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/node"
)

// TestCNIInstall: the agent installs its own binary as the plugin and the
// configuration list naming its socket, and a second install (an agent
// restart) rewrites neither.
func TestCNIInstall(t *testing.T) {
	o := node.CNIOptions{Socket: "/run/x/cni.sock", ConfDir: t.TempDir(), BinDir: t.TempDir()}
	if err := install(o); err != nil {
		t.Fatal(err)
	}
	plugin := filepath.Join(o.BinDir, netconf.CNIType)
	conf := filepath.Join(o.ConfDir, ConfFile)
	st1, err := os.Stat(plugin)
	if err != nil || st1.Mode().Perm() != 0o755 {
		t.Fatalf("plugin %s: %v %v", plugin, st1, err)
	}
	self, _ := os.Executable()
	if st, _ := os.Stat(self); st.Size() != st1.Size() {
		t.Errorf("plugin is %d bytes, the agent's binary %d", st1.Size(), st.Size())
	}
	var list struct {
		CNIVersion, Name string
		Plugins          []struct{ Type, Socket string }
	}
	b, _ := os.ReadFile(conf)
	if err := json.Unmarshal(b, &list); err != nil || list.Name != "ovn-udn" || len(list.Plugins) != 1 ||
		list.Plugins[0].Type != netconf.CNIType || list.Plugins[0].Socket != o.Socket {
		t.Errorf("configuration list %s (%v)", b, err)
	}
	sc1, _ := os.Stat(conf)
	if err := install(o); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(plugin)
	sc2, _ := os.Stat(conf)
	if !st2.ModTime().Equal(st1.ModTime()) || !sc2.ModTime().Equal(sc1.ModTime()) {
		t.Errorf("a second install rewrote the files")
	}
}

// TestCNIInstallPluginSocket: an agent in a container that mounts the
// socket's directory elsewhere writes the host's path into the
// configuration, and still serves on its own.
func TestCNIInstallPluginSocket(t *testing.T) {
	o := node.CNIOptions{Socket: "/var/run/ovn-udn/cni.sock", PluginSocket: "/srv/node1/run/cni.sock", ConfDir: t.TempDir()}
	if err := install(o); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(o.ConfDir, ConfFile))
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Plugins []struct{ Socket string } }
	if err := json.Unmarshal(b, &list); err != nil || len(list.Plugins) != 1 || list.Plugins[0].Socket != o.PluginSocket {
		t.Errorf("configuration list %s names no %s (%v)", b, o.PluginSocket, err)
	}
	if o.SocketPath() != o.Socket {
		t.Errorf("the agent serves on %s, want %s", o.SocketPath(), o.Socket)
	}
}
