"""`decode_vocab` on the tokenizer panel: real tokenizers of popular open models.

For every tokenizer of `tests/tokenizer_panel.py` (fetched by `make setup`;
each test skips with the fix where one is missing): the bytes of random
sequences of non-special tokens equal the tokenizer's own decoding of them,
special and unmapped ids are never allowed by a text constraint, and the
family-specific traps (Qwen's NFC, Gemma's whitespace runs, Llama 2's prefix
space) come out right. The big vocabularies (>100k) are marked slow.
"""

import json
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizer_panel import PANEL, load_panel_tokenizer, panel_params, release_vocabulary_caches

from genlm_lab.tokenization import decode_vocab, inspect_vocab

_PARAMS = panel_params(big_marks=(pytest.mark.slow,))
_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
_BY_NAME = {p.values[0]: p for p in _PARAMS}


@pytest.fixture(scope="module", params=_PARAMS)
def panel(request):
    """`(name, tokenizer, decoding)` of one panel tokenizer, decoded once for all its tests.

    Module-scoped and parametrized, so each tokenizer's tests run together; the
    per-vocabulary caches are emptied between tokenizers, so that a test process holds
    one panel vocabulary at a time.
    """
    tokenizer = load_panel_tokenizer(request.param)
    yield request.param, tokenizer, inspect_vocab(tokenizer)
    release_vocabulary_caches()


def _one(name: str):
    """Parametrize a test with the `panel` fixture for one tokenizer (its marks included)."""
    return pytest.mark.parametrize("panel", [_BY_NAME[name]], indirect=True)


def _strips_one_leading_space(tokenizer) -> bool:
    """The documented prefix-space rule: the decoder drops one leading space (Llama 2)."""
    spec = json.loads(tokenizer.backend_tokenizer.decoder.__getstate__())
    steps = spec.get("decoders", [spec])
    strip = any(d.get("type") == "Strip" and d.get("start") == 1 for d in steps)
    meta = any(
        d.get("type") == "Metaspace" and d.get("prepend_scheme", "always") != "never" for d in steps
    )
    return strip or meta


def _matches_lossy(text: str, decoded: str) -> bool:
    """Whether `text` (ours, invalid bytes shown as U+FFFD) fits the tokenizer's lossy decode.

    Where the bytes are not UTF-8 the tokenizer gives no bytes back, only
    text with U+FFFD, and how much it replaces differs: Rust's from_utf8_lossy
    (byte-level) one U+FFFD per bad subsequence as Python does, SentencePiece's
    ByteFallback every byte of a bad run of byte tokens (valid ones too). So
    each U+FFFD run of the decode stands for one or more characters of ours,
    and everything else must be equal, in order.
    """
    parts = [re.escape(p) for p in re.split("\ufffd+", decoded)]
    return re.fullmatch("[\\s\\S]+?".join(parts), text) is not None


def test_strategy_follows_the_family(panel):
    name, tokenizer, found = panel
    assert found.strategy == PANEL[name].family
    # Every id the tokenizer knows has bytes, also past len() where the vocabulary has holes.
    top = max(tokenizer.get_vocab().values()) + 1
    assert len(found.byte_vocab) == max(len(tokenizer), top)


@_SETTINGS
@given(data=st.data())
def test_random_token_sequences_decode_like_the_tokenizer(panel, data):
    _, tokenizer, found = panel
    excluded = set(found.special_ids) | set(found.unmapped)
    n = len(found.byte_vocab)
    ids = data.draw(
        st.lists(st.integers(0, n - 1).filter(lambda i: i not in excluded), min_size=1, max_size=12)
    )
    joined = b"".join(found.byte_vocab[i] for i in ids)
    decoded = tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
    text = joined.decode("utf-8", errors="replace")
    if _strips_one_leading_space(tokenizer) and text.startswith(" "):
        text = text[1:]
    if _is_utf8(joined):
        assert text == decoded
    else:
        assert "\ufffd" in decoded and _matches_lossy(text, decoded)


