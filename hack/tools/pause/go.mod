module github.com/ovn-udn/ovn-udn/hack/tools/pause

// The sandbox's pause image: a pod sandbox's first process (and an ordinary
// container that does nothing). Its own module, so it stays a 1.4 MB static
// binary with no dependency.

go 1.26
