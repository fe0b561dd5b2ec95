#!/usr/bin/env bash
# toolgate's benchmark command (`make bench`): runs every benchmark and the
# fuzz targets briefly, and prints a summary. All traffic stays on
# 127.0.0.1; every step is bounded in time. About 18 minutes on 2 cores (fuzzing included).
#
# Environment:
#   GO              go command (default: go)
#   BENCH_OUT       directory for binaries and raw outputs (default: a new temp dir)
#   BENCH_COUNT     -count of the in-process benchmarks (default 5)
#   BENCH_E2E_DURATION  measured time per server and client count (default 10s: 5 rounds of 2 s)
#   BENCH_E2E_ONE_DURATION  the same with one client (default 20s: 10 rounds; one client spreads
#                       wider from round to round than the targets' margins)
#   BENCH_E2E_CLIENTS   client counts (default 1,16,64)
#   BENCH_FUZZTIME  fuzz time per target (default 20s; 0 skips fuzzing)
#   BENCH_PROXY_DURATION    proxy hop: measured time per target, transport and client count (default 8s: 8 rounds of 1 s; 0 skips)
#   BENCH_PROXY_ONE_DURATION  proxy hop: the same with one client (default 16s: 16 rounds)
#   BENCH_PROXY_TRANSPORTS  proxy hop: upstream transports (default http,http+pool,stdio)
#   BENCH_PROXY_CLIENTS     proxy hop: client counts (default 1,16,64)
#   BENCH_MCP_PROXY         proxy hop: a TBXark/mcp-proxy binary, built from its repository
#                           (see docs/benchmarks.md); unset: that column is skipped, saying so
#   BENCH_CANDIDATE         end to end and proxy hop: a second toolgate binary (a change under test,
#                           built with -trimpath), measured against this checkout's in the same rounds
#   BENCH_SCALE_K           scale: upstream counts (default 0,1,5,10,20; empty skips)
#   BENCH_SCALE_N           scale: tools per upstream (default 100)
#   BENCH_SCALE_ROUNDS      scale: rounds over every K, medians reported (default 3)
set -euo pipefail

cd "$(dirname "$0")/../.."
GO=${GO:-go}
# Every program here is built as `make build` builds toolgate: static.
export CGO_ENABLED=0
OUT=${BENCH_OUT:-$(mktemp -d /tmp/toolgate-bench-XXXXXX)}
COUNT=${BENCH_COUNT:-5}
E2E_DURATION=${BENCH_E2E_DURATION:-10s}
E2E_ONE_DURATION=${BENCH_E2E_ONE_DURATION:-20s}
E2E_CLIENTS=${BENCH_E2E_CLIENTS:-1,16,64}
FUZZTIME=${BENCH_FUZZTIME:-20s}
PROXY_DURATION=${BENCH_PROXY_DURATION:-8s}
PROXY_ONE_DURATION=${BENCH_PROXY_ONE_DURATION:-16s}
PROXY_TRANSPORTS=${BENCH_PROXY_TRANSPORTS:-http,http+pool,stdio}
PROXY_CLIENTS=${BENCH_PROXY_CLIENTS:-1,16,64}
SCALE_K=${BENCH_SCALE_K-0,1,5,10,20}
SCALE_N=${BENCH_SCALE_N:-100}
SCALE_ROUNDS=${BENCH_SCALE_ROUNDS:-3}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

say() { echo "$@" | tee -a "$SUMMARY"; }
section() { say; say "== $* =="; }

start=$(date +%s)
section "machine"
say "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, $($GO version | cut -d' ' -f3), load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "raw outputs: $OUT"

echo "building..." >&2
# -trimpath: a BENCH_CANDIDATE built so lays out like this one
# (e2e/bench/README.md, "A change measured before and after").
$GO build -trimpath -o "$OUT/toolgate" ./cmd/toolgate
$GO build -o "$OUT/bareserver" ./e2e/bench/cmd/bareserver
# The same server on mcp-go as published (e2e/bench/stock/go.mod).
(cd e2e/bench/stock && $GO build -o "$OUT/bareserver-stock" github.com/toolgate/toolgate/e2e/bench/cmd/bareserver)
$GO build -o "$OUT/e2eload" ./e2e/bench/cmd/e2eload
$GO build -o "$OUT/benchratio" ./e2e/bench/cmd/benchratio
$GO build -o "$OUT/minproxy" ./e2e/bench/cmd/minproxy
(cd e2e/bench/stock && $GO build -o "$OUT/minproxy-stock" github.com/toolgate/toolgate/e2e/bench/cmd/minproxy)
$GO build -o "$OUT/proxyhop" ./e2e/bench/cmd/proxyhop
$GO build -o "$OUT/manytools" ./e2e/bench/cmd/manytools
$GO build -o "$OUT/upstreamscale" ./e2e/bench/cmd/upstreamscale

