"""The MCP server behind `clat serve` in the conformance suite's server scenarios: the tools the suite calls
(`test_simple_text`, …), as the scenarios describe them, on the official Python SDK over stdio. `clat serve
--tool-names source` serves them under these names, each call through CLAT's pipeline: what a tool asks of its
client (sampling, a form) goes to CLAT, which passes it on to the suite's client."""

import asyncio
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample
from mcp_types import (
    AudioContent,
    CallToolResult,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

server = MCPServer("clat-conformance-fixture")

# A 1x1 red PNG, and a WAV header with no samples.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def resource() -> EmbeddedResource:
    contents = TextResourceContents(
        uri="test://embedded-resource", mimeType="text/plain", text="This is an embedded resource content."
    )
    return EmbeddedResource(type="resource", resource=contents)


@server.tool()
def test_simple_text() -> CallToolResult:
    """Returns simple text."""
    return CallToolResult(content=[text("This is a simple text response for testing.")])


@server.tool()
def test_image_content() -> CallToolResult:
    """Returns an image."""
    return CallToolResult(content=[ImageContent(type="image", data=PNG, mimeType="image/png")])


@server.tool()
def test_audio_content() -> CallToolResult:
    """Returns audio."""
    return CallToolResult(content=[AudioContent(type="audio", data=WAV, mimeType="audio/wav")])


@server.tool()
def test_embedded_resource() -> CallToolResult:
    """Returns an embedded resource."""
    return CallToolResult(content=[resource()])


@server.tool()
def test_multiple_content_types() -> CallToolResult:
    """Returns text, an image and a resource."""
    image = ImageContent(type="image", data=PNG, mimeType="image/png")
    return CallToolResult(content=[text("Multiple content types test:"), image, resource()])


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Logs three messages while it runs."""
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"]:
        await ctx.info(message)
        await asyncio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs a message (the suite checks none reaches a client that asked for no log level)."""
    await ctx.info("test_logging_tool ran")
    return "logged"


@server.tool()
def test_error_handling() -> CallToolResult:
    """Always fails."""
    return CallToolResult(content=[text("This tool intentionally returns an error for testing")], isError=True)


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50, 100 of 100."""
    for progress in [0, 50, 100]:
        await ctx.report_progress(progress, 100)
        await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


# Sampling and the plain form are asked as the SDK asks in either era (a request mid-call in 2025-11-25,
# `input_required` in 2026-07-28): CLAT speaks to this server in the modern era.
def ask_model(prompt: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=text(prompt))], max_tokens=100)


@server.tool()
def test_sampling(prompt: str, answer: Annotated[CreateMessageResult, Resolve(ask_model)]) -> str:
    """Asks the client's model."""
    return f"LLM response: {answer.content.text}"


class UserInfo(BaseModel):
    username: str
    email: str


def ask_user(message: str) -> Elicit[UserInfo]:
    return Elicit(message, UserInfo)


def ask_user_plainly() -> Elicit[UserInfo]:
    return Elicit("Who are you?", UserInfo)


@server.tool()
def test_elicitation(message: str, info: Annotated[UserInfo, Resolve(ask_user)]) -> str:
    """Asks the client's user."""
    return f"User response: username={info.username}, email={info.email}"


@server.tool()
def test_streaming_elicitation(info: Annotated[UserInfo, Resolve(ask_user_plainly)]) -> str:
    """Asks the client's user while the call streams (the suite checks no request appears on the stream)."""
    return f"User response: username={info.username}"


class Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


def ask_defaults() -> Elicit[Defaults]:
    return Elicit("Please review and update the form fields with defaults", Defaults)


@server.tool()
def test_elicitation_sep1034_defaults(given: Annotated[Defaults, Resolve(ask_defaults)]) -> str:
    """Asks with a default for every primitive type."""
    return f"Elicitation completed: {given.model_dump_json()}"


class Choices(BaseModel):
    untitledSingle: Literal["option1", "option2", "option3"]
    titledSingle: Literal["value1", "value2"]
    legacyEnum: Literal["opt1", "opt2"]


def ask_choices() -> Elicit[Choices]:
    return Elicit("Please select options", Choices)


@server.tool()
def test_elicitation_sep1330_enums(given: Annotated[Choices, Resolve(ask_choices)]) -> str:
    """Asks with enum fields (the single-select ones: CLAT's forms are primitive)."""
    return f"Elicitation completed: {given.model_dump_json()}"


# The input_required scenarios: each tool asks through CLAT, which asks the suite's client in rounds of its own
# (one question a round, under this server's key).
class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Confirmation(BaseModel):
    ok: bool


def ask_step1() -> Elicit[Name]:
    return Elicit("Step 1: What is your name?", Name)


def ask_step2() -> Elicit[Color]:
    return Elicit("Step 2: What is your favorite color?", Color)


def ask_confirmation() -> Elicit[Confirmation]:
    return Elicit("Please confirm", Confirmation)


def ask_capital() -> Sample:
    return Sample([SamplingMessage(role="user", content=text("What is the capital of France?"))], max_tokens=100)


@server.tool()
def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks the user's name under the key the scenarios name (`user_name`), by hand: `Resolve` keys a question by its
    resolver's module and name. CLAT asks the suite's client under the same key, and takes an answer the first
    request already carries."""
    answer = (ctx.input_responses or {}).get("user_name")
    content = getattr(answer, "content", None)
    if isinstance(content, dict) and isinstance(content.get("name"), str):
        return f"Hello, {content['name']}!"
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    ask = ElicitRequest(params=ElicitRequestFormParams(message="What is your name?", requestedSchema=schema))
    return InputRequiredResult(input_requests={"user_name": ask})


@server.tool()
def test_input_required_result_sampling(answer: Annotated[CreateMessageResult, Resolve(ask_capital)]) -> str:
    """Asks the client's model a question."""
    return f"The model said: {answer.content.text}"


@server.tool()
def test_input_required_result_request_state(given: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
    """Asks for a confirmation; CLAT's requestState brought the answer back to this call."""
    return f"state-ok: confirmed={given.ok}"


@server.tool()
def test_input_required_result_multi_round(
    name: Annotated[Name, Resolve(ask_step1)], color: Annotated[Color, Resolve(ask_step2)]
) -> str:
    """Asks two questions (CLAT asks them in two rounds)."""
    return f"{name.name} likes {color.color}"


@server.tool()
def test_input_required_result_capabilities(answer: Annotated[CreateMessageResult, Resolve(ask_capital)]) -> str:
    """Asks the model (the suite declares sampling only; CLAT never asks a client a form it did not declare: such a
    form is unsupported)."""
    return f"The model said: {answer.content.text}"


@server.tool()
def test_input_required_result_tampered_state(given: Annotated[Confirmation, Resolve(ask_confirmation)]) -> str:
    """Asks for a confirmation (the suite then retries with a tampered requestState)."""
    return f"confirmed={given.ok}"


if __name__ == "__main__":
    server.run()
