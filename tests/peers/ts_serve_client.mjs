// Drives `clat serve` with the official TypeScript SDK's client (@modelcontextprotocol/sdk), as an agent would:
// initialize, list the tools, make the calls given as JSON, and print one JSON document — the same report, from the
// same arguments, as python_serve_client.py (which documents them): the server's name, each tool's annotations and
// schemas by name, each call's text, isError and structured content (or the error the SDK raised), the forms asked,
// the sampling requests, progress and log lines.
//
// Usage: node ts_serve_client.mjs CLAT ARGS_JSON CALLS_JSON [ELICIT_JSON [MODEL_TEXT]]

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [target, argsJson, callsJson, elicitJson, modelText] = process.argv.slice(2);
const args = JSON.parse(argsJson);
const calls = JSON.parse(callsJson);
const answer = elicitJson ? JSON.parse(elicitJson) : null;
const report = { calls: [], asked: [], sampled: [], progress: [], logs: [] };

const capabilities = {};
if (answer) capabilities.elicitation = { form: {} };
if (modelText) capabilities.sampling = {};
const client = new Client({ name: "ts-agent", version: "1.0.0" }, { capabilities });

if (answer) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    report.asked.push({ message: request.params.message, schema: request.params.requestedSchema });
    const given = Array.isArray(answer) ? answer.shift() : answer;
    return given;
  });
}
if (modelText) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    report.sampled.push(request.params.messages.map((m) => m.content.text));
    return { role: "assistant", content: { type: "text", text: modelText }, model: "agent-model", stopReason: "endTurn" };
  });
}
client.setNotificationHandler(LoggingMessageNotificationSchema, async (notification) => {
  const { level, logger, data } = notification.params;
  report.logs.push([level, logger, data]);
});

const transport = target.startsWith("http://")
  ? new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: args } })
  : new StdioClientTransport({ command: target, args, stderr: "ignore" });
await client.connect(transport);
report.server = client.getServerVersion()?.name;
const listed = await client.listTools();
report.tools = Object.fromEntries(listed.tools.map((t) => [t.name, t.annotations ?? {}]));
report.schemas = Object.fromEntries(
  listed.tools.map((t) => [t.name, { input: t.inputSchema, output: t.outputSchema ?? null }]),
);
for (const call of calls) {
  try {
    const onprogress = (p) => report.progress.push([p.progress, p.total]);
    const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
      onprogress,
    });
    const text = result.content
      .filter((block) => block.type === "text")
      .map((block) => block.text)
      .join("\n");
    const seen = { text, isError: result.isError ?? false };
    if (result.structuredContent !== undefined) seen.structured = result.structuredContent;
    report.calls.push(seen);
  } catch (e) {
    report.calls.push({ error: String(e.message ?? e) });
  }
}
await client.close();
console.log(JSON.stringify(report));
