// Loaded by `npm test` (`node --import ./test/register-mock-host.js --test`): the contract's import in src/clat.js
// resolves to test/mock-host.js instead of the component's host.
import { register } from "node:module";

const mockHost = new URL("./mock-host.js", import.meta.url).href;
const hooks = `export async function resolve(specifier, context, next) {
  return specifier === "artec:clat/host-services@0.1.1" ? { url: ${JSON.stringify(mockHost)}, shortCircuit: true } : next(specifier, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`);
