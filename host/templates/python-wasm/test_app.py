"""Unit tests of the tools, without building a component: `python3 -m unittest` (with the project's .venv, where
componentize-py is). The cases in cases.jsonl run the built component through CLAT (`clat plugin test .`)."""

import json
import unittest

from clat_testing import MockHost

host = MockHost.install()  # before importing app: the contract's bindings, with a mock host behind them

import app  # noqa: E402


class HelloTest(unittest.TestCase):
    def setUp(self):
        host.reset()

    def test_greets_by_name(self):
        self.assertEqual(host.call(app.Plugin(), "hello", {"name": "Ada"}), ("Hello, Ada!", False))

    def test_the_schema_comes_from_the_dataclass(self):
        spec = next(t for t in app.Plugin().list_tools() if t.name == "hello")
        schema = json.loads(spec.input_schema)
        self.assertEqual(schema["required"], ["name"])
        self.assertEqual(schema["properties"]["name"], {"type": "string", "description": "Who to greet."})
        self.assertTrue(spec.annotations.read_only)


if __name__ == "__main__":
    unittest.main()
