// The TypeScript SDK 1.x client (2025 era) connected to a running toolgate
// over streamable HTTP while its config file is edited.
//
// Usage: node reload-client.mjs '{"url": "...", "config": "/path/toolgate.yaml", "newConfig": "<yaml>"}'
//
// Lists tools, replaces the config file as an editor does (write a new
// file, rename it over the old one), waits up to 20 s for
// notifications/tools/list_changed, lists tools again, and prints one JSON
// object: {"before": [...], "notified": bool, "after": [...], "error": ...}.
import { renameSync, writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { before: [], notified: false, after: [] };
const client = new Client({ name: 'toolgate-e2e-ts-reload', version: '1.0.0' });
let notify;
const notified = new Promise((resolve) => { notify = resolve; });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => notify(true));
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
  out.before = (await client.listTools()).tools.map((t) => t.name);
  writeFileSync(opts.config + '.new', opts.newConfig);
  renameSync(opts.config + '.new', opts.config);
  out.notified = await Promise.race([notified, new Promise((r) => setTimeout(() => r(false), 20000))]);
  // The new upstream's tools may follow the first notification.
  for (let i = 0; i < 100; i++) {
    out.after = (await client.listTools()).tools.map((t) => t.name);
    if (out.after.includes(opts.want)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await client.close();
} catch (e) {
  out.error = String(e?.message ?? e);
}
console.log(JSON.stringify(out));
process.exit(0);
