"""Bytes read as UTF-8 when they may end inside a character: what the byte-level checks share.

A context cut at a byte may stop partway through a multi-byte character. `split_utf8`
separates the complete characters from that unfinished tail, and `char_range` says
which code points the tail can still become, so that a check can try them.
"""

from __future__ import annotations

import codecs

__all__ = ["char_range", "split_utf8"]

_UTF8_DECODER = codecs.getincrementaldecoder("utf-8")


def split_utf8(data: bytes) -> tuple[str, bytes] | None:
    """`(text, tail)`: the decoded complete characters and the bytes of an unfinished one.

    None if `data` is not a prefix of any valid UTF-8 string.
    """
    decoder = _UTF8_DECODER()
    try:
        text = decoder.decode(data, final=False)
    except UnicodeDecodeError:
        return None
    return text, decoder.getstate()[0]


def char_range(tail: bytes) -> range:
    """The code points whose UTF-8 encoding starts with the unfinished `tail`.

    The range may hold surrogates (U+D800 to U+DFFF), which have no encoding: callers
    skip them.
    """
    lead = tail[0]
    width = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
    value = lead & (0x7F >> width)
    for byte in tail[1:]:
        value = (value << 6) | (byte & 0x3F)
    missing = 6 * (width - len(tail))
    low = max(value << missing, (0x80, 0x800, 0x10000)[width - 2])
    high = min(((value + 1) << missing) - 1, 0x10FFFF)
    return range(low, high + 1)
