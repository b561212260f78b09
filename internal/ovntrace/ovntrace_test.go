package ovntrace

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPacketExpr(t *testing.T) {
	tests := []struct {
		name string
		pkt  Packet
		want string
	}{
		{
			name: "ipv4 tcp",
			pkt:  Packet{InPort: "p1", EthSrc: "0a:58:0a:00:00:01", EthDst: "0a:58:0a:00:00:02", IPSrc: "10.0.0.1", IPDst: "10.0.0.2", Proto: "tcp", DstPort: 80},
			want: `inport == "p1" && eth.src == 0a:58:0a:00:00:01 && eth.dst == 0a:58:0a:00:00:02 && ip4.src == 10.0.0.1 && ip4.dst == 10.0.0.2 && ip.ttl == 64 && tcp && tcp.dst == 80`,
		},
		{
			name: "ipv6 icmp with ttl",
			pkt:  Packet{InPort: "p1", IPSrc: "fd00::1", IPDst: "fd00::2", Proto: "icmp", TTL: 3},
			want: `inport == "p1" && ip6.src == fd00::1 && ip6.dst == fd00::2 && ip.ttl == 3 && icmp6.type == 128 && icmp6.code == 0`,
		},
		{
			name: "ipv4 icmp udp ports",
			pkt:  Packet{InPort: "p", IPDst: "1.1.1.1", Proto: "udp", SrcPort: 5, DstPort: 53},
			want: `inport == "p" && ip4.dst == 1.1.1.1 && ip.ttl == 64 && udp && udp.src == 5 && udp.dst == 53`,
		},
		{
			name: "l2 only",
			pkt:  Packet{InPort: "p", EthDst: "ff:ff:ff:ff:ff:ff"},
			want: `inport == "p" && eth.dst == ff:ff:ff:ff:ff:ff`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pkt.Expr(); got != tc.want {
				t.Errorf("Expr() =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	snat, err := os.ReadFile("testdata/snat.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		out       string
		want      []Output
		delivered []string
		wantErr   bool
	}{
		{
			name:      "switch delivery",
			out:       "# ip,...\n# Minimal trace.\noutput(\"p2\");\n",
			want:      []Output{{Port: "p2", Kind: "packet", Fields: map[string]string{}}},
			delivered: []string{"p2"},
		},
		{
			name: "dropped",
			out:  "# ip,...\n# Minimal trace.\n",
		},
		{
			name: "routed, SNATed, with an ARP for the next hop",
			out:  string(snat),
			want: []Output{
				{Port: "ln", Kind: "arp", Fields: map[string]string{
					"eth.src": "0a:58:ac:12:00:02", "eth.dst": "ff:ff:ff:ff:ff:ff",
					"arp.spa": "0xac120002", "arp.tpa": "0xac120001", "arp.op": "1",
				}, TTLDecrements: 1},
				{Port: "ln", Kind: "packet", Fields: map[string]string{
					"eth.src": "0a:58:ac:12:00:02", "eth.dst": "00:00:00:00:00:00", "ip4.src": "169.254.0.5",
				}, TTLDecrements: 1},
			},
			delivered: []string{"ln"},
		},
		{
			name: "ecmp select and ipv6 neighbour solicitation",
			out: `# Minimal trace.
ip.ttl--;
nd_ns {
    output("ext1");
};
ct_dnat(ip6.dst=fd00::5,tcp.dst=8080) {
    output("p5");
};`,
			want: []Output{
				{Port: "ext1", Kind: "nd_ns", Fields: map[string]string{}, TTLDecrements: 1},
				{Port: "p5", Kind: "packet", Fields: map[string]string{"ip6.dst": "fd00::5", "tcp.dst": "8080"}, TTLDecrements: 1},
			},
			delivered: []string{"p5"},
		},
		{
			name:    "unbalanced",
			out:     "# Minimal trace.\narp {\noutput(\"x\");\n",
			wantErr: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Parse(tc.out)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if diff := cmp.Diff(tc.want, v.Outputs); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.delivered, v.Delivered()); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			if v.Dropped() != (len(tc.delivered) == 0) {
				t.Errorf("Dropped() = %v with delivered %v", v.Dropped(), tc.delivered)
			}
		})
	}
}
