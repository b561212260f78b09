package demo

import (
	"bufio"
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"
)

// rarpEtherType is RARP's EtherType.
const rarpEtherType = 0x8035

// RARP returns the frame QEMU broadcasts from a VM's interface once a live
// migration hands the VM over (its "self-announce"): a reverse ARP request
// from and about mac, padded to Ethernet's 60-byte minimum. OVN's
// activation-strategy=rarp waits for it on the migration target.
func RARP(mac net.HardwareAddr) []byte {
	b := make([]byte, 0, 60)
	b = append(b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	b = append(b, mac...)
	b = append(b, rarpEtherType>>8, rarpEtherType&0xff)
	b = append(b, 0x00, 0x01)       // Ethernet
	b = append(b, 0x08, 0x00, 6, 4) // IPv4, address lengths
	b = append(b, 0x00, 0x03)       // reverse request
	b = append(b, mac...)
	b = append(b, 0, 0, 0, 0)
	b = append(b, mac...)
	b = append(b, 0, 0, 0, 0)
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

// Announce sends a RARP (RARP) from interface name of the calling
// process's network namespace, as a VM that just arrived does: the
// interface's own MAC, broadcast.
func Announce(name string) error {
	return AnnounceWhen(name, nil, nil)
}

// AnnounceWhen is Announce, its socket opened first: when goLine is not
// nil, it writes "ready" to ready, then sends once a line comes on goLine.
// A test can then pause the source and announce on the target back to
// back, the start of this process not counted in the gap it measures.
func AnnounceWhen(name string, ready io.Writer, goLine io.Reader) error {
	iface, err := net.InterfaceByName(name)
	if err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		return fmt.Errorf("raw socket: %w", err)
	}
	defer unix.Close(fd)
	to := &unix.SockaddrLinklayer{Ifindex: iface.Index, Protocol: htons(rarpEtherType), Halen: 6}
	copy(to.Addr[:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	frame := RARP(iface.HardwareAddr)
	if goLine != nil {
		if _, err := fmt.Fprintln(ready, "ready"); err != nil {
			return err
		}
		if _, err := bufio.NewReader(goLine).ReadString('\n'); err != nil {
			return fmt.Errorf("waiting for the line to announce on: %w", err)
		}
	}
	if err := unix.Sendto(fd, frame, 0, to); err != nil {
		return fmt.Errorf("sending a RARP from %s: %w", name, err)
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
