// fetch-json in JavaScript: one async tool that fetches a JSON document with `fetch` — only from the origins the
// manifest declares and the user granted — and describes its shape.

import { definePlugin, structured } from "./clat.js";

const kind = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

export const plugin = definePlugin({
  fetch_json: {
    description: "Fetch a JSON document from a granted origin and summarize its shape.",
    inputSchema: {
      type: "object",
      properties: { url: { type: "string", description: "The document's URL, within the plugin's grant." } },
      required: ["url"],
      additionalProperties: false,
    },
    readOnly: true,
    run: async ({ url }) => {
      const response = await fetch(url, { headers: { accept: "application/json" } });
      if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
      const document = await response.json();
      const fields = Object.fromEntries(Object.entries(document).map(([k, v]) => [k, kind(v)]));
      const summary = { url, status: response.status, shape: { type: kind(document), fields } };
      return structured(JSON.stringify(summary, null, 2), summary);
    },
  },
});
