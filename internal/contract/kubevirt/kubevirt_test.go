package kubevirt

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// launcher is a virt-launcher pod of VM vm1, created at t0+age seconds.
func launcher(name, node string, age int, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(age) * time.Second)),
		Labels:      map[string]string{AppLabel: VirtLauncher, VMNameLabel: "vm1"},
		Annotations: map[string]string{DomainAnnotation: "vm1", AllowLiveMigrationAnnotation: "true"}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func activated(p *corev1.Pod) { p.Annotations[ActivatedAnnotation] = p.Spec.NodeName }
func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
func unscheduled(p *corev1.Pod) {
	p.Spec.NodeName = ""
}
func deleting(p *corev1.Pod) {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
}

func TestVMName(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"virt-launcher asking for migration", launcher("a", "n1", 0), "vm1"},
		{"no migration annotation", launcher("a", "n1", 0, func(p *corev1.Pod) { delete(p.Annotations, AllowLiveMigrationAnnotation) }), ""},
		{"not a virt-launcher", launcher("a", "n1", 0, func(p *corev1.Pod) { delete(p.Labels, AppLabel) }), ""},
		{"no domain", launcher("a", "n1", 0, func(p *corev1.Pod) { delete(p.Annotations, DomainAnnotation) }), ""},
		{"nil", nil, ""},
	} {
		if got, _ := VMName(tc.pod); got != tc.want {
			t.Errorf("%s: VMName = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRoles(t *testing.T) {
	for _, tc := range []struct {
		name           string
		pods           []*corev1.Pod
		active, target string
	}{
		{"none", nil, "", ""},
		{"one pod", []*corev1.Pod{launcher("a", "n1", 0)}, "a", ""},
		{"a migration target on another node", []*corev1.Pod{launcher("b", "n2", 10), launcher("a", "n1", 0)}, "a", "b"},
		{"the target activated", []*corev1.Pod{launcher("a", "n1", 0), launcher("b", "n2", 10, activated)}, "b", ""},
		{"the source done", []*corev1.Pod{launcher("a", "n1", 0, succeeded), launcher("b", "n2", 10)}, "b", ""},
		{"the source being deleted", []*corev1.Pod{launcher("a", "n1", 0, deleting), launcher("b", "n2", 10)}, "b", ""},
		{"a second pod on the same node is no target", []*corev1.Pod{launcher("a", "n1", 0), launcher("b", "n1", 10)}, "a", ""},
		{"a target not scheduled yet", []*corev1.Pod{launcher("a", "n1", 0), launcher("b", "", 10, unscheduled)}, "a", ""},
		{"migrating back: the newest activated is active, a newer one targets", []*corev1.Pod{
			launcher("a", "n1", 0, activated), launcher("b", "n2", 10, activated), launcher("c", "n1", 20)}, "b", "c"},
		{"same creation time: by name", []*corev1.Pod{launcher("b", "n2", 0), launcher("a", "n1", 0)}, "a", "b"},
	} {
		active, target := Roles(tc.pods)
		if name(active) != tc.active || name(target) != tc.target {
			t.Errorf("%s: Roles = (%q, %q), want (%q, %q)", tc.name, name(active), name(target), tc.active, tc.target)
		}
	}
}

func name(p *corev1.Pod) string {
	if p == nil {
		return ""
	}
	return p.Name
}
