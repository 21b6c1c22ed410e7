"""`decode_vocab` on each vocabulary family, built offline: the cases the panel may lack.

Tiny tokenizers trained here stand for families no panel entry covers or for
corner cases (pieces outside the byte alphabet, holes, a Gemma-style
whitespace-run added token on a prefix-space SentencePiece vocabulary, a
tiktoken-style tokenizer that holds its ranks, a slow GPT-2 tokenizer with
its own `byte_decoder`). Each is checked against its own `decode`.
"""

import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genlm_lab.tokenization import decode_vocab, inspect_vocab

_CORPUS = [
    "the quick brown fox jumps over the lazy dog\n",
    "hello world, café déjà vu 日本語 😀\n",
    "numbers 1234567890 and punctuation !?.,;:'\"()[]{}\n",
] * 20
_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=25)
_SETTINGS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _byte_level(extra_pieces=(), holes=0):
    """A byte-level BPE tokenizer; `extra_pieces` go into the model vocab, `holes` ids are skipped."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    base = Tokenizer(models.BPE())
    base.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    base.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    base.train_from_iterator(_CORPUS, trainer)
    spec = json.loads(base.to_str())
    vocab = spec["model"]["vocab"]
    for piece in extra_pieces:
        vocab[piece] = len(vocab) + holes
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>")


def test_piece_outside_the_byte_alphabet_loads_with_one_warning():
    tokenizer = _byte_level(extra_pieces=["<img\u2581patch>"])
    image = tokenizer.convert_tokens_to_ids("<img\u2581patch>")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        byte_vocab, str_vocab = decode_vocab(tokenizer)
    assert len(caught) == 1
    assert "1 multimodal tokens" in str(caught[0].message)
    assert bytes(byte_vocab[image]) == b"\xff<img\xe2\x96\x81patch>"
    assert str_vocab[image] == "<img\u2581patch>"  # the tokenizer's own piece


def test_holes_in_the_vocabulary_load_and_never_index_out_of_range():
    tokenizer = _byte_level(extra_pieces=["zz_last"], holes=3)
    last = tokenizer.convert_tokens_to_ids("zz_last")
    # ids last-3 .. last-1 have no token, and len() counts entries, so `last` lies past it.
    assert len(tokenizer) < last + 1
    with pytest.warns(UserWarning, match="3 ids without a token") as caught:
        byte_vocab, str_vocab = decode_vocab(tokenizer)
    assert len(caught) == 1
    assert len(byte_vocab) == len(str_vocab) == last + 1
    assert tokenizer.decode([last]) == "zz_last"  # an id the model can emit
    for i in range(last - 3, last):
        assert bytes(byte_vocab[i]) == b"\xff<unused_%d>" % i
    assert bytes(byte_vocab[last]) == b"zz_last"


@pytest.fixture(scope="module")
def gemma_like(build_spiece):
    """SentencePiece without dummy prefix (as Gemma 3) and whitespace-run added tokens (`▁▁`)."""
    from tokenizers import AddedToken

    tokenizer = build_spiece(prepend_space=False)
    tokenizer.add_tokens([AddedToken("\u2581" * k, normalized=True) for k in (2, 3, 4)])
    tokenizer.add_special_tokens({"additional_special_tokens": ["<start_of_image>"]})
    return tokenizer


def test_whitespace_run_added_tokens_are_spaces(gemma_like):
    found = inspect_vocab(gemma_like)
    assert found.strategy == "SentencePiece"
    for k in (2, 3, 4):
        i = gemma_like.convert_tokens_to_ids("\u2581" * k)
        assert found.byte_vocab[i] == b" " * k
    ids = gemma_like.encode("x    y", add_special_tokens=False)
    assert gemma_like.convert_tokens_to_ids("\u2581" * 4) in ids
    assert b"".join(found.byte_vocab[i] for i in ids) == b"x    y"
    special = gemma_like.convert_tokens_to_ids("<start_of_image>")
    assert found.byte_vocab[special] == b"<start_of_image>" and special in found.special_ids


@_SETTINGS
@given(text=_TEXT.filter(lambda s: "\u2581" not in s and "<" not in s))
def test_gemma_like_bytes_equal_its_decode(gemma_like, text):
    found = _cached(gemma_like)
    ids = gemma_like.encode(text, add_special_tokens=False)
    joined = b"".join(found.byte_vocab[i] for i in ids)
    decoded = gemma_like.decode(ids).encode()
    assert joined in (decoded, b" " + decoded)


_CACHE = {}


def _cached(tokenizer):
    key = id(tokenizer)
    if key not in _CACHE:
        _CACHE[key] = inspect_vocab(tokenizer)
    return _CACHE[key]


class _RankTokenizer:
    """A tiktoken-style tokenizer: `mergeable_ranks` (bytes -> id), greedy longest match."""

    def __init__(self):
        pieces = [bytes([b]) for b in range(256)] + [b"the", b" the", b"\xc3\xa9", b"ll", b" w"]
        self.mergeable_ranks = {p: i for i, p in enumerate(pieces)}
        self.special = {"<|end|>": len(pieces)}
        self.all_special_ids = list(self.special.values())
        self.name_or_path = "rank-tokenizer"

    def __len__(self):
        return len(self.mergeable_ranks) + len(self.special)

    def encode(self, text, add_special_tokens=False):
        data, out, i = text.encode(), [], 0
        while i < len(data):
            for width in (4, 3, 2, 1):
                if data[i : i + width] in self.mergeable_ranks:
                    out.append(self.mergeable_ranks[data[i : i + width]])
                    i += width
                    break
        return out

    def decode(self, ids, **kwargs):
        inverse = {v: k for k, v in self.mergeable_ranks.items()}
        inverse.update({v: k.encode() for k, v in self.special.items()})
        return b"".join(inverse[i] for i in ids).decode("utf-8", errors="replace")

    def convert_ids_to_tokens(self, ids):
        inverse = {v: k.decode("latin1") for k, v in self.mergeable_ranks.items()}
        inverse.update({v: k for k, v in self.special.items()})
        return [inverse[i] for i in ids]


@_SETTINGS
@given(text=_TEXT)
def test_tokenizer_holding_its_ranks_uses_them(text):
    tokenizer = _RankTokenizer()
    found = _cached_rank(tokenizer)
    assert found.strategy == "own id-to-bytes table"
    ids = tokenizer.encode(text)
    assert b"".join(found.byte_vocab[i] for i in ids) == text.encode()


_RANK = {}


def _cached_rank(tokenizer):
    if "rank" not in _RANK:
        _RANK["rank"] = inspect_vocab(tokenizer)
    return _RANK["rank"]


class _OwnAlphabetTokenizer(_RankTokenizer):
    """Pieces spelled in an alphabet of its own (byte b is chr(0x4E00 + b)), with a `byte_decoder`."""

    def __init__(self):
        super().__init__()
        self.byte_decoder = {chr(0x4E00 + b): b for b in range(256)}

    @property
    def mergeable_ranks(self):  # a property: not in __dict__, so not read as the tokenizer's table
        return self._ranks

    @mergeable_ranks.setter
    def mergeable_ranks(self, value):
        self._ranks = value

    def convert_ids_to_tokens(self, ids):
        inverse = {v: "".join(chr(0x4E00 + b) for b in k) for k, v in self._ranks.items()}
        inverse.update({v: k for k, v in self.special.items()})
        return [inverse[i] for i in ids]


def test_tokenizer_with_its_own_byte_decoder_uses_it():
    tokenizer = _OwnAlphabetTokenizer()
    found = inspect_vocab(tokenizer)
    assert found.strategy == "own byte_decoder"
    text = "the well, café 日本語 😀 <|end|>"
    ids = tokenizer.encode(text)
    assert b"".join(found.byte_vocab[i] for i in ids) == text.encode()
    assert found.byte_vocab[tokenizer.special["<|end|>"]] == b"<|end|>"
