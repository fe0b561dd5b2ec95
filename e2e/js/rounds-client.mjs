// The TypeScript SDK 2.x client (@modelcontextprotocol/client) pinned to
// protocol 2026-07-28, declaring elicitation and sampling, against
// toolgate over streamable HTTP. It calls the tools named in the options;
// its multi round-trip driver answers each input_required round with the
// handlers below and repeats the call.
//
// Usage: node rounds-client.mjs '{"url": "http://127.0.0.1:PORT/mcp", "tools": ["a", "b"], "name": "Ada",
//          "elicitation": {"form": {}, "url": {}}}'
// ("elicitation" is the capability declared, form mode when absent; a URL-mode
// elicitation is accepted, its URL kept in "urls".)
//
// Prints one JSON object with what it observed on stdout.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { closeAndReport, errInfo, text } from './report.mjs';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { calls: {}, asked: { elicitation: 0, sampling: 0 }, urls: [] };
const timeout = 20000;


const transport = new StreamableHTTPClientTransport(new URL(opts.url));
const client = new Client(
  { name: 'toolgate-e2e-ts-rounds', version: '1.0.0' },
  { capabilities: { elicitation: opts.elicitation ?? { form: {} }, sampling: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
client.setRequestHandler('elicitation/create', async (req) => {
  out.asked.elicitation++;
  if (req.params?.mode === 'url') {
    out.urls.push(req.params.url);
    return { action: 'accept' };
  }
  return { action: 'accept', content: { name: opts.name } };
});
client.setRequestHandler('sampling/createMessage', async () => {
  out.asked.sampling++;
  return { role: 'assistant', model: 'e2e', content: { type: 'text', text: `sampled for ${opts.name}` } };
});
try {
  await client.connect(transport, { timeout });
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
  for (const name of opts.tools ?? []) {
    try {
      const r = await client.callTool({ name, arguments: opts.arguments?.[name] ?? {} }, { timeout });
      out.calls[name] = { isError: !!r.isError, text: text(r) };
    } catch (e) {
      out.calls[name] = { thrown: errInfo(e) };
    }
  }
} catch (e) {
  out.error = errInfo(e);
}
await closeAndReport(client, out);
