"""hello: a pure tool in Python. It reads only its arguments and touches nothing."""

from wit_world import exports

from clat import Tool, ToolPlugin

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet (default: the world)."}},
    "additionalProperties": False,
}


def greet(args: dict) -> str:
    return f"Hello, {args.get('name', 'world')}! (from a Python plugin)"


class Plugin(ToolPlugin, exports.Plugin):
    tools = [Tool("greet", "Greet someone by name.", SCHEMA, greet, read_only=True, open_world=False)]
