// The TypeScript SDK 2.x client (@modelcontextprotocol/client 2.4.0) pinned
// to protocol 2026-07-28 against toolgate over streamable HTTP: stateless,
// no initialize, no session.
//
// Usage: node client2026.mjs '{"url": "http://127.0.0.1:PORT/mcp"}'
//
// Prints one JSON object with what it observed on stdout.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { closeAndReport, errInfo, text } from './report.mjs';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { steps: {} };
const timeout = 15000;

async function step(name, f) {
  try {
    out.steps[name] = await f();
  } catch (e) {
    out.steps[name] = { thrown: errInfo(e) };
  }
}

const transport = new StreamableHTTPClientTransport(new URL(opts.url));
const client = new Client(
  { name: 'toolgate-e2e-ts2026', version: '1.0.0' },
  { capabilities: {}, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
try {
  await client.connect(transport, { timeout });
  out.connected = true;
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
  out.sessionId = transport.sessionId ?? null;

  await step('list', async () => {
    const r = await client.listTools(undefined, { timeout });
    return { names: r.tools.map((t) => t.name).sort() };
  });
  await step('echo', async () => {
    const r = await client.callTool({ name: 'echo', arguments: { text: 'stateless 2026' } }, { timeout });
    return { isError: !!r.isError, text: text(r), callId: r._meta?.['toolgate/call_id'] ?? null };
  });
  await step('validation', async () => {
    const r = await client.callTool({ name: 'read_file', arguments: { path: 'x', limit: 5000 } }, { timeout });
    return { isError: !!r.isError, text: text(r) };
  });
  await step('progress', async () => {
    const progress = [];
    const r = await client.callTool({ name: 'sleep', arguments: { ms: 300, steps: 5 } }, { timeout, onprogress: (p) => progress.push(p.progress) });
    await new Promise((res) => setTimeout(res, 300));
    return { isError: !!r.isError, progress };
  });
  out.sessionIdAfter = transport.sessionId ?? null;
} catch (e) {
  out.error = errInfo(e);
}
await closeAndReport(client, out);
