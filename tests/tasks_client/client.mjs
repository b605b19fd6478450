// Drive Flask-MCP's 2025-11-25 experimental tasks with the official TypeScript SDK client.
//
//   node client.mjs URL
//
// Steps: list tools (execution.taskSupport), create a task and poll it to its result,
// a task that needs input (input_required -> elicitation answered through tasks/result),
// arguments that fail validation (a task failed with the tool error), tasks/list, and
// tasks/cancel. Prints one JSON object with what it saw; exits 1 on the
// first check that fails (the message says which).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const url = process.argv[2];
const seen = { elicitations: 0, statuses: {} };

function check(condition, message) {
  if (!condition) {
    console.log(JSON.stringify({ ok: false, error: message, seen }));
    process.exit(1);
  }
}

async function collect(stream) {
  const messages = [];
  for await (const message of stream) messages.push(message);
  return messages;
}

const client = new Client(
  { name: "flask-mcp-tasks-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } }, defaultTaskPollInterval: 100 },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  seen.elicitations += 1;
  seen.elicitationMeta = request.params._meta ?? null;
  return { action: "accept", content: { confirm: true } };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
const caps = client.getServerCapabilities();
check(caps?.tasks?.requests?.tools?.call !== undefined, `no tasks capability: ${JSON.stringify(caps)}`);

const { tools } = await client.listTools();
const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
check(support.slow_compute === "optional", `slow_compute taskSupport: ${support.slow_compute}`);
check(support.failing_job === "required", `failing_job taskSupport: ${support.failing_job}`);

// 1. create, poll, result
const tasks = client.experimental.tasks;
const run = await collect(
  tasks.callToolStream({ name: "slow_compute", arguments: { seconds: 1, label: "sdk" } },
    CallToolResultSchema, { task: { ttl: 60000 } }),
);
const created = run.find((m) => m.type === "taskCreated");
check(created, `no taskCreated message: ${JSON.stringify(run)}`);
const taskId = created.task.taskId;
const result = run.at(-1);
check(result.type === "result", `slow_compute ended with ${JSON.stringify(result)}`);
check(result.result.content[0].text === "Computed sdk after 1 s", JSON.stringify(result.result));
const got = await tasks.getTask(taskId);
check(got.status === "completed", `tasks/get after the result: ${JSON.stringify(got)}`);
seen.statuses.slow_compute = run.filter((m) => m.type === "taskStatus").map((m) => m.task.status);

// 2. input_required with elicitation, answered on the tasks/result stream
const asked = await collect(
  tasks.callToolStream({ name: "confirm_delete", arguments: { filename: "a.txt" } },
    CallToolResultSchema, { task: {} }),
);
const askedResult = asked.at(-1);
check(askedResult.type === "result", `confirm_delete ended with ${JSON.stringify(askedResult)}`);
check(askedResult.result.content[0].text === "a.txt deleted", JSON.stringify(askedResult.result));
check(seen.elicitations === 1, `elicitations answered: ${seen.elicitations}`);
const relatedTask = seen.elicitationMeta?.["io.modelcontextprotocol/related-task"]?.taskId;
const askedId = asked.find((m) => m.type === "taskCreated").task.taskId;
check(relatedTask === askedId, `elicitation related-task: ${relatedTask} vs ${askedId}`);
seen.statuses.confirm_delete = asked.filter((m) => m.type === "taskStatus").map((m) => m.task.status);

// 3. a tool error as a task: the task fails, its result is the tool's error result
const failing = await collect(
  tasks.callToolStream({ name: "failing_job", arguments: {} }, CallToolResultSchema, { task: {} }),
);
seen.failing = failing.at(-1).type;

// 3b. arguments that fail validation: a task that fails at once (not a plain result,
// which the SDK rejects as no CreateTaskResult); tasks/result is the validation error
const invalid = await collect(
  tasks.callToolStream({ name: "slow_compute", arguments: { seconds: "soon" } },
    CallToolResultSchema, { task: {} }),
);
const invalidCreated = invalid.find((m) => m.type === "taskCreated");
check(invalidCreated, `invalid arguments, no taskCreated: ${JSON.stringify(invalid)}`);
const invalidStatus = invalid.filter((m) => m.type === "taskStatus").at(-1)?.task;
check(invalidStatus?.status === "failed" && invalidStatus.statusMessage.includes("'seconds'"),
  `invalid arguments, last status: ${JSON.stringify(invalid)}`);
const invalidResult = await tasks.getTaskResult(invalidCreated.task.taskId, CallToolResultSchema);
check(invalidResult.isError === true && invalidResult.content[0].text.includes("'seconds'"),
  `invalid arguments, tasks/result: ${JSON.stringify(invalidResult)}`);
seen.invalid = invalidStatus.status;

// 4. list
const listed = await tasks.listTasks();
const ids = listed.tasks.map((task) => task.taskId);
check(ids.includes(taskId) && ids.includes(askedId), `tasks/list: ${JSON.stringify(ids)}`);

// 5. cancel
const stream = tasks.callToolStream({ name: "slow_compute", arguments: { seconds: 60 } },
  CallToolResultSchema, { task: {} });
const first = (await stream.next()).value;
check(first.type === "taskCreated", `first message of a task: ${JSON.stringify(first)}`);
const cancelled = await tasks.cancelTask(first.task.taskId);
check(cancelled.status === "cancelled", `tasks/cancel answered ${JSON.stringify(cancelled)}`);
const after = await tasks.getTask(first.task.taskId);
check(after.status === "cancelled", `tasks/get after cancel: ${JSON.stringify(after)}`);
await stream.return(undefined);

await client.close();
console.log(JSON.stringify({ ok: true, taskId, listed: ids.length, seen }));
process.exit(0);
