package announce

import (
	"encoding/hex"
	"net"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGARP(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:c0:a8:64:0c")
	got := hex.EncodeToString(GARP(mac, netip.MustParseAddr("192.168.100.150")))
	want := "ffffffffffff" + "0a58c0a8640c" + "0806" + // broadcast from the gateway MAC, ARP
		"0001" + "0800" + "06" + "04" + "0001" + // Ethernet, IPv4, request
		"0a58c0a8640c" + "c0a86496" + "000000000000" + "c0a86496" + // sender = target = the egress IP
		"000000000000000000000000000000000000" // padded to 60 bytes
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("garp (-want +got):\n%s", d)
	}
}

func TestLinkLocal(t *testing.T) {
	mac, _ := net.ParseMAC("0a:58:cb:cb:00:01")
	if got, want := LinkLocal(mac), netip.MustParseAddr("fe80::858:cbff:fecb:1"); got != want {
		t.Errorf("LinkLocal(%s) = %s, want %s (OVN's)", mac, got, want)
	}
}

// icmpv6OK reports whether an Ethernet/IPv6/ICMPv6 frame's checksum holds.
func icmpv6OK(t *testing.T, b []byte) bool {
	t.Helper()
	if len(b) < 54 || b[12] != 0x86 || b[13] != 0xdd || b[20] != 58 {
		t.Fatalf("not an ICMPv6 frame: %x", b)
	}
	ip, icmp := b[14:54], b[54:]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	add(ip[8:40])
	add([]byte{0, 0, byte(len(icmp) >> 8), byte(len(icmp)), 0, 0, 0, 58})
	add(icmp)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff
}

func TestRouterAdvertisement(t *testing.T) {
	gw, _ := net.ParseMAC("0a:58:cb:cb:00:01")
	vm, _ := net.ParseMAC("0a:58:cb:cb:00:0b")
	b := RouterAdvertisement(gw, LinkLocal(gw), vm)
	got := hex.EncodeToString(b)
	want := "0a58cbcb000b" + "0a58cbcb0001" + "86dd" + // to the VM, from the gateway MAC, IPv6
		"60000000" + "0018" + "3a" + "ff" + // payload 24 bytes, ICMPv6, hop limit 255
		hex.EncodeToString(LinkLocal(gw).AsSlice()) + "ff020000000000000000000000000001" +
		"8600" + got[112:116] + // router advertisement, checksum
		"40" + "00" + "2328" + "00000000" + "00000000" + // hop limit 64, no flags, 9000 s, timers unspecified
		"0101" + "0a58cbcb0001" // source link-layer address
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("RouterAdvertisement (-want +got):\n%s", d)
	}
	if !icmpv6OK(t, b) {
		t.Errorf("RouterAdvertisement: bad checksum in %s", got)
	}
	if !icmpv6OK(t, UnsolicitedNA(gw, netip.MustParseAddr("fd00::1"))) {
		t.Errorf("UnsolicitedNA: bad checksum")
	}
}
