"""Tiny random LLaMAs over a tokenizer's vocabulary: sized right, seeded, peaked, loadable."""

import math

import torch

from genlm_lab.backend import load_model_by_name, load_tokenizer
from genlm_lab.backend.tiny import model_vocab_size, save_tiny_llama, start_token_id, tiny_llama


class _HoleyTokenizer:
    """A tokenizer stand-in whose largest id runs past its length (as tiktoken-style vocabularies)."""

    bos_token_id = None
    pad_token_id = None
    eos_token_id = 7

    def __len__(self):
        return 5

    def get_vocab(self):
        return {"a": 0, "b": 1, "c": 2, "d": 3, "<eos>": 7}


def test_vocabulary_with_holes_sizes_the_model_past_its_length():
    assert model_vocab_size(_HoleyTokenizer()) == 8
    assert start_token_id(_HoleyTokenizer()) == 7  # no BOS, no pad: EOS starts


def test_weights_depend_on_the_seed_alone_and_leave_torch_rng_alone():
    tokenizer = load_tokenizer("default")
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    first = tiny_llama(tokenizer, seed=1)
    assert torch.equal(torch.rand(1), expected_next)
    again, other = tiny_llama(tokenizer, seed=1), tiny_llama(tokenizer, seed=2)
    weight = "model.layers.0.mlp.up_proj.weight"
    assert torch.equal(first.state_dict()[weight], again.state_dict()[weight])
    assert not torch.equal(first.state_dict()[weight], other.state_dict()[weight])


def test_distributions_are_peaked_not_uniform():
    tokenizer = load_tokenizer("default")
    model = tiny_llama(tokenizer)
    ids = torch.tensor([tokenizer.encode("The cat sat on the mat")])
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0], -1)
    entropy = -(logp.exp() * logp).sum(-1).mean().item()
    assert entropy < 0.5 * math.log(len(tokenizer))


def test_saved_directory_loads_as_a_users_model(tmp_path):
    tokenizer = load_tokenizer("default")
    directory = save_tiny_llama(tokenizer, tmp_path / "tiny", hidden_size=32, num_heads=4)
    llm = load_model_by_name(str(directory), backend="hf")
    ids = [tokenizer.bos_token_id, *tokenizer.encode("Hello")]
    got = torch.as_tensor(llm.next_token_logprobs_sync(ids))
    model = tiny_llama(tokenizer, hidden_size=32, num_heads=4)
    with torch.no_grad():
        want = torch.log_softmax(model(torch.tensor([ids])).logits[0, -1], -1)
    assert torch.allclose(got.float().cpu(), want[: len(got)], atol=1e-4)
