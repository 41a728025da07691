#!/usr/bin/env python3
"""{{name}}: a CLAT plugin as an MCP server over stdio, on the official Python SDK (mcp 2.3.0). Each tool is a
function: its parameters' types give the JSON Schema, its docstring the description, its annotations the effect
hints. `clat plugin test .` checks it."""

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("{{name}}")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def hello(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run()
