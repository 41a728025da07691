// mock-host.js: CLAT's host services (`artec:clat/host-services@0.1.1`) for unit tests under `node --test`, so a
// tool's logic is tested without building a component. `register-mock-host.js` (loaded by `npm test` with
// `--import`) points src/clat.js's import of the contract here. The host's values have the shapes the component
// sees (a ToolOutput is `{content: [{tag: "text", val}], structured, isError}`; a host error is thrown with
// `payload: {tag, val}`); what the six host tools do is a small in-memory project: `host.files`.
//
//   import { host } from "./mock-host.js";
//   host.reset({ files: { "notes.md": "one two" }, deny: ["write-file"], model: (prompt) => "a summary" });
//   host.calls   // every host tool call: [{tool, args}]
//   host.logs    // every log line: [{level, message}]

const text = (value) => ({ content: [{ tag: "text", val: String(value) }], structured: undefined, isError: false });
const hostError = (tag, val) => Object.assign(new Error(`host error ${tag}: ${val ?? ""}`), { payload: { tag, val } });

export const host = {
  files: new Map(),
  denied: new Set(),
  calls: [],
  logs: [],
  messages: [],
  forms: [],
  model: (prompt) => `(a model's answer to: ${prompt})`,
  answers: null,
  commands: {},
  /** A fresh host: `files` (path → text), `deny` (host tool names), `model(prompt)`, `answers` (null: declined), `commands` (command → {exitCode, stdout, stderr}). */
  reset({ files = {}, deny = [], model, answers = null, commands = {} } = {}) {
    this.files = new Map(Object.entries(files));
    this.denied = new Set(deny);
    this.calls = [];
    this.logs = [];
    this.messages = [];
    this.forms = [];
    if (model) this.model = model;
    this.answers = answers;
    this.commands = commands;
  },
};

const file = (path) => {
  if (!host.files.has(path)) throw hostError("failed", `cannot read ${path}: no such file`);
  return host.files.get(path);
};

const tools = {
  "read-file": ({ path, start_line, end_line }) => {
    const lines = file(path).split("\n");
    return start_line || end_line ? lines.slice((start_line ?? 1) - 1, end_line ?? lines.length).join("\n") : file(path);
  },
  "write-file": ({ path, content }) => {
    host.files.set(path, content);
    return `wrote ${new TextEncoder().encode(content).length} bytes to ${path}`;
  },
  "edit-file": ({ path, old_string, new_string, replace_all }) => {
    const before = file(path);
    const count = before.split(old_string).length - 1;
    if (count === 0) throw hostError("failed", `old_string was not found in ${path}`);
    if (count > 1 && !replace_all) throw hostError("invalid", `old_string occurs ${count} times in ${path}; set replace_all`);
    host.files.set(path, replace_all ? before.split(old_string).join(new_string) : before.replace(old_string, new_string));
    return `replaced ${replace_all ? count : 1} occurrence${(replace_all ? count : 1) === 1 ? "" : "s"} in ${path}`;
  },
  "list-files": ({ path = "" }) =>
    [...host.files.keys()].filter((p) => !path || p.startsWith(path.endsWith("/") ? path : `${path}/`)).sort().join("\n"),
  search: ({ pattern, literal }) => {
    const re = literal ? null : new RegExp(pattern);
    const found = [];
    for (const [path, body] of [...host.files.entries()].sort()) {
      body.split("\n").forEach((line, i) => {
        if (re ? re.test(line) : line.includes(pattern)) found.push(`${path}:${i + 1}:${line}`);
      });
    }
    return found.join("\n");
  },
  "run-command": ({ command }) => {
    const outcome = host.commands[command];
    if (!outcome) throw hostError("failed", `no outcome set for the command ${JSON.stringify(command)} (host.reset({commands}))`);
    const { exitCode = 0, stdout = "", stderr = "" } = outcome;
    let shown = `exit code ${exitCode}`;
    if (stdout) shown += `\n--- stdout ---\n${stdout}`;
    if (stderr) shown += `\n--- stderr ---\n${stderr}`;
    return { ...text(shown), isError: exitCode !== 0 };
  },
};

export function callTool(tool, argumentsJson) {
  const args = JSON.parse(argumentsJson);
  host.calls.push({ tool, args });
  if (host.denied.has(tool)) throw hostError("denied", `${tool} was denied (the mock host denies it)`);
  const run = tools[tool];
  if (!run) throw hostError("unsupported", `host tool ${tool} is not registered`);
  const result = run(args);
  return typeof result === "string" ? text(result) : result;
}

export function getContext() {
  return {
    projectRoot: "/project",
    projectName: "project",
    sessionId: "mock-session",
    run: { runId: "mock-run", mode: "ask", remainingMs: 120000n, samplingRequestsLeft: 64, samplingTokensLeft: 1000000n },
  };
}

export function createMessage(request) {
  host.messages.push(request);
  const prompt = request.messages.map((m) => m.text).join("\n");
  const answer = String(host.model(prompt));
  return { role: "assistant", text: answer, model: "mock-model", stopReason: "end_turn", inputTokens: prompt.length, outputTokens: answer.length };
}

export function elicit(form) {
  host.forms.push(form);
  if (host.answers === null) return { tag: "declined" };
  return { tag: "accepted", val: Object.entries(host.answers).map(([name, value]) => ({ name, value: answerValue(value) })) };
}

const answerValue = (value) =>
  typeof value === "boolean" ? { tag: "boolean", val: value } : typeof value === "number" ? { tag: "number", val: value } : { tag: "text", val: String(value) };

export function log(level, message) {
  host.logs.push({ level, message });
}
