// The TypeScript SDK 1.x client (2025 era) calling a tool as an MCP task
// (2025-11-25 tasks), over streamable HTTP or stdio.
//
// Usage: node task-client.mjs '{"url": "http://127.0.0.1:PORT/mcp", "tool": "NAME",
//          "arguments": {...}, "ttl": 60000, "cancel": false}'
//   or, over stdio: {"transport": "stdio", "bin": "/path/toolgate", "config": "/path/toolgate.yaml",
//          "cwd": "/dir", "env": {...}, "tool": ...}
//
// Without "cancel": the SDK's own task stream (tools/call with a task,
// tasks/get until the task ends, tasks/result). With "cancel": the task is
// created, polled until the gateway has been working on it for
// "cancelAfterMs", cancelled with tasks/cancel, and read back.
//
// With "elicit" (an object): the client declares elicitation and accepts
// every elicitation/create with that content, noting each one's message and
// the task its related-task _meta names in "asked".
//
// Prints one JSON object: {"taskSupport", "taskId", "statuses", "result",
// "asked", "before", "after", "listed", "error"}.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const opts = JSON.parse(process.argv[2] ?? '{}');
const out = { statuses: [], asked: [] };
const client = new Client({ name: 'toolgate-e2e-ts-tasks', version: '1.0.0' }, { capabilities: opts.elicit ? { elicitation: {} } : {} });
if (opts.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out.asked.push({ message: req.params.message, task: req.params._meta?.['io.modelcontextprotocol/related-task']?.taskId ?? null });
    return { action: 'accept', content: opts.elicit };
  });
}
const tasks = () => client.experimental.tasks;
try {
  const transport = opts.transport === 'stdio'
    ? new StdioClientTransport({
      command: opts.bin, args: ['serve', '--config', opts.config], cwd: opts.cwd,
      env: { ...process.env, ...(opts.env ?? {}) }, stderr: 'ignore',
    })
    : new StreamableHTTPClientTransport(new URL(opts.url));
  await client.connect(transport, { timeout: 15000 });
  const listed = await client.listTools();
  out.taskSupport = listed.tools.find((t) => t.name === opts.tool)?.execution?.taskSupport ?? null;
  const params = { name: opts.tool, arguments: opts.arguments ?? {} };
  if (!opts.cancel) {
    const stream = tasks().callToolStream(params, CallToolResultSchema, { task: { ttl: opts.ttl }, timeout: 60000 });
    for await (const m of stream) {
      if (m.type === 'taskCreated') out.taskId = m.task.taskId;
      else if (m.type === 'taskStatus') out.statuses.push(m.task.status);
      else if (m.type === 'result') out.result = m.result;
      else if (m.type === 'error') out.error = String(m.error?.message ?? m.error);
    }
  } else {
    const created = await client.request({ method: 'tools/call', params: { ...params, task: { ttl: opts.ttl } } }, CreateTaskResultSchema);
    out.taskId = created.task.taskId;
    const start = Date.now();
    let task = created.task;
    while (task.status === 'working' && Date.now() - start < (opts.cancelAfterMs ?? 1000)) {
      await new Promise((r) => setTimeout(r, 100)); // a task client polls
      task = await tasks().getTask(out.taskId);
    }
    out.before = task.status;
    await tasks().cancelTask(out.taskId);
    out.after = (await tasks().getTask(out.taskId)).status;
    out.listed = (await tasks().listTasks()).tasks.map((t) => ({ taskId: t.taskId, status: t.status }));
  }
} catch (e) {
  out.error = String(e?.message ?? e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + '\n');
