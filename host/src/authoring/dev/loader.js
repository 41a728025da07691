// The edit loop's runtime module for a JavaScript project (`clat plugin call | test`): componentize-js builds it
// once per toolchain and contract; at each call it reads the project's bundle (`/plugin/dev-source.js`: CommonJS,
// made by esbuild at every build) from the plugin's own read-only directory and evaluates it, so an edit is seen
// without componentizing again. What the bundle exports as `plugin` answers the contract.
import * as host from "artec:clat/host-services@{{contract_version}}";
import { getDirectories } from "wasi:filesystem/preopens@0.2.12";

function readSource() {
  const found = getDirectories().find(([, path]) => path === "/plugin");
  if (!found) throw new Error("the edit loop's runtime sees no /plugin directory");
  const file = found[0].openAt({}, "dev-source.js", {}, { read: true });
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

let loaded;
function project() {
  if (!loaded) {
    const module = { exports: {} };
    const require = (name) => {
      if (name.startsWith("artec:clat/host-services@")) return host;
      throw new Error(`the edit loop cannot load ${name}: only the contract's imports are left out of the bundle`);
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
