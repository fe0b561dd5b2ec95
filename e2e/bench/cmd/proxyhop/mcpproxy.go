package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/e2e/bench/internal/benchkit"
)

// mcpProxyTarget is TBXark/mcp-proxy serving the upstream.
type mcpProxyTarget struct {
	*target
	proc *benchkit.Proc
}

// startMCPProxy runs TBXark/mcp-proxy in front of the upstream of transport
// tr (upURL for http; its own `upstream -stdio` child for stdio), serving
// streamable HTTP on loopback without auth or request logging, and waits
// until it answers initialize (it has no health endpoint, and it mounts the
// server only once connected to the upstream).
func startMCPProxy(cfg config, dir, tr, upURL string, logf io.Writer) (*mcpProxyTarget, error) {
	addr, err := benchkit.FreeAddr()
	if err != nil {
		return nil, err
	}
	up := map[string]any{"command": cfg.upstream, "args": []string{"-stdio"}}
	if tr != "stdio" {
		up = map[string]any{"url": upURL, "transportType": "streamable-http"}
	}
	up["options"] = map[string]any{"logEnabled": false}
	conf, _ := json.MarshalIndent(map[string]any{
		"mcpProxy": map[string]any{
			"baseURL": "http://" + addr, "addr": addr, "name": "mcp-proxy", "version": "bench",
			"type": "streamable-http", "options": map[string]any{"logEnabled": false},
		},
		"mcpServers": map[string]any{"up": up},
	}, "", "  ")
	path := filepath.Join(dir, "mcp-proxy-"+strings.ReplaceAll(tr, "+", "-")+".json")
	if err := os.WriteFile(path, conf, 0o644); err != nil {
		return nil, err
	}
	p, err := benchkit.Start("mcp-proxy", []string{cfg.mcpProxy, "-config", path, "-expand-env=false"}, logf)
	if err != nil {
		return nil, err
	}
	url := "http://" + addr + cfg.mcpProxyPath
	if err := waitInitialize(p, url, 30*time.Second); err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	return &mcpProxyTarget{target: &target{name: "mcp-proxy", url: url, proxyPID: p.PID()}, proc: p}, nil
}

// waitInitialize polls url with an initialize request until it is answered
// with 200.
func waitInitialize(p *benchkit.Proc, url string, timeout time.Duration) error {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"proxyhop","version":"1"}}}`)
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, err := hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if p.Exited() {
			return fmt.Errorf("%s exited before it was ready", p.Name)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready on %s within %s", p.Name, url, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
