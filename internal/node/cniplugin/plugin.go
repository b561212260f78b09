// Package cniplugin is ovn-udn's CNI plugin: the binary a container runtime
// runs (installed in the node's CNI bin directory under the type name
// ovn-k8s-cni-overlay, which ovn-udn's configurations and NADs carry). It
// is stateless and thin: it forwards each call to the node agent over its
// unix socket (package cniserver) and prints the answer. It speaks CNI 1.1
// (ADD, DEL, CHECK, STATUS, GC, VERSION) and the older versions a runtime
// may negotiate, through the CNI project's own skeleton.
//
// Failure rules, which the runtime and the kubelet rely on:
//   - ADD fails with the agent's reason (it names the pod, the network and
//     why), or says the agent is not reachable; it never hangs past Timeout.
//   - DEL succeeds when the agent is down or answers an error: a pod's
//     deletion is never blocked by the network. What DEL could not remove,
//     the agent removes itself once the pod is gone.
//   - STATUS fails (code 50) while the agent is not reachable.
package cniplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/ovn-udn/ovn-udn/internal/node/cniserver"
)

// Timeout bounds an ADD, CHECK or GC call (the agent bounds its own work a
// little sooner); DEL and STATUS get DelTimeout.
var (
	Timeout    = 150 * time.Second
	DelTimeout = 20 * time.Second
)

// Conf is the part of the network configuration the plugin reads.
type Conf struct {
	types.PluginConf
	// Socket is the node agent's socket (cniserver.DefaultSocket when
	// empty). The agent writes it into the configuration it installs.
	Socket string `json:"socket,omitempty"`
}

// Main runs the plugin on the process's environment and standard streams
// and exits, as a CNI plugin does.
func Main(buildVersion string) {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: del, Check: check, Status: status, GC: gc},
		version.All, "ovn-udn CNI plugin "+buildVersion+": forwards CNI calls to the ovn-udn node agent")
}

func parse(args *skel.CmdArgs) (Conf, error) {
	var c Conf
	if err := json.Unmarshal(args.StdinData, &c); err != nil {
		return c, types.NewError(types.ErrDecodingFailure, "ovn-udn: the network configuration is not JSON", err.Error())
	}
	if c.Socket == "" {
		c.Socket = cniserver.DefaultSocket
	}
	return c, nil
}

func request(command string, args *skel.CmdArgs) cniserver.Request {
	return cniserver.Request{Command: command, ContainerID: args.ContainerID, Netns: args.Netns,
		IfName: args.IfName, Args: args.Args, Config: args.StdinData}
}

func call(command string, args *skel.CmdArgs, timeout time.Duration) (Conf, []byte, error) {
	c, err := parse(args)
	if err != nil {
		return c, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := cniserver.Call(ctx, c.Socket, request(command, args))
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		err = types.NewError(types.ErrTryAgainLater, fmt.Sprintf("ovn-udn: the node agent did not answer %s within %s", command, timeout), "")
	}
	return c, out, err
}

func add(args *skel.CmdArgs) error {
	c, out, err := call(cniserver.CmdAdd, args, Timeout)
	if err != nil {
		if errors.Is(err, cniserver.ErrUnreachable) {
			return types.NewError(types.ErrTryAgainLater, "ovn-udn: "+err.Error(), "")
		}
		return err
	}
	res, err := types100.NewResult(out)
	if err != nil {
		return types.NewError(types.ErrDecodingFailure, "ovn-udn: the node agent's result", err.Error())
	}
	version := c.CNIVersion
	if version == "" {
		version = cniserver.ResultVersion
	}
	return types.PrintResult(res, version)
}

func del(args *skel.CmdArgs) error {
	if _, _, err := call(cniserver.CmdDel, args, DelTimeout); err != nil {
		var te *types.Error
		if errors.As(err, &te) && te.Code == types.ErrDecodingFailure {
			return err
		}
		fmt.Fprintf(os.Stderr, "ovn-udn: DEL of %s not done by the node agent (it cleans up once the pod is gone): %v\n", args.ContainerID, err)
	}
	return nil
}

func check(args *skel.CmdArgs) error {
	_, _, err := call(cniserver.CmdCheck, args, Timeout)
	return err
}

func status(args *skel.CmdArgs) error {
	_, _, err := call(cniserver.CmdStatus, args, DelTimeout)
	if errors.Is(err, cniserver.ErrUnreachable) {
		return types.NewError(cniserver.ErrPluginNotAvailable, "ovn-udn: "+err.Error(), "")
	}
	return err
}

func gc(args *skel.CmdArgs) error {
	_, _, err := call(cniserver.CmdGC, args, Timeout)
	return err
}
