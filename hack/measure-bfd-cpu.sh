#!/bin/bash
# Measures what BFD on the default routes costs a node (docs/performance.md):
# a one-node sandbox with UPLINKS outside routers (2: BFD at 300 ms on both
# ends; 1: no BFD, the floor) and 100 Layer3 UDNs, then prints the zone's BFD
# rows, the routes referring to them, and the CPU ovn-controller and
# ovs-vswitchd use over 30 idle seconds.
# usage: make build && hack/measure-bfd-cpu.sh UPLINKS
set -e
U=${1:?usage: $0 UPLINKS}
REPO=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d)
D=$W/sandbox; B=$REPO/bin/ovn-udn
trap '"$B" sandbox --dir "$D" down >/dev/null 2>&1; rm -rf "$W"' EXIT
$B sandbox --dir $D up --nodes 1 --uplinks $U --bfd-interval 300ms >/dev/null
y=$W/nets.yaml; : > $y
for i in $(seq 1 100); do cat >> $y <<EOT
---
apiVersion: v1
kind: Namespace
metadata: {name: n$i, labels: {k8s.ovn.org/primary-user-defined-network: ""}}
---
apiVersion: k8s.ovn.org/v1
kind: UserDefinedNetwork
metadata: {name: net, namespace: n$i}
spec: {topology: Layer3, role: Primary, subnets: [10.$((i+100)).0.0/16/24]}
EOT
done
$B sandbox --dir $D apply -f $y >/dev/null
NB=$(python3 -c "import json;print(json.load(open('$D/state.json'))['nodes'][0]['nb'])")
N=${OVN_UDN_CACHE:-$HOME/.cache/ovn-udn}/ovn/bin/ovn-nbctl
for i in $(seq 1 120); do c=$($N --db=$NB --bare --columns=name find Logical_Router | grep -c '^GR_' || true); [ "$c" -ge 101 ] && break; sleep 2; done
echo "gateway routers: $c"
sleep 10
echo "BFD rows: $($N --db=$NB --bare --columns=_uuid list BFD | grep -c . || true)"
echo "routes with bfd: $($N --db=$NB --bare --columns=bfd list Logical_Router_Static_Route | grep -c . || true)"
pc=$(python3 -c "import json;s=json.load(open('$D/state.json'));print([p['pid'] for p in s['processes'] if p['name']=='ovn-controller/node1'][0])")
pv=$(python3 -c "import json;s=json.load(open('$D/state.json'));print([p['pid'] for p in s['processes'] if p['name']=='ovs-vswitchd/node1'][0])")
t(){ awk '{print $14+$15}' /proc/$1/stat; }
a=$(t $pc); b=$(t $pv); sleep 30; a2=$(t $pc); b2=$(t $pv)
echo "ovn-controller CPU over 30 s: $(( (a2-a) ))0 ms; ovs-vswitchd: $(( (b2-b) ))0 ms"
