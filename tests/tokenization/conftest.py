"""A SentencePiece-style tokenizer (BPE, `▁` for spaces, `<0xXX>` byte fallback) built offline."""

import json

import pytest

_CORPUS = [
    "the quick brown fox jumps over the lazy dog\n",
    "hello world, hello there: spaces  and\ttabs\n",
    "numbers 1234567890 and punctuation !?.,;:'\"()[]{}\n",
    "accents: naïve café déjà vu, über straße\n",
]


def build_spiece_tokenizer(prepend_space: bool = False, vocab_size: int = 420):
    """Train a tiny LLaMA-2-style tokenizer: ids 0-2 special, 3-258 the byte tokens.

    Args:
        prepend_space: add SentencePiece's "dummy prefix" (a `▁` before the text).
        vocab_size: merges learned on top of the specials and characters.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"]
    base = Tokenizer(models.BPE(byte_fallback=True, unk_token=None, fuse_unk=False))
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, show_progress=False, initial_alphabet=["▁"]
    )
    base.normalizer = normalizers.Replace(" ", "▁")
    base.train_from_iterator(_CORPUS * 20, trainer)

    # Insert the 256 byte tokens as ordinary vocabulary entries right after the specials,
    # as LLaMA-2 does, so that they are matched by byte fallback and not as added tokens.
    spec = json.loads(base.to_str())
    learned = sorted(spec["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {tok: i for i, tok in enumerate(specials)}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for tok, _ in learned:
        if tok not in vocab:
            vocab[tok] = len(vocab)
    spec["model"]["vocab"] = vocab
    for added in spec["added_tokens"]:
        added["id"] = vocab[added["content"]]
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    steps = [normalizers.Prepend("▁")] if prepend_space else []
    tokenizer.normalizer = normalizers.Sequence(steps + [normalizers.Replace(" ", "▁")])
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    )
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    hf.name_or_path = "tiny-spiece" + ("-prefix" if prepend_space else "")
    return hf


@pytest.fixture(scope="session")
def build_spiece():
    """The builder itself, for tests that need a fresh or a dummy-prefix tokenizer."""
    return build_spiece_tokenizer


@pytest.fixture(scope="session")
def spiece_tokenizer():
    """SentencePiece-style tokenizer without dummy prefix (do not mutate)."""
    return build_spiece_tokenizer()
