"""`decode_vocab`: exact bytes for byte-level BPE and SentencePiece vocabularies."""

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from genlm_lab.backend.toy import ToyTokenizer
from genlm_lab.tokenization import Token, decode_vocab

# Mostly arbitrary code points, with whitespace, emoji and accents drawn often.
_FREQUENT = [" ", "  ", "\n", "\t", "\r\n", "😀", "👩\u200d💻", "é", "e\u0301", "日本", "\u00a0"]
_TEXT = st.lists(
    st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(_FREQUENT)), max_size=30
).map("".join)
_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


class _Vocab(tuple):
    """`(byte_vocab, str_vocab)` with a short repr, so hypothesis reports stay readable."""

    def __repr__(self) -> str:
        return f"<vocab of {len(self[0])} tokens>"


@pytest.fixture(scope="module")
def smollm2_vocab(smollm2_tokenizer):
    return _Vocab(decode_vocab(smollm2_tokenizer))


@pytest.fixture(scope="module")
def spiece_vocab(spiece_tokenizer):
    return _Vocab(decode_vocab(spiece_tokenizer))


def _joined(byte_vocab, ids):
    return b"".join(byte_vocab[i] for i in ids)


@_SETTINGS
@given(text=_TEXT)
@example(text=" leading and trailing \n\n")
@example(text="🇫🇷 flags, 😀 emoji\r\n\ttabs")
@example(text="<|im_start|>user\nhi<|im_end|>")
def test_smollm2_bytes_round_trip(smollm2_tokenizer, smollm2_vocab, text):
    ids = smollm2_tokenizer.encode(text, add_special_tokens=False)
    # SmolLM2 has no token for 21 byte values (a few control characters, lead bytes of
    # unassigned planes 4-11) and silently drops them: only where the tokenizer itself is
    # lossless can the bytes be exact.
    assume(smollm2_tokenizer.decode(ids) == text)
    assert _joined(smollm2_vocab[0], ids) == text.encode("utf-8")


@_SETTINGS
@given(text=_TEXT.filter(lambda s: "\u2581" not in s))  # SentencePiece reads ▁ as a space
@example(text=" leading and trailing \n\n")
@example(text="🇫🇷 flags, 😀 emoji\r\n\ttabs")
@example(text="<s>literal specials</s>")
def test_spiece_bytes_round_trip(spiece_tokenizer, spiece_vocab, text):
    ids = spiece_tokenizer.encode(text, add_special_tokens=False)
    assert _joined(spiece_vocab[0], ids) == text.encode("utf-8")


@pytest.fixture(scope="module")
def prefix_tokenizer_and_vocab(build_spiece):
    tokenizer = build_spiece(prepend_space=True)
    return tokenizer, _Vocab(decode_vocab(tokenizer))


@_SETTINGS
@given(text=_TEXT.filter(lambda s: s and "\u2581" not in s))
def test_spiece_dummy_prefix_adds_exactly_one_space(prefix_tokenizer_and_vocab, text):
    tokenizer, (byte_vocab, _) = prefix_tokenizer_and_vocab
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert _joined(byte_vocab, ids) == b" " + text.encode("utf-8")


@_SETTINGS
@given(data=st.data())
def test_smollm2_joined_bytes_decode_like_the_tokenizer(smollm2_tokenizer, smollm2_vocab, data):
    # Independent of encode: any id sequence (partial UTF-8 included) decodes alike.
    n_special = max(smollm2_tokenizer.all_special_ids) + 1
    ids = data.draw(
        st.lists(st.integers(n_special, len(smollm2_tokenizer) - 1), min_size=1, max_size=12)
    )
    joined = _joined(smollm2_vocab[0], ids).decode("utf-8", errors="replace")
    assert joined == smollm2_tokenizer.decode(ids)


def test_vocab_covers_every_id_with_matching_token_ids(smollm2_tokenizer, smollm2_vocab):
    byte_vocab, str_vocab = smollm2_vocab
    assert len(byte_vocab) == len(str_vocab) == len(smollm2_tokenizer)
    assert all(isinstance(t, Token) and t.token_id == i for i, t in enumerate(byte_vocab))


