#!/usr/bin/env bash
# Installs the real components ovn-udn's tests and sandbox run against, idempotently:
#   - host Debian packages (debootstrap) through apt;
#   - kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kubelet, etcd,
#     CoreDNS, agnhost, the pause program and the CNI loopback plugin, built from the
#     Go module proxy through the throwaway modules in
#     hack/tools/{kube,etcd,coredns,pause,cni} (their go.sum pins every byte);
#   - containerd and runc (Debian's), for the sandbox's real nodes;
#   - a Debian sid root made with debootstrap holding OVN >= 25.09 and Open vSwitch,
#     plus wrapper scripts that run its binaries on the host through the root's own
#     dynamic loader (no chroot: host paths, network namespaces and /proc just work).
#
# Everything goes under one directory, $OVN_UDN_CACHE (default $HOME/.cache/ovn-udn):
#   kube/bin/{kube-apiserver,etcd}   KUBEBUILDER_ASSETS for envtest; beside them
#                                    kube-controller-manager, kube-scheduler, kubectl, coredns
#   ovn/root/                        the Debian sid root
#   ovn/bin/                         wrappers: ovn-nbctl, ovsdb-server, ovn-trace, ping, ...
#   stamps/                          what was installed, from which inputs
# A step is redone only when its inputs (versions, go.sum, package list) change.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OVN_UDN_CACHE:-$HOME/.cache/ovn-udn}
KUBE_VERSION=v1.34.10
ETCD_VERSION=v3.6.5
OVN_MIN_VERSION=25.09
DEBIAN_SUITE=${OVN_UDN_DEBIAN_SUITE:-sid}
DEBIAN_MIRROR=${OVN_UDN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# What the OVN root holds: OVN and OVS for the zones and chassis, iproute2 and the
# small tools the dataplane tests run inside pod network namespaces.
OVN_PACKAGES=ovn-central,ovn-host,openvswitch-switch,iproute2,iputils-ping,ethtool,netcat-openbsd,tcpdump
# Added to the root afterwards with its own apt (debootstrap's naive dependency
# resolution pulls systemd in for FRR and fails): FRR for the sandbox's outside
# routers (their BFD daemon, bfdd, runs chrooted in the root, where FRR finds its
# users and groups) and nftables to count their packets per uplink.
OVN_EXTRA_PACKAGES="frr nftables"
# Wrappers made in ovn/bin, one per program of the root the project runs.
OVN_PROGRAMS="ovsdb-server ovsdb-tool ovsdb-client ovn-northd ovn-controller ovn-nbctl ovn-sbctl
ovn-trace ovn-appctl ovs-vswitchd ovs-vsctl ovs-appctl ovs-ofctl ovs-dpctl ping ethtool nc tcpdump ip nft"

step() { printf '==> %s\n' "$*"; }
fail() {
	printf 'install-deps: FAILED at step "%s": %s\n' "$1" "$2" >&2
	exit 1
}
stamp_ok() { [ -f "$CACHE/stamps/$1" ] && [ "$(cat "$CACHE/stamps/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$CACHE/stamps" && printf '%s' "$2" >"$CACHE/stamps/$1"; }
hash_files() { cat "$@" | sha256sum | cut -c1-16; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 || fail lock "cannot lock $CACHE/.lock"

host_packages() {
	local missing=()
	command -v debootstrap >/dev/null || missing+=(debootstrap)
	command -v flock >/dev/null || missing+=(util-linux)
	command -v ip >/dev/null || missing+=(iproute2)
	# The sandbox's real nodes: each runs a containerd (with runc) and a kubelet.
	command -v containerd >/dev/null || missing+=(containerd)
	command -v runc >/dev/null || missing+=(runc)
	command -v nsenter >/dev/null || missing+=(util-linux)
	[ ${#missing[@]} -eq 0 ] && return 0
	step "host packages: apt-get install ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || fail "host packages" "need root to apt-get install ${missing[*]} (or install them yourself)"
	apt-get update -qq >/dev/null || fail "host packages" "apt-get update failed: check the Debian mirror in /etc/apt/sources.list"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
		fail "host packages" "apt-get install ${missing[*]} failed"
}

# go_tool NAME MODULE_DIR PACKAGE LDFLAGS: builds one binary from a throwaway module
# (redone when the Go version, the flags or any file of the module change).
go_tool() {
	local name=$1 dir=$2 pkg=$3 ldflags=$4
	local out="$CACHE/kube/bin/$name"
	local key
	key="$(go env GOVERSION) $(hash_files "$dir"/*) $ldflags"
	if [ -x "$out" ] && stamp_ok "$name" "$key"; then
		return 0
	fi
	step "$name: building $pkg from the Go module proxy (cold: minutes; cached afterwards)"
	mkdir -p "$CACHE/kube/bin"
	(cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out.tmp" "$pkg") ||
		fail "$name" "go build failed; check that the Go module proxy is reachable (GOPROXY=$(go env GOPROXY)) and $dir/go.sum is intact"
	mv "$out.tmp" "$out"
	stamp_set "$name" "$key"
}

kube_binaries() {
	local v=${KUBE_VERSION#v} c
	local version="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=${v%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "$v" | cut -d. -f2)"
	for c in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
		go_tool "$c" "$REPO/hack/tools/kube" "k8s.io/kubernetes/cmd/$c" "$version"
	done
	# The images of the sandbox's real nodes: the real agnhost (its VERSION,
	# 2.56, is the image tag), the pause program, and the CNI loopback plugin
	# runtimes call beside ovn-udn's.
	go_tool agnhost "$REPO/hack/tools/kube" k8s.io/kubernetes/test/images/agnhost "-s -w"
	go_tool pause "$REPO/hack/tools/pause" . "-s -w"
	go_tool loopback "$REPO/hack/tools/cni" github.com/containernetworking/plugins/plugins/main/loopback "-s -w"
	go_tool etcd "$REPO/hack/tools/etcd" go.etcd.io/etcd/server/v3 "-s -w"
	go_tool coredns "$REPO/hack/tools/coredns" . "-s -w"
}

# version_ge A B: A >= B for dotted numeric versions.
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]; }

ovn_root() {
	local root="$CACHE/ovn/root"
	local key="$DEBIAN_SUITE $DEBIAN_MIRROR $OVN_PACKAGES"
	if [ -d "$root" ] && stamp_ok ovn-root "$key"; then
		return 0
	fi
	step "ovn root: debootstrap $DEBIAN_SUITE with $OVN_PACKAGES (about 75 s, 400 MB)"
	[ "$(id -u)" -eq 0 ] || fail "ovn root" "debootstrap needs root"
	local tmp="$CACHE/ovn/root.tmp"
	rm -rf "$tmp"
	mkdir -p "$CACHE/ovn"
	debootstrap --variant=minbase --include="$OVN_PACKAGES" "$DEBIAN_SUITE" "$tmp" "$DEBIAN_MIRROR" \
		>"$CACHE/ovn/debootstrap.log" 2>&1 ||
		fail "ovn root" "debootstrap failed (log: $CACHE/ovn/debootstrap.log); check that $DEBIAN_MIRROR is reachable"
	local v
	v=$(chroot "$tmp" dpkg-query -W -f='${Version}' ovn-central 2>/dev/null) ||
		fail "ovn root" "ovn-central is not installed in the root"
	v=${v#*:}
	v=${v%%-*}
	version_ge "$v" "$OVN_MIN_VERSION" ||
		fail "ovn root" "Debian $DEBIAN_SUITE has OVN $v, older than $OVN_MIN_VERSION (transit routers need it); set OVN_UDN_DEBIAN_SUITE to a suite with a newer OVN"
	rm -rf "$root"
	mv "$tmp" "$root"
	printf '%s\n' "$v" >"$CACHE/ovn/VERSION"
	stamp_set ovn-root "$key"
}

ovn_root_extras() {
	local root="$CACHE/ovn/root"
	local key
	key="$(cat "$CACHE/stamps/ovn-root") $OVN_EXTRA_PACKAGES"
	if stamp_ok ovn-root-extras "$key"; then
		return 0
	fi
	step "ovn root: apt-get install $OVN_EXTRA_PACKAGES (about 30 s)"
	# The mirror's Release files may be older than their Valid-Until by this
	# machine's clock; debootstrap does not check it, apt does.
	local apt=(chroot "$root" apt-get -qq -o Acquire::Check-Valid-Until=false)
	"${apt[@]}" update >"$CACHE/ovn/extras.log" 2>&1 &&
		DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends $OVN_EXTRA_PACKAGES >>"$CACHE/ovn/extras.log" 2>&1 ||
		fail "ovn root" "apt-get install $OVN_EXTRA_PACKAGES in the root failed (log: $CACHE/ovn/extras.log)"
	# The package lists are only needed for the install.
	rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/archives/"*.deb
	stamp_set ovn-root-extras "$key"
}

# in_root ROOT PATH: resolves PATH (relative to ROOT) through symlinks the way the
# root itself would see them (absolute links such as /etc/alternatives point
# inside the root, not at the host).
in_root() {
	local root=$1 p=$2 target n=0
	while [ -L "$root/$p" ] && [ $n -lt 20 ]; do
		target=$(readlink "$root/$p")
		case "$target" in
		/*) p=$target ;;
		*) p="$(dirname "$p")/$target" ;;
		esac
		n=$((n + 1))
	done
	[ -f "$root/$p" ] && [ -x "$root/$p" ] && printf '%s\n' "$root/$p"
}

ovn_wrappers() {
	local root="$CACHE/ovn/root" bin="$CACHE/ovn/bin"
	local key
	key="$(cat "$CACHE/stamps/ovn-root") $(cat "$CACHE/stamps/ovn-root-extras") $(echo "$OVN_PROGRAMS" | sha256sum | cut -c1-16) v2"
	if [ -d "$bin" ] && stamp_ok ovn-wrappers "$key"; then
		return 0
	fi
	step "ovn wrappers: $bin"
	local loader="$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
	local libs="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
	[ -x "$loader" ] || fail "ovn wrappers" "no dynamic loader at $loader; remove $root and rerun"
	rm -rf "$bin"
	mkdir -p "$bin"
	local p path
	for p in $OVN_PROGRAMS; do
		path=""
		for d in /usr/bin /usr/sbin /bin /sbin; do
			path=$(in_root "$root" "$d/$p") && break
		done
		[ -n "$path" ] || fail "ovn wrappers" "$p is not in the root; the package list may have changed"
		cat >"$bin/$p" <<EOF
#!/bin/sh
# Runs $p from the Debian $DEBIAN_SUITE root through that root's own loader.
exec "$loader" --library-path "$libs" "$path" "\$@"
EOF
		chmod +x "$bin/$p"
	done
	"$bin/ovn-nbctl" --version >/dev/null || fail "ovn wrappers" "ovn-nbctl does not run through $loader"
	stamp_set ovn-wrappers "$key"
}

start=$(date +%s)
host_packages
kube_binaries
ovn_root
ovn_root_extras
ovn_wrappers
# sed -n reads all of each version's output: head would close the pipe early,
# and with pipefail the writer's SIGPIPE (exit 141) would fail the install.
"$CACHE/ovn/bin/ovn-nbctl" --version | sed -n '1s/^/    /p'
"$CACHE/kube/bin/kube-apiserver" --version | sed 's/^/    /'
"$CACHE/kube/bin/etcd" --version | sed -n '1s/^/    /p'
"$CACHE/kube/bin/kubectl" version --client 2>/dev/null | sed -n '1s/^/    kubectl /p'
"$CACHE/kube/bin/coredns" -version | sed -n '1s/^/    /p'
step "dependencies ready in $CACHE ($(($(date +%s) - start)) s)"
