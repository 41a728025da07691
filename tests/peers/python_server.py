"""A small dual-era MCP server on the official Python SDK (mcp 2.x), for CLAT's tests."""

from typing import Annotated

from mcp.server.mcpserver import Elicit, MCPServer, Resolve, Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel

server = MCPServer("clat-python-peer")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_model() -> Sample:
    question = SamplingMessage(role="user", content=TextContent(type="text", text="What is the capital of France?"))
    return Sample([question], max_tokens=50)


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greet the user, asking for their name (elicitation: input_required in the modern era)."""
    return f"Hello, {who.name}!"


@server.tool()
def capital(answer: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Ask the client's model a question (sampling: input_required in the modern era)."""
    return f"the model said: {answer.content.text}"


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        # Streamable HTTP on loopback only, at /mcp; both eras.
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
