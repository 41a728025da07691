"""{{name}}: a CLAT plugin in Python (a WebAssembly component built with componentize-py). Each tool is declared
once: description, JSON Schema, effect hints and what it does. `clat plugin test .` checks it.

To call an API, declare its origin in clat-plugin.toml (`[capabilities] http = ["https://api.example.com"]`,
granted by the user at install; the build then uses the world in wit/http.wit) and use the HTTP helper:

    import clat_http
    clat_http.get("https://api.example.com/items").json()
"""

from wit_world import exports

from clat import Tool, ToolPlugin


def hello(args: dict) -> str:
    return f"Hello, {args['name']}!"


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet."}},
    "required": ["name"],
    "additionalProperties": False,
}


class Plugin(ToolPlugin, exports.Plugin):
    tools = [Tool("hello", "Greet someone by name.", SCHEMA, hello, read_only=True, open_world=False)]
