// hello: a pure tool in JavaScript. It reads only its arguments and touches nothing.

import { definePlugin } from "./clat.js";

export const plugin = definePlugin({
  greet: {
    description: "Greet someone by name.",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "Who to greet (default: the world)." } },
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
    run: ({ name }) => `Hello, ${name ?? "world"}! (from a JavaScript plugin)`,
  },
});
