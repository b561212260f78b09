package cniserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/containernetworking/cni/pkg/types"
)

// ErrUnreachable is wrapped by Call's error when no agent answered on the
// socket (not listening, or gone mid-call).
var ErrUnreachable = errors.New("the ovn-udn node agent is not reachable")

// Call sends req to the agent listening on socket and returns the 200
// answer's body. An answer of the agent's refusal comes back as a
// *types.Error; no answer at all as an error wrapping ErrUnreachable.
func Call(ctx context.Context, socket string, req Request) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://ovn-udn/cni", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, socket, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%w at %s: reading the answer: %v", ErrUnreachable, socket, err)
	}
	if resp.StatusCode == http.StatusOK {
		return out, nil
	}
	te := &types.Error{}
	if err := json.Unmarshal(out, te); err != nil || te.Msg == "" {
		return nil, types.NewError(types.ErrInternal, fmt.Sprintf("ovn-udn node agent answered %s", resp.Status), string(out))
	}
	return nil, te
}
