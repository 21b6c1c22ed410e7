"""The JSON mask is exact on small schemas: a prefix is live iff some valid document extends it.

Ground truth by brute force: every JSON text over a small alphabet up to a
length bound that `jsonschema` accepts (keys unique), generated without the
mask; the live prefixes are their prefixes. From each live prefix, each
byte of the alphabet must be allowed exactly when it leads to a live prefix,
and EOS exactly at a valid document. Prefixes are tested up to `SLACK` bytes
short of the bound. Where the mask allows a byte that no enumerated document
takes (a longer number, another key), a witness is searched for: a completion
that `jsonschema` accepts, found by a bounded depth-first walk.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from functools import cache

import pytest

from genlm_lab.control import JsonSchema

CHARS = "ab"  # string contents and key names
DIGITS = "01"
ALPHABET = sorted(set(b'{}[]:,"-' + (CHARS + DIGITS).encode()))
STRING_BYTES = set(b'"' + CHARS.encode())
SLACK = 7


@cache
def strings(n: int) -> tuple[str, ...]:
    """Every JSON string over CHARS of length <= n."""
    out = []
    for k in range(max(n - 1, 0)):
        out += ['"' + "".join(p) + '"' for p in itertools.product(CHARS, repeat=k)]
    return tuple(out)


@cache
def numbers(n: int) -> tuple[str, ...]:
    """Every JSON integer over DIGITS (and a minus) of length <= n."""
    out = []
    for k in range(1, n + 1):
        for p in itertools.product(DIGITS, repeat=k):
            text = "".join(p)
            if len(text) > 1 and text[0] == "0":
                continue
            out.append(text)
            if k < n:
                out.append("-" + text)
    return tuple(out)


def _seqs(n: int, item) -> list[str]:
    """Comma-separated non-empty sequences of `item(m)` texts, total length <= n."""
    out = []
    for v in item(n):
        out.append(v)
        out += [v + "," + rest for rest in _seqs(n - len(v) - 1, item)]
    return out


def texts(schema, n: int) -> list[str]:
    """A superset of the documents valid under `schema` (this test's fragment) with length <= n,
    over the alphabet: written from the schema, never from the mask."""
    if n <= 0 or schema is False:
        return []
    if not isinstance(schema, dict) or not schema:
        return _any(n)
    if "anyOf" in schema:
        return sorted({t for s in schema["anyOf"] for t in texts(s, n)})
    kind = schema.get("type")
    if kind == "integer":
        return list(numbers(n))
    if kind == "string":
        return list(strings(n))
    if kind == "array":
        item = schema.get("items", True)
        return ["[]"] * (n >= 2) + ["[" + s + "]" for s in _seqs(n - 2, lambda m: texts(item, m))]
    if kind == "object":
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)

        def members(m: int) -> list[str]:
            out = []
            for key in strings(m):
                sub = props.get(key[1:-1], extra)
                out += [key + ":" + v for v in texts(sub, m - len(key) - 1)]
            return out

        return ["{}"] * (n >= 2) + ["{" + s + "}" for s in _seqs(n - 2, members)]
    return _any(n)


@cache
def _any(n: int) -> list[str]:
    return sorted(
        {*strings(n), *numbers(n), *texts({"type": "array"}, n), *texts({"type": "object"}, n)}
    )


INT, CHAR = {"type": "integer"}, {"type": "string", "maxLength": 1}
SMALL = {
    "two required, closed": (
        {"type": "object", "properties": {"a": INT, "b": CHAR}, "required": ["a", "b"],
         "additionalProperties": False}, 19),
    "one required, open": (
        {"type": "object", "properties": {"a": INT}, "required": ["a"]}, 13),
    "array of objects": (
        {"type": "array", "maxItems": 2, "items": {"type": "object", "properties": {"a": INT,
         "b": INT}, "required": ["a"], "additionalProperties": False}}, 17),
    "nested required": (
        {"type": "object", "required": ["a"], "additionalProperties": False, "properties": {
            "a": {"type": "object", "properties": {"b": INT}, "required": ["b"],
                  "additionalProperties": False}}}, 16),
    "anyOf of closed objects": (
        {"anyOf": [
            {"type": "object", "properties": {"a": INT}, "required": ["a"],
             "additionalProperties": False},
            {"type": "object", "properties": {"b": CHAR, "ab": INT}, "required": ["b"],
             "additionalProperties": False}]}, 17),
    "maxProperties leaves room for the required key only": (
        {"type": "object", "properties": {"a": INT, "b": INT}, "required": ["a"],
         "maxProperties": 1}, 13),
}  # fmt: skip


_PREFERRED = b'}]",:ab-01{['


def witness(js: JsonSchema, prefix: bytes, depth: int = 30, budget: list | None = None):
    """A document extending `prefix` that `js.validate` (jsonschema) accepts, found by walking
    the mask depth first (closing bytes first); None if none turns up within the bounds."""
    budget = [3000] if budget is None else budget
    if budget[0] <= 0:
        return None
    budget[0] -= 1
    mask = js.allowed(list(prefix))
    if mask[256] and js.validate(prefix):
        return prefix
    if depth == 0:
        return None
    order = b'"ab' if prefix.count(b'"') % 2 else _PREFERRED  # in a string: close it first
    for byte in order:
        if mask[byte]:
            found = witness(js, prefix + bytes([byte]), depth - 1, budget)
            if found is not None:
                return found
    return None


@pytest.mark.parametrize("name", SMALL)
def test_live_prefixes_are_exactly_those_of_valid_documents(name):
    schema, bound = SMALL[name]
    js = JsonSchema(schema, max_whitespace=0, key_order="any", strict=False)
    documents = {t.encode() for t in texts(schema, bound) if js.validate(t)}
    assert len(documents) >= 5, name
    live = {d[:k] for d in documents for k in range(len(d) + 1)}
    tested = refused = witnessed = 0
    for prefix in sorted(live, key=len):
        if len(prefix) > bound - SLACK:
            continue
        mask = js.allowed(list(prefix))
        assert bool(mask[256]) == (prefix in documents), (name, prefix, "EOS")
        in_string = prefix.count(b'"') % 2 == 1
        for byte in ALPHABET:
            if in_string and byte not in STRING_BYTES:
                continue  # any character may go in a string: only CHARS are enumerated
            longer = prefix + bytes([byte])
            if longer in live:
                assert mask[byte], (name, prefix, bytes([byte]), "a valid document goes on")
            elif mask[byte]:
                assert witness(js, longer) is not None, (name, longer, "allowed but dead")
                witnessed += 1
            else:
                refused += 1
            tested += 1
    assert tested > 80 and refused > 20, (tested, refused, witnessed)


def test_repeated_keys_and_early_closes_are_refused_in_any_order():
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
              "rank": {"type": "integer"}}, "required": ["city", "rank"],
              "additionalProperties": False}  # fmt: skip
    js = JsonSchema(schema, key_order="any", line_breaks=2, strict=False)

    def allowed(prefix: str, char: str) -> bool:
        return bool(js.allowed(list(prefix.encode()))[ord(char)])

    assert not allowed('{"city": "x"', "}")  # rank missing
    assert not allowed('{"city": "x", "', "c")  # city again
    assert allowed('{"city": "x", "', "r")
    assert allowed('{"rank": 1, "city": "x"', "}")  # any order
    assert not allowed('{"rank": 1, "city": "x"', ",")  # no key left to add
    assert not asyncio.run(js.prefix(list(b'{"rank": 1, "rank"'))) == 0
    assert js.explain(b'{"city": "a", "city": "b", "rank": 1}') == (
        "the key 'city' appears twice in one object"
    )


def test_open_objects_refuse_only_the_repeated_key_itself():
    js = JsonSchema(
        {"type": "object", "required": ["id"]}, key_order="any", line_breaks=2, strict=False
    )
    assert js.allowed(list(b'{"id": 1, "i'))[ord("d")]  # "idx" is a new key
    assert not js.allowed(list(b'{"id": 1, "id'))[ord('"')]
    assert js.allowed(list(b'{"id": 1, "i\\"d'))[ord('"')]  # the key 'i"d', escaped
    assert not js.allowed(list(b'{"i\\"d": 1, "i\\"d'))[ord('"')]
    assert not js.allowed(list(b'{"x": 1'))[ord("}")]


def _in_order(text: str) -> bool:
    """Every object's keys come in the order "a", "b" (the SMALL schemas' property order)."""
    ordered = True

    def hook(pairs):
        nonlocal ordered
        keys = [k for k, _ in pairs]
        ordered &= keys == sorted(keys, key="ab".index)
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return ordered


@pytest.mark.parametrize("name", ["two required, closed", "array of objects", "nested required"])
def test_the_default_mask_is_exact_on_documents_in_the_schema_order(name):
    """With the defaults (keys in the schema's order, strict), a prefix is live iff some valid
    document with its keys in that order extends it."""
    schema, bound = SMALL[name]
    js = JsonSchema(schema, max_whitespace=0)
    documents = {t.encode() for t in texts(schema, bound) if js.validate(t) and _in_order(t)}
    live = {d[:k] for d in documents for k in range(len(d) + 1)}
    refused = 0
    for prefix in sorted(live, key=len):
        if len(prefix) > bound - SLACK:
            continue
        mask = js.allowed(list(prefix))
        assert bool(mask[256]) == (prefix in documents), (name, prefix, "EOS")
        in_string = prefix.count(b'"') % 2 == 1
        for byte in ALPHABET:
            if in_string and byte not in STRING_BYTES:
                continue
            longer = prefix + bytes([byte])
            if longer in live:
                assert mask[byte], (name, prefix, bytes([byte]))
            elif mask[byte]:
                found = witness(js, longer)
                assert found is not None and _in_order(found.decode()), (name, longer)
            else:
                refused += 1
    assert refused > 20


def test_pattern_property_keys_live_exactly_while_some_allowed_key_extends_them():
    """additionalProperties false with patternProperties: brute force over keys of up to 3
    characters of "x-ai1d": a key's bytes are allowed iff it is the start of a key the
    final check takes ("id", or one starting "x-"), and refused at the first byte that is not."""
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}, "[0-9]$": {"type": "boolean"}},
        "additionalProperties": False,
    }
    js = JsonSchema({**schema, "patternProperties": {"^x-": {"type": "string"}}})
    takes = JsonSchema(schema)  # "[0-9]$": every key may still end in a digit
    checked = 0
    for n in range(1, 4):
        for chars in itertools.product("x-ai1d", repeat=n):
            key = "".join(chars)
            text = b'{"' + key.encode()
            live = "id".startswith(key) or "x-".startswith(key) or key.startswith("x-")
            kept = all(js.allowed(list(text[:i]))[text[i]] for i in range(len(text)))
            assert kept == live, key
            assert all(takes.allowed(list(text[:i]))[text[i]] for i in range(len(text))), key
            closed = json.dumps({key: True}).encode()
            path = [takes.allowed(list(closed[:i]))[closed[i]] for i in range(len(closed))]
            assert takes.validate(closed) == (all(path) and takes.allowed(list(closed))[-1]), key
            checked += 1
    assert checked == 6 + 36 + 216


def test_filtered_keys_over_tokens_agree_with_the_bytes():
    """Over a vocabulary of multi-byte tokens, the key mask of a patternProperties object
    (read natively for tokens without a quote) allows a token iff its bytes pass the
    byte-level constraint one by one."""
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
    vocab = [b"{", b'"', b"x", b"-", b"x-", b"id", b"y", b"a", b'a"', b'x-a":', b":", b"1",
             b'"y', b"}", b'":', b"ab", b", ", b"\\", b'"x']  # fmt: skip
    byte_level = JsonSchema(schema)
    tokens = byte_level._coerce_tokens(vocab, None)
    contexts = [[0], [0, 1], [0, 1, 2], [0, 1, 4], [0, 1, 4, 7], [0, 1, 5], [0, 1, 6]]
    contexts += [[0, 1, 5, 14, 11, 16, 1], [0, 18]]
    compared = 0
    for context in contexts:
        prefix = b"".join(vocab[i] for i in context)
        mask = tokens.engine.mask(tuple(context))
        for i, token in enumerate(vocab):
            text = prefix + token
            expected = all(
                byte_level.allowed(list(text[:k]))[text[k]] for k in range(len(prefix), len(text))
            )
            assert bool(mask[i]) == expected, (prefix, token)
            compared += 1
    assert compared == len(contexts) * len(vocab)


PIECES = ["i", "d", "x", "-", "a", "é", "\\u0069", "\\u0078", "\\u002D", "\\\\", "\\n", "\\ud83d\\ude00"]  # fmt: skip


def test_unescaped_prefix_decodes_every_start_of_a_key_as_json_does():
    """Against json.loads: a whole key text decodes to its UTF-8 bytes, and every start of
    it to a prefix of those (a partial escape or UTF-8 character is left out)."""
    from genlm_lab.control.constraint.json.keys import unescaped_prefix

    checked = 0
    for n in range(1, 4):
        for pieces in itertools.product(PIECES, repeat=n):
            raw = "".join(pieces).encode()
            full = json.loads(b'"' + raw + b'"').encode()
            assert unescaped_prefix(raw) == full, raw
            for k in range(len(raw)):
                assert full.startswith(unescaped_prefix(raw[:k])), (raw, k)
            checked += 1
    assert checked == 12 + 144 + 1728
    assert unescaped_prefix(b"a\\ud83d") == b"a"  # the high half waits for its low half
    assert unescaped_prefix(b"a\\ude00") is None  # a lone low surrogate


def test_a_second_key_lives_exactly_while_an_unused_key_extends_what_it_decodes_to():
    """After "id" is written, brute force over keys of up to 3 pieces (escapes included):
    each byte of the key is allowed iff what the key decodes to so far starts an unused
    name ("ab") or a key "^x-" takes; "id" again is refused at its first byte."""
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "ab": {"type": "integer"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
    js = JsonSchema(schema)
    head = b'{"id":1,"'

    def live(raw: bytes) -> bool:  # decoded by json.loads, a partial escape cut off
        for cut in range(len(raw), -1, -1):
            try:
                decoded = json.loads(b'"' + raw[:cut] + b'"')
                break
            except ValueError:
                continue
        return "ab".startswith(decoded) or "x-".startswith(decoded) or decoded.startswith("x-")

    checked = refused = 0
    for n in range(1, 4):
        for pieces in itertools.product(PIECES, repeat=n):
            text = head + "".join(pieces).encode()
            expected = all(live(text[len(head) : i + 1]) for i in range(len(head), len(text)))
            kept = all(js.allowed(list(text[:i]))[text[i]] for i in range(len(head), len(text)))
            assert kept == expected, text
            checked += 1
            refused += not kept
    assert checked == 12 + 144 + 1728 and refused > 1000


def test_a_pattern_rusts_regex_cannot_read_still_decides_a_key_when_it_closes():
    """A look-ahead gives no prefix verdict (every start is kept), but the key is still
    checked with Python's `re` at its closing quote."""
    js = JsonSchema({
        "type": "object",
        "patternProperties": {"^(?=x-)x": {"type": "integer"}},
        "additionalProperties": False,
    })  # fmt: skip
    assert js.allowed(list(b'{"y'))[ord("y")]  # no prefix verdict: kept
    assert not js.allowed(list(b'{"yy'))[ord('"')]  # "yy" is no key the pattern takes
    assert js.allowed(list(b'{"x-a'))[ord('"')]
