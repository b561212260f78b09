package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/netns"
	"github.com/ovn-udn/ovn-udn/internal/node/cni"
	"github.com/ovn-udn/ovn-udn/internal/node/hostisolation"
	"github.com/ovn-udn/ovn-udn/internal/proc"
	"github.com/ovn-udn/ovn-udn/internal/tools/sandbox/images"
)

// Real nodes: each node runs Debian's containerd (with runc) and a kubelet
// built from the pinned Kubernetes module, both in the node's network
// namespace (entered with nsenter --net: `ip netns exec` would remount /sys
// and hide the cgroup mounts), and the node agent serves ovn-udn's CNI
// plugin to that containerd. The control plane has a foot on the underlay: a network
// namespace of its own (ControlNetns) at ControlUnderlayIP, where a proxy
// serves the API server to the kubelets and to pods. The API server reaches
// the kubelets at their node addresses (logs, exec, port-forward) through
// its egress selector: an HTTP CONNECT proxy on a unix socket that dials
// from that namespace. Nothing of this touches the host's own network, so
// several sandboxes with real nodes share a machine. docs/sandbox.md,
// "Real nodes".

// ControlUnderlayIP is the control plane's address on the underlay.
const ControlUnderlayIP = "192.168.100.254"

// APIServerProxyPort is where the kubelets and pods reach the API server,
// at ControlUnderlayIP.
const APIServerProxyPort = 6443

// Image references the real nodes hold (no registry: imported at up).
const (
	PauseImage   = "registry.k8s.io/pause:3.10"
	AgnhostImage = "registry.k8s.io/e2e-test-images/agnhost:2.56"
)

// realDir holds a real node's containerd, kubelet and CNI files.
func (l Layout) realDir(node string) string { return filepath.Join(l.NodeDir(node), "real") }

// imagesArchive holds the images real nodes import.
func (l Layout) imagesArchive() string { return filepath.Join(l.Dir, "images.tar") }

// ControlNetns is the control plane's network namespace on the underlay.
func (l Layout) ControlNetns() string { return l.prefix() + "control" }

// egressSocket is where the API server's egress selector sends its
// CONNECT requests for the nodes.
func (l Layout) egressSocket() string { return filepath.Join(l.KubeDir(), "egress.sock") }

// cgroupRoot is the kubelet's cgroup root for a node: distinct per sandbox.
func (l Layout) cgroupRoot(node string) string { return "/" + l.prefix() + node }

// CheckRealNodes reports whether what real nodes run is installed.
func CheckRealNodes() error {
	for _, p := range []string{"containerd", "runc", "ctr", "nsenter"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s is not installed: run `make deps`", p)
		}
	}
	for _, b := range []string{"kubelet", "agnhost", "pause", "loopback"} {
		if _, err := os.Stat(deps.KubeBinary(b)); err != nil {
			return fmt.Errorf("%s is not built: run `make deps`", b)
		}
	}
	return nil
}

