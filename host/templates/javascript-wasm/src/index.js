// {{name}}: a CLAT plugin in JavaScript (a WebAssembly component built with componentize-js). Each tool is
// declared once: description, JSON Schema, effect hints and what it does. `clat plugin test .` checks it.
//
// To call an API, declare its origin in clat-plugin.toml (`[capabilities] http = ["https://api.example.com"]`,
// granted by the user at install) and make `run` async:
//   run: async ({ q }) => (await fetch(`https://api.example.com/search?q=${encodeURIComponent(q)}`)).text(),

import { definePlugin } from "./clat.js";

export const plugin = definePlugin({
  hello: {
    description: "Greet someone by name.",
    inputSchema: {
      type: "object",
      properties: { name: { type: "string", description: "Who to greet." } },
      required: ["name"],
      additionalProperties: false,
    },
    readOnly: true,
    openWorld: false,
    run: ({ name }) => `Hello, ${name}!`,
  },
});
