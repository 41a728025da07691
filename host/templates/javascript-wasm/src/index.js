// {{name}}: a CLAT plugin in JavaScript (a WebAssembly component built with componentize-js). Each tool is
// declared once: description, arguments (a zod schema, which gives the tool's JSON Schema and checks each call's
// arguments), effect hints and what it does. `clat plugin test .` checks it.
//
// To call an API, declare its origin in clat-plugin.toml (`[capabilities] http = ["https://api.example.com"]`,
// granted by the user at install) and make `run` async:
//   run: async ({ q }) => (await fetch(`https://api.example.com/search?q=${encodeURIComponent(q)}`)).text(),

import { z } from "zod";
import { definePlugin } from "./clat.js";

export const plugin = definePlugin({
  hello: {
    description: "Greet someone by name.",
    input: z.object({ name: z.string().describe("Who to greet.") }),
    readOnly: true,
    openWorld: false,
    run: ({ name }) => `Hello, ${name}!`,
  },
});
