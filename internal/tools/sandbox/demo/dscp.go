package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
)

// ServeDSCP answers every UDP datagram on addr (IPv4) with the DSCP of
// the packet that carried it ("dscp 46"), read from the IP header through
// IP_RECVTOS, until ctx ends: the outside world's witness of EgressQoS.
// The answer leaves from the address the datagram was sent to
// (IP_PKTINFO), so that a client behind SNAT matches it to its request.
func ServeDSCP(ctx context.Context, addr string) error {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = errors.Join(syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_RECVTOS, 1),
				syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, syscall.IP_PKTINFO, 1))
		}); err != nil {
			return err
		}
		return serr
	}}
	pc, err := lc.ListenPacket(ctx, "udp4", addr)
	if err != nil {
		return err
	}
	conn := pc.(*net.UDPConn)
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	buf, oob := make([]byte, 2048), make([]byte, 128)
	for {
		_, oobn, _, from, err := conn.ReadMsgUDP(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		tos := -1
		var dst net.IP
		if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, m := range msgs {
				switch {
				case m.Header.Level != syscall.IPPROTO_IP:
				case m.Header.Type == syscall.IP_TOS && len(m.Data) > 0:
					tos = int(m.Data[0])
				case m.Header.Type == syscall.IP_PKTINFO && len(m.Data) >= 12:
					// struct in_pktinfo: ifindex (4), spec_dst (4), addr (4).
					dst = net.IPv4(m.Data[8], m.Data[9], m.Data[10], m.Data[11])
				}
			}
		}
		reply := "dscp unknown"
		if tos >= 0 {
			reply = "dscp " + strconv.Itoa(tos>>2)
		}
		var replyOOB []byte
		if dst != nil {
			replyOOB = (&ipv4.ControlMessage{Src: dst}).Marshal()
		}
		_, _, _ = conn.WriteMsgUDP([]byte(reply), replyOOB, from)
	}
}

// ProbeDSCP sends one UDP datagram to a ServeDSCP at addr and returns the
// DSCP it saw, within timeout.
func ProbeDSCP(addr string, timeout time.Duration) (int, error) {
	c, err := net.DialTimeout("udp4", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("dscp?")); err != nil {
		return 0, err
	}
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	if err != nil {
		return 0, fmt.Errorf("no answer from %s: %w", addr, err)
	}
	v, ok := strings.CutPrefix(string(buf[:n]), "dscp ")
	d, err := strconv.Atoi(v)
	if !ok || err != nil {
		return 0, fmt.Errorf("%s answered %q", addr, buf[:n])
	}
	return d, nil
}
