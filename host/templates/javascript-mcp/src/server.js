// {{name}}: a CLAT plugin as an MCP server over stdio, on the official TypeScript SDK. Each tool is registered
// once: its description, the zod shape of its arguments (the JSON Schema is derived), its annotations (the effect
// hints) and what it does. `clat plugin build` bundles this file and its dependencies into dist/server.mjs.

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "{{name}}", version: "0.1.0" });

server.registerTool(
  "hello",
  {
    description: "Greet someone by name.",
    inputSchema: { name: z.string().describe("Who to greet.") },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  async ({ name }) => ({ content: [{ type: "text", text: `Hello, ${name}!` }] }),
);

await server.connect(new StdioServerTransport());
