"""`TokenizerReport`: what a user checks before trusting a new model's tokenizer.

It gathers, in one object, how `decode_vocab` read the vocabulary (strategy,
size, special and unmapped ids), the BOS/EOS tokens, and a round-trip verdict
on multilingual sample text: do the token bytes give back the text, and where
they do not, is it the tokenizer's own doing (a normaliser, a dummy-prefix
space, a character it cannot spell) or a decoding error of ours? One data form
(`rows()`), two renderings: plain text (`str()`, the doctor) and HTML
(`_repr_html_`, notebooks).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from genlm_lab.tokenization._source import decode_text, encode_text, tokenizer_name
from genlm_lab.tokenization.vocab import VocabDecoding, inspect_vocab

__all__ = ["REPORT_SAMPLES", "RoundTrip", "TokenizerReport"]

#: Sample text of the round-trip verdict: scripts, accents, emoji, whitespace, code.
REPORT_SAMPLES: dict[str, str] = {
    "English": "The capital of France is Paris.",
    "accents": "naïve café, déjà vu, Ångström, ß",
    "combining": "cafe\u0301 (e + U+0301)",
    "CJK": "日本語のテキスト, 中文, 한국어",
    "Cyrillic/Arabic/Hindi": "Привет, مرحبا, नमस्ते",
    "emoji": "emoji 😀🎉👩\u200d💻🇫🇷",
    "whitespace runs": "a    b\t\tc\n\n\n  d",
    "code": "def f(x):\n    return {'k': [x, 4.2]}  # done",
}

#: Verdicts, from fine to wrong.
EXACT, NORMALISED, PREFIX, LOSSY, MISMATCH = (
    "exact",
    "normalised by the tokenizer",
    "one dummy-prefix space",
    "the tokenizer itself loses text",
    "MISMATCH",
)


@dataclass(frozen=True)
class RoundTrip:
    """One sample: its token count, the text the bytes give back, and the verdict."""

    label: str
    text: str
    n_tokens: int
    ours: str
    verdict: str

    @property
    def ok(self) -> bool:
        """Whether the bytes agree with the tokenizer (anything but MISMATCH)."""
        return self.verdict != MISMATCH


def _round_trip(tokenizer: Any, vocab: list[bytes], label: str, text: str) -> RoundTrip:
    ids = encode_text(tokenizer, text)
    ours_bytes = b"".join(vocab[i] for i in ids)
    ours = ours_bytes.decode("utf-8", errors="replace")
    theirs = decode_text(tokenizer, ids)
    if ours_bytes not in (theirs.encode(), b" " + theirs.encode()):
        verdict = MISMATCH
    elif ours == text:
        verdict = EXACT
    elif ours == " " + text:
        verdict = PREFIX
    elif ours.lstrip(" ") == _normalised(tokenizer, text).replace("\u2581", " ").lstrip(" "):
        verdict = NORMALISED
    else:
        verdict = LOSSY
    return RoundTrip(label, text, len(ids), ours, verdict)


def _normalised(tokenizer: Any, text: str) -> str:
    normalizer = getattr(getattr(tokenizer, "backend_tokenizer", None), "normalizer", None)
    try:
        return normalizer.normalize_str(text) if normalizer is not None else text
    except Exception:  # a normaliser that cannot run alone: say "loses text" rather than fail
        return text


def _token(tokenizer: Any, attr: str) -> tuple[str, int] | None:
    token, token_id = (
        getattr(tokenizer, f"{attr}_token", None),
        getattr(tokenizer, f"{attr}_token_id", None),
    )
    return (str(token), int(token_id)) if token is not None and token_id is not None else None


class TokenizerReport:
    """How genlm_lab reads a tokenizer, and whether its bytes give back text.

    Args:
        tokenizer: an HF tokenizer (or anything `decode_vocab` takes).
        samples: label -> text of the round-trip verdict (default `REPORT_SAMPLES`).

    Attributes:
        name: the tokenizer's class and path.
        decoding: the `VocabDecoding` that `inspect_vocab` gave.
        bos: (text, id) of the BOS token, or None.
        eos: (text, id) of the EOS token, or None.
        pad: (text, id) of the padding token, or None.
        special: id -> text of every special token.
        round_trips: one `RoundTrip` per sample text.

    Raises:
        ValueError: where `decode_vocab` cannot read the vocabulary at all.
    """

    def __init__(self, tokenizer: Any, samples: dict[str, str] | None = None) -> None:
        self.name = tokenizer_name(tokenizer)
        self.decoding: VocabDecoding = inspect_vocab(tokenizer)
        self.bos = _token(tokenizer, "bos")
        self.eos = _token(tokenizer, "eos")
        self.pad = _token(tokenizer, "pad")
        vocab = self.decoding.byte_vocab
        self.special = {i: vocab[i].decode("utf-8", "replace") for i in self.decoding.special_ids}
        self.round_trips = [
            _round_trip(tokenizer, vocab, label, text)
            for label, text in (samples or REPORT_SAMPLES).items()
        ]

    @property
    def ok(self) -> bool:
        """Whether every sample's bytes agree with the tokenizer's own decoding."""
        return all(r.ok for r in self.round_trips)

    def rows(self) -> list[tuple[str, str]]:
        """The facts as (what, value) rows: the one data form both renderings use."""
        d = self.decoding
        special = ", ".join(f"{t} ({i})" for i, t in list(self.special.items())[:12])
        more = len(self.special) - 12
        return [
            ("tokenizer", self.name),
            ("strategy", d.strategy),
            ("vocabulary", f"{len(d.byte_vocab):,} ids (decoded in {d.seconds:.2f} s)"),
            ("BOS", _fmt(self.bos, "none: contexts start empty or from the model's start token")),
            ("EOS", _fmt(self.eos, "none")),
            ("pad", _fmt(self.pad, "none")),
            ("special", f"{len(self.special)}: {special}{f', +{more} more' if more > 0 else ''}"),
            ("ids without bytes", d.unmapped_summary()),
            (
                "round trip",
                "ok" if self.ok else "MISMATCH: the token bytes differ from the tokenizer",
            ),
        ]

    def __str__(self) -> str:
        lines = [f"{what:<18} {value}" for what, value in self.rows()]
        for r in self.round_trips:
            lines.append(f"  {r.label:<22} {r.n_tokens:>3} tokens  {r.verdict}" + _diff(r))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"TokenizerReport({self.name}, {self.decoding.strategy}, ok={self.ok})"

    def _repr_html_(self) -> str:
        esc = html.escape
        facts = "".join(
            f"<tr><th style='text-align:left'>{esc(w)}</th><td style='text-align:left'>{esc(v)}</td></tr>"
            for w, v in self.rows()
        )
        samples = "".join(
            f"<tr><td>{esc(r.label)}</td><td><code>{esc(r.text)!s}</code></td>"
            f"<td>{r.n_tokens}</td><td style='color:{'#b00' if not r.ok else 'inherit'}'>"
            f"{esc(r.verdict)}{esc(_diff(r))}</td></tr>"
            for r in self.round_trips
        )
        return (
            "<div class='genlm-tokenizer-report'><table>" + facts + "</table>"
            "<table><tr><th>sample</th><th>text</th><th>tokens</th><th>verdict</th></tr>"
            + samples
            + "</table></div>"
        )


def _fmt(token: tuple[str, int] | None, missing: str) -> str:
    return f"{token[0]!r} ({token[1]})" if token is not None else missing


def _diff(r: RoundTrip) -> str:
    return "" if r.verdict in (EXACT, PREFIX) else f" (bytes give {r.ours!r})"
