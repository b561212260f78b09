package sandbox

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// Cluster DNS of the sandbox: CoreDNS pods (kube-system/coredns) behind the
// kube-system/kube-dns Service at the conventional ClusterIP, serving
// cluster.local from the API server.
const (
	DNSDomain = "cluster.local"
	// DNSServiceIP is kube-dns's ClusterIP: the tenth address of the
	// service range.
	DNSServiceIP = "10.96.0.10"
	dnsUser      = "ovn-udn-sandbox-coredns"
	// CoreDNSImage is CoreDNS's image (make deps' CoreDNS build, imported
	// into real nodes).
	CoreDNSImage = "registry.k8s.io/coredns/coredns:v1.12.4"
	dnsApp       = "kube-dns"
)

// corefile is CoreDNS's configuration: cluster.local and the reverse zones
// from the API server (no upstream: the sandbox has no outside world).
func corefile(kubeconfig string) string {
	return fmt.Sprintf(`.:53 {
    errors
    health :8080
    ready :8181
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
}
`, DNSDomain, kubeconfig)
}

// dnsRole is what CoreDNS's kubernetes plugin reads.
var dnsRole = rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: dnsUser}, Rules: []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
	{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
}}

// dnsFiles writes CoreDNS's identity (a kubeconfig naming the API server at
// server, as pods reach it) and its Corefile; it returns the
// Corefile's path.
func (k *kube) dnsFiles(l Layout, server string) (string, error) {
	ctx := context.Background()
	if err := k.admin.Create(ctx, dnsRole.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: dnsUser},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsUser},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: dnsUser}}}
	if err := k.admin.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	u, err := k.env.AddUser(envtest.User{Name: dnsUser}, nil)
	if err != nil {
		return "", err
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.Load(b)
	if err != nil {
		return "", err
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + server
		// The API server's certificate names localhost.
		c.TLSServerName = "localhost"
	}
	dir := filepath.Join(l.KubeDir(), "coredns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "Corefile")
	return path, os.WriteFile(path, []byte(corefile(kubeconfig)), 0o644)
}

// dnsObjects are CoreDNS's Deployment (two replicas on different nodes where
// there are two) and the kube-dns Service.
func dnsObjects(corefilePath string) []client.Object {
	dir := filepath.Dir(corefilePath)
	labels := map[string]string{"k8s-app": dnsApp}
	dnsPorts := []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP}}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns", Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "coredns", Image: CoreDNSImage,
					Command: []string{"/coredns"}, Args: []string{"-conf", corefilePath}, Ports: dnsPorts,
					// Its Corefile and kubeconfig, from the host.
					VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: dir, ReadOnly: true}}}},
				Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
					{Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, TopologyKey: "kubernetes.io/hostname"}}}}},
			}}}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: dnsApp, Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: DNSServiceIP, Selector: labels, Ports: []corev1.ServicePort{
			{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)}}}}
	return []client.Object{dep, svc}
}

// startDNS deploys CoreDNS and waits until a replica answers (is a ready
// endpoint of kube-dns).
func (s *supervisor) startDNS(ctx context.Context) error {
	// Pods reach the control plane's foot on the underlay through their
	// gateway routers.
	server := fmt.Sprintf("%s:%d", ControlUnderlayIP, APIServerProxyPort)
	path, err := s.kube.dnsFiles(s.l, server)
	if err != nil {
		return fmt.Errorf("cluster DNS: %w", err)
	}
	for _, o := range dnsObjects(path) {
		if err := s.kube.admin.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster DNS: creating %s: %w", o.GetName(), err)
		}
	}
	s.log.Printf("waiting for cluster DNS")
	return proc.WaitFor(2*time.Minute, 200*time.Millisecond, func() (bool, error) {
		ips, err := DNSServers(ctx, s.kube.admin)
		if err != nil {
			return false, err
		}
		if len(ips) == 0 {
			return false, fmt.Errorf("no CoreDNS replica is ready (kube-system/coredns)")
		}
		return true, nil
	})
}

// DNSServers returns the addresses of the ready CoreDNS replicas (kube-dns's
// endpoints), IPv4 first.
func DNSServers(ctx context.Context, c client.Client) ([]string, error) {
	out, err := ReadyEndpoints(ctx, c, metav1.NamespaceSystem, dnsApp)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := netip.ParseAddr(out[i])
		b, _ := netip.ParseAddr(out[j])
		if a.Is4() != b.Is4() {
			return a.Is4()
		}
		return a.Less(b)
	})
	return out, nil
}

// ReadyEndpoints returns the distinct addresses of a Service's ready
// endpoints, as its EndpointSlices list them, sorted.
func ReadyEndpoints(ctx context.Context, c client.Client, namespace, service string) ([]string, error) {
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: service}); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, sl := range slices.Items {
		for _, e := range sl.Endpoints {
			if e.Conditions.Ready == nil || !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				if !seen[a] {
					seen[a] = true
					out = append(out, a)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// ResolvConf is a pod's resolver configuration, as a kubelet writes it for
// ClusterFirst pods: its namespace's search path and the cluster's DNS.
func ResolvConf(namespace string, servers []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "search %s.svc.%s svc.%s %s\n", namespace, DNSDomain, DNSDomain, DNSDomain)
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	b.WriteString("options ndots:5\n")
	return b.String()
}

// writeResolvConf gives a pod's network namespace its resolv.conf: `ip
// netns exec` (what sandbox exec and pod workloads run through) mounts
// /etc/netns/<netns>/resolv.conf over /etc/resolv.conf. The server is
// kube-dns's ClusterIP, as a kubelet writes it: default-network pods reach it
// through their network's load balancer, pods with a primary user-defined
// network through their default-network interface (an infrastructure
// service).
func writeResolvConf(ctx context.Context, c client.Client, netns, namespace string) error {
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: dnsApp}, svc); err != nil {
		return client.IgnoreNotFound(err)
	}
	dir := filepath.Join("/etc/netns", netns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// Atomically: commands of one pod may start concurrently.
	tmp, err := os.CreateTemp(dir, ".resolv.conf-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(ResolvConf(namespace, svc.Spec.ClusterIPs)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, "resolv.conf"))
}
