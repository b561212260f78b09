package nodeagent

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HeartbeatInterval is how often a node agent that stands in for the kubelet
// renews its Node's Ready condition (kube-controller-manager marks a node
// NotReady after 40 s without one).
const HeartbeatInterval = 10 * time.Second

// MaxPods is the pod capacity a node agent reports, as a kubelet's default.
const MaxPods = 110

// ReasonAgentReady is the reason of the Ready condition the agent reports.
const ReasonAgentReady = "NodeAgentReady"

// statusReporter reports the Node's status as a kubelet would for the
// scheduler's and the node lifecycle controller's purposes: Ready with a
// heartbeat, no pressure, capacity and allocatable, addresses. Only where no
// kubelet runs (the sandbox): Options.ReportNodeStatus.
type statusReporter struct {
	client client.Client
	opts   Options
	// capacity is measured once at start.
	capacity corev1.ResourceList
}

// Start renews the status every HeartbeatInterval until ctx ends.
func (s *statusReporter) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("node", s.opts.Node)
	s.capacity = Capacity()
	t := time.NewTicker(HeartbeatInterval)
	defer t.Stop()
	reported := false
	for {
		if err := s.report(ctx, metav1.Now()); err != nil {
			log.Info("cannot report node status yet, retrying", "error", err.Error())
		} else if !reported {
			log.Info("reporting node status", "capacity", s.capacity)
			reported = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *statusReporter) report(ctx context.Context, now metav1.Time) error {
	node := &corev1.Node{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: s.opts.Node}, node); err != nil {
		return err
	}
	want := NodeStatus(node.Status, s.capacity, s.addresses(), now)
	if equality.Semantic.DeepEqual(node.Status, want) {
		return nil
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Status = want
	if err := s.client.Status().Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("reporting node %s status: %w", s.opts.Node, err)
	}
	return nil
}

func (s *statusReporter) addresses() []corev1.NodeAddress {
	out := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: s.opts.Node}}
	for _, p := range s.opts.Info.PrimaryIPs {
		out = append(out, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: p.Addr().String()})
	}
	return out
}

// NodeStatus is cur with the agent's view applied: Ready (heartbeat now; the
// transition time kept while the status stays), no memory, disk or PID
// pressure, capacity = allocatable = capacity, and addresses.
func NodeStatus(cur corev1.NodeStatus, capacity corev1.ResourceList, addrs []corev1.NodeAddress, now metav1.Time) corev1.NodeStatus {
	out := *cur.DeepCopy()
	out.Capacity, out.Allocatable = capacity.DeepCopy(), capacity.DeepCopy()
	out.Addresses = addrs
	out.Phase = ""
	set := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) {
		c := corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
		for i := range out.Conditions {
			if out.Conditions[i].Type == t {
				if out.Conditions[i].Status == status {
					c.LastTransitionTime = out.Conditions[i].LastTransitionTime
				}
				out.Conditions[i] = c
				return
			}
		}
		out.Conditions = append(out.Conditions, c)
	}
	set(corev1.NodeReady, corev1.ConditionTrue, ReasonAgentReady, "ovn-udn node agent is running and plumbing pods")
	set(corev1.NodeMemoryPressure, corev1.ConditionFalse, "NoPressure", "not measured by the node agent")
	set(corev1.NodeDiskPressure, corev1.ConditionFalse, "NoPressure", "not measured by the node agent")
	set(corev1.NodePIDPressure, corev1.ConditionFalse, "NoPressure", "not measured by the node agent")
	return out
}

// Capacity is what the machine offers pods: its CPUs, its memory and
// MaxPods. Sandbox nodes share one machine, so each reports all of it, as
// nodes of kind or minikube on one host do.
func Capacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(MaxPods, resource.DecimalSI),
	}
}

// memTotal reads MemTotal from /proc/meminfo (0 when it cannot).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}
