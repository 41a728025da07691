"""clat_testing: unit tests of a CLAT plugin without building a component (`python3 -m unittest`).

`MockHost.install()` makes the contract's Python bindings importable (componentize-py, the build's own tool,
generates them from wit/ into a temporary directory, for the world the build uses) and answers CLAT's host
services from an in-memory project. Install it before importing `app`:

    from clat_testing import MockHost
    host = MockHost.install()
    import app

    host.reset(files={"notes.md": "one two"}, deny=["write-file"], model=lambda prompt: "a summary")
    host.call(app.Plugin(), "count", {"path": "notes.md"})   # -> (text, is_error)
    host.calls, host.logs                                     # what the tool asked of the host

The values have the shapes the component sees (a host error is raised as `Err(HostError_...)`); what the six host
tools do is a small imitation of CLAT's, enough for a tool's logic. HTTP is not imitated: patch your own function
that calls `clat_http` (unittest.mock.patch) in a test of an HTTP tool.
"""

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any, Callable, Optional

HERE = Path(__file__).resolve().parent


def _componentize_py() -> str:
    for candidate in (HERE / ".venv/bin/componentize-py", os.environ.get("CLAT_COMPONENTIZE_PY"), shutil.which("componentize-py")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    raise RuntimeError(
        "componentize-py is not installed (the bindings of the contract come from it, as the build's do): run "
        "`python3 -m venv .venv && .venv/bin/pip install componentize-py==0.25.1` in the project"
    )


def _world() -> str:
    manifest = tomllib.loads((HERE / "clat-plugin.toml").read_text())
    return "clat-plugin-http" if manifest.get("capabilities", {}).get("http") else "clat-plugin"


class MockHost:
    """CLAT's host services for a unit test; `install()` makes the one instance."""

    def __init__(self, types: Any, componentize_py_types: Any):
        self.types = types
        self._result = componentize_py_types
        self.reset()

    @classmethod
    def install(cls) -> "MockHost":
        """Generate the bindings, put them on sys.path and point `host_services` here (once per process)."""
        if "wit_world" in sys.modules and hasattr(sys.modules["wit_world"], "_clat_mock_host"):
            return sys.modules["wit_world"]._clat_mock_host
        out = Path(tempfile.mkdtemp(prefix="clat-bindings-"))
        atexit.register(shutil.rmtree, out, ignore_errors=True)
        subprocess.run(
            [_componentize_py(), "-d", str(HERE / "wit"), "-w", _world(), "bindings", str(out)],
            check=True, capture_output=True,
        )
        sys.path.insert(0, str(out))
        import componentize_py_types
        import wit_world
        from wit_world.imports import host_services

        try:
            from wit_world.imports import types
        except ImportError:  # the world clat-plugin-http prefixes our types
            from wit_world.imports import artec_clat_types as types
        host = cls(types, componentize_py_types)
        host_services.call_tool = host.call_tool
        host_services.get_context = host.get_context
        host_services.create_message = host.create_message
        host_services.elicit = host.elicit
        host_services.log = host.log
        wit_world._clat_mock_host = host
        return host

    def reset(
        self,
        files: Optional[dict] = None,
        deny: Optional[list] = None,
        model: Optional[Callable[[str], str]] = None,
        answers: Optional[dict] = None,
        commands: Optional[dict] = None,
    ) -> None:
        """A fresh host: `files` (path -> text), `deny` (host tool names such as "write-file"), `model(prompt)`,
        `answers` (field -> value; None: the user declines), `commands` (command -> (exit_code, stdout, stderr))."""
        self.files = dict(files or {})
        self.denied = set(deny or [])
        self.model = model or (lambda prompt: f"(a model's answer to: {prompt})")
        self.answers = answers
        self.commands = dict(commands or {})
        self.calls: list = []
        self.logs: list = []
        self.messages: list = []
        self.forms: list = []

    def call(self, plugin: Any, tool: str, arguments: dict) -> tuple:
        """Call one tool of `plugin` as CLAT would (JSON arguments): (its text, whether it is an error)."""
        output = plugin.call_tool(tool, json.dumps(arguments))
        text = "\n".join(b.value for b in output.content if isinstance(b, self.types.ContentBlock_Text))
        return text, output.is_error

    def _error(self, kind: str, message: Optional[str] = None) -> Exception:
        variant = getattr(self.types, f"HostError_{kind}")
        return self._result.Err(variant(message) if message is not None else variant())

    def _text(self, text: str, is_error: bool = False) -> Any:
        return self.types.ToolOutput(content=[self.types.ContentBlock_Text(text)], structured=None, is_error=is_error)

    def _file(self, path: str) -> str:
        if path not in self.files:
            raise self._error("Failed", f"cannot read {path}: no such file")
        return self.files[path]

    def call_tool(self, tool: Any, arguments: str) -> Any:
        name = tool.name.lower().replace("_", "-")
        args = json.loads(arguments)
        self.calls.append((name, args))
        if name in self.denied:
            raise self._error("Denied", f"{name} was denied (the mock host denies it)")
        if name == "read-file":
            lines = self._file(args["path"]).split("\n")
            start, end = args.get("start_line") or 1, args.get("end_line") or len(lines)
            return self._text("\n".join(lines[start - 1 : end]))
        if name == "write-file":
            self.files[args["path"]] = args["content"]
            return self._text(f"wrote {len(args['content'].encode())} bytes to {args['path']}")
        if name == "edit-file":
            before, old = self._file(args["path"]), args["old_string"]
            count = before.count(old)
            if count == 0:
                raise self._error("Failed", f"old_string was not found in {args['path']}")
            if count > 1 and not args.get("replace_all"):
                raise self._error("Invalid", f"old_string occurs {count} times in {args['path']}; set replace_all")
            self.files[args["path"]] = before.replace(old, args["new_string"], -1 if args.get("replace_all") else 1)
            replaced = count if args.get("replace_all") else 1
            return self._text(f"replaced {replaced} occurrence{'' if replaced == 1 else 's'} in {args['path']}")
        if name == "list-files":
            prefix = (args.get("path") or "").rstrip("/")
            return self._text("\n".join(sorted(p for p in self.files if not prefix or p.startswith(prefix + "/"))))
        if name == "search":
            pattern = re.escape(args["pattern"]) if args.get("literal") else args["pattern"]
            found = [
                f"{path}:{i}:{line}"
                for path, text in sorted(self.files.items())
                for i, line in enumerate(text.split("\n"), 1)
                if re.search(pattern, line)
            ]
            return self._text("\n".join(found))
        if name == "run-command":
            if args["command"] not in self.commands:
                raise self._error("Failed", f"no outcome set for the command {args['command']!r} (reset(commands=...))")
            code, stdout, stderr = self.commands[args["command"]]
            shown = f"exit code {code}" + (f"\n--- stdout ---\n{stdout}" if stdout else "") + (
                f"\n--- stderr ---\n{stderr}" if stderr else ""
            )
            return self._text(shown, is_error=code != 0)
        raise self._error("Unsupported", f"host tool {name} is not registered")

    def get_context(self) -> Any:
        t = self.types
        run = t.RunSnapshot(
            run_id="mock-run", mode=t.PermissionMode.ASK, remaining_ms=120_000, sampling_requests_left=64,
            sampling_tokens_left=1_000_000,
        )
        return t.ContextSnapshot(project_root="/project", project_name="project", session_id="mock-session", run=run)

    def create_message(self, request: Any) -> Any:
        self.messages.append(request)
        prompt = "\n".join(m.text for m in request.messages)
        answer = str(self.model(prompt))
        return self.types.SamplingResult(
            role=self.types.Role.ASSISTANT, text=answer, model="mock-model", stop_reason="end_turn",
            input_tokens=len(prompt), output_tokens=len(answer),
        )

    def elicit(self, form: Any) -> Any:
        self.forms.append(form)
        t = self.types
        if self.answers is None:
            return t.ElicitationResult_Declined()
        values = {bool: t.FieldValue_Boolean, int: t.FieldValue_Number, float: t.FieldValue_Number}
        answers = [
            t.FieldAnswer(name=name, value=values.get(type(value), t.FieldValue_Text)(value))
            for name, value in self.answers.items()
        ]
        return t.ElicitationResult_Accepted(answers)

    def log(self, level: Any, message: str) -> None:
        self.logs.append((level, message))
