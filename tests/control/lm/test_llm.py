"""PromptedLLM: its weights are the LM's log-probabilities, EOS tokens folded into EOS."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
import torch

from genlm_lab.backend import ToyLM
from genlm_lab.control import EOS, PromptedLLM
from genlm_lab.tokenization import Token


def run(coro):
    return asyncio.run(coro)


TOKENS = [b"<s>", b"a", b"b", b"ab", b"\n", b"$"]


def toy(seed=0):
    return ToyLM(TOKENS, eos=b"$", bos=b"<s>", seed=seed)


def test_prefix_is_the_sum_of_lm_log_probs_and_logw_next_their_row():
    lm = toy()
    assert PromptedLLM(lm).prompt_ids == []  # ToyLM can start from nothing
    p = PromptedLLM(lm, prompt_ids=[0])
    ids = [1, 3, 2]
    context = [lm.byte_vocab[i] for i in ids]
    expected = sum(
        float(lm.next_token_logprobs_sync([0, *ids[:k]])[ids[k]]) for k in range(len(ids))
    )
    assert run(p.prefix(context)) == pytest.approx(expected, abs=1e-6)
    row = lm.next_token_logprobs_sync([0, *ids]).double()
    w = run(p.logw_next(context))
    assert w[lm.byte_vocab[2]] == pytest.approx(float(row[2]))
    assert w[EOS] == pytest.approx(float(row[5]))
    assert run(p.complete(context)) == pytest.approx(expected + float(row[5]), abs=1e-6)
    assert math.isclose(np.exp(w.weights).sum(), 1.0, rel_tol=1e-5)


def test_eos_as_token_bytes_or_id_means_the_same():
    lm = toy()
    by_token = PromptedLLM(lm, eos_tokens=[Token(4, b"\n"), Token(5, b"$")])
    with pytest.warns(DeprecationWarning, match="eos_byte_strings"):
        by_bytes = PromptedLLM(lm, eos_tokens=[b"\n", b"$"])
    by_id = PromptedLLM(lm, eos_tokens=[4, 5])
    by_new_name = PromptedLLM(lm, eos_byte_strings=[b"\n", b"$"])
    weights = [run(p.logw_next([])).weights for p in (by_token, by_bytes, by_id, by_new_name)]
    for w in weights[1:]:
        np.testing.assert_array_equal(w, weights[0])
    row = lm.next_token_logprobs_sync([]).double()
    assert weights[0][-1] == pytest.approx(float(torch.logsumexp(row[[4, 5]], 0)))
    assert b"\n" not in [bytes(t) for t in by_bytes.vocab]
    with pytest.raises(ValueError, match="no token"):
        PromptedLLM(lm, eos_byte_strings=[b"zz"])
    with pytest.raises(ValueError, match="not both"):
        PromptedLLM(lm, eos_tokens=[4], eos_byte_strings=[b"$"])


def test_eos_tokens_as_ids_is_not_deprecated():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        PromptedLLM(toy(), eos_tokens=[4, 5])


def test_from_name_loads_the_model_and_passes_other_keywords_to_the_backend():
    p = PromptedLLM.from_name("tiny-random", backend="mock", temperature=0.5)
    assert p.temperature == 0.5 and len(p.vocab) + len(p.eos_tokens) == p.model.vocab_size
    eos = bytes(p.model.byte_vocab[p.model.eos_token_ids[0]])
    with pytest.warns(DeprecationWarning):
        q = PromptedLLM.from_name("tiny-random", backend="mock", eos_tokens=[eos])
    assert [bytes(t) for t in q.eos_tokens] == [eos]
    # other keywords are backend options, as in genlm-control; unknown ones are named
    with pytest.raises(ValueError, match="bogus"):
        PromptedLLM.from_name("tiny-random", backend="mock", bogus=1)


def test_temperature_renormalises():
    p = PromptedLLM(toy(), temperature=0.5)
    w = run(p.logw_next([]))
    assert math.isclose(np.exp(w.weights).sum(), 1.0, rel_tol=1e-9)
    for bad in (0, -1, math.inf):
        with pytest.raises(ValueError, match="temperature"):
            PromptedLLM(toy(), temperature=bad)


def test_text_prompt_and_spawn():
    lm = toy()
    p = PromptedLLM(lm, prompt="ab")
    assert p.prompt == "ab" and p.prompt_ids == [3]
    q = p.spawn(temperature=2.0)
    assert q.prompt_ids == p.prompt_ids and q.temperature == 2.0
    p.set_prompt_from_str("ba")
    assert p.prompt == "ba"
    with pytest.raises(ValueError, match="not both"):
        PromptedLLM(lm, prompt_ids=[0], prompt="a")


def test_special_tokens_are_listed_for_grammars():
    p = PromptedLLM(toy())
    assert p.special_indices() == [0]


def test_a_bad_token_fails_only_its_own_call():
    p = PromptedLLM(toy())

    async def main():
        return await asyncio.gather(
            p.prefix([p.vocab[1]]), p.prefix([b"zz"]), return_exceptions=True
        )

    good, bad = run(main())
    assert isinstance(bad, ValueError) and "position 0" in str(bad)
    assert good == run(p.prefix([p.vocab[1]]))


def test_token_maps_list_every_token_and_the_eos_ones_in_the_order_asked():
    from genlm_lab.control.lm.token_maps import TokenMappings

    lm = toy()
    p = PromptedLLM(lm, eos_byte_strings=[b"$", b"\n"])
    maps = p.token_maps
    assert maps.eos_idxs == [5, 4] and maps.eos_byte_strings == [b"$", b"\n"]
    assert maps.decode == list(lm.byte_vocab)
    assert maps.potential_vocab == list(p.vocab)
    assert all(maps.encode[t] == i for i, t in enumerate(maps.decode))
    with pytest.warns(DeprecationWarning, match="by bytes"):
        assert maps.encode[bytes(maps.decode[2])] == 2
    with pytest.raises(ValueError, match="Cannot reset"):
        p.eos_byte_strings = [b"$"]
    with pytest.raises(ValueError, match="Duplicate"):
        p.spawn_new_eos(eos_byte_strings=[maps.decode[5], b"$"])
    with pytest.raises(TypeError, match="Cannot specify both"):
        p.spawn(eos_tokens=[4], eos_byte_strings=[b"$"])
    assert p.spawn().token_maps == maps and p.spawn_new_eos([4]).token_maps != maps
    with pytest.raises(ValueError, match="token_maps"):
        PromptedLLM(lm, eos_tokens=[4], token_maps=maps)
    # duplicates of an EOS byte string are EOS too, each string's first token first
    dup = TokenMappings.create([b"a", b"b", b"a"], eos_byte_strings=[b"a"])
    assert dup.eos_idxs == [0, 2] and dup.potential_vocab == [b"b"]
    with pytest.warns(DeprecationWarning, match="eos_tokens"):
        assert TokenMappings.create([b"a", b"b"], eos_tokens=[b"b"]).eos_idxs == [1]


def test_encode_decode_and_tokenize_round_trip():
    lm = toy()
    p = PromptedLLM(lm)
    tokens = p.decode_tokens([1, 2, 3])
    assert p.encode_tokens(tokens) == [1, 2, 3]
    with pytest.warns(DeprecationWarning, match="Passing bytes"):
        assert p.encode_tokens([bytes(tokens[0])]) == [1]
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="not in vocabulary"):
        p.encode_tokens([b"\xff\xfe nothing"])
    with pytest.raises(ValueError, match="Prompt must a string"):
        p.set_prompt_from_str(3)
    with pytest.warns(UserWarning, match="whitespace"):
        p.set_prompt_from_str("a\n")


def test_concurrent_tasks_each_read_back_the_prompt_they_set():
    import copy
    import pickle

    llm = PromptedLLM(toy(), prompt_ids=[0])
    alone = PromptedLLM(toy(), prompt_ids=[1, 2])

    async def use(ids):
        llm.prompt_ids = ids
        await asyncio.sleep(0)  # the other tasks set theirs meanwhile
        return list(llm.prompt_ids), await llm.prefix([llm.vocab[0]])

    async def main():
        return await asyncio.gather(*(use(ids) for ids in ([1], [1, 2], [4])))

    results = run(main())
    assert [r[0] for r in results] == [[1], [1, 2], [4]]
    assert results[1][1] == run(alone.prefix([alone.vocab[0]]))  # scored with its own prompt
    assert llm.prompt_ids == [4]  # outside the tasks: the last one set anywhere
    copied = copy.copy(llm)
    copied.prompt_ids = [2]
    assert llm.prompt_ids == [4] and copied.prompt_ids == [2]
    assert pickle.loads(pickle.dumps(llm)).prompt_ids == [4]


def test_setting_a_prompt_id_outside_the_vocabulary_fails_there():
    llm = PromptedLLM(toy(), prompt_ids=[1])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        llm.prompt_ids = [0, llm.model.vocab_size]
    assert llm.prompt_ids == [1]  # unchanged: a later spawn still works
    assert llm.spawn().prompt_ids == [1]
