package gatewayflows

import (
	"encoding/hex"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGARP(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:c0:a8:64:0c")
	got := hex.EncodeToString(garp(mac, netip.MustParseAddr("192.168.100.150")))
	want := "ffffffffffff" + "0a58c0a8640c" + "0806" + // broadcast from the gateway MAC, ARP
		"0001" + "0800" + "06" + "04" + "0001" + // Ethernet, IPv4, request
		"0a58c0a8640c" + "c0a86496" + "000000000000" + "c0a86496" + // sender = target = the egress IP
		"000000000000000000000000000000000000" // padded to 60 bytes
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("garp (-want +got):\n%s", d)
	}
}
