"""clat_http.py: outbound HTTP for Python CLAT plugins whose clat-plugin.toml declares the origins they talk to
(`[capabilities] http = ["https://api.example.com"]`, granted by the user at install). Blocking calls over
`wasi:http` (the world `clat-plugin-http` in wit/http.wit): the host checks every request against the grant
before it connects, follows redirects only within it, bounds bodies and requests per call, and records each
request in the run's events. A refusal raises `HttpError` naming the host's reason."""

import json
from urllib.parse import urlsplit

from componentize_py_types import Err
from wit_world.imports import outgoing_handler
from wit_world.imports import wasi_http_types as t

CHUNK = 4096

REASONS = {
    "HttpRequestDenied": "the host refused the request: its origin (or a redirect's) is not in this plugin's http "
    "grant, or the grant was revoked (the run's http_request event says which)",
    "DestinationIpProhibited": "the host refused the request: the granted host name resolves to an internal address",
    "ConnectionLimitReached": "the host refused the request: too many requests in one call",
    "HttpRequestBodySize": "the request body is over the host's limit",
    "HttpResponseBodySize": "the response body is over the host's limit",
    "ConnectionTimeout": "no answer within the call's deadline",
    "HttpResponseTimeout": "no answer within the call's deadline",
    "ConnectionRefused": "the connection was refused",
}


class HttpError(Exception):
    """Why a request gave no response."""


def _reason(code) -> str:
    name = type(code).__name__.removeprefix("ErrorCode_")
    return REASONS.get(name, f"the request failed: {name}")


class Response:
    def __init__(self, status: int, headers: list, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str):
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self):
        return json.loads(self.body)


def request(method: str, url: str, headers=(), body: bytes = b"") -> Response:
    """Send one request and read the whole response."""
    parts = urlsplit(url)
    fields = t.Fields.from_list([(k.lower(), v.encode()) for k, v in headers])
    outgoing = t.OutgoingRequest(fields)
    methods = {"GET": t.Method_Get(), "POST": t.Method_Post(), "PUT": t.Method_Put(), "DELETE": t.Method_Delete()}
    outgoing.set_method(methods.get(method.upper(), t.Method_Other(method)))
    outgoing.set_scheme(t.Scheme_Https() if parts.scheme == "https" else t.Scheme_Http())
    outgoing.set_authority(parts.netloc)
    outgoing.set_path_with_query((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
    sink = outgoing.body()
    try:
        future = outgoing_handler.handle(outgoing, None)
        if body:
            with sink.write() as stream:
                for start in range(0, len(body), CHUNK):
                    stream.blocking_write_and_flush(body[start : start + CHUNK])
        t.OutgoingBody.finish(sink, None)
    except Err as e:
        raise HttpError(_reason(e.value)) from None
    # Each child resource is dropped before its parent (a pollable before its future, a stream before its body).
    with future:
        with future.subscribe() as pollable:
            pollable.block()
        result = future.get()  # Ok(Ok(response)) | Ok(Err(error-code)) | Err(()) once taken
    if isinstance(result, Err) or result is None:
        raise HttpError("the response was not available")
    if isinstance(result.value, Err):
        raise HttpError(_reason(result.value.value))
    with result.value.value as incoming:
        status = incoming.status()
        with incoming.headers() as fields:
            received = [(k, v.decode("utf-8", "replace")) for k, v in fields.entries()]
        chunks = []
        with incoming.consume() as incoming_body:
            with incoming_body.stream() as stream:
                while True:
                    try:
                        chunks.append(stream.blocking_read(64 * 1024))
                    except Err as e:
                        if type(e.value).__name__ == "StreamError_Closed":
                            break
                        raise HttpError(_stream_reason(e.value)) from None
    return Response(status, received, b"".join(chunks))


def _stream_reason(error) -> str:
    """A failed read: the host's error code when it gave one (a body over its limit, a deadline)."""
    try:
        code = t.http_error_code(error.value)
    except Exception:
        code = None
    return _reason(code) if code is not None else "the response body could not be read"


def get(url: str, headers=()) -> Response:
    return request("GET", url, headers)
