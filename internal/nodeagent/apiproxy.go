package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
	ctrl "sigs.k8s.io/controller-runtime"
)

// apiProxies gives pods that run a workload the API server at a local
// address inside their own network namespace (Options.APIProxy), forwarding
// each connection, still TLS end to end, to the API server from the agent's
// namespace. It stands in for the `kubernetes` Service, which pods cannot
// reach before services and north-south exist (the sandbox's CoreDNS needs
// it).
type apiProxies struct {
	listen, upstream string
	mu               sync.Mutex
	byPod            map[string]*apiProxy // pod key
}

type apiProxy struct {
	netns string
	l     net.Listener
}

// ensure starts the proxy in netns for a pod, once.
func (p *apiProxies) ensure(ctx context.Context, key, netns string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.byPod[key]; ok {
		if cur.netns == netns {
			return nil
		}
		_ = cur.l.Close()
		delete(p.byPod, key)
	}
	l, err := listenInNetns(netns, p.listen)
	if err != nil {
		return fmt.Errorf("API server proxy in %s: %w", netns, err)
	}
	if p.byPod == nil {
		p.byPod = map[string]*apiProxy{}
	}
	p.byPod[key] = &apiProxy{netns: netns, l: l}
	go p.serve(ctx, l)
	return nil
}

// stop closes a pod's proxy.
func (p *apiProxies) stop(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.byPod[key]; ok {
		_ = cur.l.Close()
		delete(p.byPod, key)
	}
}

func (p *apiProxies) serve(ctx context.Context, l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				ctrl.LoggerFrom(ctx).Info("API server proxy stopped", "error", err.Error())
			}
			return
		}
		go func() {
			defer c.Close()
			up, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.upstream)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
			<-done
		}()
	}
}

// listenInNetns opens a TCP listener inside the named network namespace: the
// socket belongs to the namespace it was created in, whatever thread later
// accepts on it. The namespace switch happens on a goroutine of its own, so
// a thread that could not switch back dies with it.
func listenInNetns(netns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := listenInNetnsLocked(netns, addr)
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}

func listenInNetnsLocked(netns, addr string) (net.Listener, error) {
	target, err := os.Open("/run/netns/" + netns)
	if err != nil {
		return nil, err
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("entering %s: %w", netns, err)
	}
	l, lerr := net.Listen("tcp", addr)
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays in the pod's namespace: leave it locked, so Go
		// ends it with this goroutine instead of reusing it.
		if l != nil {
			_ = l.Close()
		}
		return nil, fmt.Errorf("leaving %s: %w", netns, err)
	}
	runtime.UnlockOSThread()
	return l, lerr
}
