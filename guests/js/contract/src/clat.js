// clat.js: the CLAT plugin contract (artec:clat@0.1.1, wit/clat.wit) for JavaScript guests built with
// componentize-js. `definePlugin(tools)` makes the `plugin` export from a table of tools, each declared once:
// its description, its arguments, effect hints and `run(args)` (which may be async). The arguments are a zod schema
// (`input: z.object({...})`: its JSON Schema is the tool's, and the arguments are parsed with it before `run`, a
// mismatch being a tool error that names the field) or a JSON Schema (`inputSchema`); `output`, a zod schema, makes
// what `run` returns structured content checked against it. What `run` returns is text, or a ToolOutput
// (`text`, `error`, `structured`); an Error it throws becomes a tool error the model reads (in the edit loop naming
// the author's file, line and code line: `withLocation`). Host services
// (the six host tools, sampling, elicitation, context, log) are the imports of `artec:clat/host-services`;
// a host error arrives as a thrown error whose `payload` is `{tag, val}` (`hostErrorKind` names it,
// `describeHostError` words it), and one a tool lets through is its tool error.

import * as host from "artec:clat/host-services@0.1.1";

export const text = (value) => ({ content: [{ tag: "text", val: String(value) }], structured: undefined, isError: false });
export const error = (value) => ({ ...text(value), isError: true });
export const structured = (value, data) => ({ ...text(value), structured: JSON.stringify(data) });

/** The kind of a host error (denied, cancelled, no_active_run, timeout, budget_exhausted, invalid, unsupported, failed). */
export const hostErrorKind = (e) => (e && e.payload && e.payload.tag ? e.payload.tag.replaceAll("-", "_") : "failed");

/** A host error in a line, as CLAT and the Rust SDK word it ("denied: …", "timed out", …). */
export const describeHostError = (e) => {
  const kind = hostErrorKind(e);
  const words = { cancelled: "cancelled", no_active_run: "no active run", timeout: "timed out" };
  return words[kind] ?? `${kind.replaceAll("_", " ")}: ${e?.payload?.val ?? ""}`;
};

/**
 * An error's message, with where in the author's code it was thrown when that is known: the edit loop
 * (`clat plugin call | test` of a project) maps the stack through the bundle's source map
 * (`globalThis.clatWhereThrown`), giving `ReferenceError: nam is not defined (src/index.js, line 18: …)`.
 */
export const withLocation = (e) => {
  const where = typeof globalThis.clatWhereThrown === "function" ? globalThis.clatWhereThrown(e) : "";
  return where ? `${e.name}: ${e.message} (${where})` : e.message;
};

/** The text blocks of a ToolOutput, joined by newlines. */
export const outputText = (output) => output.content.filter((b) => b.tag === "text").map((b) => b.val).join("\n");

/** Call a host tool ("read-file", "write-file", "list-files", "search", "edit-file", "run-command"). */
export const callHostTool = (tool, args) => host.callTool(tool, JSON.stringify(args));
export const getContext = () => host.getContext();
export const log = (level, message) => host.log(level, message);

/** One completion from the session model: `sample({messages: [{role: "user", text}], maxTokens})`. */
export const sample = ({ messages, maxTokens = 256, systemPrompt, temperature }) =>
  host.createMessage({ messages, systemPrompt, maxTokens, temperature, stopSequences: [], modelHints: [] });

/** Ask the user a form: fields `{name, kind: "text" | "boolean" | "number", required, title}`. */
export function elicit(message, fields) {
  const kinds = {
    text: () => ({ tag: "text", val: { minLength: undefined, maxLength: undefined, format: undefined, default: undefined } }),
    boolean: () => ({ tag: "boolean", val: { default: undefined } }),
    number: () => ({ tag: "number", val: { integer: false, minimum: undefined, maximum: undefined, default: undefined } }),
  };
  return host.elicit({
    message,
    fields: fields.map((f) => ({ name: f.name, title: f.title, description: undefined, required: !!f.required, kind: kinds[f.kind]() })),
  });
}

/** A zod schema (or any with the same two methods): the arguments' parser and its JSON Schema. */
const isSchema = (s) => !!s && typeof s.safeParse === "function" && typeof s.toJSONSchema === "function";

/** zod's issues as one line per field: `name: Invalid input: expected string, received undefined`. */
const issuesText = (issues) => issues.map((i) => `${i.path.length ? i.path.join(".") : "arguments"}: ${i.message}`).join("\n");

/** Parse `value` with `schema` (a tool's `input` or `output`): its data, or an Error naming each field that failed. */
function parseWith(schema, value, what) {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`${what}:\n${issuesText(parsed.error.issues)}`);
  return parsed.data;
}

/** The `plugin` export for a table of tools. */
export function definePlugin(tools) {
  return {
    listTools() {
      return Object.entries(tools).map(([name, tool]) => ({
        name,
        title: tool.title,
        description: tool.description,
        inputSchema: JSON.stringify(
          isSchema(tool.input) ? tool.input.toJSONSchema({ io: "input" }) : (tool.inputSchema ?? { type: "object" }),
        ),
        outputSchema: isSchema(tool.output)
          ? JSON.stringify(tool.output.toJSONSchema({ io: "output" }))
          : tool.outputSchema
            ? JSON.stringify(tool.outputSchema)
            : undefined,
        annotations: {
          title: undefined,
          readOnly: tool.readOnly,
          destructive: tool.destructive,
          idempotent: tool.idempotent,
          openWorld: tool.openWorld,
        },
      }));
    },
    // Async, so a tool's `run` may await (`fetch`, for a plugin that declares `[capabilities] http`):
    // componentize-js runs the event loop until the call's promise settles.
    async callTool(name, argumentsJson) {
      const tool = tools[name];
      if (!tool) throw `no tool named ${JSON.stringify(name)}`;
      try {
        let args = JSON.parse(argumentsJson);
        if (isSchema(tool.input)) args = parseWith(tool.input, args, `invalid arguments for ${name}`);
        const result = await tool.run(args);
        if (isSchema(tool.output)) {
          const data = parseWith(tool.output, result, `${name} returned what its output schema does not allow`);
          return structured(JSON.stringify(data), data);
        }
        return typeof result === "object" && result !== null && "content" in result ? result : text(result);
      } catch (e) {
        // A host error the tool let through is a tool error, as the Rust SDK's `?` makes it.
        if (e && e.payload && e.payload.tag) return error(describeHostError(e));
        return error(e instanceof Error ? withLocation(e) : String(e));
      }
    },
    contextChanged(_snapshot) {},
  };
}
