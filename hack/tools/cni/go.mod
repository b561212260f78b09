module github.com/ovn-udn/ovn-udn/hack/tools/cni

// Throwaway module: builds the CNI project's loopback plugin, which container
// runtimes call for every pod's lo beside the network's own plugin.

go 1.26.8

tool github.com/containernetworking/plugins/plugins/main/loopback

require (
	github.com/containernetworking/cni v1.3.1 // indirect
	github.com/containernetworking/plugins v1.10.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
