#!/usr/bin/env bash
# Regenerates the libovsdb models in internal/ovsdb from the installed OVN root's
# schemas (run by `go generate ./internal/ovsdb/...`). The schemas are copied
# into internal/ovsdb/schemas so the version the code was built against is
# committed and reviewable.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${OVN_UDN_CACHE:-$HOME/.cache/ovn-udn}
SRC="$CACHE/ovn/root/usr/share/ovn"
DST="$REPO/internal/ovsdb"
[ -f "$SRC/ovn-nb.ovsschema" ] || { echo "gen-models: no OVN schemas in $SRC; run 'make deps' first" >&2; exit 1; }
cp "$SRC/ovn-nb.ovsschema" "$SRC/ovn-sb.ovsschema" "$DST/schemas/"
{
	echo "# Schemas copied from the OVN root by hack/gen-models.sh"
	echo "ovn $(cat "$CACHE/ovn/VERSION")"
	for s in ovn-nb ovn-sb; do
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["name"], d["version"])' "$DST/schemas/$s.ovsschema" 2>/dev/null ||
			grep -m1 '"version"' "$DST/schemas/$s.ovsschema"
	done
} >"$DST/schemas/VERSION"
cd "$REPO"
rm -f "$DST"/nbdb/*.go "$DST"/sbdb/*.go
go tool modelgen -extended -p nbdb -o "$DST/nbdb" "$DST/schemas/ovn-nb.ovsschema"
go tool modelgen -extended -p sbdb -o "$DST/sbdb" "$DST/schemas/ovn-sb.ovsschema"
echo "gen-models: regenerated nbdb and sbdb from $(head -n2 "$DST/schemas/VERSION" | tail -n1)"
