"""gpt-oss's tokenizer (the panel's o200k_harmony) and OpenAI's own Harmony parser over it.

openai-harmony reads the o200k_base ranks from a `.tiktoken` file, which it would
download; `harmony_encoding` writes that file from the panel's `tokenizer.json`
instead (each token's bytes through GPT-2's byte-to-character map, in id order)
and openai-harmony checks it against the file's published SHA-256, so the
reference reads exactly the vocabulary the tests give `HarmonyChat`. The
examples are genlm-control main's, where scripts/conformance_main.py saves
them (never committed here): their tests skip, saying so, where they are not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = (
    Path(__file__).resolve().parents[4]
    / ".cache/conformance/main-features/tests/potential/harmony_chat_examples.json"
)


def _char_to_byte() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet: printable Latin-1 bytes stand for themselves, the
    others for the characters from U+0100 on, in byte order."""
    own = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    out, shifted = {}, 0
    for b in range(256):
        if b in own:
            out[chr(b)] = b
        else:
            out[chr(0x100 + shifted)] = b
            shifted += 1
    return out


def write_o200k(tokenizer_json: Path, directory: Path) -> Path:
    """`o200k_base.tiktoken` (base64 of each token's bytes, its rank) from a tokenizer.json."""
    import base64

    vocab = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]["vocab"]
    to_byte = _char_to_byte()
    lines = [
        base64.b64encode(bytes(to_byte[c] for c in piece)) + b" " + str(rank).encode()
        for piece, rank in sorted(vocab.items(), key=lambda item: item[1])
    ]
    path = directory / "o200k_base.tiktoken"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def harmony_encoding(tokenizer_dir: Path, directory: Path) -> Any:
    """openai-harmony's gpt-oss encoding, read from files written into `directory`."""
    harmony = pytest.importorskip("openai_harmony", reason="openai-harmony is a test tool")
    write_o200k(tokenizer_dir / "tokenizer.json", directory)
    before = os.environ.get("TIKTOKEN_ENCODINGS_BASE")
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(directory)
    try:
        return harmony.load_harmony_encoding(harmony.HarmonyEncodingName.HARMONY_GPT_OSS)
    finally:
        if before is None:
            del os.environ["TIKTOKEN_ENCODINGS_BASE"]
        else:
            os.environ["TIKTOKEN_ENCODINGS_BASE"] = before


def parse_with_openai_harmony(encoding: Any, ids: list[int]) -> tuple[list[tuple], tuple | None]:
    """openai-harmony's streaming parse of a turn's ids: its finished messages as
    (channel, recipient, text), and the open one's (channel, text) or None."""
    from openai_harmony import Role, StreamableParser, StreamState

    # A turn that writes its own <|start|> is read from a message start; otherwise the
    # prompt's <|start|>assistant is implied.
    parser = StreamableParser(
        encoding,
        role=None
        if ids[:1] == [encoding.encode("<|start|>", allowed_special="all")[0]]
        else Role.ASSISTANT,
    )
    for token_id in ids:
        parser.process(token_id)
    done = [(m.channel, m.recipient, "".join(c.text for c in m.content)) for m in parser.messages]
    if parser.state == StreamState.CONTENT:
        return done, (parser.current_channel, parser.current_content)
    return done, None
