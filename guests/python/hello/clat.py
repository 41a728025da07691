"""clat: the CLAT plugin contract (artec:clat@0.1.0, wit/clat.wit) for Python guests built with componentize-py.

A plugin lists its tools once: `Tool(name, description, schema, run, read_only=..., open_world=...)`, and
`ToolPlugin` answers list-tools and call-tool from that list. `run(args)` returns text or a ToolOutput (`text`,
`error`, `structured`); an exception it raises becomes a tool error the model reads. Host services are the
functions of `wit_world.imports.host_services`; a host error arrives as a raised `Err` (`host_error_kind` names it).
"""

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from componentize_py_types import Err
from wit_world.imports import host_services

try:
    from wit_world.imports import types
except ImportError:  # the world clat-plugin-http also imports wasi:http/types, so ours is prefixed
    from wit_world.imports import artec_clat_types as types


def text(value: str) -> types.ToolOutput:
    return types.ToolOutput(content=[types.ContentBlock_Text(str(value))], structured=None, is_error=False)


def error(value: str) -> types.ToolOutput:
    return types.ToolOutput(content=[types.ContentBlock_Text(str(value))], structured=None, is_error=True)


def structured(value: str, data: Any) -> types.ToolOutput:
    return types.ToolOutput(
        content=[types.ContentBlock_Text(str(value))], structured=json.dumps(data, separators=(",", ":")), is_error=False
    )


def output_text(output: types.ToolOutput) -> str:
    return "\n".join(b.value for b in output.content if isinstance(b, types.ContentBlock_Text))


def host_error_kind(e: Err) -> str:
    """denied, cancelled, no_active_run, timeout, budget_exhausted, invalid, unsupported or failed."""
    name = type(e.value).__name__.removeprefix("HostError_")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def call_host_tool(tool: types.HostTool, args: dict) -> types.ToolOutput:
    """Raises Err(HostError) when the host refuses."""
    return host_services.call_tool(tool, json.dumps(args))


def sample(prompt: str, max_tokens: int = 256, copies: int = 1) -> types.SamplingResult:
    message = types.SamplingMessage(role=types.Role.USER, text=prompt)
    request = types.SamplingRequest(
        messages=[message] * copies, system_prompt=None, max_tokens=max_tokens, temperature=None,
        stop_sequences=[], model_hints=[],
    )
    return host_services.create_message(request)


def text_field(name: str, required: bool = False, title: Optional[str] = None) -> types.FormField:
    kind = types.FieldKind_Text(types.TextField(min_length=None, max_length=None, format=None, default=None))
    return types.FormField(name=name, title=title, description=None, required=required, kind=kind)


def boolean_field(name: str, required: bool = False, title: Optional[str] = None) -> types.FormField:
    kind = types.FieldKind_Boolean(types.BooleanField(default=None))
    return types.FormField(name=name, title=title, description=None, required=required, kind=kind)


def elicit(message: str, fields: list) -> types.ElicitationResult:
    return host_services.elicit(types.ElicitationForm(message=message, fields=fields))


@dataclass
class Tool:
    name: str
    description: str
    schema: dict
    run: Callable[[dict], Any]
    read_only: Optional[bool] = None
    open_world: Optional[bool] = None
    destructive: Optional[bool] = None
    idempotent: Optional[bool] = None
    title: Optional[str] = None

    def spec(self) -> types.ToolSpec:
        annotations = types.ToolAnnotations(
            title=None, read_only=self.read_only, destructive=self.destructive, idempotent=self.idempotent,
            open_world=self.open_world,
        )
        return types.ToolSpec(
            name=self.name, title=self.title, description=self.description, input_schema=json.dumps(self.schema),
            output_schema=None, annotations=annotations,
        )


class ToolPlugin:
    """The `plugin` export for the class attribute `tools`."""

    tools: list = []

    def list_tools(self) -> list:
        return [t.spec() for t in self.tools]

    def call_tool(self, name: str, arguments: str) -> types.ToolOutput:
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            raise Err(f"no tool named {name!r}")
        try:
            result = tool.run(json.loads(arguments))
        except Err:
            raise
        except Exception as e:
            return error(str(e))
        return result if isinstance(result, types.ToolOutput) else text(result)

    def context_changed(self, snapshot) -> None:
        pass
