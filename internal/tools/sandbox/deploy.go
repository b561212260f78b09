package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	manifests "github.com/ovn-udn/ovn-udn/config"
	"github.com/ovn-udn/ovn-udn/internal/deps"
	"github.com/ovn-udn/ovn-udn/internal/ovnrun"
)

// Deploy mode (Options.Deploy) installs ovn-udn the way an operator would
// (docs/install.md): the image archive is imported into every node's
// containerd, and config/deploy is applied with `kubectl apply -k` through an
// overlay of the sandbox's (deployOverlay). The kubelets then run
// cluster-manager, the zone and the node agent as pods on the host network;
// the supervisor runs none of them. Open vSwitch stays on the host, started
// by the sandbox, as the install guide's prerequisites ask.
//
// The sandbox's nodes share one filesystem, where a cluster's nodes each
// have their own: the overlay points every host directory the manifests
// mount at a per-node directory of the state directory, selected by the
// node's name (subPathExpr $(NODE_NAME)). The pods reach the API server
// through the control plane's foot on the underlay, as the kubelets do.

// DefaultImageArchive is the archive `make image` writes, which deploy mode
// installs unless Options.Image names another.
const DefaultImageArchive = "bin/ovn-udn-image.tar"

// deployBaseImage is the image every container of config/deploy names.
const deployBaseImage = "ghcr.io/ovn-udn/ovn-udn"

// podKubeconfigDir is where the overlay mounts the pods' kubeconfig.
const podKubeconfigDir = "/etc/ovn-udn-sandbox"

// podTokenFile is where a pod finds its service account token.
const podTokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

func (l Layout) deployDir() string { return filepath.Join(l.Dir, "deploy") }

// DeployOverlay is the directory of the sandbox's overlay of config/deploy
// (deploy mode): `kubectl apply -k` and `kubectl delete -k` take it.
func (l Layout) DeployOverlay() string { return filepath.Join(l.deployDir(), "sandbox") }

// zoneSockets are a node's zone database remotes in deploy mode: the unix
// sockets the zone pod's ovsdb-servers serve in the node's /var/run/ovn.
func (l Layout) zoneSockets(node string) (nb, sb string) {
	dir := l.ZoneDir(node)
	return "unix:" + filepath.Join(dir, "ovnnb_db.sock"), "unix:" + filepath.Join(dir, "ovnsb_db.sock")
}

// hostDirs maps each host directory config/deploy mounts to where a sandbox
// node has it: a base under the state directory and the node's sub-path
// (kubelet-expanded). /var/run/netns is the host's own, where every node's
// containerd makes pods' namespaces, named by its real path (/var/run is a
// link here): the runtime wants a shared mount under a propagated volume,
// and looks for it by the path as given.
func (l Layout) hostDirs() map[string][2]string {
	zones, nodes := filepath.Join(l.Dir, "zones"), filepath.Join(l.Dir, "nodes")
	return map[string][2]string{
		"/var/run/ovn":         {zones, "$(NODE_NAME)"},
		"/var/lib/ovn-udn":     {zones, "$(NODE_NAME)/db"},
		"/var/run/openvswitch": {nodes, "$(NODE_NAME)"},
		"/etc/ovn-udn":         {nodes, "$(NODE_NAME)/etc"},
		"/etc/cni/net.d":       {nodes, "$(NODE_NAME)/real/cni/net.d"},
		"/opt/cni/bin":         {nodes, "$(NODE_NAME)/real/cni/bin"},
		"/var/run/ovn-udn":     {nodes, "$(NODE_NAME)/real/run"},
		"/var/run/netns":       {"/run/netns", ""},
	}
}

// nodeEnvFile is a node's /etc/ovn-udn/node.env in deploy mode.
func (l Layout) nodeEnvFile(node string) string {
	return filepath.Join(l.NodeDir(node), "etc", "node.env")
}

// cniPluginSocket is the node agent's socket as the node's containerd sees
// it (the agent's /var/run/ovn-udn is hostDirs' per-node directory).
func (l Layout) cniPluginSocket(node string) string {
	return filepath.Join(l.realDir(node), "run", "cni.sock")
}