section "in process: pipeline, one tools/call (handled, over HTTP, over stdio), tools/list, installing 2,000 tools (median of $COUNT runs; ratio to the bare handler / bare mcp-go server)"
$GO test -c -o "$OUT/gateway.test" ./gateway
(cd e2e/bench/stock && $GO test -c -o "$OUT/stock.test" .)
(cd gateway && timeout 600 "$OUT/gateway.test" -test.run='^$' -test.bench='^Benchmark(Pipeline|PipelineParallel|MCPCall2026|StdioCall|ToolsList|InstallTools)$' \
	-test.benchmem -test.count="$COUNT" -test.benchtime=500ms -test.timeout=10m) >"$OUT/gateway-bench.txt"
# One tools/call (BenchmarkMCPCall, BenchmarkHTTPCall) on toolgate's
# patched mcp-go and on v1.2.1 as published (e2e/bench/stock): the two test
# binaries run in turn, one run each at a time, so that each of toolgate's
# runs has a run of the published server's beside it (the mirror's target
# is the median of those ratios; run one after the other, the baseline
# moved by a third between two runs of make bench).
: >"$OUT/mcpcall-bench.txt"
for _ in $(seq "$COUNT"); do
	(cd gateway && timeout 120 "$OUT/gateway.test" -test.run='^$' -test.bench='^Benchmark(MCPCall|HTTPCall)$' \
		-test.benchmem -test.count=1 -test.benchtime=500ms) | grep -E '^Benchmark' >>"$OUT/mcpcall-bench.txt"
	(cd e2e/bench/stock && timeout 120 "$OUT/stock.test" -test.run='^$' -test.bench='^Benchmark(MCPCall|HTTPCall)$' \
		-test.benchmem -test.count=1 -test.benchtime=500ms) | grep -E '^Benchmark' >>"$OUT/mcpcall-bench.txt"
done
# The in-process targets of issue 15, as verdict lines: the full pipeline
# under 8 µs and 30 allocations a call; tools/list of 2,000 tools under 5 ms.
{ cat "$OUT/gateway-bench.txt"; grep -v '/published-mcp-go' "$OUT/mcpcall-bench.txt"; } |
	"$OUT/benchratio" -check 'Pipeline/full us<=8' -check 'Pipeline/full allocs<=30' \
		-check 'ToolsList/toolgate us<=5000' | tee -a "$SUMMARY"

section "in process: one tools/call (handled, over HTTP), against the bare server on mcp-go v1.2.1 as published (median of $COUNT runs, each beside one of the other)"
"$OUT/benchratio" -baselines published-mcp-go -check 'MCPCall/toolgate ratio<=1.5' <"$OUT/mcpcall-bench.txt" | tee -a "$SUMMARY"

section "grep_files vs grep -rn (10,000 files, ~50 MB; ratio = grep_files time / grep time)"
timeout 600 $GO test -run='^$' -bench='^BenchmarkGrepVsGrepRN$' -benchtime=5x -timeout=10m \
	./toolsets/filesystem >"$OUT/grep-bench.txt"
"$OUT/benchratio" <"$OUT/grep-bench.txt" | tee -a "$SUMMARY"

# e2e NAME BARE LABEL [PROTOCOL]: toolgate against the bare server BARE,
# with clients of PROTOCOL (default 2025-11-25).
e2e() {
	section "end to end over loopback streamable HTTP (toolgate vs bare server on $3, echo tool, ${4:-2025-11-25} clients)"
	timeout 900 "$OUT/e2eload" -toolgate "$OUT/toolgate" -bare "$2" -protocol "${4:-2025-11-25}" ${BENCH_CANDIDATE:+-candidate "$BENCH_CANDIDATE"} \
		-clients "$E2E_CLIENTS" -duration "$E2E_DURATION" -one-client-duration "$E2E_ONE_DURATION" -slice 2s -warmup 1s \
		-json "$OUT/e2e-$1.json" 2>"$OUT/e2e-$1.stderr" | tee -a "$SUMMARY" || {
		say "e2eload failed:"; tail -5 "$OUT/e2e-$1.stderr" | tee -a "$SUMMARY"; }
}
# Two baselines, the same bare server built twice: on mcp-go v1.2.1 as
# published (what a bare mcp-go server is), and on toolgate's patched copy
# (the library toolgate itself runs on: the ratio is toolgate's own cost).
e2e stock "$OUT/bareserver-stock" "mcp-go v1.2.1 as published"
e2e patched "$OUT/bareserver" "toolgate's patched mcp-go (third_party/mcp-go)"
# The 2026-07-28 revision (stateless requests carrying their envelope in
# _meta), against mcp-go as published: a report, the issue's targets are
# of 2025-11-25.
e2e stock-2026 "$OUT/bareserver-stock" "mcp-go v1.2.1 as published" 2026-07-28