// startControlLink puts the control plane on the underlay: it serves the
// API server at ControlUnderlayIP, and the API server's egress to the
// nodes from there, until ctx ends.
func (s *supervisor) startControlLink(ctx context.Context, apiserver string) error {
	ul, cn := s.l.UnderlayNetns(), s.l.ControlNetns()
	if err := ipCmds(
		[]string{"netns", "add", cn},
		[]string{"-n", cn, "link", "set", "lo", "up"},
		[]string{"-n", cn, "link", "add", "eth0", "type", "veth", "peer", "name", "ulcontrol", "netns", ul},
		[]string{"-n", ul, "link", "set", "ulcontrol", "master", "br0", "up"},
		[]string{"-n", cn, "addr", "add", ControlUnderlayIP + "/24", "dev", "eth0"},
		[]string{"-n", cn, "link", "set", "eth0", "up"},
	); err != nil {
		return err
	}
	// The userspace datapath's conntrack needs complete checksums.
	if out, err := exec.Command("nsenter", "--net=/run/netns/"+cn, deps.OVNProgram("ethtool"), "-K", "eth0", "tx", "off").CombinedOutput(); err != nil {
		return fmt.Errorf("ethtool: %v: %s", err, out)
	}
	u, err := url.Parse(apiserver)
	if err != nil {
		return err
	}
	api, err := netns.Listen(cn, "tcp", net.JoinHostPort(ControlUnderlayIP, strconv.Itoa(APIServerProxyPort)))
	if err != nil {
		return fmt.Errorf("API server proxy: %w", err)
	}
	_ = os.Remove(s.l.egressSocket())
	egress, err := net.Listen("unix", s.l.egressSocket())
	if err != nil {
		_ = api.Close()
		return fmt.Errorf("API server egress: %w", err)
	}
	go func() { <-ctx.Done(); _ = api.Close(); _ = egress.Close() }()
	serveConns(api, func(c net.Conn) {
		up, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			_ = c.Close()
			return
		}
		splice(c, up)
	})
	serveConns(egress, func(c net.Conn) { serveConnect(ctx, cn, c) })
	return nil
}

// serveConns hands every connection l accepts to handle, until l closes.
func serveConns(l net.Listener, handle func(net.Conn)) {
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
}

// serveConnect answers one HTTP CONNECT request (the API server's egress
// selector, proxyProtocol HTTPConnect) by dialing its target from network
// namespace ns, then joins the two connections.
func serveConnect(ctx context.Context, ns string, c net.Conn) {
	r := bufio.NewReader(c)
	req, err := http.ReadRequest(r)
	if err != nil {
		_ = c.Close()
		return
	}
	if req.Method != http.MethodConnect {
		fmt.Fprintf(c, "HTTP/1.1 405 Method Not Allowed\r\n\r\n")
		_ = c.Close()
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	up, err := netns.Dial(dctx, ns, "tcp", req.Host)
	cancel()
	if err != nil {
		fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n%v", err)
		_ = c.Close()
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = c.Close()
		_ = up.Close()
		return
	}
	splice(&bufferedConn{Conn: c, r: r}, up)
}

// bufferedConn reads what its reader already buffered before the rest.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// splice copies both ways between a and b until either side ends, then
// closes both.
func splice(a, b net.Conn) {
	defer a.Close()
	defer b.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(b, a); done <- struct{}{} }()
	go func() { _, _ = io.Copy(a, b); done <- struct{}{} }()
	<-done
}

