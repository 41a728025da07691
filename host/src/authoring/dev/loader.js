// The edit loop's runtime module for a JavaScript project (`clat plugin call | test`): componentize-js builds it
// once per toolchain and contract; at each call it reads the project's bundle (`/plugin/dev-source.js`: CommonJS,
// made by esbuild at every build) from the plugin's own read-only directory and evaluates it, so an edit is seen
// without componentizing again. What the bundle exports as `plugin` answers the contract.
import * as host from "artec:clat/host-services@{{contract_version}}";
import { getDirectories } from "wasi:filesystem/preopens@0.2.12";

function readSource(name = "dev-source.js") {
  const found = getDirectories().find(([, path]) => path === "/plugin");
  if (!found) throw new Error("the edit loop's runtime sees no /plugin directory");
  const file = found[0].openAt({}, name, {}, { read: true });
  const chunks = [];
  let offset = 0n;
  for (;;) {
    const [bytes, end] = file.read(1n << 20n, offset);
    chunks.push(bytes);
    offset += BigInt(bytes.length);
    if (end || bytes.length === 0) break;
  }
  const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.length;
  }
  return new TextDecoder().decode(all);
}

// Where an error was thrown in the author's sources. esbuild writes the bundle's source map beside it
// (`dev-source.js.map`, with the sources' text), read only when an error asks; a frame of the error's stack inside
// the bundle is mapped back through it to the author's file, line and code line. The SDK's `withLocation` asks
// through `globalThis.clatWhereThrown`.
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The source map's mappings: per generated line, its segments [column, source, line, column], all 0-based. */
function decodeMappings(mappings) {
  const lines = [];
  let [source, line, column] = [0, 0, 0];
  for (const text of mappings.split(";")) {
    const segments = [];
    let generated = 0;
    for (const segment of text.split(",")) {
      if (!segment) continue;
      const values = [];
      let [value, shift] = [0, 0];
      for (const ch of segment) {
        const digit = BASE64.indexOf(ch);
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
        } else {
          values.push(value & 1 ? -(value >> 1) : value >> 1);
          [value, shift] = [0, 0];
        }
      }
      generated += values[0];
      if (values.length >= 4) {
        [source, line, column] = [source + values[1], line + values[2], column + values[3]];
        segments.push([generated, source, line, column]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

/** The bundle's source map, decoded; `null` when it cannot be read. */
function sourceMap() {
  try {
    const map = JSON.parse(readSource("dev-source.js.map"));
    return { sources: map.sources, contents: map.sourcesContent || [], lines: decodeMappings(map.mappings) };
  } catch {
    return null;
  }
}

/** The stack frames' line and column (1-based) that are in code made by `new Function`. */
function functionFrames(stack) {
  return String(stack || "")
    .split("\n")
    .filter((frame) => frame.includes("> Function"))
    .map((frame) => frame.match(/:(\d+):(\d+)\)?$/))
    .filter(Boolean)
    .map((m) => [Number(m[1]), Number(m[2])]);
}

// How many lines `new Function` puts before its body, measured once.
const bodyOffset = (() => {
  const frames = functionFrames(new Function("return new Error().stack")());
  return frames.length ? frames[0][0] - 1 : 2;
})();

function whereThrown(map, e) {
  for (const [line, column] of functionFrames(e && e.stack)) {
    const segments = map.lines[line - 1 - bodyOffset] || [];
    let found = null;
    for (const segment of segments) if (segment[0] <= column - 1) found = segment;
    if (!found) continue;
    const file = map.sources[found[1]] || "";
    // Not the author's: a dependency's frame or this SDK's.
    if (file.includes("node_modules/") || file.endsWith("clat.js")) continue;
    const code = (map.contents[found[1]] || "").split("\n")[found[2]];
    const shown = file.replace(/^(\.\.\/)+/, "");
    return `${shown}, line ${found[2] + 1}` + (code && code.trim() ? `: ${code.trim()}` : "");
  }
  return "";
}

let loaded;
function project() {
  if (!loaded) {
    const module = { exports: {} };
    const require = (name) => {
      if (name.startsWith("artec:clat/host-services@")) return host;
      throw new Error(`the edit loop cannot load ${name}: only the contract's imports are left out of the bundle`);
    };
    globalThis.clatWhereThrown = (e) => {
      const map = sourceMap();
      return map ? whereThrown(map, e) : "";
    };
    new Function("module", "exports", "require", readSource())(module, module.exports, require);
    if (!module.exports.plugin) throw new Error("the package's main exports no `plugin`");
    loaded = module.exports.plugin;
  }
  return loaded;
}

export const plugin = {
  listTools: () => project().listTools(),
  callTool: (name, argumentsJson) => project().callTool(name, argumentsJson),
  contextChanged: (snapshot) => project().contextChanged(snapshot),
};
