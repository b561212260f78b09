package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ovn-org/libovsdb/ovsdb"
)

// benchUpdates is a monitor reply of n rows shaped like a zone's
// Northbound: router ports and switch ports with external IDs, options and
// sets, and switches holding sets of port UUIDs.
func benchUpdates(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"Logical_Router_Port":{`)
	for i := range n / 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%08x-0000-4000-8000-%012x":{"initial":{"name":"rtos-tenant%d_node-%d","mac":"0a:58:0a:80:%02x:01","networks":["set",["10.128.%d.1/24","fd00:10:128:%x::1/64"]],"external_ids":["map",[["ovn-udn/owner","network:tenant%d"],["ovn-udn/id","lrp/node-%d"],["k8s.ovn.org/network","tenant%d"],["k8s.ovn.org/topology","layer3"]]],"options":["map",[["requested-chassis","node-%d"],["gateway_mtu","1400"]]],"enabled":["set",[]],"gateway_chassis":["set",[]],"ipv6_ra_configs":["map",[]]}}`,
			i, i, i%1000, i%20, i%256, i%256, i, i%1000, i%20, i%1000, i%20)
	}
	b.WriteString(`},"Logical_Switch":{`)
	for i := range n / 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%08x-0000-4000-8000-%012x":{"initial":{"name":"tenant%d_node-%d","ports":["set",[`, i, i, i, i%20)
		for j := range 10 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `["uuid","%08x-0000-4000-8000-%012x"]`, i*10+j, j)
		}
		fmt.Fprintf(&b, `]],"other_config":["map",[["subnet","10.128.%d.0/24"],["exclude_ips","10.128.%d.2"]]],"external_ids":["map",[["ovn-udn/owner","network:tenant%d"]]],"acls":["set",[]],"load_balancer":["set",[]]}}`, i%256, i%256, i)
	}
	b.WriteString(`}}`)
	return []byte(b.String())
}

// BenchmarkDecodeTableUpdates2 against libovsdb's decoding of the same
// bytes (encoding/json with libovsdb's types), 20,000 rows:
//
//	go test -run XXX -bench . -benchmem ./internal/ovsdb/wire/
func BenchmarkDecodeTableUpdates2(b *testing.B) {
	in := benchUpdates(20000)
	b.Run("wire", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			if _, err := DecodeTableUpdates2(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("libovsdb", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			var out ovsdb.TableUpdates2
			if err := json.Unmarshal(in, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
