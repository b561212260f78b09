package workload

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolve(t *testing.T) {
	r := Resolver{Self: "/bin/ovn-udn", Programs: map[string]string{"coredns": "/cache/coredns", "nc": "/cache/ovn/bin/nc"}}
	pod := func(cs ...corev1.Container) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p1"}, Spec: corev1.PodSpec{Containers: cs}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []Process
	}{
		{"pause runs nothing", pod(corev1.Container{Name: "c", Image: "registry.k8s.io/pause:3.10"}), nil},
		{"agnhost by args", pod(corev1.Container{Name: "c", Image: "registry.k8s.io/e2e-test-images/agnhost:2.53", Args: []string{"netexec", "--http-port=8080"}}),
			[]Process{{Container: "c", Argv: []string{"/bin/ovn-udn", "agnhost", "netexec", "--http-port=8080"}, Env: []string{"HOSTNAME=p1"}}}},
		{"agnhost by command", pod(corev1.Container{Name: "c", Image: "agnhost", Command: []string{"/agnhost", "serve-hostname"}, Args: []string{"--port=9376"},
			Env: []corev1.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}, {Name: "X", ValueFrom: &corev1.EnvVarSource{}}}}),
			[]Process{{Container: "c", Argv: []string{"/bin/ovn-udn", "agnhost", "serve-hostname", "--port=9376"}, Env: []string{"HOSTNAME=p1", "A=1", "B=2"}}}},
		{"agnhost without a command", pod(corev1.Container{Name: "c", Image: "registry.k8s.io/e2e-test-images/agnhost@sha256:abc"}), nil},
		{"a known program", pod(corev1.Container{Name: "dns", Image: "registry.k8s.io/coredns/coredns:v1.12.0", Command: []string{"/coredns"}, Args: []string{"-conf", "/etc/Corefile"}}),
			[]Process{{Container: "dns", Argv: []string{"/cache/coredns", "-conf", "/etc/Corefile"}, Env: []string{"HOSTNAME=p1"}}}},
		{"an unknown program", pod(corev1.Container{Name: "c", Image: "nginx", Command: []string{"nginx"}}), nil},
		{"two containers", pod(corev1.Container{Name: "a", Image: "busybox", Command: []string{"nc", "-lk", "-p", "80"}}, corev1.Container{Name: "b", Image: "pause"}),
			[]Process{{Container: "a", Argv: []string{"/cache/ovn/bin/nc", "-lk", "-p", "80"}, Env: []string{"HOSTNAME=p1"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.Resolve(tc.pod)); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}
