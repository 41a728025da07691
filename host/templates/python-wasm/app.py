"""{{name}}: a CLAT plugin in Python (a WebAssembly component built with componentize-py). Each tool is a function
whose one parameter is typed with a dataclass: the function's name is the tool's, its docstring the description,
and the dataclass gives the JSON Schema (`Annotated[T, "..."]` describes a field; Optional or a default makes it
optional). `python3 -m unittest` tests the logic; `clat plugin test .` checks the built component.

To call an API, declare its origin in clat-plugin.toml (`[capabilities] http = ["https://api.example.com"]`,
granted by the user at install, and `[tools.NAME] uses = ["http"]`; the build then uses the world in wit/http.wit)
and use the HTTP helper:

    import clat_http
    clat_http.get("https://api.example.com/items").json()
"""

from dataclasses import dataclass
from typing import Annotated

from wit_world import exports

from clat import ToolPlugin, tool


@dataclass
class Hello:
    name: Annotated[str, "Who to greet."]


def hello(args: Hello) -> str:
    """Greet someone by name."""
    return f"Hello, {args.name}!"


class Plugin(ToolPlugin, exports.Plugin):
    tools = [tool(hello, read_only=True, open_world=False)]
