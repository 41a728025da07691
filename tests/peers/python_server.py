"""A small dual-era MCP server on the official Python SDK (mcp 2.x), for CLAT's tests."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("clat-python-peer")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run()