def test_sample_texts_round_trip_through_the_tokenizers_own_decoding(panel):
    from genlm_lab.tokenization.vocab import SAMPLES

    _, tokenizer, found = panel
    extra = ["<think>x</think>", "tabs\t\t\tand    spaces", "ﬁ ligature, Å, e\u0301"]
    assert len(SAMPLES) > 0
    for text in (*SAMPLES, *extra):
        ids = tokenizer.encode(text, add_special_tokens=False)
        joined = b"".join(found.byte_vocab[i] for i in ids)
        expected = tokenizer.decode(ids, skip_special_tokens=False).encode()
        assert joined in (expected, b" " + expected), text


def test_special_and_unmapped_ids_are_never_allowed_by_a_text_constraint(panel):
    from genlm_lab.backend import MockAsyncLM
    from genlm_lab.control import BoolFSA, PromptedLLM, coerce
    from genlm_lab.tokenization import control_token_ids

    _, tokenizer, found = panel
    llm = PromptedLLM(MockAsyncLM(tokenizer))
    # Any text at all, special tokens' spellings included.
    anything = coerce(BoolFSA.from_regex(r"[\s\S]*"), llm, f=b"".join)
    allowed = np.asarray(anything.allowed([]), dtype=bool)[: len(llm.vocab)]
    ids = np.array([t.token_id for t in llm.vocab])
    # Control tokens (special ids and added tokens written as <...> tags, as llguidance
    # reads them) are never text to a grammar, even where they decode to bytes.
    forbidden = set(found.special_ids) | set(found.unmapped) | set(control_token_ids(tokenizer))
    assert not allowed[np.isin(ids, sorted(forbidden))].any()
    # ... while ordinary valid-UTF-8 text tokens are all allowed.
    text_ids = [
        i
        for i in range(len(found.byte_vocab))
        if i not in forbidden and _is_utf8(found.byte_vocab[i]) and found.byte_vocab[i]
    ]
    assert allowed[np.isin(ids, text_ids)].all()


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@_one("qwen3")
def test_qwen3_nfc_normaliser_is_the_tokenizers_business(panel):
    _, tokenizer, found = panel
    ids = tokenizer.encode("cafe\u0301", add_special_tokens=False)
    # The normaliser composed e + U+0301 into é: the bytes are the composed text.
    assert b"".join(found.byte_vocab[i] for i in ids) == "café".encode()
    assert tokenizer.bos_token_id is None


@_one("gemma3")
def test_gemma3_whitespace_runs_are_spaces_not_literal_markers(panel):
    _, tokenizer, found = panel
    runs = {i: p for i, p in enumerate(found.pieces) if p and set(p) == {"\u2581"}}
    assert len(runs) >= 30
    for i, piece in runs.items():
        assert found.byte_vocab[i] == b" " * len(piece)
    ids = tokenizer.encode("a        b", add_special_tokens=False)
    assert b"".join(found.byte_vocab[i] for i in ids) == b"a        b"


@_one("llama2")
def test_llama2_byte_fallback_and_prefix_space(panel):
    _, tokenizer, found = panel
    pieces = found.pieces
    byte_ids = [i for i, p in enumerate(pieces) if re.fullmatch(r"<0x[0-9A-F]{2}>", p)]
    assert sorted(found.byte_vocab[i] for i in byte_ids) == [bytes([b]) for b in range(256)]
    ids = tokenizer.encode("Hello", add_special_tokens=False)
    assert b"".join(found.byte_vocab[i] for i in ids) == b" Hello"


@_one("gpt35turbo")
def test_holes_in_a_real_vocabulary_load_with_one_warning(panel):
    _, tokenizer, _ = panel
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        byte_vocab, _ = decode_vocab(tokenizer)
    ours = [w for w in caught if "decode_vocab" in str(w.message)]
    assert len(ours) == 1
    holes = [i for i in range(len(byte_vocab)) if tokenizer.convert_ids_to_tokens(i) is None]
    assert holes and str(len(holes)) in str(ours[0].message)
    for i in holes:
        assert bytes(byte_vocab[i]).startswith(b"\xff")
