// contract-mcp: the contract plugin as an MCP server on the official TypeScript SDK — the fifth implementation
// tests/test_contract.rs runs its table against, beside the Rust, JavaScript and Python guests and
// `clat-test-mcp-server --contract`: the same tools, annotations and result texts. Host tools are asked of CLAT
// with `io.artec.clat/tools/call`, the model with `sampling/createMessage`, the user with `elicitation/create`.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

// Opting in to CLAT's host services (io.artec.clat/tools/call, context/get) is an experimental capability.
const server = new McpServer(
  { name: "contract-mcp", version: "0.1.0" },
  { capabilities: { experimental: { "io.artec.clat/hostServices": { version: "0.1.0" } } } },
);
const hints = { readOnlyHint: true, openWorldHint: false };
const text = (value) => ({ content: [{ type: "text", text: value }] });
const kind = (e) => `error: ${e?.data?.kind ?? "unknown"}`;
const texts = (result) => (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");

function tool(name, description, inputSchema, run) {
  server.registerTool(name, { description, inputSchema, annotations: hints }, run);
}

async function hostTool(name, args) {
  try {
    const result = await server.server.request(
      { method: "io.artec.clat/tools/call", params: { name, arguments: args } },
      z.object({ content: z.array(z.any()).optional(), isError: z.boolean().optional() }).passthrough(),
    );
    return text(result.isError ? `tool error: ${texts(result)}` : `ok: ${texts(result)}`);
  } catch (e) {
    return text(kind(e));
  }
}

tool("echo", "Echo the text.", { text: z.string() }, async ({ text: t }) => text(t));
tool("structured", "Add two integers, with structured output.", { a: z.number().int(), b: z.number().int() }, async ({ a, b }) => ({
  ...text(`sum=${a + b}`),
  structuredContent: { sum: a + b },
}));
tool("fail", "Fail on purpose.", {}, async () => ({ ...text("the tool failed on purpose"), isError: true }));
tool("host_read", "Read a project file through the host.", { path: z.string() }, ({ path }) => hostTool("read_file", { path }));
tool("host_write", "Write a project file through the host.", { path: z.string(), content: z.string() }, ({ path, content }) =>
  hostTool("write_file", { path, content }),
);
// The host's refusal as the call's tool error, worded as CLAT words it (the SDK's McpError prefixes its code).
tool(
  "host_write_unchecked",
  "Write a project file through the host; a refusal is the SDK's.",
  { path: z.string(), content: z.string() },
  async ({ path, content }) => {
    try {
      const result = await server.server.request(
        { method: "io.artec.clat/tools/call", params: { name: "write_file", arguments: { path, content } } },
        z.object({ content: z.array(z.any()).optional(), isError: z.boolean().optional() }).passthrough(),
      );
      return text(texts(result));
    } catch (e) {
      return { ...text(String(e?.message ?? e).replace(/^MCP error -?\d+: /, "")), isError: true };
    }
  },
);
tool(
  "sample",
  "Ask the session model.",
  { text: z.string(), messages: z.number().int().optional(), max_tokens: z.number().int().optional() },
  async ({ text: t, messages, max_tokens }) => {
    const message = { role: "user", content: { type: "text", text: t } };
    try {
      const result = await server.server.createMessage({
        messages: Array.from({ length: Math.max(messages ?? 1, 1) }, () => message),
        maxTokens: max_tokens ?? 50,
      });
      return text(`model said: ${result.content.text}`);
    } catch (e) {
      return text(kind(e));
    }
  },
);
tool("ask", "Ask the user for a name.", {}, async () => {
  let result;
  try {
    result = await server.server.elicitInput({
      message: "Who are you?",
      requestedSchema: { type: "object", properties: { name: { type: "string" }, admin: { type: "boolean" } }, required: ["name"] },
    });
  } catch (e) {
    return text(kind(e));
  }
  if (result.action === "accept") {
    const value = (field) => (result.content?.[field] === undefined ? "-" : String(result.content[field]));
    return text(`accepted name=${value("name")} admin=${value("admin")}`);
  }
  return text(result.action === "decline" ? "declined" : "cancelled");
});
tool("wait", "Never return.", {}, () => new Promise(() => {}));

await server.connect(new StdioServerTransport());