def test_special_tokens_are_their_utf8_text(smollm2_tokenizer, smollm2_vocab):
    byte_vocab, str_vocab = smollm2_vocab
    assert "<|im_end|>" in smollm2_tokenizer.all_special_tokens
    for token, token_id in zip(
        smollm2_tokenizer.all_special_tokens, smollm2_tokenizer.all_special_ids, strict=True
    ):
        assert byte_vocab[token_id] == Token(token_id, token.encode("utf-8"))
        assert bytes(byte_vocab[token_id]) == token.encode("utf-8")
        assert str_vocab[token_id] == token


def test_str_vocab_is_the_text_of_valid_utf8_tokens(smollm2_vocab, spiece_vocab):
    for byte_vocab, str_vocab in (smollm2_vocab, spiece_vocab):
        checked = 0
        for token, text in zip(byte_vocab, str_vocab, strict=True):
            try:
                expected = bytes(token).decode("utf-8")
            except UnicodeDecodeError:
                continue
            assert text == expected
            checked += 1
        assert checked > len(byte_vocab) // 2  # most tokens are valid UTF-8 on their own


def test_str_vocab_fallbacks_for_partial_utf8(smollm2_tokenizer, smollm2_vocab):
    byte_vocab, str_vocab = smollm2_vocab
    partial = [t for t in byte_vocab if not _is_utf8(bytes(t))]
    assert partial, "a byte-level vocabulary has tokens that split UTF-8 characters"
    latin1 = decode_vocab(smollm2_tokenizer, byte2str_fallback="latin1")[1]
    replace = decode_vocab(smollm2_tokenizer, byte2str_fallback="replace")[1]
    for token in partial[:50]:
        i = token.token_id
        assert str_vocab[i] == smollm2_tokenizer.convert_ids_to_tokens(i)
        assert latin1[i] == bytes(token).decode("latin1")
        assert "\ufffd" in replace[i]


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_spiece_byte_tokens_hold_one_byte_and_duplicate_text_pieces(spiece_tokenizer, spiece_vocab):
    byte_vocab, _ = spiece_vocab
    pieces = spiece_tokenizer.convert_ids_to_tokens(list(range(len(spiece_tokenizer))))
    byte_ids = [i for i, p in enumerate(pieces) if p.startswith("<0x") and len(p) == 6]
    assert len(byte_ids) == 256
    assert sorted(bytes(byte_vocab[i]) for i in byte_ids) == [bytes([b]) for b in range(256)]
    # "a" exists both as a byte token and as a text piece: same bytes, distinct tokens.
    a_ids = [t.token_id for t in byte_vocab if bytes(t) == b"a"]
    assert len(a_ids) == 2
    assert len({byte_vocab[i] for i in a_ids}) == 2


def test_added_tokens_beyond_vocab_size_are_covered(build_spiece):
    tokenizer = build_spiece()
    tokenizer.add_tokens(["<extra_tool>"])
    assert len(tokenizer) == tokenizer.vocab_size + 1
    byte_vocab, str_vocab = decode_vocab(tokenizer)
    assert len(byte_vocab) == len(tokenizer)
    assert bytes(byte_vocab[-1]) == b"<extra_tool>" and str_vocab[-1] == "<extra_tool>"
    text = "call <extra_tool> now"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert len(tokenizer) - 1 in ids
    assert _joined(byte_vocab, ids) == text.encode()


def test_toy_tokenizer_vocabulary_is_taken_as_is():
    vocab = [b"a", b"b", b"ab", b"\xff", b"<eos>"]
    byte_vocab, str_vocab = decode_vocab(ToyTokenizer(vocab, bos_token_id=None, eos_token_id=4))
    assert [bytes(t) for t in byte_vocab] == vocab
    assert [t.token_id for t in byte_vocab] == list(range(len(vocab)))
    assert str_vocab[2] == "ab"
    # The one token that is not UTF-8 follows the fallback asked for.
    assert str_vocab[3] == b"\xff".decode("latin1")
    toy = ToyTokenizer(vocab, bos_token_id=None, eos_token_id=4)
    assert decode_vocab(toy, byte2str_fallback="replace")[1][3] == "\ufffd"


def test_tokenizer_that_normalises_text_is_rejected_with_its_name():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    words.normalizer = normalizers.Lowercase()
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, unk_token="[UNK]")
    tokenizer.name_or_path = "lowercasing-words"
    with pytest.raises(ValueError, match="lowercasing-words"):
        decode_vocab(tokenizer)


def test_unknown_fallback_is_rejected(spiece_tokenizer):
    with pytest.raises(ValueError, match="byte2str_fallback"):
        decode_vocab(spiece_tokenizer, byte2str_fallback="ascii")
