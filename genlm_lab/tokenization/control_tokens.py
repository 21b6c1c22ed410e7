"""`control_token_ids`: the token ids that stand for control markers, not text, per the tokenizer.

A constraint (regex, grammar, JSON schema) decides which tokens may come
next by their bytes; a token that marks structure rather than spelling text
(BOS, a chat marker, Gemma's `<unused0>` placeholders, Qwen's `<tool_call>`)
must never be picked because its *name* happens to fit the grammar. What the
tokenizer declares:

* special tokens (`all_special_ids`, added tokens flagged `special`);
* added tokens that are not flagged special but are written as a markup tag
  `<...>`. The tokenizer matches an added token verbatim, before its model
  sees the text, so such a token is a marker whose name is its text. This is
  llguidance's rule for Hugging Face tokenizers too, so a grammar mask and
  llguidance's agree on them. Added tokens that are plain text (Gemma's
  whitespace runs `▁▁`, `\\n\\n`) stay text.

The bytes of these tokens are unchanged (`decode_vocab` keeps their text, as
genlm-backend does): only which tokens a constraint may allow changes. The
same text is still reachable through ordinary tokens (`<`, `unused`, `0>`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["control_token_ids", "is_markup_tag"]


def is_markup_tag(text: str) -> bool:
    """Whether an added token's text is written as a tag: `<` ... `>` with something inside."""
    return len(text) > 2 and text[0] == "<" and text[-1] == ">"


def control_token_ids(tokenizer: Any) -> list[int]:
    """Sorted ids the tokenizer marks special, plus its added tokens written as `<...>` tags.

    Args:
        tokenizer: a Hugging Face tokenizer (anything with `all_special_ids`
            and/or `added_tokens_decoder`; others give what they declare).
    """
    ids = {int(i) for i in getattr(tokenizer, "all_special_ids", None) or ()}
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    for i, token in added.items():
        text = str(getattr(token, "content", token))
        if getattr(token, "special", False) or is_markup_tag(text):
            ids.add(int(i))
    return sorted(ids)
