// contract: the JavaScript twin of guests/contract (Rust) and `clat-test-mcp-server --contract`: the same
// tools, schemas, annotations and result texts, so tests/test_contract.rs runs one table against all of them.

import { callHostTool, definePlugin, elicit, error, hostErrorKind, outputText, sample, structured } from "./clat.js";

const object = (properties, required) => ({ type: "object", properties, required });
const string = { type: "string" };
const integer = { type: "integer" };

/** A host tool's outcome as the contract's text. */
function hostTool(tool, args) {
  try {
    const out = callHostTool(tool, args);
    return out.isError ? `tool error: ${outputText(out)}` : `ok: ${outputText(out)}`;
  } catch (e) {
    return `error: ${hostErrorKind(e)}`;
  }
}

const tools = {
  echo: { description: "Echo the text.", inputSchema: object({ text: string }, ["text"]), run: ({ text }) => text },
  structured: {
    description: "Add two integers, with structured output.",
    inputSchema: object({ a: integer, b: integer }, ["a", "b"]),
    run: ({ a, b }) => structured(`sum=${a + b}`, { sum: a + b }),
  },
  fail: { description: "Fail on purpose.", inputSchema: object({}, []), run: () => error("the tool failed on purpose") },
  host_read: {
    description: "Read a project file through the host.",
    inputSchema: object({ path: string }, ["path"]),
    run: ({ path }) => hostTool("read-file", { path }),
  },
  host_write: {
    description: "Write a project file through the host.",
    inputSchema: object({ path: string, content: string }, ["path", "content"]),
    run: ({ path, content }) => hostTool("write-file", { path, content }),
  },
  host_write_unchecked: {
    description: "Write a project file through the host; a refusal is the SDK's.",
    inputSchema: object({ path: string, content: string }, ["path", "content"]),
    run: ({ path, content }) => outputText(callHostTool("write-file", { path, content })),
  },
  sample: {
    description: "Ask the session model.",
    inputSchema: object({ text: string, messages: integer, max_tokens: integer }, ["text"]),
    run: ({ text, messages, max_tokens }) => {
      const count = Math.max(messages ?? 1, 1);
      try {
        const result = sample({ messages: Array.from({ length: count }, () => ({ role: "user", text })), maxTokens: max_tokens ?? 50 });
        return `model said: ${result.text}`;
      } catch (e) {
        return `error: ${hostErrorKind(e)}`;
      }
    },
  },
  ask: {
    description: "Ask the user for a name.",
    inputSchema: object({}, []),
    run: () => {
      let answer;
      try {
        answer = elicit("Who are you?", [{ name: "name", kind: "text", required: true }, { name: "admin", kind: "boolean" }]);
      } catch (e) {
        return `error: ${hostErrorKind(e)}`;
      }
      if (answer.tag === "declined") return "declined";
      if (answer.tag === "cancelled") return "cancelled";
      const value = (field) => {
        const found = answer.val.find((a) => a.name === field);
        return found ? String(found.value.val) : "-";
      };
      return `accepted name=${value("name")} admin=${value("admin")}`;
    },
  },
  wait: {
    description: "Never return.",
    inputSchema: object({}, []),
    run: () => {
      for (;;) {}
    },
  },
};

for (const tool of Object.values(tools)) {
  tool.readOnly = true;
  tool.openWorld = false;
}

export const plugin = definePlugin(tools);
