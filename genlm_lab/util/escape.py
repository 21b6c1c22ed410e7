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


def escape(x: int | bytes | str) -> str:
    """genlm-bytes' display form of a byte, byte string or text: spaces drawn as ``␣``.

    A single byte (an int 0..255) or bytes goes through `escape_bytes`; text
    is encoded as UTF-8 first.
    """
    if isinstance(x, str):
        x = x.encode("utf-8")
    elif isinstance(x, int) and not isinstance(x, bool):
        x = bytes([x])
    return escape_bytes(bytes(x), visible_space=True)


def format_byte(b: object) -> str:
    """A byte as Python writes it (``b'A'``); anything else (256, 257, ...) as its str."""
    try:
        value = int(b.__index__())  # type: ignore[attr-defined]
        if 0 <= value <= 255:
            return repr(bytes([value]))
    except Exception:  # not an int-like: shown as is (genlm-bytes does the same)
        pass
    return str(b)


def format_table(rows: list, headings: list | None = None) -> str:
    """An HTML table of `rows` (lists of cells, shown with `str`) under `headings`."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headings or ())
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