// ImageRef returns the reference an OCI archive's image is named by (the
// io.containerd.image.name annotation `make image` writes, which `ctr images
// import` names the image by).
func ImageRef(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s: no index.json: not an OCI archive", archive)
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", archive, err)
		}
		if path.Clean(h.Name) != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			return "", fmt.Errorf("%s: index.json: %w", archive, err)
		}
		for _, m := range index.Manifests {
			for _, k := range []string{"io.containerd.image.name", "org.opencontainers.image.ref.name"} {
				if r := m.Annotations[k]; r != "" {
					return r, nil
				}
			}
		}
		return "", fmt.Errorf("%s: its image has no name", archive)
	}
}

// splitRef splits "name:tag" (the tag is required: the kubelet would pull a
// :latest image it finds locally, and there is no registry here).
func splitRef(ref string) (name, tag string, err error) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") || ref[i+1:] == "latest" {
		return "", "", fmt.Errorf("image %q: want name:tag with a tag other than latest (the kubelet would try to pull it)", ref)
	}
	return ref[:i], ref[i+1:], nil
}

// DeploySettings are what the sandbox's overlay sets beyond config/deploy.
type DeploySettings struct {
	// Image is the image reference every container runs (name:tag).
	Image string
	// Replicas is cluster-manager's (config/deploy's 2 when 0).
	Replicas int
	// ZoneArgs and ClusterManagerArgs are appended to the zone controller's
	// and cluster-manager's command lines.
	ZoneArgs, ClusterManagerArgs []string
}

// WriteDeployOverlay writes config/deploy (from the binary) and the sandbox's
// overlay of it into the state directory, and returns the overlay's
// directory.
func WriteDeployOverlay(l Layout, s DeploySettings) (string, error) {
	base := filepath.Join(l.deployDir(), "ovn-udn", "config")
	if err := os.RemoveAll(base); err != nil {
		return "", err
	}
	if err := manifests.WriteTree(base); err != nil {
		return "", err
	}
	name, tag, err := splitRef(s.Image)
	if err != nil {
		return "", err
	}
	if err := writeOverlay(l, l.DeployOverlay(), "deploy", []string{"zone.yaml", "node.yaml", "cluster-manager.yaml"}, name, tag, s); err != nil {
		return "", err
	}
	return l.DeployOverlay(), nil
}

// UninstallOverlay is the directory of the sandbox's overlay of
// config/uninstall.
func (l Layout) UninstallOverlay() string { return filepath.Join(l.deployDir(), "uninstall") }

// WriteUninstallOverlay writes the sandbox's overlay of config/uninstall
// (beside WriteDeployOverlay's, whose copy of the manifests it uses) for
// image, and returns its directory.
func WriteUninstallOverlay(l Layout, image string) (string, error) {
	name, tag, err := splitRef(image)
	if err != nil {
		return "", err
	}
	return l.UninstallOverlay(), writeOverlay(l, l.UninstallOverlay(), "uninstall", []string{"cleanup.yaml"}, name, tag, DeploySettings{})
}

// writeOverlay writes an overlay of config/<base> into dir: the image, and
// overlayPatch of each of files.
func writeOverlay(l Layout, dir, base string, files []string, name, tag string, s DeploySettings) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var list []map[string]string
	for _, f := range files {
		b, err := fs.ReadFile(manifestsOf(base), base+"/"+f)
		if err != nil {
			return err
		}
		p, err := overlayPatch(l, b, s)
		if err != nil {
			return fmt.Errorf("%s/%s: %w", base, f, err)
		}
		out, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), out, 0o644); err != nil {
			return err
		}
		list = append(list, map[string]string{"path": f})
	}
	b, err := yaml.Marshal(map[string]any{
		"apiVersion": "kustomize.config.k8s.io/v1beta1",
		"kind":       "Kustomization",
		"resources":  []string{"../ovn-udn/config/" + base},
		"images":     []map[string]string{{"name": deployBaseImage, "newName": name, "newTag": tag}},
		"patches":    list,
	})
	if err != nil {
		return err
	}
	header := "# The sandbox's overlay of config/" + base + " (internal/tools/sandbox/deploy.go):\n" +
		"# its image, per-node host directories, and the pods' way to the API server.\n"
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), append([]byte(header), b...), 0o644)
}

