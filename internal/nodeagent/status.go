package nodeagent

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReadyStatus is the status a kubelet would report for a pod whose containers
// all started: Running, every condition true, ips as its addresses. Times
// already in the pod's status are kept, so reporting again changes nothing.
func ReadyStatus(pod *corev1.Pod, ips []netip.Addr, hostIP string, now metav1.Time) corev1.PodStatus {
	s := corev1.PodStatus{Phase: corev1.PodRunning, HostIP: hostIP, QOSClass: pod.Status.QOSClass, StartTime: pod.Status.StartTime}
	if s.StartTime == nil {
		s.StartTime = &now
	}
	if hostIP != "" {
		s.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	for _, ip := range ips {
		s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip.String()})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}
	since := func(t corev1.PodConditionType) metav1.Time {
		for _, c := range pod.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return c.LastTransitionTime
			}
		}
		return now
	}
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		s.Conditions = append(s.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: since(t)})
	}
	started := func(name string) metav1.Time {
		for _, c := range pod.Status.ContainerStatuses {
			if c.Name == name && c.State.Running != nil {
				return c.State.Running.StartedAt
			}
		}
		return now
	}
	for _, c := range pod.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started(c.Name)}},
		})
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// StatusEqual reports whether two statuses say the same, ignoring time
// precision lost in the API's round trip.
func StatusEqual(a, b corev1.PodStatus) bool {
	norm := func(s corev1.PodStatus) corev1.PodStatus {
		s = *s.DeepCopy()
		if s.StartTime != nil {
			t := metav1.NewTime(s.StartTime.Rfc3339Copy().Time)
			s.StartTime = &t
		}
		for i := range s.Conditions {
			s.Conditions[i].LastTransitionTime = s.Conditions[i].LastTransitionTime.Rfc3339Copy()
			s.Conditions[i].LastProbeTime = s.Conditions[i].LastProbeTime.Rfc3339Copy()
		}
		for i := range s.ContainerStatuses {
			if r := s.ContainerStatuses[i].State.Running; r != nil {
				r.StartedAt = r.StartedAt.Rfc3339Copy()
			}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(norm(a), norm(b))
}
