"""The edit loop's runtime module for a Python project (`clat plugin call | test`): componentize-py builds it once
per toolchain, contract and set of import lines (those of modules it holds from the start aside), with the
project's `app` imported then, so every module the project uses is in the runtime. At each call the project's own modules are dropped and imported again from its
sources beside the runtime (`/plugin/dev-src`, the plugin's own read-only directory), so an edit is seen without
componentizing again. `app.Plugin` answers the contract."""

import importlib
import os
import sys

import app  # noqa: F401  (imported at build time: what it imports is in the runtime)
from wit_world import exports

# Standard-library modules a tool commonly imports, in the runtime from the start, so that importing one of them is
# an edit like any other (clat fills this in from its `PYTHON_RUNTIME_MODULES`).
{{runtime_modules}}

SOURCES = "/plugin/dev-src"


def _project_modules():
    names = set()
    for entry in os.listdir(SOURCES):
        if entry.endswith(".py"):
            names.add(entry[:-3])
        elif os.path.isfile(os.path.join(SOURCES, entry, "__init__.py")):
            names.add(entry)
    return names


def _project_plugin():
    names = _project_modules()
    for name in list(sys.modules):
        if name.split(".")[0] in names:
            del sys.modules[name]
    if SOURCES not in sys.path:
        sys.path.insert(0, SOURCES)
    return importlib.import_module("app").Plugin()


class Plugin(exports.Plugin):
    def list_tools(self):
        return _project_plugin().list_tools()

    def call_tool(self, name, arguments):
        return _project_plugin().call_tool(name, arguments)

    def context_changed(self, snapshot):
        return _project_plugin().context_changed(snapshot)
