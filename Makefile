# Shale's two commands are `make run` and `make test`; both set up what they need.
GO            ?= go
BIN           := $(CURDIR)/bin
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
VERSITYGW     := github.com/versity/versitygw/cmd/versitygw@v1.8.0
DATA_DIR      ?= ./data
FUZZTIME      ?= 30s
TEST_TIMEOUT  ?= 25m
# Test packages run at once (go test -p). Three ran make test in 877 s here
# but failed three timing-sensitive process tests under the load (a NATS
# server kill's p999, a bucket sweep's 30 s wait); two is the default.
TEST_PARALLEL ?= 2
BENCHTIME     ?= 1x

export CGO_ENABLED ?= 1

.PHONY: all build run test bench fuzz lint tools kcat chromium clean chaos image

all: build

## build: compile bin/shale
build:
	$(GO) build -buildvcs=auto -o $(BIN)/shale ./cmd/shale

## run: one node, embedded NATS, a filesystem bucket, Kafka on 127.0.0.1:9092
run: build
	$(BIN)/shale serve --data-dir $(DATA_DIR)

## test: every test, with the race detector and the invariant checks (internal/invariants)
# The process tests' child nodes run one shale built here with the
# invariant checks (SHALE_E2E_BIN), not one build per test package.
test: tools build
	$(GO) build -tags shale_invariants -o $(BIN)/shale-invariants ./cmd/shale
	PATH="$(BIN):$$PATH" SHALE_E2E_BIN=$(BIN)/shale-invariants $(GO) test -race -tags shale_invariants -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) ./...

## chaos: the fault-loop scenario tests at full length (LONG=0 skips them), then one run of the chaos suite (bin/shale-chaos; docs/reliability.md): SCHEDULE, DURATION, SEED, TRANSACTIONS=1, WIDE=N (a topic of N partitions)
SCHEDULE      ?= smoke
DURATION      ?= 60s
LONG          ?= 1
LONG_TESTS    := TestLeaderKillLoop|TestLeaderPauseLoop|TestKillLoopFailover|TestNATSPausedLeadersKeepServing|TestConsolePagesBoundedAt10000Partitions
chaos: tools build
	$(if $(filter 1,$(LONG)),PATH="$(BIN):$$PATH" SHALE_LONG_TESTS=1 $(GO) test -race -tags shale_invariants -count=1 -timeout $(TEST_TIMEOUT) -run '^($(LONG_TESTS))$$' ./internal/clustertest ./internal/replicationtest ./broker)
	$(GO) build -o $(BIN)/shale-chaos ./cmd/shale-chaos
	$(BIN)/shale-chaos run --schedule $(SCHEDULE) --duration $(DURATION) $(if $(SEED),--seed $(SEED)) $(if $(TRANSACTIONS),--transactions) $(if $(WIDE),--wide $(WIDE)) --shale $(BIN)/shale --versitygw $(BIN)/versitygw

## bench: benchmarks, each figure beside its peer as a ratio
bench: tools build
	$(GO) run ./internal/benchreport

## image: a container image (IMAGE, default shale:dev) of a static binary on an empty base (deploy/Dockerfile), with podman or docker
IMAGE         ?= shale:dev
image:
	@engine=$$(command -v podman || command -v docker) || { echo "make image: neither podman nor docker is installed"; exit 1; }; \
	set -e; rm -rf $(BIN)/image; mkdir -p $(BIN)/image/data; \
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -trimpath -o $(BIN)/image/shale ./cmd/shale; \
	cp /etc/ssl/certs/ca-certificates.crt deploy/Dockerfile $(BIN)/image/; \
	$$engine build -t $(IMAGE) $(BIN)/image

## fuzz: run every fuzz target for FUZZTIME each
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

## lint: gofmt, go mod tidy, go vet, staticcheck (pinned)
lint: $(BIN)/staticcheck
	$(GO) mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(BIN)/staticcheck ./...

$(BIN)/staticcheck:
	GOBIN=$(BIN) $(GO) install $(STATICCHECK)

## tools: test servers and clients the suite starts itself
tools: $(BIN)/versitygw kcat chromium

## kcat: bin/kcat, librdkafka's CLI, from Debian's packages (apt-get download; no root needed); skips when bin/kcat runs
kcat:
	@sh build/install-kcat.sh $(BIN)

## chromium: bin/chromium, headless Chromium for the console's browser test, from Debian's packages (apt-get download; no root needed); skips when bin/chromium runs
chromium:
	@sh build/install-chromium.sh $(BIN)

$(BIN)/versitygw:
	GOBIN=$(BIN) $(GO) install $(VERSITYGW)

clean:
	rm -rf $(BIN) $(DATA_DIR)