// manifestsOf is the embedded directory of config/<base>.
func manifestsOf(base string) fs.FS {
	if base == "uninstall" {
		return manifests.Uninstall
	}
	return manifests.Deploy
}

// overlayPatch is the strategic-merge patch of one workload of config/deploy
// (manifest): every hostPath volume moved to its per-node directory, each
// mount of one selecting the node's sub-path, NODE_NAME in every container
// that needs it for that, and the ovn-udn containers given the pods'
// kubeconfig and the extra flags.
func overlayPatch(l Layout, manifest []byte, s DeploySettings) (map[string]any, error) {
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(manifest, &meta); err != nil {
		return nil, err
	}
	var pod corev1.PodTemplateSpec
	switch meta.Kind {
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(manifest, &d); err != nil {
			return nil, err
		}
		pod = d.Spec.Template
	case "Deployment":
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(manifest, &d); err != nil {
			return nil, err
		}
		pod = d.Spec.Template
	default:
		return nil, fmt.Errorf("unexpected kind %s", meta.Kind)
	}
	dirs := l.hostDirs()
	moved := map[string]string{} // volume name: sub-path expression
	var volumes []map[string]any
	for _, v := range pod.Spec.Volumes {
		if v.HostPath == nil {
			continue
		}
		d, ok := dirs[v.HostPath.Path]
		if !ok {
			return nil, fmt.Errorf("volume %s: no per-node directory for the host's %s", v.Name, v.HostPath.Path)
		}
		if d[1] != "" {
			moved[v.Name] = d[1]
		}
		volumes = append(volumes, map[string]any{"name": v.Name, "hostPath": map[string]any{"path": d[0], "type": "Directory"}})
	}
	// The kubeconfig, and the service account token the API server's
	// ServiceAccount admission would mount (envtest turns it off).
	volumes = append(volumes, map[string]any{"name": "sandbox-kubeconfig",
		"hostPath": map[string]any{"path": l.podKubeconfigDir(), "type": "Directory"}},
		map[string]any{"name": "sandbox-token", "projected": map[string]any{"sources": []any{
			map[string]any{"serviceAccountToken": map[string]any{"path": "token", "expirationSeconds": 3600}}}}})
	api := pod.Spec.AutomountServiceAccountToken == nil || *pod.Spec.AutomountServiceAccountToken
	patchContainers := func(cs []corev1.Container) []map[string]any {
		var containers []map[string]any
		for _, c := range cs {
			var mounts []map[string]any
			for _, m := range c.VolumeMounts {
				if sub, ok := moved[m.Name]; ok {
					mounts = append(mounts, map[string]any{"mountPath": m.MountPath, "name": m.Name, "subPathExpr": sub})
				}
			}
			var env []map[string]any
			if len(mounts) > 0 && !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "NODE_NAME" }) {
				env = append(env, map[string]any{"name": "NODE_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "spec.nodeName"}}})
			}
			patch := map[string]any{"name": c.Name}
			if runsOVNUDN(c) && api {
				env = append(env, map[string]any{"name": "KUBECONFIG", "value": path.Join(podKubeconfigDir, "kubeconfig")})
				mounts = append(mounts, map[string]any{"mountPath": podKubeconfigDir, "name": "sandbox-kubeconfig", "readOnly": true},
					map[string]any{"mountPath": path.Dir(podTokenFile), "name": "sandbox-token", "readOnly": true})
				extra := s.ZoneArgs
				if meta.Kind == "Deployment" {
					extra = s.ClusterManagerArgs
				}
				if c.Name == "zone-controller" || meta.Kind == "Deployment" {
					if len(extra) > 0 {
						patch["args"] = append(slices.Clone(c.Args), extra...)
					}
				}
			}
			if len(mounts) == 0 && len(env) == 0 && patch["args"] == nil {
				continue
			}
			if len(mounts) > 0 {
				patch["volumeMounts"] = mounts
			}
			if len(env) > 0 {
				patch["env"] = env
			}
			containers = append(containers, patch)
		}
		return containers
	}
	if !api {
		volumes = slices.DeleteFunc(volumes, func(v map[string]any) bool {
			return v["name"] == "sandbox-kubeconfig" || v["name"] == "sandbox-token"
		})
	}
	// A list left out, not empty: a strategic merge patch with an empty
	// list of containers would replace them all with none.
	podSpec := map[string]any{"volumes": volumes}
	if cs := patchContainers(pod.Spec.Containers); len(cs) > 0 {
		podSpec["containers"] = cs
	}
	if cs := patchContainers(pod.Spec.InitContainers); len(cs) > 0 {
		podSpec["initContainers"] = cs
	}
	spec := map[string]any{"template": map[string]any{"spec": podSpec}}
	if meta.Kind == "Deployment" && s.Replicas > 0 {
		spec["replicas"] = s.Replicas
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": meta.Kind,
		"metadata": map[string]any{"name": meta.Metadata.Name}, "spec": spec}, nil
}