// egressConfig is the API server's egress selector configuration: the
// "cluster" egress (nodes, pods, services) goes through the sandbox's
// CONNECT proxy at socket.
func egressConfig(socket string) string {
	return fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      uds:
        udsName: %s
`, socket)
}

// buildImages writes the images every real node imports.
func (s *supervisor) buildImages() (string, error) {
	path := s.l.imagesArchive()
	_, err := images.WriteArchive(path,
		images.Image{Refs: []string{PauseImage}, Files: []images.File{{Path: "pause", Source: deps.KubeBinary("pause")}}, Entrypoint: []string{"/pause"}},
		images.Image{Refs: []string{AgnhostImage}, Files: []images.File{{Path: "agnhost", Source: deps.KubeBinary("agnhost")}}, Entrypoint: []string{"/agnhost"}},
		images.Image{Refs: []string{CoreDNSImage}, Files: []images.File{{Path: "coredns", Source: deps.KubeBinary("coredns")}}, Entrypoint: []string{"/coredns"}})
	return path, err
}

// startRealNode starts a node's containerd and kubelet, and returns the
// node agent's CNI flags.
func (s *supervisor) startRealNode(ctx context.Context, i int, name, ns string) ([]string, error) {
	kubeletUser, err := s.kube.env.AddUser(envtest.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	dir := s.l.realDir(name)
	for _, d := range []string{"containerd", "cni/bin", "cni/net.d", "kubelet", "kubelet-pki", "pod-logs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := copyFile(deps.KubeBinary("loopback"), filepath.Join(dir, "cni/bin/loopback")); err != nil {
		return nil, err
	}
	if err := makeCgroups(s.l.cgroupRoot(name)); err != nil {
		return nil, err
	}
	sock := s.l.containerdSocket(name)
	files := map[string]string{
		"containerd/config.toml": containerdConfig(dir, sock),
		"kubelet.yaml":           kubeletConfig(dir, s.l.cgroupRoot(name), sock, strings.Split(NodeIP(i), "/")[0]),
		"resolv.conf":            "nameserver 10.96.0.10\nsearch cluster.local\n",
	}
	kc, err := kubeletKubeconfig(kubeletUser.Config())
	if err != nil {
		return nil, err
	}
	files["kubeconfig"] = kc
	for f, content := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	enter := "--net=/run/netns/" + ns
	s.addComponent(&component{name: "containerd/" + name, path: "nsenter", args: []string{enter, "containerd", "--config", filepath.Join(dir, "containerd/config.toml")}})
	if err := proc.WaitFor(30*time.Second, 50*time.Millisecond, func() (bool, error) {
		_, err := os.Stat(sock)
		return err == nil, ctx.Err()
	}); err != nil {
		return nil, fmt.Errorf("containerd of %s did not start: %w", name, err)
	}
	archives := []string{s.images}
	if s.opts.Deploy {
		archives = append(archives, s.opts.Image)
	}
	for _, a := range archives {
		if err := importArchive(sock, name, a); err != nil {
			return nil, err
		}
	}
	kubelet := &component{name: "kubelet/" + name, path: "nsenter", args: []string{enter, deps.KubeBinary("kubelet"),
		"--config=" + filepath.Join(dir, "kubelet.yaml"), "--kubeconfig=" + filepath.Join(dir, "kubeconfig"),
		"--hostname-override=" + name, "--node-ip=" + strings.Split(NodeIP(i), "/")[0],
		"--root-dir=" + filepath.Join(dir, "kubelet"), "--cert-dir=" + filepath.Join(dir, "kubelet-pki")}}
	flags := []string{"--cni-socket=" + filepath.Join(dir, "cni.sock"), "--cni-conf-dir=" + filepath.Join(dir, "cni/net.d"),
		"--cni-bin-dir=" + filepath.Join(dir, "cni/bin")}
	// The kubelet runs in a cgroup v2 group of its own, which the node
	// agent lets alone reach the isolated pods (internal/node/hostisolation).
	if mount := hostisolation.ResolveMount(); mount != "" {
		cg := s.l.KubeletCgroup(name)
		if err := os.MkdirAll(filepath.Join(mount, cg), 0o755); err != nil {
			s.log.Printf("no cgroup of its own for the kubelet of %s (host isolation off): %v", name, err)
		} else {
			procs := filepath.Join(mount, cg, "cgroup.procs")
			kubelet.args = append([]string{"-c", `echo $$ > "$0" && exec nsenter "$@"`, procs}, kubelet.args...)
			kubelet.path = "sh"
			flags = append(flags, "--kubelet-cgroup="+cg, "--pods-cgroup="+s.l.PodsCgroup(name))
		}
	}
	s.addComponent(kubelet)
	return flags, nil
}

// KubeletCgroup is the cgroup v2 group a node's kubelet runs in (under the
// sandbox's prefix, so that down removes it).
func (l Layout) KubeletCgroup(node string) string { return l.prefix() + node + "-kubelet" }

// PodsCgroup is the parent of a node's kubelet's pod cgroups in the cgroup
// v2 hierarchy (the cgroupfs driver's kubepods under its cgroup root).
func (l Layout) PodsCgroup(node string) string {
	return strings.TrimPrefix(l.cgroupRoot(node), "/") + "/kubepods"
}

// containerdSocket is a node's containerd socket.
func (l Layout) containerdSocket(node string) string {
	return filepath.Join(l.realDir(node), "containerd", "containerd.sock")
}

// importArchive imports an image archive into the containerd at sock (node
// names it in the error).
func importArchive(sock, node, archive string) error {
	if out, err := exec.Command("ctr", "-a", sock, "-n", "k8s.io", "images", "import", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("importing %s into %s: %v: %s", archive, node, err, out)
	}
	return nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// containerdConfig is a node's containerd configuration: its own root,
// state, sockets, runc state and CNI directories; pods' namespaces in
// /run/netns (where ovn-udn's CNI server finds them); the sandbox image
// imported, never pulled; oom_score_adj clamped (root here lacks
// CAP_SYS_RESOURCE).
func containerdConfig(dir, sock string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
plugin_dir = ""
oom_score = 0

[grpc]
  address = %[3]q

[ttrpc]
  address = "%[3]s.ttrpc"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %[4]q
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %[5]q
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    restrict_oom_score_adj = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = %[6]q
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %[7]q
      conf_dir = %[8]q
      max_conf_num = 1
`, filepath.Join(dir, "containerd/root"), filepath.Join(dir, "containerd/state"), sock, filepath.Join(dir, "containerd/opt"),
		PauseImage, filepath.Join(dir, "containerd/runc"), filepath.Join(dir, "cni/bin"), filepath.Join(dir, "cni/net.d"))
}

