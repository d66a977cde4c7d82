# Pith — build, test, benchmark, lint. `make help` lists the targets.
GO        ?= go
BIN       := bin
STATICCHECK_VERSION := v0.8.2
# The example plugins written in Go (a folder with a main.go).
PLUGINS   := $(notdir $(patsubst %/main.go,%,$(wildcard plugins/examples/*/main.go)))

.PHONY: help build test test-short bench bench-vs-pi load lint fmt demo examples conformance proto fuzz clean

help:
	@echo "make build        bin/pith and bin/plugins/<name>"
	@echo "make demo         the tour on the bundled demo session (no network)"
	@echo "make test         every test (what CI runs); fails if they leave files in TMPDIR; lists the skipped"
	@echo "make test-short   the tests without -short's long ones"
	@echo "make bench        the benchmarks of the hot paths"
	@echo "make bench-vs-pi  open a 110 MB session with pi (Node) and with Pith, compare"
	@echo "make load         50 sessions appending and compacting for 30 s against one host"
	@echo "make lint         gofmt, go vet, staticcheck (and go mod tidy -diff in the nested modules)"
	@echo "make fuzz         every fuzz target (found, not listed) for FUZZTIME (default 30s); FUZZ=regexp for some"
	@echo "make conformance  regenerate golden data with pi under Node (skipped without node)"
	@echo "make proto        regenerate the protobuf Go code (pinned generators)"
	@echo "make examples     rewrite examples/demo-session.jsonl"

# The cold-cache notice: pgx's type package (under store/postgres) is the
# longest compile of a first build and changes only with go.mod, so a
# stale one means a cold cache.
COLD_PROBE := github.com/jackc/pgx/v5/pgtype

# The version make build stamps into pith (pith version); without git the
# binary reports the VCS information the toolchain recorded.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
VERSION_LDFLAGS := $(if $(VERSION),-ldflags "-X main.stampedVersion=$(VERSION)")

# pith and the example plugins are linked statically with one tag set, so
# the second link reuses every package the first compiled:
# - netgo, osusergo: pure-Go name resolution and user lookup, no dynamic
#   loader and no libc at start (about a millisecond of CPU per process,
#   and a command starts pith and several plugins);
# - grpcnotrace: gRPC without golang.org/x/net/trace, which Pith never
#   turns on and whose package initialisation every process would pay.
BUILD_TAGS := netgo,osusergo,grpcnotrace

build:
	@mkdir -p $(BIN)/plugins
	@if [ "$$($(GO) list -f '{{.Stale}}' $(COLD_PROBE) 2>/dev/null)" = true ]; then \
		echo "make build: first build with this Go cache compiles every dependency: a minute or two on 2 cores"; fi
	@rm -rf $(BIN)/.build && mkdir -p $(BIN)/.build
	@scripts/gobuild.sh $(GO) -tags $(BUILD_TAGS) $(VERSION_LDFLAGS) -o $(BIN)/.build/ ./cmd/host
	@scripts/gobuild.sh $(GO) -tags $(BUILD_TAGS) -o $(BIN)/.build/ $(addprefix ./plugins/examples/,$(PLUGINS))
	@mv -f $(BIN)/.build/host $(BIN)/pith
	@for p in $(PLUGINS); do mv -f $(BIN)/.build/$$p $(BIN)/plugins/$$p; done
	@rm -rf $(BIN)/.build

# The tests run with a TMPDIR of their own and fail when they leave
# anything in it (scripts/cleantmp.sh), through internal/testreport: the
# output go test prints, then every skipped test and its reason.
TESTREPORT := $(BIN)/testreport

$(TESTREPORT): $(wildcard internal/testreport/*.go)
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./internal/testreport

# Modules of their own inside the repository: the templates a user copies
# (plugins/template, client/template). The root's ./... does not enter a
# directory with a go.mod, so test and lint run in each of them as well;
# archtest's testdata modules are fixtures, and node_modules is npm's.
NESTED_MODULES := $(patsubst ./%/go.mod,%,$(shell find . \( -name node_modules -o -name testdata -o -name .git -o -name $(BIN) \) -prune -o -name go.mod ! -path ./go.mod -print | sort))

test: $(TESTREPORT)
	scripts/cleantmp.sh $(TESTREPORT) -go $(GO) ./...
	@for m in $(NESTED_MODULES); do \
		echo "cd $$m && $(CURDIR)/scripts/cleantmp.sh $(CURDIR)/$(TESTREPORT) -go $(GO) ./..."; \
		(cd $$m && $(CURDIR)/scripts/cleantmp.sh $(CURDIR)/$(TESTREPORT) -go $(GO) ./...) || exit; \
	done

test-short: $(TESTREPORT)
	scripts/cleantmp.sh $(TESTREPORT) -go $(GO) -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Every fuzz target, found by scripts/fuzz.sh (`scripts/fuzz.sh --list`);
# FUZZ=regexp picks some by name.
FUZZTIME ?= 30s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@command -v staticcheck >/dev/null 2>&1 || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...
	@# A nested module's go.mod lists the root's requirements as its own
	@# (indirect): a dependency bumped in the root leaves them stale, and
	@# its build then fails on a missing go.sum entry.
	@for m in $(NESTED_MODULES); do \
		echo "cd $$m && $(GO) mod tidy -diff && $(GO) vet ./... && staticcheck ./..."; \
		(cd $$m && { $(GO) mod tidy -diff || { echo "$$m: go mod tidy -diff failed: if it printed a diff, run (cd $$m && $(GO) mod tidy)"; exit 1; }; } && \
			$(GO) vet ./... && PATH="$$PATH:$$($(GO) env GOPATH)/bin" staticcheck ./...) || exit; \
	done

demo: build
	@scripts/demo.sh

examples:
	$(GO) run ./internal/demo/writedemo examples/demo-session.jsonl

load:
	PITH_LOAD_SESSIONS=50 PITH_LOAD_DURATION=30s $(GO) test -count=1 -run '^TestLoad$$' -v ./internal/server/
# PITH_LOAD_STORE=postgres PITH_LOAD_HOSTS=3 make load: the same through
# three hosts on one PostgreSQL (internal/pgtest).

bench-vs-pi:
	@scripts/bench-vs-pi.sh

conformance:
	@conformance/run.sh

proto:
	@tools/proto.sh

clean:
	rm -rf $(BIN)
