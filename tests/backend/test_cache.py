"""TokenTrieCache: KV chains rebuild exactly the stored prefixes, within the LRU bounds."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from genlm_lab.backend._cache import TokenTrieCache

sequences = st.lists(st.integers(0, 2), min_size=1, max_size=7)


def truth(ids):
    """What a KV cache must hold for a prefix: one value per position, set by the prefix up to it."""
    return torch.tensor([float(hash(tuple(ids[: i + 1])) % 100_003) for i in range(len(ids))])


def as_segment(values):
    return values.reshape(1, 1, 1, -1, 1).expand(2, 2, 1, -1, 1).clone()


def store(cache, ids, adapter=None):
    base = cache.longest_kv(adapter, ids, len(ids) - 1)
    cache.put_kv(adapter, ids, base, as_segment(truth(ids)[base.length :]))


def rebuilt(handle):
    pieces = handle.pieces()
    if not pieces:
        return torch.empty(0)
    kv = torch.cat(pieces, dim=-2)
    assert kv.shape[-2] == handle.length
    return kv[0, 0, 0, :, 0]


def longest_stored_prefix(stored, ids, limit):
    best = 0
    for s in stored:
        n = 0
        while n < min(len(s), len(ids), limit) and s[n] == ids[n]:
            n += 1
        best = max(best, n)
    return best


@settings(max_examples=60, deadline=None)
@given(st.lists(sequences, min_size=1, max_size=12), st.lists(sequences, max_size=8))
def test_longest_kv_is_the_longest_stored_prefix_and_rebuilds_exactly(stored, queries):
    cache = TokenTrieCache(max_kv_tokens=10_000, max_logprobs=10)
    for ids in stored:
        store(cache, ids)
    for ids in stored + queries:
        for limit in (len(ids), len(ids) - 1):
            handle = cache.longest_kv(None, ids, limit)
            assert handle.length == longest_stored_prefix(stored, ids, limit)
            assert torch.equal(rebuilt(handle), truth(ids)[: handle.length])
    assert cache.kv_tokens == sum(s.kv.shape[-2] for s in cache._kv_lru)


@settings(max_examples=60, deadline=None)
@given(st.lists(sequences, min_size=1, max_size=20), st.integers(1, 12))
def test_lru_eviction_keeps_within_bound_and_results_exact(stored, bound):
    cache = TokenTrieCache(max_kv_tokens=bound, max_logprobs=3)
    for ids in stored:
        store(cache, ids)
        assert cache.kv_tokens <= bound
        for q in stored:
            handle = cache.longest_kv(None, q, len(q))
            assert torch.equal(rebuilt(handle), truth(q)[: handle.length])
    # Every segment that remains still chains down to depth 0.
    for node in list(cache._kv_lru):
        assert node.kv_base is None or node.kv_base.kv is not None
    check_invariants(cache)
    cache.clear_kv()
    check_invariants(cache)
    assert cache.kv_tokens == 0


def test_abandoned_branch_is_evicted_before_the_live_one():
    cache = TokenTrieCache(max_kv_tokens=12, max_logprobs=3)
    prompt = [0, 1, 2, 3, 4]
    store(cache, prompt)
    store(cache, prompt + [5])
    store(cache, prompt + [5, 6])  # branch A, then abandoned
    live = list(prompt)
    for tok in range(7, 14):  # branch B keeps extending by one token
        live = live + [tok]
        store(cache, live)
        assert cache.kv_tokens <= 12
    assert cache.longest_kv(None, live, len(live)).length == len(live)
    assert cache.longest_kv(None, prompt + [5, 6], 7).length == len(prompt)


def test_logprob_cache_is_lru_bounded_and_exact():
    cache = TokenTrieCache(max_kv_tokens=0, max_logprobs=3)
    for i in range(5):
        cache.put_logprobs(None, (i,), torch.full((4,), float(i)))
    assert cache.n_logprobs == 3
    assert cache.get_logprobs(None, (0,)) is None
    assert cache.get_logprobs(None, (1,)) is None
    cache.get_logprobs(None, (2,))  # touch: now the most recent
    cache.put_logprobs(None, (9,), torch.zeros(4))
    assert cache.get_logprobs(None, (3,)) is None
    assert torch.equal(cache.get_logprobs(None, (2,)), torch.full((4,), 2.0))


def test_entries_of_one_adapter_are_invisible_to_another():
    cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=10)
    cache.put_logprobs("a", (1, 2), torch.ones(3))
    store(cache, [1, 2, 3], adapter="a")
    assert cache.get_logprobs(None, (1, 2)) is None
    assert cache.get_logprobs("b", (1, 2)) is None
    assert cache.longest_kv(None, [1, 2, 3, 4], 4).length == 0
    assert cache.longest_kv("a", [1, 2, 3, 4], 4).length == 3


def test_clear_adapter_keeps_the_others():
    cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=10)
    for adapter in (None, "a"):
        cache.put_logprobs(adapter, (1,), torch.ones(2))
        store(cache, [1, 2], adapter=adapter)
    cache.clear("a")
    assert cache.get_logprobs("a", (1,)) is None
    assert cache.get_logprobs(None, (1,)) is not None
    assert cache.kv_tokens == 2
    cache.clear()
    assert len(cache) == 0 and cache.kv_tokens == 0


def test_clear_kv_keeps_logprobs():
    cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=10)
    cache.put_logprobs(None, (1, 2), torch.ones(2))
    store(cache, [1, 2])
    cache.clear_kv()
    assert cache.kv_tokens == 0 and cache.n_kv_segments == 0
    assert cache.longest_kv(None, [1, 2], 2).length == 0
    assert cache.get_logprobs(None, (1, 2)) is not None


def test_clear_kv_of_a_chain_without_logprobs_forgets_every_segment():
    # Pruning the deeper segment first detached its base too; pruning the base
    # again raised KeyError and left the cache half-cleared.
    cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=0)
    store(cache, [1, 2])
    store(cache, [1, 2, 3])
    cache.clear_kv()
    assert cache.kv_tokens == 0 and len(cache) == 0 and cache._roots[None].children == {}
    store(cache, [1, 2, 4])
    assert torch.equal(rebuilt(cache.longest_kv(None, [1, 2, 4], 3)), truth([1, 2, 4]))


def test_a_handle_stays_valid_when_its_segments_are_dropped():
    cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=10)
    store(cache, [1, 2])
    store(cache, [1, 2, 3, 4])
    handle = cache.longest_kv(None, [1, 2, 3, 4, 5], 5)
    cache.clear_kv()  # e.g. from another thread, while a forward holds the handle
    assert torch.equal(rebuilt(handle), truth([1, 2, 3, 4]))


def test_a_segment_whose_base_was_dropped_is_not_stored():
    for drop in (TokenTrieCache.clear_kv, lambda c: c.clear(None)):
        cache = TokenTrieCache(max_kv_tokens=100, max_logprobs=10)
        store(cache, [1, 2])
        base = cache.longest_kv(None, [1, 2, 3], 2)
        drop(cache)
        cache.put_kv(None, [1, 2, 3], base, as_segment(truth([1, 2, 3])[2:]))
        assert cache.kv_tokens == 0 and cache.n_kv_segments == 0
        assert cache.longest_kv(None, [1, 2, 3], 3).length == 0
        store(cache, [1, 2, 3])
        assert torch.equal(rebuilt(cache.longest_kv(None, [1, 2, 3], 3)), truth([1, 2, 3]))


def _attached(cache, node):
    while node.parent is not None:
        if node.parent.children.get(node.token) is not node:
            return False
        node = node.parent
    return node in cache._roots.values()


def check_invariants(cache):
    """Sizes, bounds and links of a cache at rest."""
    kv_nodes = list(cache._kv_lru)
    assert cache.kv_tokens == sum(n.kv.shape[-2] for n in kv_nodes) <= cache.max_kv_tokens
    assert cache.n_logprobs <= cache.max_logprobs
    for node in kv_nodes:
        assert node.kv is not None and _attached(cache, node)
        assert node.kv_base is None or node.kv_base in cache._kv_lru
        assert node.kv_users == sum(n.kv_base is node for n in kv_nodes)
    for node in cache._lp_lru:
        assert node.logprobs is not None and _attached(cache, node)


def test_concurrent_threads_keep_the_cache_consistent_and_exact():
    import random
    import sys
    import threading

    cache = TokenTrieCache(max_kv_tokens=40, max_logprobs=8)
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        try:
            for step in range(2000):
                ids = [rng.randrange(3) for _ in range(rng.randint(1, 7))]
                adapter = rng.choice([None, "a"])
                op = rng.random()
                if op < 0.35:
                    store(cache, ids, adapter)
                elif op < 0.6:
                    cache.put_logprobs(adapter, tuple(ids), truth(ids)[-3:].clone())
                elif op < 0.8:
                    hit = cache.get_logprobs(adapter, tuple(ids))
                    assert hit is None or torch.equal(hit, truth(ids)[-3:])
                else:
                    handle = cache.longest_kv(adapter, ids, len(ids))
                    assert torch.equal(rebuilt(handle), truth(ids)[: handle.length])
                if step % 97 == seed:
                    rng.choice([cache.clear_kv, cache.clear, lambda: cache.clear("a")])()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, to hit the interleavings
    try:
        threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors, errors
    check_invariants(cache)
