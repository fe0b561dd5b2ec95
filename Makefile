# toolgate's build and test entry points. `make test` is the one command
# that runs every test; .ci/run calls it, so CI proves what a newcomer runs.

GO       ?= go
# Short fuzz runs are bounded by executions, not time: a time bound can end
# while the fuzzer is still minimizing a new input, which go test reports as
# a failure ("context deadline exceeded") on a slow or busy machine.
FUZZTIME ?= 60000x

# Fuzz targets run briefly by `make test` (package:target). Longer runs:
#   go test -run='^$' -fuzz=TARGET -fuzztime=10m ./PACKAGE
FUZZ_TARGETS := \
	./policy:FuzzSandboxLocate \
	./policy:FuzzSandboxOpen \
	./gateway:FuzzDisplayRoundTrip \
	./gateway:FuzzJSONRPCStdio \
	./gateway:FuzzJSONRPCHTTP \
	./gateway:FuzzToolArguments \
	./gateway:FuzzPlainTextBlock \
	./gateway:FuzzResultScan \
	./gateway:FuzzRoundStateOpen \
	./gateway:FuzzCallToolResultEncoding \
	./gateway:FuzzToolEncoding \
	./gateway:FuzzMayHold \
	./gateway:FuzzFlatArgs \
	./gateway:FuzzCallToolRequestDecodedOnce \
	./gateway:FuzzRequestIdDecode \
	./gateway:FuzzStdioClientResponse \
	./gateway:FuzzEditDistance \
	./gateway/runs:FuzzAppendString \
	./adapters/upstream:FuzzLineLimiter \
	./adapters/upstream:FuzzCallParamsAppendJSON \
	./adapters/upstream:FuzzDecodeTool \
	./adapters/upstream:FuzzAppendPage \
	./toolsets/filesystem:FuzzMatcher \
	./adapters/clientconfig:FuzzParse \
	./cmd/toolgate/internal/config:FuzzLoadConfigFile

# Fuzz targets of the patched mcp-go copy, a module of its own
# (third_party/mcp-go), run from there.
COPY_FUZZ_TARGETS := \
	./server:FuzzToolgateEnvelope \
	./server:FuzzToolgateParamsMeta \
	./server:FuzzToolgateEnvelopeMembers \
	./mcp:FuzzToolgateCallToolParams \
	./mcp:FuzzToolgateHeaderName \
	./mcp:FuzzToolgateMetaUnmarshal \
	./mcp:FuzzToolgateContainsFold \
	./mcp:FuzzToolgateAppendPlain \
	./jsonscan:FuzzToolgateElements \
	./client/transport:FuzzToolgateJSONResponse \
	./client/transport:FuzzToolgateRequestEncoded

.PHONY: run build test peers services vet unit fuzz bench conformance clean

run:
	$(GO) run ./cmd/toolgate serve --http 127.0.0.1:8765

# A static binary (no cgo: net and os/user in pure Go): no libc to match
# where it runs, and it starts sooner (docs/benchmarks-journal.md).
build:
	CGO_ENABLED=0 $(GO) build -o bin/toolgate ./cmd/toolgate

# Everything: peers installed from the lock file, vet, unit and e2e tests
# with the race detector, and short fuzz runs.
test: peers services vet unit fuzz

peers:
	npm ci --prefix e2e/js --no-audit --no-fund
	npm ci --prefix e2e/conformance --no-audit --no-fund

# Real programs some e2e tests use, installed from Debian's packages when
# missing (CI runs as root on a fresh machine), as command:package pairs.
# apt-get waits up to 5 minutes for dpkg's lock (a fresh machine's own
# updates may hold it at boot) rather than failing at once.
DEB_TOOLS := promtool:prometheus chromium:chromium haproxy:haproxy

services:
	@missing=""; for t in $(DEB_TOOLS); do \
		command -v $${t%%:*} >/dev/null || missing="$$missing $${t##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Debian packages:$$missing"; \
			apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends $$missing; \
		else \
			echo "missing Debian packages:$$missing (install them, or the e2e tests that need them skip; they fail under REQUIRE_MCP_PEERS=1)"; \
		fi; \
	fi

# staticcheck is pinned in go.mod (`tool` directive); a finding that is
# wrong for this code gets a narrow //lint:ignore with the reason. The
# patched copies of mcp-go and jsonschema (third_party/, modules of their
# own reached through go.mod's replace) are vetted and checked too, but for
# U1000: their upstream code keeps helpers that only upstream's tests, not
# carried here, use.
vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@# Every fuzz target is listed, so that make test runs it (one left out
	@# once hid a bug until it was).
	@missing=""; for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			case " $(FUZZ_TARGETS) $(COPY_FUZZ_TARGETS) " in *":$$n "*) ;; *) missing="$$missing $$f:$$n";; esac; \
		done; \
	done; \
	test -z "$$missing" || { echo "fuzz targets in neither FUZZ_TARGETS nor COPY_FUZZ_TARGETS (make test would never run them):$$missing"; exit 1; }
	$(GO) vet ./... github.com/mark3labs/mcp-go/... github.com/santhosh-tekuri/jsonschema/v6/...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -checks=inherit,-U1000 github.com/mark3labs/mcp-go/... github.com/santhosh-tekuri/jsonschema/v6/...
	@# The binary builds for the desktops its clients run on, not only Linux
	@# (a Unix-only system call once broke the Windows build unnoticed).
	for os in darwin windows; do GOOS=$$os GOARCH=amd64 $(GO) build -o /dev/null ./cmd/toolgate || exit 1; done

# ALONE are tests that read the machine's load (the served binary's
# processor control watches how long its goroutines wait to run): they run
# after the rest, when no other package's tests share the cores. Under
# another package's -race tests, goroutines queue for the cores and the
# control rightly keeps them all (CI met it once).
ALONE := ^TestProcessorsFollowCalls$$

unit:
	REQUIRE_MCP_PEERS=1 $(GO) test -race -count=1 -timeout 20m -skip '$(ALONE)' ./...
	REQUIRE_MCP_PEERS=1 $(GO) test -race -count=1 -timeout 5m -run '$(ALONE)' ./e2e
	cd third_party/mcp-go && $(GO) test -race -count=1 -run '^(Test|Fuzz)Toolgate' ./server ./mcp ./client/transport ./jsonscan
	cd third_party/jsonschema && $(GO) test -race -count=1 -run '^TestToolgate' .

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name ($$pkg, -fuzztime=$(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done; \
	for t in $(COPY_FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$name (third_party/mcp-go/$${pkg#./}, -fuzztime=$(FUZZTIME))"; \
		(cd third_party/mcp-go && $(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg); \
	done

# Benchmarks: pipeline cost in process, end to end vs a bare mcp-go server,
# grep_files vs grep -rn; ratios against baselines measured in the same run.
# The replica benchmark needs haproxy, installed here when missing as `test`
# installs its services.
bench:
	@$(MAKE) --no-print-directory services DEB_TOOLS=haproxy:haproxy
	GO=$(GO) ./e2e/bench/run.sh

# The official MCP conformance suite alone (it also runs within `unit`).
conformance: peers
	REQUIRE_MCP_PEERS=1 $(GO) test -count=1 -timeout 10m -run TestConformance -v ./e2e

clean:
	rm -rf bin e2e/js/node_modules e2e/conformance/node_modules
