// The TypeScript SDK 1.x client (2025 era) with an elicitation handler:
// it answers every elicitation/create with the given content, and calls a
// tool. Used for approvals (the person answers the gateway's form).
//
// Usage: node elicit-client.mjs '{"url": "http://127.0.0.1:PORT/mcp", "tool": "echo",
//          "arguments": {...}, "answer": {"action": "accept", "content": {...}},
//          "elicitation": {"form": {}, "url": {}}}'
// ("elicitation" is the capability declared; {} when absent: form mode.)
//
// Prints one JSON object: {"result": <tools/call result>, "asked": [<messages>],
// "params": [<elicitation/create params>]}, or with "error" (and its JSON-RPC "code" and
// "data") when the call failed.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { asked: [], params: [] };
const client = new Client({ name: 'toolgate-e2e-ts-elicit', version: '1.0.0' }, { capabilities: { elicitation: opts.elicitation ?? {} } });
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  out.asked.push(req.params.message);
  out.params.push(req.params);
  return opts.answer;
});
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)), { timeout: 15000 });
  out.result = await client.callTool({ name: opts.tool, arguments: opts.arguments ?? {} }, undefined, { timeout: 30000 });
} catch (e) {
  out.error = String(e?.message ?? e);
  out.code = e?.code;
  out.data = e?.data;
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
