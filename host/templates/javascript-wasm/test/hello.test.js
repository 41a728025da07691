// Unit tests of the tools, without building a component: `npm test`. The cases in cases.jsonl run the built
// component through CLAT (`clat plugin test .`).
import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { outputText } from "../src/clat.js";
import { plugin } from "../src/index.js";
import { host } from "./mock-host.js";

const call = async (tool, args) => plugin.callTool(tool, JSON.stringify(args));

beforeEach(() => host.reset());

test("hello greets by name", async () => {
  const output = await call("hello", { name: "Ada" });
  assert.equal(outputText(output), "Hello, Ada!");
  assert.equal(output.isError, false);
});

test("hello's arguments are checked by its zod schema", async () => {
  const output = await call("hello", { name: 7 });
  assert.equal(output.isError, true);
  assert.match(outputText(output), /^invalid arguments for hello:\nname: /);
});

test("hello is declared read-only and closed-world", () => {
  const hello = plugin.listTools().find((t) => t.name === "hello");
  assert.equal(hello.annotations.readOnly, true);
  assert.equal(hello.annotations.openWorld, false);
  assert.deepEqual(JSON.parse(hello.inputSchema).required, ["name"]);
});
