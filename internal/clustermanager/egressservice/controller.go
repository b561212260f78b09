package egressservice

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ovn-udn/ovn-udn/api/v1"
	"github.com/ovn-udn/ovn-udn/internal/kubeobj"
)

// EventNoHost is the reason of the Warning Event when an object has no
// host.
const EventNoHost = "EgressServiceNoHost"

// key is the controller's one key: the balance spans every object.
type key struct{}

// Controller elects EgressServices' hosts.
type Controller struct {
	Client   client.Client
	Recorder record.EventRecorder

	mu sync.Mutex
	// said is why each object without a host has none, as its last Event
	// said (an Event each time the reason changes, not each pass).
	said map[types.NamespacedName]string
}

// SetupWithManager registers the controller: EgressServices, Services,
// EndpointSlices and Nodes all ask for one election. Without the CRD it
// registers nothing.
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	if !kubeobj.Installed(mgr.GetRESTMapper(), v1.GroupVersion.WithKind("EgressService")) {
		mgr.GetLogger().Info("the EgressService CRD is not installed: no host is elected", "crd", "egressservices.k8s.ovn.org")
		return nil
	}
	one := handler.TypedFuncs[client.Object, key]{
		CreateFunc: func(_ context.Context, _ event.CreateEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
		UpdateFunc: func(_ context.Context, _ event.UpdateEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
		DeleteFunc: func(_ context.Context, _ event.DeleteEvent, q workqueue.TypedRateLimitingInterface[key]) {
			q.Add(key{})
		},
	}
	return builder.TypedControllerManagedBy[key](mgr).
		Named("egressservice").
		Watches(&v1.EgressService{}, one).
		Watches(&corev1.Service{}, one).
		Watches(&discoveryv1.EndpointSlice{}, one).
		Watches(&corev1.Node{}, one).
		Complete(kubeobj.RetryConflicts(reconcile.TypedReconciler[key](c)))
}

// ReconcileAll is one election (render runs it on its own).
func (c *Controller) ReconcileAll(ctx context.Context) error {
	_, err := c.Reconcile(ctx, key{})
	return err
}

// Reconcile elects every object's host, writes the status of those whose
// host changed, and the hosts' labels.
func (c *Controller) Reconcile(ctx context.Context, _ key) (ctrl.Result, error) {
	var objs v1.EgressServiceList
	if err := c.Client.List(ctx, &objs); err != nil {
		return ctrl.Result{}, err
	}
	var nodeList corev1.NodeList
	if err := c.Client.List(ctx, &nodeList); err != nil {
		return ctrl.Result{}, err
	}
	nodes := make([]Node, 0, len(nodeList.Items))
	for _, n := range nodeList.Items {
		nodes = append(nodes, Node{Name: n.Name, Labels: n.Labels, Ready: kubeobj.NodeReady(&n)})
	}
	sort.Slice(objs.Items, func(i, j int) bool {
		a, b := objs.Items[i], objs.Items[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	ins := make([]Input, len(objs.Items))
	for i := range objs.Items {
		o := &objs.Items[i]
		in := Input{Object: o, EndpointNodes: map[string]bool{}}
		var svc corev1.Service
		switch err := c.Client.Get(ctx, client.ObjectKey{Namespace: o.Namespace, Name: o.Name}, &svc); {
		case err == nil:
			in.Service = &svc
		case !apierrors.IsNotFound(err):
			return ctrl.Result{}, err
		}
		var slices discoveryv1.EndpointSliceList
		if err := c.Client.List(ctx, &slices, client.InNamespace(o.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: o.Name}); err != nil {
			return ctrl.Result{}, err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					in.EndpointNodes[*e.NodeName] = true
				}
			}
		}
		ins[i] = in
	}
	outs := Elect(ins, nodes, map[string]int{})
	var errs []error
	hosted := map[string]map[string]bool{} // node -> labels it should carry
	for i, in := range ins {
		o, out := in.Object, outs[i]
		c.tell(o, out)
		if out.Host != "" && out.Host != v1.EgressServiceHostAll {
			if hosted[out.Host] == nil {
				hosted[out.Host] = map[string]bool{}
			}
			if l := Label(o.Namespace, o.Name); validLabel(l) {
				hosted[out.Host][l] = true
			}
		}
		if o.Status.Host == out.Host {
			continue
		}
		was := o.Status.Host
		o.Status.Host = out.Host
		if err := c.Client.Status().Update(ctx, o); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("EgressService %s/%s status: %w", o.Namespace, o.Name, err))
			}
			continue
		}
		log.FromContext(ctx).Info("EgressService host", "egressService", o.Namespace+"/"+o.Name, "host", out.Host, "was", was, "why", out.Why)
	}
	for i := range nodeList.Items {
		if err := c.label(ctx, &nodeList.Items[i], hosted[nodeList.Items[i].Name]); err != nil {
			errs = append(errs, err)
		}
	}
	return ctrl.Result{}, errors.Join(errs...)
}

// tell emits a Warning Event when an object has no host, once per reason.
func (c *Controller) tell(o *v1.EgressService, out Outcome) {
	k := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if out.Host != "" {
		delete(c.said, k)
		return
	}
	if c.said == nil {
		c.said = map[types.NamespacedName]string{}
	}
	if c.said[k] == out.Why {
		return
	}
	c.said[k] = out.Why
	if c.Recorder != nil {
		c.Recorder.Event(o, corev1.EventTypeWarning, EventNoHost, out.Why)
	}
}

// validLabel reports whether a host label's name part fits the 63
// characters a label name may have (a longer namespace and name go
// without the label: the host is elected and written all the same).
func validLabel(l string) bool {
	return len(strings.TrimPrefix(l, v1.EgressServiceLabelPrefix)) <= 63
}

// label makes a node's egress-service labels want.
func (c *Controller) label(ctx context.Context, n *corev1.Node, want map[string]bool) error {
	patch := client.MergeFrom(n.DeepCopy())
	changed := false
	for k := range n.Labels {
		if strings.HasPrefix(k, v1.EgressServiceLabelPrefix) && !want[k] {
			delete(n.Labels, k)
			changed = true
		}
	}
	for k := range want {
		if _, ok := n.Labels[k]; !ok {
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[k] = ""
			changed = true
		}
	}
	if !changed {
		return nil
	}
	if err := c.Client.Patch(ctx, n, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("node %s's egress-service labels: %w", n.Name, err)
	}
	return nil
}
