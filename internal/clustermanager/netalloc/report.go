package netalloc

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/contract/netconf"
)

// SubnetReporter records on a Layer3 network's owner object (its
// UserDefinedNetwork or ClusterUserDefinedNetwork) whether every node has a
// subnet of it: the NodeSubnetsAllocated condition, plus an Event when it
// changes. It writes only when the set of nodes lacking a subnet changes.
type SubnetReporter struct {
	Client   client.Client
	Recorder record.EventRecorder

	mu   sync.Mutex
	last map[string]string
}

// Report records that the given nodes lack a subnet of network; unsplittable,
// when not nil, says that no node can get one because the network's subnets
// cannot be split into slices that hold pods (reason SubnetTooSmall).
func (s *SubnetReporter) Report(ctx context.Context, network string, lacking []string, unsplittable error) error {
	key := strings.Join(lacking, ",")
	if unsplittable != nil {
		key = "unsplittable:" + unsplittable.Error()
	}
	s.mu.Lock()
	if s.last == nil {
		s.last = map[string]string{}
	}
	prev, seen := s.last[network]
	s.mu.Unlock()
	if seen && prev == key {
		return nil
	}
	obj, conds := ownerOf(network)
	if obj == nil {
		return nil // a network without an owner object (a hand-made NAD)
	}
	cond := metav1.Condition{Type: v1.ConditionNodeSubnetsAllocated, Status: metav1.ConditionTrue,
		Reason: v1.ReasonSubnetsAllocated, Message: "every node has a subnet of the network"}
	if len(lacking) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1.ReasonSubnetsExhausted
		cond.Message = fmt.Sprintf("the network's subnets are exhausted: %d node(s) have no subnet: %s", len(lacking), strings.Join(lacking, ", "))
	}
	if unsplittable != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, v1.ReasonSubnetTooSmall
		cond.Message = fmt.Sprintf("no node gets a subnet of the network: %v", unsplittable)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		cond.ObservedGeneration = obj.GetGeneration()
		if !meta.SetStatusCondition(conds(), cond) {
			return nil
		}
		if err := s.Client.Status().Update(ctx, obj); err != nil {
			return err
		}
		eventType := corev1.EventTypeNormal
		if cond.Status == metav1.ConditionFalse {
			eventType = corev1.EventTypeWarning
		}
		s.Recorder.Event(obj, eventType, cond.Reason, cond.Message)
		return nil
	})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err == nil {
		s.mu.Lock()
		s.last[network] = key
		s.mu.Unlock()
	}
	return err
}

// Keep forgets what was last reported of every network but those named,
// so that a network deleted and created again under its name (a new owner
// object) is reported again.
func (s *SubnetReporter) Keep(networks []string) {
	keep := make(map[string]bool, len(networks))
	for _, n := range networks {
		keep[n] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.last {
		if !keep[n] {
			delete(s.last, n)
		}
	}
}

// ownerOf maps a network name to its owner object (empty, to be fetched) and
// a function returning its conditions. Namespaces cannot contain dots, so a
// UDN's network name "<ns>.<name>" splits at its first dot.
func ownerOf(network string) (client.Object, func() *[]metav1.Condition) {
	if strings.HasPrefix(network, netconf.CUDNPrefix) {
		c := &v1.ClusterUserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Name: strings.TrimPrefix(network, netconf.CUDNPrefix)}}
		return c, func() *[]metav1.Condition { return &c.Status.Conditions }
	}
	ns, name, ok := strings.Cut(network, ".")
	if !ok {
		return nil, nil
	}
	u := &v1.UserDefinedNetwork{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return u, func() *[]metav1.Condition { return &u.Status.Conditions }
}
