#!/usr/bin/env bash
# Runs AmoyLab/Unla's mcp-gateway (https://github.com/AmoyLab/Unla), another
# Go MCP gateway, in the place of TBXark/mcp-proxy in proxyhop, so that it can
# be measured in front of the same upstream:
#
#   UNLA_DIR=/tmp/unla proxyhop -mcp-proxy e2e/bench/peers/unla-as-mcp-proxy.sh \
#     -mcp-proxy-path /up/mcp -transports http ...
#
# UNLA_DIR is a checkout of Unla with its binary built there as mcp-gateway
# (docs/benchmarks.md gives the commit and the commands). proxyhop calls this
# script as it calls mcp-proxy, with `-config FILE` in mcp-proxy's format; the
# script reads the listening address and the upstream from it, writes Unla's
# configuration for the same upstream (router prefix /up, the upstream kept
# connected: policy onStart), serves that configuration to Unla's API
# storage from loopback for 60 seconds (Unla reads it once at start, with
# reloading off; the server listens before its port is printed, so Unla
# never asks too early), and then becomes Unla's process (exec), so that the
# CPU and memory proxyhop reads are Unla's own. Unla logs errors only; gin's
# line per request, which Unla always writes, goes where proxyhop sends the
# proxies' output. Needs python3.
set -euo pipefail
[ "${1:-}" = -config ] && [ -n "${2:-}" ] || { echo "usage: $0 -config mcp-proxy.json" >&2; exit 2; }
: "${UNLA_DIR:?UNLA_DIR: a checkout of AmoyLab/Unla with mcp-gateway built in it}"
conf=$2
# Prints port= (Unla's, from mcp-proxy's address) and api= (the
# configuration server's), and leaves that server running in a child.
eval "$(python3 - "$conf" <<'PY'
import http.server, json, os, shlex, sys, threading
c = json.load(open(sys.argv[1]))
up = c["mcpServers"]["up"]
if "command" in up:
    server = {"type": "stdio", "command": up["command"], "args": up.get("args", [])}
else:
    server = {"type": "streamable-http", "url": up["url"]}
server.update(name="up", policy="onStart")
body = json.dumps([{"name": "bench", "tenant": "default",
                    "routers": [{"server": "up", "prefix": "/up"}], "mcpServers": [server]}]).encode()
class Config(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
api = http.server.HTTPServer(("127.0.0.1", 0), Config)
print("port=%s api=%d" % (shlex.quote(c["mcpProxy"]["addr"].rsplit(":", 1)[1]), api.server_address[1]), flush=True)
if os.fork() == 0:
    os.setsid()
    os.close(1)  # the command substitution ends when its pipe has no writer
    threading.Timer(60, api.shutdown).start()
    api.serve_forever()
    os._exit(0)
PY
)"
export MCP_GATEWAY_PORT=$port MCP_GATEWAY_PID=${conf%.json}-unla.pid NOTIFIER_SIGNAL_PID=${conf%.json}-unla.pid \
  MCP_GATEWAY_RELOAD_SWITCH=false LOGGER_LEVEL=error LOGGER_OUTPUT=stdout GIN_MODE=release \
  GATEWAY_STORAGE_TYPE=api GATEWAY_STORAGE_API_URL=http://127.0.0.1:$api/
# Unla loads its HTML templates from assets/templates in its working directory.
cd "$UNLA_DIR/internal/core"
exec "$UNLA_DIR/mcp-gateway" -c "$UNLA_DIR/configs/mcp-gateway.yaml"
