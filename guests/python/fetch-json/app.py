"""fetch-json in Python: one tool that fetches a JSON document over HTTP — only from the origins the manifest
declares and the user granted — and summarizes its shape."""

import json

from wit_world import exports

import clat_http
from clat import Tool, ToolPlugin, structured

SCHEMA = {
    "type": "object",
    "properties": {"url": {"type": "string", "description": "The document's URL, within the plugin's grant."}},
    "required": ["url"],
    "additionalProperties": False,
}


def kind(value) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def fetch_json(args: dict):
    try:
        response = clat_http.get(args["url"], [("accept", "application/json")])
    except clat_http.HttpError as e:
        raise RuntimeError(str(e)) from None
    if not 200 <= response.status < 300:
        raise RuntimeError(f"{args['url']} answered HTTP {response.status}")
    document = response.json()
    fields = {k: kind(v) for k, v in document.items()} if isinstance(document, dict) else {}
    summary = {"url": args["url"], "status": response.status, "shape": {"type": kind(document), "fields": fields}}
    return structured(json.dumps(summary, indent=2), summary)


class Plugin(ToolPlugin, exports.Plugin):
    tools = [Tool("fetch_json", "Fetch a JSON document from a granted origin and summarize its shape.", SCHEMA,
                  fetch_json, read_only=True)]
