// Package workload runs pods' containers as plain processes in the pods'
// network namespaces, where no container runtime exists (the sandbox): the
// node agent stands in for the kubelet and runs, for each container whose
// program it can resolve, that program with the container's arguments. It
// resolves the agnhost test image to `ovn-udn agnhost`, and commands naming
// a program of a given table (CoreDNS, the OVN root's nc, ...); other images
// (pause, nginx, ...) run nothing, as before.
package workload

import (
	"path"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Process is what runs for one container.
type Process struct {
	Container string
	// Argv is the program and its arguments.
	Argv []string
	// Env holds the container's literal environment and HOSTNAME (the pod's
	// name, which servers answer with).
	Env []string
}

// Fingerprint identifies what runs: a change means restarting it.
func (p Process) Fingerprint() string {
	return strings.Join(p.Argv, "\x00") + "\x01" + strings.Join(p.Env, "\x00")
}

// Resolver maps containers to processes.
type Resolver struct {
	// Self is the ovn-udn binary (agnhost images run its agnhost command).
	Self string
	// Programs maps program names (the base name of a container's first
	// command word) to paths on this machine.
	Programs map[string]string
}

// Resolve returns the processes to run for pod's containers (those whose
// program it knows), in container order.
func (r Resolver) Resolve(pod *corev1.Pod) []Process {
	var out []Process
	for _, c := range pod.Spec.Containers {
		argv, ok := r.argv(c)
		if !ok {
			continue
		}
		env := []string{"HOSTNAME=" + pod.Name}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env = append(env, e.Name+"="+e.Value)
			}
		}
		sort.Strings(env[1:])
		out = append(out, Process{Container: c.Name, Argv: argv, Env: env})
	}
	return out
}

func (r Resolver) argv(c corev1.Container) ([]string, bool) {
	words := append(append([]string(nil), c.Command...), c.Args...)
	if isAgnhost(c.Image) {
		if len(words) > 0 && path.Base(words[0]) == "agnhost" {
			words = words[1:]
		}
		if len(words) == 0 || r.Self == "" {
			return nil, false
		}
		return append([]string{r.Self, "agnhost"}, words...), true
	}
	if len(c.Command) == 0 {
		return nil, false // the image's own entrypoint: unknown here
	}
	prog, ok := r.Programs[path.Base(c.Command[0])]
	if !ok {
		return nil, false
	}
	return append([]string{prog}, words[1:]...), true
}

// isAgnhost reports whether an image reference names the agnhost e2e image
// (any registry and tag).
func isAgnhost(image string) bool {
	name := image
	if at := strings.IndexAny(name, "@"); at >= 0 {
		name = name[:at]
	}
	if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
		name = name[:colon]
	}
	return path.Base(name) == "agnhost"
}
