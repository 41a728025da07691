"""clat: the CLAT plugin contract (artec:clat@0.1.1, wit/clat.wit) for Python guests built with componentize-py.

A plugin lists its tools once, and `ToolPlugin` answers list-tools and call-tool from that list. `tool(run, ...)`
makes one from a function whose one parameter is typed with a dataclass or a TypedDict: its name is the function's,
its description the docstring, its input schema derived from the type (`schema_of`); `run` gets an instance of it.
`Tool(name, description, schema, run, read_only=..., open_world=...)` takes a hand-written JSON Schema instead. `run(args)` returns text or a ToolOutput (`text`,
`error`, `structured`); an exception it raises becomes a tool error the model reads, naming the author's file, line
and code line it came from (`where_raised`). Host services are the
functions of `wit_world.imports.host_services`; a host error arrives as a raised `Err` (`host_error_kind` names it,
`describe_host_error` words it), and one a tool lets through is its tool error.
"""

import dataclasses
import inspect
import json
import linecache
import os
import re
import traceback
import types as python_types
import typing
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


def describe_host_error(e: Err) -> str:
    """A host error in a line, as CLAT and the Rust SDK word it ("denied: …", "timed out", …)."""
    kind = host_error_kind(e)
    words = {"cancelled": "cancelled", "no_active_run": "no active run", "timeout": "timed out"}
    if kind in words:
        return words[kind]
    return f"{kind.replace('_', ' ')}: {getattr(e.value, 'value', '')}"


def where_raised(e: BaseException) -> str:
    """Where in the author's code `e` was raised: `app.py, line 12: return args.nam`; empty when no frame of the
    traceback is theirs (this SDK's and the edit loop's are not). The code line is shown when the source can be read
    (the edit loop reads the sources beside its runtime)."""
    sdk = {os.path.basename(__file__), "clat_dev_loader.py"}
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.basename(f.filename) not in sdk]
    if not frames:
        return ""
    frame = frames[-1]
    # The edit loop's sources are under /plugin/dev-src; a built component's under /0 (componentize-py's mount).
    shown = frame.filename.split("/dev-src/", 1)[-1] if "/dev-src/" in frame.filename else frame.filename
    shown = re.sub(r"^/\d+/", "", shown)
    code = (frame.line or linecache.getline(frame.filename, frame.lineno or 0)).strip()
    return f"{shown}, line {frame.lineno}" + (f": {code}" if code else "")


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


def _strip_annotated(hint: Any) -> tuple:
    """The type under `Annotated[T, "description"]`, and the description (or None)."""
    if typing.get_origin(hint) is typing.Annotated:
        base, *extras = typing.get_args(hint)
        return base, next((e for e in extras if isinstance(e, str)), None)
    return hint, None


def _optional_of(hint: Any) -> Optional[Any]:
    """T for `Optional[T]` / `T | None`, else None."""
    if typing.get_origin(hint) in (typing.Union, python_types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) < len(typing.get_args(hint)):
            return rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]
    return None


def _is_record(hint: Any) -> bool:
    return dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)


def schema_of(hint: Any) -> dict:
    """The JSON Schema of a Python type: str, int, float, bool, list[T], dict, Any, Literal[...] (an enum),
    Optional[T], Annotated[T, "description"], and dataclasses and TypedDicts (objects: a field is required unless
    it is Optional or has a default; other keys are refused)."""
    hint, description = _strip_annotated(hint)
    schema = _schema_of_type(hint)
    if description:
        schema["description"] = description
    return schema


def _schema_of_type(hint: Any) -> dict:
    inner = _optional_of(hint)
    if inner is not None:
        return schema_of(inner)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, python_types.UnionType):
        return {"anyOf": [schema_of(a) for a in args]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
        return {"type": "array", "items": schema_of(args[0])} if args else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object"}
    simple = {str: "string", bool: "boolean", int: "integer", float: "number"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is Any:
        return {}
    if _is_record(hint):
        return _record_schema(hint)
    raise TypeError(
        f"{hint!r} has no JSON Schema here: use str, int, float, bool, list[...], dict, Any, Literal[...], "
        "Optional[...], Annotated[..., 'description'], a dataclass or a TypedDict"
    )


def _record_schema(cls: Any) -> dict:
    hints = typing.get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        fields = {f.name: f for f in dataclasses.fields(cls)}
        has_default = {
            name for name, f in fields.items()
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        names = list(fields)
    else:
        has_default = set(getattr(cls, "__optional_keys__", ()))
        names = list(hints)
    required = [n for n in names if n not in has_default and _optional_of(_strip_annotated(hints[n])[0]) is None]
    schema = {"type": "object", "properties": {n: schema_of(hints[n]) for n in names}, "additionalProperties": False}
    if required:
        schema["required"] = required
    doc = inspect.getdoc(cls)
    if doc and not doc.startswith(f"{cls.__name__}("):  # not the signature dataclasses writes
        schema["description"] = doc
    return schema


def _build(hint: Any, value: Any) -> Any:
    """The arguments (already checked against the schema by CLAT) as the declared type: dataclasses made, nested too."""
    hint, _ = _strip_annotated(hint)
    inner = _optional_of(hint)
    if inner is not None:
        return None if value is None else _build(inner, value)
    if typing.get_origin(hint) is list and typing.get_args(hint) and isinstance(value, list):
        return [_build(typing.get_args(hint)[0], v) for v in value]
    if dataclasses.is_dataclass(hint) and isinstance(value, dict):
        hints = typing.get_type_hints(hint, include_extras=True)
        given = {f.name: _build(hints[f.name], value[f.name]) for f in dataclasses.fields(hint) if f.name in value}
        for f in dataclasses.fields(hint):  # an Optional field without a default, left out
            if f.name not in given and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                given[f.name] = None
        return hint(**given)
    return value


def tool(
    run: Callable[[Any], Any],
    *,
    name: Optional[str] = None,
    description: Optional[str] = None,
    read_only: Optional[bool] = None,
    open_world: Optional[bool] = None,
    destructive: Optional[bool] = None,
    idempotent: Optional[bool] = None,
    title: Optional[str] = None,
) -> "Tool":
    """A Tool from `run(args: T)`, T a dataclass or TypedDict: the schema is `schema_of(T)`, the description the
    docstring (or `description`), the name the function's (or `name`)."""
    parameters = list(inspect.signature(run).parameters.values())
    hints = typing.get_type_hints(run, include_extras=True)
    if len(parameters) != 1 or parameters[0].name not in hints:
        raise TypeError(f"{run.__name__} must take one parameter typed with a dataclass or a TypedDict")
    argument_type = hints[parameters[0].name]
    if not _is_record(_strip_annotated(argument_type)[0]):
        raise TypeError(f"{run.__name__}'s parameter must be typed with a dataclass or a TypedDict")
    description = description or inspect.getdoc(run)
    if not description:
        raise TypeError(f"{run.__name__} needs a docstring (or description=...): the model reads it")
    return Tool(
        name=name or run.__name__,
        description=description,
        schema=schema_of(argument_type),
        run=lambda args: run(_build(argument_type, args)),
        read_only=read_only,
        open_world=open_world,
        destructive=destructive,
        idempotent=idempotent,
        title=title,
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
        except Err as e:
            # A host error the tool let through is a tool error, as the Rust SDK's `?` makes it.
            if isinstance(e.value, str):
                raise
            return error(describe_host_error(e))
        except Exception as e:
            where = where_raised(e)
            return error(f"{type(e).__name__}: {e} ({where})" if where else str(e))
        return result if isinstance(result, types.ToolOutput) else text(result)

    def context_changed(self, snapshot) -> None:
        pass
