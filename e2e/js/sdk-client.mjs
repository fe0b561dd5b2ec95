// The TypeScript SDK 1.x client (@modelcontextprotocol/sdk, 2025 era)
// against toolgate, over stdio or streamable HTTP.
//
// Usage: node sdk-client.mjs '<json options>'
//   {"transport": "stdio", "bin": "/path/toolgate", "config": "/path/toolgate.yaml", "cwd": "/dir", "env": {...}}
//   {"transport": "http", "url": "http://127.0.0.1:PORT/mcp"}
//   optional: "bigFile": "big.txt" (a file in the sandbox large enough to become an artifact)
//   optional: "headers": {"Authorization": "Bearer ..."} (HTTP: sent with every request)
//
// Prints one JSON object with what it observed on stdout; diagnostics on
// stderr. Every step is bounded and its failure recorded, never thrown.
import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { closeAndReport, errInfo, text } from './report.mjs';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { transport: opts.transport, steps: {} };
const timeout = 15000;

async function step(name, f) {
  try {
    out.steps[name] = await f();
  } catch (e) {
    out.steps[name] = { thrown: errInfo(e) };
  }
}

let transport;
if (opts.transport === 'stdio') {
  transport = new StdioClientTransport({
    command: opts.bin,
    args: ['serve', '--config', opts.config],
    cwd: opts.cwd,
    env: { ...process.env, ...(opts.env ?? {}) },
    stderr: 'ignore',
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers ?? {} } });
}
const client = new Client({ name: 'toolgate-e2e-ts', version: '1.0.0' }, { capabilities: {} });

try {
  await client.connect(transport, { timeout });
  out.connected = true;
  out.protocolVersion = transport.protocolVersion ?? null;
  out.sessionId = transport.sessionId ?? null;
  out.serverInfo = client.getServerVersion();

  await step('list', async () => {
    const r = await client.listTools(undefined, { timeout });
    const readFile = r.tools.find((t) => t.name === 'read_file');
    return {
      names: r.tools.map((t) => t.name).sort(),
      readFileSchema: readFile?.inputSchema,
      readFileAnnotations: readFile?.annotations,
      readFileMeta: readFile?._meta,
    };
  });

  await step('write', async () => {
    const r = await client.callTool({ name: 'write_file', arguments: { path: 'ts/hello.txt', content: 'hello from typescript\n' } }, undefined, { timeout });
    const display = r._meta?.['toolgate/display'] ?? [];
    return { isError: !!r.isError, text: text(r), diff: display.some((b) => b.type === 'diff'), callId: r._meta?.['toolgate/call_id'] };
  });

  await step('read', async () => {
    const r = await client.callTool({ name: 'read_file', arguments: { path: 'ts/hello.txt' } }, undefined, { timeout });
    return { isError: !!r.isError, text: text(r) };
  });

  await step('validation', async () => {
    const r = await client.callTool({ name: 'read_file', arguments: { path: 'ts/hello.txt', limit: 5000 } }, undefined, { timeout });
    return { isError: !!r.isError, text: text(r) };
  });

  await step('unknownTool', async () => {
    const r = await client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, { timeout });
    return { resolved: true, isError: !!r.isError, text: text(r) };
  });

  await step('progress', async () => {
    const progress = [];
    const r = await client.callTool({ name: 'sleep', arguments: { ms: 300, steps: 5 } }, undefined, {
      timeout,
      onprogress: (p) => progress.push(p.progress),
    });
    // A notification sent just before the result may still be in flight.
    await new Promise((res) => setTimeout(res, 300));
    return { isError: !!r.isError, text: text(r), progress };
  });

  await step('cancel', async () => {
    const ac = new AbortController();
    setTimeout(() => ac.abort('user cancelled'), 200);
    const t0 = Date.now();
    try {
      const r = await client.callTool({ name: 'sleep', arguments: { ms: 60000 } }, undefined, { timeout: 30000, signal: ac.signal });
      return { resolved: true, isError: !!r.isError, text: text(r), ms: Date.now() - t0 };
    } catch (e) {
      return { thrown: errInfo(e), ms: Date.now() - t0 };
    }
  });

  await step('afterCancel', async () => {
    const r = await client.callTool({ name: 'echo', arguments: { text: 'still serving' } }, undefined, { timeout });
    return { isError: !!r.isError, text: text(r) };
  });

  if (opts.bigFile) {
    await step('artifact', async () => {
      const r = await client.callTool({ name: 'read_file', arguments: { path: opts.bigFile, limit: 2000 } }, undefined, { timeout });
      const link = (r.content ?? []).find((c) => c.type === 'resource_link');
      if (!link) return { isError: !!r.isError, link: null, text: text(r).slice(0, 500) };
      const rr = await client.readResource({ uri: link.uri }, { timeout });
      const c = rr.contents?.[0] ?? {};
      const data = c.text !== undefined ? Buffer.from(c.text, 'utf8') : Buffer.from(c.blob ?? '', 'base64');
      return {
        isError: !!r.isError,
        link: link.uri,
        summaryBytes: Buffer.byteLength(text(r)),
        bytes: data.length,
        sha256: createHash('sha256').update(data).digest('hex'),
      };
    });
  }
} catch (e) {
  out.error = errInfo(e);
}
await closeAndReport(client, out);
