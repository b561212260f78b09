package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ovn-udn/ovn-udn/internal/proc"
)

// PolicyCheck is one row of the demo's NetworkPolicy table: whether a pod
// gets an answer from a Service.
type PolicyCheck struct {
	Name string
	// From is the client pod, "<namespace>/<name>".
	From string
	// Service is "<namespace>/<name>".
	Service string
	// Answered is the expected verdict.
	Answered bool
}

// DemoPolicyChecks are the rows the demo checks over examples/tenant-shop.yaml,
// whose NetworkPolicy admits to the echo pods only the shop network's pods
// labelled role=frontend (and the echo pods themselves).
var DemoPolicyChecks = []PolicyCheck{
	{Name: "admitted by the policy (role=frontend)", From: "shop/a", Service: "shop/echo", Answered: true},
	{Name: "same network, not admitted by the policy", From: "shop/b", Service: "shop/echo"},
}

// PolicyChecks runs the checks whose pods and Services exist (in parallel):
// a client expected to be answered must be, every time, within 10 s (the
// policy or the pod may be new); one expected to be refused must get no
// answer within 2 s.
func PolicyChecks(ctx context.Context, dir string, c client.Client, checks []PolicyCheck) ([]AppCheck, error) {
	var out []AppCheck
	var jobs []func(*AppCheck)
	for _, ch := range checks {
		ns, name, _ := strings.Cut(ch.Service, "/")
		svc := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			continue
		}
		fromNS, fromName, _ := strings.Cut(ch.From, "/")
		if err := c.Get(ctx, client.ObjectKey{Namespace: fromNS, Name: fromName}, &corev1.Pod{}); err != nil {
			continue
		}
		url := fmt.Sprintf("http://%s:%d/hostname", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
		a := AppCheck{Name: ch.Name, From: ch.From, Target: ch.Service + " " + url, Want: "no answer"}
		if ch.Answered {
			a.Want = "answered"
		}
		out = append(out, a)
		jobs = append(jobs, func(a *AppCheck) {
			var lookup *LookupError
			ask := func() bool {
				_, err := Get(ctx, dir, ch.From, url)
				if errors.As(err, &lookup) {
					a.Err = err // no client pod: the check did not run
				}
				return err == nil
			}
			if !ch.Answered {
				a.Got = map[bool]string{true: "answered", false: "no answer"}[ask()]
				return
			}
			a.Got = "no answer"
			a.Err = proc.WaitFor(10*time.Second, 200*time.Millisecond, func() (bool, error) { return ask(), nil })
			if a.Err == nil {
				a.Got = "answered"
			}
		})
	}
	runChecks(out, jobs)
	return out, nil
}