// runsOVNUDN reports whether a container runs ovn-udn (the binary, or a
// script that execs it).
func runsOVNUDN(c corev1.Container) bool {
	if len(c.Command) == 1 && c.Command[0] == "ovn-udn" {
		return true
	}
	return len(c.Command) >= 3 && strings.Contains(c.Command[2], "exec ovn-udn")
}

func (l Layout) podKubeconfigDir() string { return filepath.Join(l.deployDir(), "kubeconfig") }

// writePodKubeconfig writes the kubeconfig the ovn-udn pods use: the API
// server at the control plane's foot on the underlay (its certificate names
// localhost), authenticated by the pod's own service account token, so the
// pods run with exactly their manifests' RBAC. (In-cluster configuration
// would name the kubernetes Service's ClusterIP, which the host cannot reach
// yet: docs/install.md.)
func writePodKubeconfig(l Layout, caData []byte) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://%s:%d", ControlUnderlayIP, APIServerProxyPort),
		CertificateAuthorityData: caData, TLSServerName: "localhost"}
	c.AuthInfos["pod"] = &clientcmdapi.AuthInfo{TokenFile: podTokenFile}
	c.Contexts["sandbox"] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: "pod"}
	c.CurrentContext = "sandbox"
	if err := os.MkdirAll(l.podKubeconfigDir(), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*c, filepath.Join(l.podKubeconfigDir(), "kubeconfig"))
}

// prepareDeployNode does on a node what the install guide's prerequisites
// ask of an operator (docs/install.md): the external bridge mapped as the
// physical networks, Open vSwitch's datapath type, and /etc/ovn-udn/node.env
// with the node's gateway and the agent's further flags. It also makes the
// node's per-node host directories.
func (s *supervisor) prepareDeployNode(i int, n *ovnrun.Node, mappings []string, agentArgs []string) error {
	name := NodeName(i)
	for _, d := range s.l.hostDirs() {
		if d[1] == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Join(d[0], strings.ReplaceAll(d[1], "$(NODE_NAME)", name)), 0o755); err != nil {
			return err
		}
	}
	if _, err := n.VSCtl("set", "Open_vSwitch", ".", "external_ids:ovn-bridge-datapath-type=netdev",
		"external_ids:ovn-bridge-mappings="+strings.Join(mappings, ",")); err != nil {
		return err
	}
	args := append([]string{"--cni-plugin-socket=" + s.l.cniPluginSocket(name)}, agentArgs...)
	env := fmt.Sprintf("GATEWAY_IP=%s\nGATEWAY_NEXT_HOP=%s\nGATEWAY_MAC=%s\nEXTERNAL_BRIDGE=br-ex\nEXTERNAL_INTERFACE=eth0\nAGENT_ARGS=%q\n",
		NodeIP(i), strings.Join(s.opts.nextHops(), ","), GatewayMAC(i), strings.Join(args, " "))
	return os.WriteFile(s.l.nodeEnvFile(name), []byte(env), 0o644)
}

