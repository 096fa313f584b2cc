// Drives mcpq with the official TypeScript SDK v1 client (the 2025-11-25
// era, its experimental tasks API) the way an application would. Run by
// e2e/tssdk_test.go: node tssdk_v1.cjs NODE_MODULES_DIR MCP_URL. Prints
// "ok" and exits 0 when every step held, else prints what did not.
const path = require('path');
const [nodeModules, url] = process.argv.slice(2);
const sdk = (p) => require(path.join(nodeModules, '@modelcontextprotocol/sdk/dist/cjs', p));
const { Client } = sdk('client/index.js');
const { StreamableHTTPClientTransport } = sdk('client/streamableHttp.js');
const { ElicitRequestSchema, CallToolResultSchema } = sdk('types.js');

// step marks progress on stderr, so a run the test has to kill shows
// where it stopped.
function step(n, what) {
  process.stderr.write(`step ${n}: ${what}\n`);
}

function must(cond, what) {
  if (!cond) throw new Error(what);
}

async function main() {
  const elicited = [];
  const related = [];
  const client = new Client({ name: 'mcpq-e2e', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicited.push(req.params.message);
    related.push(req.params._meta?.['io.modelcontextprotocol/related-task']?.taskId);
    return { action: 'accept', content: { confirm: true } };
  });
  // What the transport did, on stderr with the steps: each HTTP exchange
  // and each error it reported (a broken stream, a failed reconnect).
  const t0 = Date.now();
  const note = (m) => process.stderr.write(`  ${Date.now() - t0}ms ${m}\n`);
  client.onerror = (e) => note(`transport error: ${e && e.message}`);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (u, init) => {
      const what = `${init.method} ${String(init.body || init.headers?.get?.('last-event-id') || '').slice(0, 100)}`;
      note(what);
      const res = await fetch(u, init);
      note(`  ${res.status} ${res.headers.get('content-type') || ''}`);
      return res;
    },
  });
  step(1, 'await client.connect(transport);');
  await client.connect(transport);
  must(transport.sessionId, 'no Mcp-Session-Id after initialize');
  must(client.getServerCapabilities().tasks?.requests?.tools?.call, 'no tasks.requests.tools.call capability');

  step(2, 'const { tools } = await client.listTools');
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  must(byName.confirm_delete?.execution?.taskSupport === 'required', 'confirm_delete is not taskSupport required');
  must(byName.greet?.execution?.taskSupport === 'forbidden', 'greet is not taskSupport forbidden');

  // A task that asks for input: created, polled, its elicitation answered
  // (delivered on the tasks/result stream), its result fetched.
  const seen = [];
  let created, result;
  step(3, 'for await (const msg of client.experimen');
  for await (const msg of client.experimental.tasks.callToolStream(
    { name: 'confirm_delete', arguments: { filename: 'a.txt' } }, CallToolResultSchema, { task: { ttl: 60000 } })) {
    seen.push(msg.type === 'taskStatus' ? `status:${msg.task.status}` : msg.type);
    if (msg.type === 'taskCreated') created = msg.task;
    if (msg.type === 'result') result = msg.result;
    if (msg.type === 'error') throw msg.error;
  }
  must(created && created.status === 'working', `no working task created: ${JSON.stringify(seen)}`);
  must(elicited.length === 1 && elicited[0] === 'Delete a.txt?', `elicitations ${JSON.stringify(elicited)}`);
  must(related[0] === created.taskId, `the elicitation names task ${related[0]}, want ${created.taskId}`);
  must(result?.content?.[0]?.text === 'Deleted a.txt', `result ${JSON.stringify(result)}`);
  step(4, 'const again = await client.experimental.');
  const again = await client.experimental.tasks.getTaskResult(created.taskId, CallToolResultSchema);
  must(again.content[0].text === 'Deleted a.txt', `tasks/result again: ${JSON.stringify(again)}`);
  step(5, 'const done = await client.experimental.t');
  const done = await client.experimental.tasks.getTask(created.taskId);
  must(done.status === 'completed', `completed task shows ${done.status}`);

  // A long task: created, polled while working, cancelled.
  let slow;
  step(6, 'for await (const msg of client.experimen');
  for await (const msg of client.experimental.tasks.callToolStream(
    { name: 'slow_compute', arguments: { seconds: 60 } }, CallToolResultSchema, { task: {} })) {
    if (msg.type === 'error') throw msg.error;
    if (msg.type === 'taskCreated') { slow = msg.task; break; }
  }
  must(slow, 'slow_compute made no task');
  step(7, 'const working = await client.experimenta');
  const working = await client.experimental.tasks.getTask(slow.taskId);
  must(working.status === 'working', `slow task shows ${working.status}`);
  step(8, 'await client.experimental.tasks.cancelTa');
  const cancelled = await client.experimental.tasks.cancelTask(slow.taskId);
  // 2025-11-25: the receiver moves the task to cancelled before it answers.
  must(cancelled.status === 'cancelled', `tasks/cancel answered ${cancelled.status} (${cancelled.statusMessage})`);
  let status = '';
  for (let i = 0; i < 200 && status !== 'cancelled'; i++) {
    status = (await client.experimental.tasks.getTask(slow.taskId)).status;
    if (status !== 'cancelled') await new Promise((r) => setTimeout(r, 100));
  }
  must(status === 'cancelled', `cancelled task shows ${status}`);

  step(9, 'const listed = (await client.experimenta');
  const listed = (await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
  must(listed.includes(created.taskId) && listed.includes(slow.taskId), `tasks/list ${JSON.stringify(listed)}`);

  // A plain call held open, and the session's end.
  step(10, 'const greet = await client.callTool({ na');
  const greet = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
  must(greet.content[0].text === 'Hello, Ada!', `greet ${JSON.stringify(greet)}`);
  step(11, 'await transport.terminateSession();');
  await transport.terminateSession();
  step(12, 'await client.close();');
  await client.close();
  console.log('ok', JSON.stringify(seen));
}

main().then(() => process.exit(0), (err) => {
  console.log('FAIL', err && err.stack ? err.stack : String(err));
  process.exit(1);
});
