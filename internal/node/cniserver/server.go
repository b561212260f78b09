// Package cniserver carries CNI calls from ovn-udn's CNI plugin to the node
// agent: the plugin (a short-lived process the container runtime runs once
// per call) sends the call over a unix socket as one HTTP request, and the
// agent, which holds the caches and the node's Open vSwitch, answers it. The
// package is only the transport: what a call does is the injected Handler's
// (the node agent's). The plugin stays stateless; everything it knows comes
// from its environment, its standard input and the answer.
//
// The wire: POST /cni with a JSON Request. 200 carries the call's result
// (ADD: a CNI result of version ResultVersion; others: empty); any other
// status carries a CNI error object ({"code","msg","details"}), which the
// plugin prints as it is, so the runtime (and the kubelet's Event) shows the
// agent's words.
package cniserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultSocket is where the node agent listens unless told otherwise, and
// where the plugin calls when its configuration names no socket (a NAD's
// config, handed over by a meta-plugin).
const DefaultSocket = "/var/run/ovn-udn/cni.sock"

// ResultVersion is the CNI version of the results the server returns; the
// plugin converts them to the version the runtime asked for.
const ResultVersion = "1.1.0"

// ErrPluginNotAvailable is CNI 1.1's STATUS code for "the plugin is not
// available": the runtime then reports the node's network not ready.
const ErrPluginNotAvailable uint = 50

// Commands, as CNI_COMMAND spells them.
const (
	CmdAdd    = "ADD"
	CmdDel    = "DEL"
	CmdCheck  = "CHECK"
	CmdStatus = "STATUS"
	CmdGC     = "GC"
)

// Request is one CNI call: the plugin's environment and its configuration.
type Request struct {
	Command     string `json:"command"`
	ContainerID string `json:"containerID,omitempty"`
	Netns       string `json:"netns,omitempty"`
	IfName      string `json:"ifName,omitempty"`
	// Args is CNI_ARGS: "K8S_POD_NAMESPACE=...;K8S_POD_NAME=...;...".
	Args string `json:"args,omitempty"`
	// Config is the network configuration the runtime gave on stdin.
	Config []byte `json:"config,omitempty"`
}

// Handler does what a call asks. Add returns a CNI result of version
// ResultVersion; an error that is a *types.Error reaches the runtime as it
// is, any other as ErrInternal with its text.
type Handler interface {
	Add(ctx context.Context, req Request) (types.Result, error)
	Del(ctx context.Context, req Request) error
	Check(ctx context.Context, req Request) error
	Status(ctx context.Context, req Request) error
	GC(ctx context.Context, req Request) error
}

// Server serves Handler on a unix socket. It implements controller-runtime's
// manager.Runnable: a manager starts it once its caches are synced, so a
// call never meets an empty cache.
type Server struct {
	Socket  string
	Handler Handler
	// Timeout bounds one call (ADD waits for the pod's annotation and for
	// ovn-controller); 0 means 2 minutes, the kubelet's own default for a
	// runtime call.
	Timeout time.Duration
	// OnListen, when set, runs once the socket accepts calls (the agent
	// then writes its CNI configuration, making the node's network ready).
	OnListen func() error
}

// Start listens until ctx ends, then closes the socket.
func (s *Server) Start(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Dir(s.Socket), 0o755); err != nil {
		return fmt.Errorf("CNI server: %w", err)
	}
	if err := os.Remove(s.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("CNI server: removing a stale socket: %w", err)
	}
	l, err := net.Listen("unix", s.Socket)
	if err != nil {
		return fmt.Errorf("CNI server: %w", err)
	}
	if err := os.Chmod(s.Socket, 0o600); err != nil {
		_ = l.Close()
		return fmt.Errorf("CNI server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cni", func(w http.ResponseWriter, r *http.Request) { s.serve(ctx, w, r) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	log.FromContext(ctx).Info("CNI server listening", "socket", s.Socket)
	if s.OnListen != nil {
		if err := s.OnListen(); err != nil {
			_ = srv.Close()
			return fmt.Errorf("CNI server: %w", err)
		}
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-done:
		return fmt.Errorf("CNI server: %w", err)
	}
}

// NeedLeaderElection: every node's agent serves its own node.
func (s *Server) NeedLeaderElection() bool { return false }

func (s *Server) serve(life context.Context, w http.ResponseWriter, r *http.Request) {
	var req Request
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, types.NewError(types.ErrDecodingFailure, "ovn-udn CNI server: bad request", err.Error()))
		return
	}
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	stop := context.AfterFunc(life, cancel) // the agent stopping ends the call
	defer stop()
	ctx = log.IntoContext(ctx, log.FromContext(life).WithValues("cni", req.Command, "container", short(req.ContainerID), "args", req.Args))
	start := time.Now()
	var res types.Result
	switch req.Command {
	case CmdAdd:
		res, err = s.Handler.Add(ctx, req)
	case CmdDel:
		err = s.Handler.Del(ctx, req)
	case CmdCheck:
		err = s.Handler.Check(ctx, req)
	case CmdStatus:
		err = s.Handler.Status(ctx, req)
	case CmdGC:
		err = s.Handler.GC(ctx, req)
	default:
		err = types.NewError(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("unknown CNI command %q", req.Command), "")
	}
	logger := log.FromContext(ctx).WithValues("took", time.Since(start).Round(time.Millisecond).String())
	if err != nil {
		logger.Info("CNI call failed", "error", err.Error())
		writeError(w, asCNIError(err))
		return
	}
	if req.Command != CmdStatus {
		logger.V(1).Info("CNI call done")
	}
	w.Header().Set("Content-Type", "application/json")
	if res == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	out, err := json.Marshal(res)
	if err != nil {
		writeError(w, types.NewError(types.ErrInternal, "ovn-udn CNI server: encoding the result", err.Error()))
		return
	}
	_, _ = w.Write(out)
}

// asCNIError keeps a *types.Error as it is and wraps anything else.
func asCNIError(err error) *types.Error {
	var te *types.Error
	if errors.As(err, &te) {
		return te
	}
	return types.NewError(types.ErrInternal, err.Error(), "")
}

func writeError(w http.ResponseWriter, e *types.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusInternalServerError)
	_ = json.NewEncoder(w).Encode(e)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
