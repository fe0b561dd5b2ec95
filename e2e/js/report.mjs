// What the e2e client scripts share: how they describe errors and tool
// results, and how they end (close the client, bounded, and print what
// they observed as one JSON line on stdout for the Go test to read).

export function errInfo(e) {
  return { name: e?.name, code: e?.code, message: String(e?.message ?? e) };
}

export function text(res) {
  return (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

// closeAndReport closes client (at most 5 s) and prints out.
export async function closeAndReport(client, out) {
  try {
    await Promise.race([client.close(), new Promise((res) => setTimeout(res, 5000))]);
  } catch (e) {
    out.closeError = errInfo(e);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}