// deploy writes the overlay and the pods' kubeconfig and applies the overlay
// with kubectl, as docs/install.md does.
func (s *supervisor) deploy(ctx context.Context, ref string) error {
	if err := writePodKubeconfig(s.l, s.kube.env.Config.CAData); err != nil {
		return err
	}
	set := DeploySettings{Image: ref, Replicas: min(2, s.opts.Nodes)}
	if s.opts.InactiveGracePeriod > 0 {
		g := "--inactive-grace-period=" + s.opts.InactiveGracePeriod.String()
		set.ZoneArgs = append(set.ZoneArgs, g)
		set.ClusterManagerArgs = append(set.ClusterManagerArgs, g)
	}
	if ms := int(s.opts.BFDInterval / time.Millisecond); ms > 0 {
		set.ZoneArgs = append(set.ZoneArgs, fmt.Sprintf("--bfd-min-tx=%d", ms), fmt.Sprintf("--bfd-min-rx=%d", ms))
	}
	// The outside world's DNS server, over the underlay (startExternalDNS).
	set.ZoneArgs = append(set.ZoneArgs, "--dns-server="+net.JoinHostPort(ExternalRouterIP, "53"))
	dir, err := WriteDeployOverlay(s.l, set)
	if err != nil {
		return err
	}
	s.log.Printf("kubectl apply -k %s", dir)
	cmd := exec.CommandContext(ctx, deps.KubeBinary("kubectl"), "apply", "-k", dir)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.l.Kubeconfig())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	s.log.Printf("%s", out.String())
	if err != nil {
		return fmt.Errorf("kubectl apply -k %s: %v: %s", dir, err, out.String())
	}
	return nil
}

// DeployNamespace is the namespace config/deploy installs into.
const DeployNamespace = "ovn-udn"

// deployedReady returns nil once every ovn-udn workload has rolled out: each
// DaemonSet's and Deployment's pods are all of its current template and
// Ready (what `kubectl rollout status` waits for).
func (k *kube) deployedReady(ctx context.Context) error {
	var dss appsv1.DaemonSetList
	if err := k.admin.List(ctx, &dss, client.InNamespace(DeployNamespace)); err != nil {
		return err
	}
	var ds appsv1.DeploymentList
	if err := k.admin.List(ctx, &ds, client.InNamespace(DeployNamespace)); err != nil {
		return err
	}
	if len(dss.Items) == 0 || len(ds.Items) == 0 {
		return fmt.Errorf("ovn-udn's DaemonSets and Deployment are not there yet")
	}
	for _, d := range dss.Items {
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.DesiredNumberScheduled == 0 ||
			st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
			return fmt.Errorf("DaemonSet %s: %d of %d pods updated, %d ready", d.Name, st.UpdatedNumberScheduled, st.DesiredNumberScheduled, st.NumberReady)
		}
	}
	for _, d := range ds.Items {
		st, want := d.Status, int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.Replicas != want {
			return fmt.Errorf("Deployment %s: %d of %d replicas updated, %d ready", d.Name, st.UpdatedReplicas, want, st.ReadyReplicas)
		}
	}
	return nil
}

// ImportImage imports an OCI archive into every node's containerd, as a
// registry would serve it to the nodes of a cluster (there is none here):
// an upgrade's new image.
func ImportImage(dir, archive string) error {
	l, err := NewLayout(dir)
	if err != nil {
		return err
	}
	st, err := ReadState(l)
	if err != nil {
		return err
	}
	for _, n := range st.Nodes {
		if err := importArchive(l.containerdSocket(n.Name), n.Name, archive); err != nil {
			return err
		}
	}
	return nil
}
