"""Readable, HTML-safe renderings of byte strings for tables, trees and plots."""

from __future__ import annotations

import html

_NAMED = {
    ord(" "): "␣",
    ord("\n"): "\\n",
    ord("\t"): "\\t",
    ord("\r"): "\\r",
    ord("\\"): "\\\\",  # a backslash is doubled, so "\\n" (two bytes) never reads as a newline
}


def escape_bytes(data: bytes, *, visible_space: bool = False) -> str:
    """Render bytes as readable text: printable UTF-8 as is, the rest as escapes.

    Valid UTF-8 characters that are printable are kept; newline, tab and carriage
    return become ``\\n``, ``\\t``, ``\\r`` and a backslash ``\\\\``; every other byte (control bytes,
    bytes of an incomplete or invalid UTF-8 sequence) becomes ``\\xNN``.

    Args:
        data: the bytes to render.
        visible_space: draw spaces as ``␣`` so that leading spaces show.

    Returns:
        A plain string (not HTML-escaped; see `html_bytes`).
    """
    out: list[str] = []
    i = 0
    n = len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            if b == 0x20:
                out.append("␣" if visible_space else " ")
            elif b in _NAMED:
                out.append(_NAMED[b])
            elif 0x20 < b < 0x7F:
                out.append(chr(b))
            else:
                out.append(f"\\x{b:02x}")
            i += 1
            continue
        width = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 0
        chunk = data[i : i + width] if width else b""
        try:
            ch = chunk.decode("utf-8") if len(chunk) == width and width else None
        except UnicodeDecodeError:
            ch = None
        if ch is not None and ch.isprintable():
            out.append(ch)
            i += width
        else:
            out.append(f"\\x{b:02x}")
            i += 1
    return "".join(out)


def html_bytes(data: bytes, *, visible_space: bool = True) -> str:
    """`escape_bytes`, then HTML-escaped, safe to embed in markup."""
    return html.escape(escape_bytes(data, visible_space=visible_space), quote=True)


def byte_label(byte: int | None) -> str:
    """Label of one next-byte slot: a byte value, or ``EOT``/``EOS`` markers.

    Args:
        byte: 0..255 for a byte, 256 for end of token, 257 (or None) for EOS.

    Raises:
        ValueError: for any other value.
    """
    if byte is not None and (isinstance(byte, bool) or not 0 <= byte <= 257 or byte != int(byte)):
        raise ValueError(f"byte slot {byte!r} is none of 0..255 (a byte), 256 (EOT), 257 (EOS)")
    if byte is None or byte == 257:
        return "EOS"
    if byte == 256:
        return "EOT"
    return escape_bytes(bytes([byte]), visible_space=True)