// kubeletConfig is a node's kubelet configuration: cgroupfs under its own
// root, serving on the node's address (the API server's logs, exec and
// port-forward come through the control namespace) to anyone (a
// sandbox), no eviction and no image garbage collection (nothing to pull
// images back from).
func kubeletConfig(dir, cgroupRoot, sock, nodeIP string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failSwapOn: false
resolvConf: %s
clusterDNS: [10.96.0.10]
clusterDomain: cluster.local
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
localStorageCapacityIsolation: false
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
registerNode: true
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
`, nodeIP, cgroupRoot, filepath.Join(dir, "resolv.conf"), sock, filepath.Join(dir, "pod-logs"))
}

// kubeletKubeconfig points a kubelet at the API server proxy, checking
// the API server's certificate (issued for localhost) under that name.
func kubeletKubeconfig(cfg *rest.Config) (string, error) {
	c := clientcmdapi.NewConfig()
	c.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://%s:%d", ControlUnderlayIP, APIServerProxyPort),
		CertificateAuthorityData: cfg.CAData, TLSServerName: "localhost"}
	c.AuthInfos["kubelet"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	c.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "kubelet"}
	c.CurrentContext = "sandbox"
	b, err := clientcmd.Write(*c)
	return string(b), err
}

// cgroupMounts lists the cgroup v1 controller hierarchies (or the v2
// unified one alone) the kubelet's cgroup root must exist in; with unified,
// also the hybrid mode's v2 hierarchy, where the kubelet makes cgroups too.
func cgroupMounts(unified bool) []string {
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		return []string{"/sys/fs/cgroup"}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		if e.IsDir() && (unified || e.Name() != "unified") && e.Type()&os.ModeSymlink == 0 {
			out = append(out, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return out
}

func makeCgroups(root string) error {
	for _, m := range cgroupMounts(false) {
		if err := os.MkdirAll(filepath.Join(m, root), 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", root, err)
		}
	}
	return nil
}

// cleanupRealNodes removes what real nodes leave behind once their kubelet
// and containerd stopped: their processes (containerd's shims outlive it,
// and pods live in the node's cgroups), their mounts under the state
// directory, their cgroups, the pods' network namespaces that ovn-udn's
// CNI server recorded. (The control namespace goes with the sandbox's
// other namespaces.)
func cleanupRealNodes(l Layout) {
	// Shims name their containerd's socket, under the state directory.
	for _, pid := range pidsMentioning(filepath.Join(l.Dir, "nodes") + "/") {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for _, m := range cgroupMounts(true) {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), l.prefix()) {
				continue
			}
			root := filepath.Join(m, e.Name())
			killCgroup(root)
		}
	}
	// Mounts (volumes, rootfs overlays, shm, the kubelet's root bind):
	// deepest first.
	var mounts []string
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && strings.HasPrefix(fields[4], l.Dir+"/") {
				mounts = append(mounts, fields[4])
			}
		}
		f.Close()
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
	for _, m := range cgroupMounts(true) {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), l.prefix()) {
				removeCgroupTree(filepath.Join(m, e.Name()))
			}
		}
	}
	removePodNetns(l)
}

// pidsMentioning lists processes (not this one) whose command line holds
// needle.
func pidsMentioning(needle string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), needle) && !strings.Contains(string(b), "\x00supervise\x00") {
			out = append(out, pid)
		}
	}
	return out
}

// killCgroup kills every process of a cgroup tree.
func killCgroup(root string) {
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return nil
	})
}

// removeCgroupTree removes a cgroup and its children, deepest first.
func removeCgroupTree(root string) {
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		// A killed process leaves its cgroup a moment later.
		_ = proc.WaitFor(2*time.Second, 50*time.Millisecond, func() (bool, error) {
			err := os.Remove(dirs[i])
			return err == nil || os.IsNotExist(err), nil
		})
	}
}

// removePodNetns deletes the pod namespaces (/run/netns/cni-*) of this
// sandbox's pods that no process holds any more (their containers died with
// the node's cgroups before containerd could delete them), and their
// resolv.conf directories (/etc/netns, writeResolvConf). A namespace is this
// sandbox's when one of its nodes' Open vSwitch databases, read offline,
// records it on a pod's interface: another sandbox's pods, perhaps in the
// middle of an ADD, are never touched. Resolv.conf directories whose
// namespace is gone are removed whoever made them.
func removePodNetns(l Layout) {
	held := map[uint64]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", p.Name(), "ns/net"), &st) == nil {
			held[st.Ino] = true
		}
	}
	dbs, _ := filepath.Glob(filepath.Join(l.Dir, "nodes", "*", "conf.db"))
	for _, db := range dbs {
		for _, name := range recordedNetns(db) {
			var st syscall.Stat_t
			if !strings.HasPrefix(name, "cni-") || syscall.Stat(filepath.Join("/run/netns", name), &st) != nil || held[st.Ino] {
				continue
			}
			_ = deps.OVNCommand("ip", "netns", "del", name).Run()
		}
	}
	if etc, err := filepath.Glob("/etc/netns/cni-*"); err == nil {
		for _, d := range etc {
			if _, err := os.Stat(filepath.Join("/run/netns", filepath.Base(d))); os.IsNotExist(err) {
				_ = os.RemoveAll(d)
			}
		}
	}
}

// recordedNetns returns the pod namespaces a node's Open vSwitch database
// file records on its interfaces (cni.NetnsKey), read with ovsdb-tool.
func recordedNetns(db string) []string {
	out, err := deps.OVNCommand("ovsdb-tool", "query", db,
		`["Open_vSwitch",{"op":"select","table":"Interface","where":[],"columns":["external_ids"]}]`).Output()
	if err != nil {
		return nil
	}
	var res []struct {
		Rows []struct {
			ExternalIDs []any `json:"external_ids"`
		} `json:"rows"`
	}
	if json.Unmarshal(out, &res) != nil || len(res) == 0 {
		return nil
	}
	var names []string
	for _, r := range res[0].Rows {
		// ["map", [[key, value], ...]]
		if len(r.ExternalIDs) != 2 {
			continue
		}
		pairs, _ := r.ExternalIDs[1].([]any)
		for _, p := range pairs {
			kv, _ := p.([]any)
			if len(kv) == 2 && kv[0] == cni.NetnsKey {
				if name, ok := kv[1].(string); ok {
					names = append(names, name)
				}
			}
		}
	}
	return names
}
