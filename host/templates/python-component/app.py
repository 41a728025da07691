"""{{name}}: a plain WebAssembly component. Its world is wit/world.wit; each function it exports is a CLAT tool, and
any other host that runs components runs it as it is. componentize-py builds it: the world's functions are the
methods of `WitWorld`; to return a `result`'s err, raise `componentize_py_types.Err(value)`."""

import wit_world


class WitWorld(wit_world.WitWorld):
    def hello(self, name: str) -> str:
        return f"Hello, {name}!"
