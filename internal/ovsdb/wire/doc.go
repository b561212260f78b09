// Package wire reads the OVSDB JSON-RPC protocol (RFC 7047, with the
// monitor_cond extensions of ovsdb-server(7)) off a connection: it splits
// the byte stream into messages (Reader), takes a message's envelope apart
// (ParseMessage) and decodes table updates (DecodeTableUpdates2).
//
// It exists for speed. libovsdb decodes a monitor's updates with
// encoding/json into interface{} values, then marshals every set, map and
// UUID back to JSON and decodes it again; at tens of thousands of rows that
// round trip is most of a controller's CPU on (re)connecting. This package
// decodes the same bytes in one pass into the very values libovsdb would
// have made (a differential test and a fuzz target hold it to that), so
// that they can be applied to a libovsdb cache unchanged.
package wire
