"""contract: the Python twin of guests/contract (Rust) and `clat-test-mcp-server --contract`: the same tools,
schemas, annotations and result texts, so tests/test_contract.rs runs one table against all of them."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.imports import types

from clat import (
    Tool, ToolPlugin, boolean_field, call_host_tool, elicit, error, host_error_kind, output_text, sample,
    structured, text_field,
)


def obj(properties: dict, required: list) -> dict:
    return {"type": "object", "properties": properties, "required": required}


STRING = {"type": "string"}
INTEGER = {"type": "integer"}


def host_tool(tool: types.HostTool, args: dict) -> str:
    try:
        out = call_host_tool(tool, args)
    except Err as e:
        return f"error: {host_error_kind(e)}"
    return f"tool error: {output_text(out)}" if out.is_error else f"ok: {output_text(out)}"


def do_sample(args: dict) -> str:
    try:
        result = sample(args["text"], max_tokens=args.get("max_tokens", 50), copies=max(args.get("messages", 1), 1))
    except Err as e:
        return f"error: {host_error_kind(e)}"
    return f"model said: {result.text}"


def ask(_args: dict) -> str:
    try:
        answer = elicit("Who are you?", [text_field("name", required=True), boolean_field("admin")])
    except Err as e:
        return f"error: {host_error_kind(e)}"
    if isinstance(answer, types.ElicitationResult_Declined):
        return "declined"
    if isinstance(answer, types.ElicitationResult_Cancelled):
        return "cancelled"

    def value(field: str) -> str:
        found = next((a for a in answer.value if a.name == field), None)
        if found is None:
            return "-"
        v = found.value.value
        return str(v).lower() if isinstance(v, bool) else str(v)

    return f"accepted name={value('name')} admin={value('admin')}"


def wait(_args: dict) -> str:
    while True:
        pass


TOOLS = [
    Tool("echo", "Echo the text.", obj({"text": STRING}, ["text"]), lambda a: a["text"]),
    Tool(
        "structured", "Add two integers, with structured output.", obj({"a": INTEGER, "b": INTEGER}, ["a", "b"]),
        lambda a: structured(f"sum={a['a'] + a['b']}", {"sum": a["a"] + a["b"]}),
    ),
    Tool("fail", "Fail on purpose.", obj({}, []), lambda a: error("the tool failed on purpose")),
    Tool(
        "host_read", "Read a project file through the host.", obj({"path": STRING}, ["path"]),
        lambda a: host_tool(types.HostTool.READ_FILE, {"path": a["path"]}),
    ),
    Tool(
        "host_write", "Write a project file through the host.",
        obj({"path": STRING, "content": STRING}, ["path", "content"]),
        lambda a: host_tool(types.HostTool.WRITE_FILE, {"path": a["path"], "content": a["content"]}),
    ),
    Tool(
        "host_write_unchecked", "Write a project file through the host; a refusal is the SDK's.",
        obj({"path": STRING, "content": STRING}, ["path", "content"]),
        lambda a: output_text(call_host_tool(types.HostTool.WRITE_FILE, {"path": a["path"], "content": a["content"]})),
    ),
    Tool(
        "sample", "Ask the session model.",
        obj({"text": STRING, "messages": INTEGER, "max_tokens": INTEGER}, ["text"]), do_sample,
    ),
    Tool("ask", "Ask the user for a name.", obj({}, []), ask),
    Tool("wait", "Never return.", obj({}, []), wait),
]
for tool in TOOLS:
    tool.read_only, tool.open_world = True, False


class Plugin(ToolPlugin, exports.Plugin):
    tools = TOOLS
