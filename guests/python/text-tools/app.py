"""Small tools over text, as an outside author writes a component in Python: the world's exported functions as
methods of `WitWorld`, with the values componentize-py gives them (records as dataclasses, enums and flags as Python
enums, variants as one class per case); a `result`'s err is the `Err` the function raises."""

import re

import wit_world
from componentize_py_types import Err


class WitWorld(wit_world.WitWorld):
    def stats(self, text: str) -> wit_world.Stats:
        words = text.split()
        longest = max(words, key=len) if words else None
        return wit_world.Stats(words=len(words), lines=len(text.split("\n")) if text else 0, longest=longest)

    def recase(self, text: str, style: wit_world.CaseStyle) -> str:
        if style == wit_world.CaseStyle.UPPER:
            return text.upper()
        if style == wit_world.CaseStyle.LOWER:
            return text.lower()
        return re.sub(r"\w\S*", lambda m: m.group(0)[0].upper() + m.group(0)[1:].lower(), text)

    def find(self, text: str, pattern: wit_world.Pattern, limit: int | None) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        at = 0
        while at < len(text) and (limit is None or len(found) < limit):
            if isinstance(pattern, wit_world.Pattern_Literal):
                length = len(pattern.value) if pattern.value and text.startswith(pattern.value, at) else 0
            elif isinstance(pattern, wit_world.Pattern_AnyDigit):
                length = 1 if text[at].isdigit() else 0
            else:
                length = 1 if text[at] in pattern.value else 0
            if length:
                found.append((at, at + length))
                at += length
            else:
                at += 1
        return found

    def split(self, text: str, separator: str, trim: wit_world.Trim) -> list[str]:
        if not separator:
            raise Err("the separator is empty")
        pieces = text.split(separator)
        if wit_world.Trim.START in trim:
            pieces = [p.lstrip() for p in pieces]
        if wit_world.Trim.END in trim:
            pieces = [p.rstrip() for p in pieces]
        return pieces
