"""GBNF grammars for llama.cpp from the small JSON schemas the prompts use, so local replies always parse.

The grammar fixes the exact layout the few-shot examples show (`{"key": value, ...}` with ", " and
": " separators, keys in schema order), so a small model that copies the examples is never pushed
off its format, and bounds every string and list: a reply can neither ramble nor be cut off
mid-JSON by the token limit. Understood: OBJECT (properties, all emitted in order), ARRAY (items,
minItems, maxItems; maxItems 0 is the empty list), STRING (minLength, maxLength, enum, nullable, and our own
"format": "sentence": one sentence, no ". " inside it, ending at an optional full stop), NULL, and anyOf
(alternatives); types are case-insensitive, as Gemini writes them upper-case.
"""
from __future__ import annotations

import json
import re
from typing import Any

GRAMMAR_VERSION = "1"  # part of the prompt versions that use these grammars: a change here is a new prompt
DEFAULT_MAX_ITEMS = 8
DEFAULT_MAX_LENGTH = 200
CHAR = r'[^"\\\x00-\x1f]'
SENTENCE_CHAR = r'[^".\\\x00-\x1f]'
WORD_CHAR = r'[^". \\\x00-\x1f]'


class SchemaError(ValueError):
    """A schema this converter does not handle; a programming error, not a model failure."""


def _literal(text: str) -> str:
    return json.dumps(text)  # a GBNF string literal uses JSON's escapes


class _Builder:
    def __init__(self) -> None:
        self.rules: dict[str, str] = {}

    def rule(self, name: str, body: str) -> str:
        name = re.sub(r"[^a-zA-Z0-9-]", "-", name)  # GBNF rule names allow letters, digits and dashes only
        base, n = name, 1
        while name in self.rules and self.rules[name] != body:
            n += 1
            name = f"{base}{n}"
        self.rules[name] = body
        return name

    def value(self, schema: dict[str, Any], name: str) -> str:
        kind = str(schema.get("type", "")).lower()
        if "anyOf" in schema:
            options = [self.value(option, f"{name}-{i}") for i, option in enumerate(schema["anyOf"])]
            if not options:
                raise SchemaError(f"anyOf at {name} has no alternatives")
            body = " | ".join(options)
        elif "enum" in schema:
            body = self.enum(schema["enum"])
        elif kind == "null":
            body = '"null"'
        elif kind == "object":
            body = self.object(schema, name)
        elif kind == "array":
            body = self.array(schema, name)
        elif kind == "string":
            body = self.string(schema)
        else:
            raise SchemaError(f"unsupported schema type {schema.get('type')!r} at {name}")
        if schema.get("nullable"):
            body = f"( {body} ) | \"null\""
        return self.rule(name, body)

    def object(self, schema: dict[str, Any], name: str) -> str:
        props = schema.get("properties") or {}
        if not props:
            raise SchemaError(f"object {name} has no properties")
        parts = []
        for i, (key, sub) in enumerate(props.items()):
            sep = "" if i == 0 else '", " '
            parts.append(f"{sep}{_literal(json.dumps(key) + ': ')} {self.value(sub, f'{name}-{key}')}")
        return '"{" ' + " ".join(parts) + ' "}"'

    def array(self, schema: dict[str, Any], name: str) -> str:
        low = int(schema.get("minItems", 0))
        high = int(schema.get("maxItems", DEFAULT_MAX_ITEMS))
        if not 0 <= low <= high:
            raise SchemaError(f"array {name} has bounds {low}..{high}")
        if high == 0:
            return '"[]"'
        items_schema = schema.get("items") or {}
        if schema.get("uniqueItems") and "enum" in items_schema:
            return self.ordered_subset(items_schema["enum"], low, name)
        item = self.value(items_schema, f"{name}-item")
        rest = f'( ", " {item} ){{{max(low - 1, 0)},{high - 1}}}'
        items = f"{item} {rest}"
        return f'"[" ( {items} ) "]"' if low >= 1 else f'"[" ( {items} )? "]"'

    @staticmethod
    def enum(options: list[Any]) -> str:
        if not options:
            raise SchemaError("empty enum")
        return " | ".join(_literal(json.dumps(o)) for o in options)

    def ordered_subset(self, options: list[Any], low: int, name: str) -> str:
        """Distinct options in the enum's order: a selection can name each option once and never repeat
        itself, which a small model otherwise does until the list is full."""
        if low > 1:
            raise SchemaError(f"an ordered subset at {name} supports minItems 0 or 1")
        tail = ""  # rule for "the rest of the list, from option i on", built from the last option back
        for i in range(len(options) - 1, -1, -1):
            literal = _literal(json.dumps(options[i]))
            this = f"{literal} ( \", \" {tail} )?" if tail else literal
            tail = self.rule(f"{name}-from{i}", f"{this} | {tail}" if tail else this)
        return f'"[" {tail} "]"' if low == 1 else f'"[" {tail}? "]"'

    def string(self, schema: dict[str, Any]) -> str:
        low = int(schema.get("minLength", 0))
        high = int(schema.get("maxLength", DEFAULT_MAX_LENGTH))
        if not 0 <= low <= high:
            raise SchemaError(f"string bounds {low}..{high}")
        char = self.rule("char", f'{CHAR} | "\\\\" ["\\\\/bfnrt]')
        if schema.get("format") == "sentence":
            # A full stop only inside a word ("0.5", "e.g"): the sentence cannot go on past its end.
            inner = self.rule("sentence-char", f'{SENTENCE_CHAR} | "\\\\" ["\\\\/bfnrt] | "." {WORD_CHAR}')
            return f'"\\"" {inner}{{{low},{high}}} "."? "\\""'
        return f'"\\"" {char}{{{low},{high}}} "\\""'


def gbnf(schema: dict[str, Any]) -> str:
    """The GBNF grammar (root rule `root`) accepting exactly the JSON layout of `schema`, nothing around it.

    (An optional leading space, as in the examples' "Functions: {", was tried: on 90 benchmark queries
    PtR's recall with the stubs it gave fell on 4 of 6 subsets, so the reply starts at "{".)"""
    builder = _Builder()
    top = builder.value(schema, "reply")
    lines = [f"root ::= {top}"] + [f"{name} ::= {body}" for name, body in builder.rules.items()]
    return "\n".join(lines) + "\n"