if [ "$PROXY_DURATION" != "0" ]; then
	# Two minimal proxies, as end to end has two bare servers: on
	# toolgate's patched copy and on mcp-go v1.2.1 as published.
	section "proxy hop: client -> upstream vs -> minimal mcp-go proxy -> upstream vs -> toolgate -> upstream (echo tool)"
	timeout 900 "$OUT/proxyhop" -toolgate "$OUT/toolgate" -minproxy "$OUT/minproxy" -minproxy-published "$OUT/minproxy-stock" -upstream "$OUT/bareserver" \
		-mcp-proxy "${BENCH_MCP_PROXY:-}" ${BENCH_CANDIDATE:+-candidate "$BENCH_CANDIDATE"} -transports "$PROXY_TRANSPORTS" -clients "$PROXY_CLIENTS" -duration "$PROXY_DURATION" -one-client-duration "$PROXY_ONE_DURATION" -slice 1s -warmup 1s \
		-json "$OUT/proxyhop.json" 2>"$OUT/proxyhop.stderr" | tee -a "$SUMMARY" || {
		say "proxyhop failed:"; tail -5 "$OUT/proxyhop.stderr" | tee -a "$SUMMARY"; }
fi

if [ -n "$SCALE_K" ]; then
	section "scale: K upstreams x $SCALE_N tools behind toolgate (start-up, tools/list, memory)"
	timeout 900 "$OUT/upstreamscale" -toolgate "$OUT/toolgate" -manytools "$OUT/manytools" \
		-k "$SCALE_K" -n "$SCALE_N" -rounds "$SCALE_ROUNDS" -lists 50 \
		-json "$OUT/scale.json" 2>"$OUT/scale.stderr" | tee -a "$SUMMARY" || {
		say "upstreamscale failed:"; tail -5 "$OUT/scale.stderr" | tee -a "$SUMMARY"; }
fi

section "replicas behind HAProxy: 1 vs 3 on calls that wait"
if command -v haproxy >/dev/null; then
	TOOLGATE_BENCH_REPLICAS=1 timeout 300 $GO test -count=1 -v -run '^TestReplicaThroughput$' ./e2e >"$OUT/replicas.txt" 2>&1 || true
	grep -o 'calls that wait.*' "$OUT/replicas.txt" | tee -a "$SUMMARY" || say "replica throughput: see $OUT/replicas.txt"
else
	say "skipped: haproxy is not installed (make services installs it)"
fi

if [ "$FUZZTIME" != "0" ]; then
	section "fuzz targets ($FUZZTIME each)"
	# go test writes a failing input to gateway/testdata/fuzz, where it
	# would fail every later `go test`; a benchmark run moves it to
	# $OUT/crashers and reports it instead.
	find gateway/testdata/fuzz -type f 2>/dev/null | sort >"$OUT/corpus.before" || true
	for t in FuzzJSONRPCStdio FuzzJSONRPCHTTP FuzzToolArguments; do
		if timeout 900 $GO test -run='^$' -fuzz="^$t\$" -fuzztime="$FUZZTIME" ./gateway >"$OUT/$t.txt" 2>&1; then
			status=ok
		else
			status=FAILED
		fi
		last=$(grep 'execs:' "$OUT/$t.txt" | tail -1 || true)
		execs=$(echo "$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p')
		secs=$(echo "$last" | sed -n 's/.*elapsed: \([0-9ms]*\),.*/\1/p')
		say "$t: $status, ${execs:-?} execs in ${secs:-?}"
		[ "$status" = ok ] || grep -A3 -- '--- FAIL' "$OUT/$t.txt" | grep -v 'To re-run' | tee -a "$SUMMARY" || true
	done
	find gateway/testdata/fuzz -type f 2>/dev/null | sort | comm -13 "$OUT/corpus.before" - | while read -r f; do
		mkdir -p "$OUT/crashers/$(basename "$(dirname "$f")")"
		mv "$f" "$OUT/crashers/$(basename "$(dirname "$f")")/"
		say "failing input moved to $OUT/crashers/$(basename "$(dirname "$f")")/$(basename "$f"):"
		sed 1d "$OUT/crashers/$(basename "$(dirname "$f")")/$(basename "$f")" | tee -a "$SUMMARY"
	done
	find gateway/testdata/fuzz -type d -empty -delete 2>/dev/null || true
fi

section "done in $(($(date +%s) - start))s; summary in $SUMMARY"
