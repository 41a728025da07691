// {{name}}: a plain WebAssembly component. Its world is wit/world.wit; each function it exports is a CLAT tool,
// and any other host that runs components runs it as it is. Records are objects, enums strings, variants
// { tag, val }; to return a `result`'s err, throw it.

export function hello(name) {
  return `Hello, ${name}!`;
}
