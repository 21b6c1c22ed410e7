"""control_token_ids: special and `<...>`-tag added tokens are control tokens, as llguidance says."""

from __future__ import annotations

import asyncio

import pytest
from tokenizer_panel import load_panel_tokenizer, panel_dir, panel_params

from genlm_lab.tokenization import control_token_ids
from genlm_lab.tokenization.control_tokens import is_markup_tag

_ADDED = {"<tool>": True, "[multi]": False, "<|pad9|>": True, "~~~~": False, "<x": False}


def test_is_markup_tag():
    assert is_markup_tag("<unused0>") and is_markup_tag("<|eot_id|>") and is_markup_tag("<a b>")
    assert not any(map(is_markup_tag, ["<>", "<x", "x>", "[multimodal]", "▁▁", "<x>y"]))


@pytest.fixture(scope="module")
def smollm2_with_added():
    """SmolLM2's tokenizer (a fresh copy) with non-special added tokens, tags and text."""
    from tokenizers import AddedToken
    from transformers import AutoTokenizer

    directory = panel_dir("smollm2")
    if directory is None:
        pytest.skip("the embedded SmolLM2 model is not installed")
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in _ADDED])
    return tokenizer


def test_added_tags_are_control_tokens_and_added_text_is_not(smollm2_with_added):
    tok = smollm2_with_added
    ids = set(control_token_ids(tok))
    assert set(tok.all_special_ids) <= ids
    for text, control in _ADDED.items():
        assert (tok.convert_tokens_to_ids(text) in ids) == control, text
    added = {int(i) for i in tok.added_tokens_decoder}
    assert ids <= added | set(tok.all_special_ids)  # never an ordinary vocabulary entry


def test_control_tokens_are_what_llguidance_treats_as_special(smollm2_with_added):
    import llguidance.hf

    tok = smollm2_with_added
    lltok = llguidance.hf.from_tokenizer(tok)
    theirs = {i for i in range(len(tok)) if lltok.is_special_token(i)}
    assert set(control_token_ids(tok)) == theirs


@pytest.mark.parametrize("name", panel_params(big_marks=(pytest.mark.slow,)))
def test_panel_control_tokens(name):
    tok = load_panel_tokenizer(name)
    ids = set(control_token_ids(tok))
    added = tok.added_tokens_decoder
    assert set(tok.all_special_ids) <= ids
    for i, token in added.items():
        assert (i in ids) == (token.special or is_markup_tag(token.content)), token.content
    if name == "gemma3":  # 6,242 <unusedN> placeholders; its whitespace runs stay text
        unused = [i for i, t in added.items() if t.content.startswith("<unused")]
        assert len(unused) == 6242 and set(unused) <= ids
        for text in ("\n\n", "▁▁", "[multimodal]"):
            assert tok.convert_tokens_to_ids(text) not in ids


def test_a_json_string_never_takes_an_added_tag_token(smollm2_with_added, tmp_path):
    from genlm_lab.backend import load_model_by_name
    from genlm_lab.backend.tiny import save_tiny_llama
    from genlm_lab.control import JsonSchema, PromptedLLM

    tok = smollm2_with_added
    directory = save_tiny_llama(tok, tmp_path, hidden_size=16, num_heads=2, num_kv_heads=1)
    llm = PromptedLLM(load_model_by_name(str(directory), backend="hf", llm_opts={"device": "cpu"}))
    schema = {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}
    mask = JsonSchema(schema).coerce(llm, f=b"".join)
    context = [b'{"', b"s", b'":', b' "']
    assert b"".join(context) == b'{"s": "'
    allowed = asyncio.run(mask.logw_next(context))
    for text, control in _ADDED.items():
        assert (allowed[text.encode()] == 0.0) != control, text  # tags out, text in
    assert allowed[b"<"] == 0.0  # the same text stays reachable byte by byte
