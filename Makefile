# ovn-udn: the commands a developer and CI use. See README.md.
SHELL := /bin/bash
GO ?= go
# Integration tests start real API servers and OVN zones; give the whole run room.
TEST_TIMEOUT ?= 70m
TESTFLAGS ?=
# Fuzz targets (package:Target:executions); `make fuzz` runs each for its
# execution count, about 5 s on this machine. Counts, not durations: Go 1.26's
# fuzz coordinator can report a bare "context deadline exceeded" failure when a
# -fuzztime duration ends while a worker is mid-call (golang/go#75804, fixed in
# Go 1.27), which failed CI once; a count has no deadline to race. FUZZTIME
# (e.g. 10m) overrides every count for a long search. Their committed corpora
# (testdata/fuzz) also run as plain tests in `make test`.
FUZZ_TARGETS := contract/netconf:FuzzParseConfig:40000x contract/netconf:FuzzParseSubnet:30000x \
	contract/netconf:FuzzParseNetworkSelections:40000x contract/podnet:FuzzParse:15000x \
	contract/nodeinfo:FuzzParse:200000x tools/render:FuzzRender:2500x \
	ovsdb/wire:FuzzDecodeTableUpdates2:250000x ovsdb/wire:FuzzAppendString:200000x \
	ovsdb/wire:FuzzDecodeResults:250000x
FUZZTIME ?=

.PHONY: all build image deps demo test unit vet fuzz race chaos generate clean

all: build

## build: compile bin/ovn-udn
build:
	$(GO) build -o bin/ovn-udn ./cmd/ovn-udn

## image: ovn-udn's container image without Docker, as an OCI archive (bin/ovn-udn-image.tar; IMAGE=<reference> names it, VERSION=<v> sets what ovn-udn version reports; reproducible: docs/install.md)
image: deps
	$(GO) run ./hack/image -o bin/ovn-udn-image.tar $(if $(IMAGE),-ref $(IMAGE)) $(if $(VERSION),-version $(VERSION))

## demo: a 3-node sandbox with the examples, and the connectivity matrix measured in it (KEEP=1 keeps it running; DEPLOY=1 installs ovn-udn from make image and config/deploy, run by the kubelets)
demo: deps build $(if $(DEPLOY),image)
	./bin/ovn-udn sandbox demo -f examples $(if $(DEPLOY),--deploy) $(if $(KEEP),--keep) $(if $(HTML),--html $(HTML))

## deps: install kube-apiserver, etcd and the OVN root (cached, idempotent)
deps:
	bash hack/install-deps.sh

## vet: gofmt and go vet
vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

## test: install dependencies, then run every test, unit and integration, against real components, then each fuzz target briefly
test: deps vet
	@mkdir -p bin; set -o pipefail; $(GO) test -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) ./... 2>&1 | tee bin/test.log \
		|| { bash hack/test-failures.sh bin/test.log; exit 1; }
	$(MAKE) fuzz

## fuzz: run each fuzz target for its execution count (about 5 s each), or for FUZZTIME (e.g. make fuzz FUZZTIME=10m); a failure leaves its input in the package's testdata/fuzz
fuzz:
	@set -eo pipefail; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; ft='$(FUZZTIME)'; budget=$${ft:-$${rest#*:}}; \
		echo "fuzz $$pkg:$$name for $$budget"; \
		if out=$$($(GO) test -run XXX -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 20x ./internal/$$pkg/ 2>&1); then \
			echo "$$out" | tail -2; \
		elif [[ $$budget != *x ]] && grep -q 'context deadline exceeded' <<<"$$out" && ! grep -qE 'Failing input written|panic:' <<<"$$out"; then \
			echo "$$out" | tail -4; echo "fuzz $$pkg:$$name: the run ended on Go's fuzztime deadline race (golang/go#75804), no failing input; not a finding"; \
		else \
			echo "$$out" | tail -40; exit 1; \
		fi; \
	done

## race: every package's tests under the race detector, but the end-to-end ones (about 4 min warm; not part of make test)
race: deps
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(TESTFLAGS) $$($(GO) list ./... | grep -v '/test/e2e$$')

## chaos: the chaos test, long: CHAOS_OPS random operations with kills (default 10000), seed CHAOS_SEED (default: the time), at most CHAOS_FOR (e.g. 40m; default no bound), nodes leaving and joining unless CHAOS_NODES=0; see docs/reliability.md
CHAOS_OPS ?= 10000
CHAOS_SEED ?= $(shell date +%s)
CHAOS_BATCH ?= 50
CHAOS_KILL ?= all
CHAOS_FOR ?=
CHAOS_NODES ?= 1
chaos: deps
	set -o pipefail; OVN_UDN_CHAOS_RECOVERY=1 OVN_UDN_CHAOS_NODES=$(CHAOS_NODES) OVN_UDN_CHAOS_FOR=$(CHAOS_FOR) OVN_UDN_CHAOS_KILL=$(CHAOS_KILL) OVN_UDN_CHAOS_OPS=$(CHAOS_OPS) OVN_UDN_CHAOS_SEED=$(CHAOS_SEED) OVN_UDN_CHAOS_BATCH=$(CHAOS_BATCH) \
		$(GO) test -count=1 -timeout 12h -run '^TestChaos$$' -v ./test/e2e/ | grep --line-buffered -vE '^(\{"level"|[0-9]{4}-[0-9]{2}-[0-9]{2}T)'

## unit: run the tests that need no real components (fast)
unit:
	OVN_UDN_SKIP_REAL=1 $(GO) test $(TESTFLAGS) ./...

## generate: regenerate deepcopy code and CRDs from api/, and libovsdb models from the installed OVN schemas
generate:
	$(GO) tool controller-gen object paths=./api/...
	$(GO) tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd
	$(GO) generate ./internal/ovsdb/

clean:
	rm -rf bin
