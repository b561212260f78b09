package podalloc

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
	"github.com/ovn-udn/ovn-udn/internal/contract/podnet"
)

// TestPodChanged: the updates that can change a pod's attachments wake the
// pod-allocation controller; others (labels, status conditions) do not.
func TestPodChanged(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p",
			Annotations: map[string]string{podnet.Annotation: `{"default":{}}`}},
			Spec: corev1.PodSpec{NodeName: "node1"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	}
	for _, c := range []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{"nothing", func(*corev1.Pod) {}, false},
		{"a label", func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} }, false},
		{"a status condition", func(p *corev1.Pod) { p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady}} }, false},
		{"another annotation", func(p *corev1.Pod) { p.Annotations["x"] = "y" }, false},
		{"scheduled elsewhere", func(p *corev1.Pod) { p.Spec.NodeName = "node2" }, true},
		{"finished", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"attachments", func(p *corev1.Pod) { p.Annotations[podnet.Annotation] = `{}` }, true},
		{"secondary networks selected", func(p *corev1.Pod) { p.Annotations[netconf.NetworksAnnotation] = "blue" }, true},
		{"placed by its zone", func(p *corev1.Pod) { p.Annotations[podnet.PlacementAnnotation] = "net" }, true},
		{"asks for a primary network", func(p *corev1.Pod) { p.Annotations[podnet.RequestedPrimaryAnnotation] = "net2" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := base()
			c.change(n)
			if got := podChanged(base(), n); got != c.want {
				t.Errorf("podChanged = %v, want %v", got, c.want)
			}
		})
	}
}
