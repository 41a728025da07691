// A unit test in node's own runner: a plain component's functions are plain JavaScript, nothing to mock.
import { test } from "node:test";
import assert from "node:assert/strict";

import { hello } from "../src/index.js";

test("hello greets by name", () => {
  assert.equal(hello("Ada"), "Hello, Ada!");
});
