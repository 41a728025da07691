"""Drives `clat serve` with the official Python SDK's client, as an agent would: initialize, list the tools,
make the calls given as JSON, and print one JSON document — the server's name and protocol version, each tool's
annotations and schemas ("schemas": input and output) by name, each call's text, isError and structured content when
it has some (or the error the SDK raised), and the tools listed after the calls ("listed_after").

Usage: python_serve_client.py CLAT ARGS_JSON CALLS_JSON [ELICIT_JSON [MODEL_TEXT]]
(stdio: CLAT is the binary, ARGS_JSON its arguments; Streamable HTTP: CLAT is the server's URL and ARGS_JSON the
headers to send, e.g. {"Authorization": "Bearer T"}; CALLS_JSON: [{"name": ..., "arguments": {...}}, ...]). With ELICIT_JSON (an ElicitResult: {"action": ..., "content":
{...}}, or a list of them taken in turn; `null`: none) the client declares elicitation and answers every form with it; the forms asked are reported as
"asked". Progress the server reports on a call is reported as "progress" ([progress, total] per notification), its
log lines as "logs" ([level, logger, data]). With MODEL_TEXT it declares sampling and its model ("agent-model") answers every request with that text; the
requests are reported as "sampled". With CLAT_TEST_ERA=modern in the environment the client is the SDK's `Client`,
which probes `server/discover` and speaks 2026-07-28 (forms and sampling then come as `input_required` rounds, log
lines only at the `debug` level the client asks for); otherwise a `ClientSession` with the 2025-11-25 handshake."""

import asyncio
import json
import os
import sys

from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def connect(command, args):
    """The transport: stdio to a spawned `clat serve`, or Streamable HTTP to a running one."""
    if command.startswith("http://"):
        return streamable_http_client(command, http_client=create_mcp_http_client(headers=args))
    return stdio_client(StdioServerParameters(command=command, args=args))


async def main() -> None:
    command, args, calls = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    answer = json.loads(sys.argv[4]) if len(sys.argv) > 4 else None
    model_text = sys.argv[5] if len(sys.argv) > 5 else None
    report = {"calls": [], "asked": [], "sampled": [], "progress": [], "logs": []}

    async def progressed(progress, total, message):
        report["progress"].append([progress, total])

    async def logged(params):
        report["logs"].append([params.level, params.logger, params.data])

    async def sample(context, params):
        report["sampled"].append([m.content.text for m in params.messages])
        content = types.TextContent(type="text", text=model_text)
        return types.CreateMessageResult(role="assistant", content=content, model="agent-model", stop_reason="endTurn")

    async def elicit(context, params):
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        report["asked"].append({"message": params.message, "schema": schema})
        given = answer.pop(0) if isinstance(answer, list) else answer
        return types.ElicitResult(action=given["action"], content=given.get("content"))

    callbacks = {
        "elicitation_callback": elicit if answer else None,
        "sampling_callback": sample if model_text else None,
        "logging_callback": logged,
    }
    if os.environ.get("CLAT_TEST_ERA") == "modern":
        await modern(command, args, calls, callbacks, report, progressed)
        print(json.dumps(report))
        return
    async with connect(command, args) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
            report["protocol"] = init.protocol_version
            await list_and_call(session, calls, report, progressed)
    print(json.dumps(report))


async def list_and_call(peer, calls, report, progressed) -> None:
    """List the tools and make the calls, on a `ClientSession` or a `Client` alike."""
    listed = await peer.list_tools()
    report["tools"] = {
        t.name: t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else {} for t in listed.tools
    }
    report["schemas"] = {t.name: {"input": t.input_schema, "output": t.output_schema} for t in listed.tools}
    for call in calls:
        try:
            result = await peer.call_tool(call["name"], call.get("arguments", {}), progress_callback=progressed)
            text = "\n".join(block.text for block in result.content if block.type == "text")
            seen = {"text": text, "isError": result.is_error}
            if result.structured_content is not None:
                seen["structured"] = result.structured_content
            report["calls"].append(seen)
        except Exception as e:  # the SDK raises a JSON-RPC error as an exception
            report["calls"].append({"error": str(e)})
    report["listed_after"] = [t.name for t in (await peer.list_tools()).tools]


async def modern(command, args, calls, callbacks, report, progressed) -> None:
    """The same session with the SDK's `Client` in its default mode: it probes `server/discover` first."""
    server = command if command.startswith("http://") else StdioServerParameters(command=command, args=args)
    async with Client(server, log_level="debug", **callbacks) as client:
        report["server"] = client.server_info.name if client.server_info else None
        report["protocol"] = client.protocol_version
        await list_and_call(client, calls, report, progressed)


asyncio.run(main())
