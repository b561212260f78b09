// Package ovsdb holds the OVN database schemas ovn-udn is built against and the
// libovsdb models generated from them (subpackages nbdb and sbdb).
//
// schemas/ holds copies of the installed OVN root's schemas, and
// schemas/VERSION records which OVN and schema versions they are. To move to
// another OVN, run `make deps` with the new root, then
// `go generate ./internal/ovsdb/` and commit the result.
package ovsdb

//go:generate ../../hack/gen-models.sh
