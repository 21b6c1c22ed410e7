"""WCFG against independent computations: enumeration of derivations, closed-form series, WFSA."""

from __future__ import annotations

import asyncio
import math
import random
from math import comb

import numpy as np
import pytest

from genlm_lab.control import EOS, WCFG, WFSA, WeightedGrammar, direct_token_sampler

A, B, C = 97, 98, 99

P_GRAMMAR = """
0.20: S -> a b c
0.20: S -> a b a
0.20: S -> b b c
0.10: S -> b a c
0.10: S -> c c b
0.10: S -> a c a
0.10: S -> c b a
"""


def run(coro):
    return asyncio.run(coro)


def log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def assert_log_close(have: float, want: float, rel: float = 1e-10) -> None:
    """log-weights: equal infinities, or weights within a relative tolerance."""
    if want == -math.inf or have == -math.inf:
        assert have == want, (have, want)
    else:
        assert have == pytest.approx(want, abs=rel), (have, want)


def prefix_sum(lang: dict, x: tuple) -> float:
    return sum(w for s, w in lang.items() if s[: len(x)] == x)


# ---------------------------------------------------------------- finite grammars, enumerated
def random_finite_grammar(rng: random.Random) -> str:
    """Acyclic rules (S, A..D only use later nonterminals): a finite language, with
    unary, empty-bodied and multi-letter-terminal rules."""
    names = ["S", "A", "B", "C", "D"]
    lines = []
    for k, head in enumerate(names):
        for _ in range(rng.randint(1, 3)):
            body = []
            for _ in range(rng.choice([0, 1, 1, 2, 2, 3])):
                if k + 1 < len(names) and rng.random() < 0.5:
                    body.append(rng.choice(names[k + 1 :]))
                else:
                    body.append(rng.choice(["a", "b", "c", "ab"]))
            lines.append(f"{rng.uniform(0.1, 2.0):.3f}: {head} -> {' '.join(body)}")
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(12))
def test_finite_grammars_match_enumerated_derivations(seed):
    rng = random.Random(seed)
    text = random_finite_grammar(rng)
    p = WCFG.from_string(text)
    lang = p.cfg.language(10)  # height <= 6 for these grammars: every derivation
    assert lang == p.cfg.language(12)
    prefixes = {s[:k] for s in lang for k in range(len(s) + 1)}
    others = {tuple(rng.choice(p.vocab) for _ in range(rng.randint(0, 5))) for _ in range(30)}

    async def check():
        for x in sorted(prefixes | others):
            assert_log_close(await p.complete(list(x)), log(lang.get(x, 0.0)))
            assert_log_close(await p.prefix(list(x)), log(prefix_sum(lang, x)))
            if prefix_sum(lang, x) > 0:
                row = (await p.logw_next(list(x))).weights
                base = prefix_sum(lang, x)
                for i, y in enumerate(p.vocab):
                    assert_log_close(row[i], log(prefix_sum(lang, (*x, y))) - log(base))
                assert_log_close(row[-1], log(lang.get(x, 0.0)) - log(base))

    run(check())


def test_walking_logw_next_reproduces_the_language():
    """Accumulating logw_next from prefix([]) along every path gives each string's weight."""
    p = WCFG.from_string(P_GRAMMAR)
    found = {}

    async def walk(context, logw):
        row = (await p.logw_next(context)).weights
        for token, w in zip(p.vocab_eos, row, strict=True):
            if w == -np.inf:
                continue
            if token is EOS:
                found[tuple(context)] = math.exp(logw + w)
            else:
                await walk([*context, token], logw + w)

    run(walk([], run(p.prefix([]))))
    lang = p.cfg.language(10)
    assert set(found) == set(lang)
    for x, w in lang.items():
        assert found[x] == pytest.approx(w, abs=1e-14)


def test_the_ensemble_fixture_grammar():
    p = WCFG.from_string(P_GRAMMAR)
    assert p.vocab == [A, B, C]
    assert p.cfg.language(10) == {
        (A, B, C): 0.2, (A, B, A): 0.2, (B, B, C): 0.2, (B, A, C): 0.1,
        (C, C, B): 0.1, (A, C, A): 0.1, (C, B, A): 0.1,
    }  # fmt: skip
    assert run(p.prefix([A, B])) == pytest.approx(math.log(0.4), abs=1e-14)
    assert run(p.complete([A, B, C])) == pytest.approx(math.log(0.2), abs=1e-14)
    run(p.assert_contract([[], [A], [B], [C], [B, B], [A, B, C]]))


def test_genlm_control_example():
    """genlm-control's test_wcfg: 3: S -> A B, 2: S -> A B B."""
    p = WCFG.from_string("3.0: S -> A B\n2.0: S -> A B B\n1.0: A -> a\n1.0: B -> b")
    assert run(p.complete(b"ab")) == pytest.approx(math.log(3))
    assert run(p.complete(b"abb")) == pytest.approx(math.log(2))
    assert run(p.complete(b"a")) == -math.inf
    assert run(p.prefix(b"ab")) == pytest.approx(math.log(5))
    assert run(p.prefix(b"a")) == pytest.approx(math.log(5))
    assert p.spawn().cfg == p.cfg
    run(p.assert_contract([b"ab", b"a", b""]))


# ---------------------------------------------------------------- recursive grammars, series
def test_right_recursion_against_its_series():
    p = WCFG.from_string("0.5: S -> a S\n0.3: S -> b")
    z = 0.3 / (1 - 0.5)
    for k in range(8):
        assert_log_close(run(p.prefix([A] * k)), log(0.5**k * z))
        assert_log_close(run(p.complete([A] * k + [B])), log(0.5**k * 0.3))
        assert_log_close(run(p.prefix([A] * k + [B])), log(0.5**k * 0.3))
        assert run(p.complete([A] * k)) == -math.inf
    assert run(p.prefix([B, A])) == -math.inf
    row = run(p.logw_next([A, A])).weights  # a: 0.5, b: 0.3 / z, EOS: 0
    np.testing.assert_allclose(np.exp(row), [0.5, 0.3 / z, 0.0], atol=1e-14)
    run(p.assert_contract([[A, A], [A, B], []]))


def test_left_recursion_and_center_embedding():
    left = WCFG.from_string("0.5: S -> S a\n0.5: S -> b")
    center = WCFG.from_string("0.4: S -> a S b\n0.6: S -> c")
    for k in range(7):
        assert_log_close(run(left.prefix([B] + [A] * k)), log(0.5**k))
        assert_log_close(run(left.complete([B] + [A] * k)), log(0.5 ** (k + 1)))
        assert_log_close(run(center.prefix([A] * k)), log(0.4**k))  # total weight 1
        assert_log_close(run(center.complete([A] * k + [C] + [B] * k)), log(0.4**k * 0.6))
        for j in range(k + 1):
            assert_log_close(run(center.prefix([A] * k + [C] + [B] * j)), log(0.4**k * 0.6))
        assert run(center.prefix([A] * k + [C] + [B] * (k + 1))) == -math.inf
    run(left.assert_contract([[B, A, A], [B]]))
    run(center.assert_contract([[A, A, C, B], [A, C], [A, A]]))


def test_binary_branching_against_catalan_series():
    """S -> S S (p) | a (q): a^n weighs Catalan(n-1) p^(n-1) q^n; prefix(a^n) is the tail sum."""
    p_, q = 0.2, 0.5
    g = WCFG.from_string(f"{p_}: S -> S S\n{q}: S -> a")

    weights = [0.0, q]  # weights[n] of a^n, by Catalan(n) / Catalan(n-1) = 2(2n-1)/(n+1)
    for n in range(1, 400):
        weights.append(weights[n] * 2 * (2 * n - 1) / (n + 1) * p_ * q)
    assert weights[5] == pytest.approx(comb(8, 4) / 5 * p_**4 * q**5)

    for n in range(1, 25):
        tail = math.fsum(weights[n:])
        assert_log_close(run(g.complete([A] * n)), log(weights[n]), rel=1e-9)
        assert_log_close(run(g.prefix([A] * n)), log(tail), rel=1e-9)
    z = (1 - math.sqrt(1 - 4 * p_ * q)) / (2 * p_)
    assert_log_close(run(g.prefix([])), log(z), rel=1e-12)


def test_unary_and_nullable_cycles_are_summed_exactly():
    # S => A => S loops weigh 0.25 each: "a" weighs 0.25 / (1 - 0.25)
    unary = WCFG.from_string("0.5: S -> A\n0.25: S -> a\n0.5: A -> S")
    assert_log_close(run(unary.complete([A])), log(1 / 3), rel=1e-13)
    assert_log_close(run(unary.prefix([])), log(1 / 3), rel=1e-13)
    # S -> S E (0.5) | a (0.4), E -> eps (0.6) | b (0.4): a b^k weighs 0.4 * 0.2^k / 0.7^(k+1)
    nullable = WCFG.from_string("0.5: S -> S E\n0.4: S -> a\n0.6: E ->\n0.4: E -> b")
    for k in range(6):
        x = [A] + [B] * k
        assert_log_close(run(nullable.complete(x)), log(0.4 * 0.2**k / 0.7 ** (k + 1)))
        assert_log_close(run(nullable.prefix(x)), log(0.8 * (2 / 7) ** k))
    run(nullable.assert_contract([[A, B, B], [A], []]))
    # the empty string itself
    empty = WCFG.from_string("0.3: S ->\n0.5: S -> a S")
    assert_log_close(run(empty.complete([])), log(0.3))
    assert_log_close(run(empty.prefix([])), log(0.6))
    assert_log_close(run(empty.complete([A, A])), log(0.25 * 0.3))
    assert_log_close(run(empty.logw_next([])).weights[-1], log(0.5))


def test_critical_grammar_is_good_to_about_1e_8():
    g = WCFG.from_string("0.5: S -> S S\n0.5: S -> a")  # total weight exactly 1
    assert abs(run(g.prefix([]))) < 1e-6
    assert_log_close(run(g.prefix([A, A])), log(0.5), rel=1e-6)


def random_right_linear(rng: random.Random) -> tuple[WeightedGrammar, WFSA]:
    """A right-linear grammar (X -> a Y, X -> Y, X -> a, X -> eps) and the same WFSA.

    The automaton removes the unary rules by summing their paths as a power series.
    """
    names = ["S", "X", "Y", "Z"]
    rules = []
    for head in names:
        kinds = [rng.choice(["shift", "unary", "last", "eps"]) for _ in range(rng.randint(2, 4))]
        ws = np.array([rng.uniform(0.1, 1.0) for _ in kinds])
        ws *= rng.uniform(0.5, 0.9) / ws.sum()  # row sums < 1: total weight finite
        for kind, w in zip(kinds, ws, strict=True):
            if kind == "shift":
                rules.append((w, head, (rng.choice([A, B]), rng.choice(names))))
            elif kind == "unary":
                rules.append((w, head, (rng.choice(names),)))
            elif kind == "last":
                rules.append((w, head, (rng.choice([A, B]),)))
            else:
                rules.append((w, head, ()))
    grammar = WeightedGrammar(S="S", V={A, B}, rules=rules)
    index = {x: i for i, x in enumerate(names)}
    unary = np.zeros((4, 4))
    for w, head, body in rules:
        if len(body) == 1 and body[0] in index:
            unary[index[head], index[body[0]]] += w
    closure, term = np.eye(4), np.eye(4)
    for _ in range(400):
        term = term @ unary
        closure = closure + term
    fsa = WFSA(vocabulary=[A, B])
    fsa.add_I("S", 1.0)
    fsa.add_F("end", 1.0)
    for x in names:
        for w, head, body in rules:
            c = closure[index[x], index[head]] * w
            if c == 0:
                continue
            if len(body) == 2:
                fsa.add_arc(x, body[0], body[1], c)
            elif len(body) == 1 and body[0] not in index:
                fsa.add_arc(x, body[0], "end", c)
            elif not body:
                fsa.add_F(x, c)
    return grammar, fsa


@pytest.mark.parametrize("seed", range(10))
def test_right_linear_grammars_match_the_automaton(seed):
    rng = random.Random(seed)
    grammar, fsa = random_right_linear(rng)
    p = WCFG(grammar)

    async def check():
        live = []
        for _ in range(25):
            x = [rng.choice([A, B]) for _ in range(rng.randint(0, 6))]
            want = await fsa.prefix(x)
            assert_log_close(await p.prefix(x), want, rel=1e-9)
            assert_log_close(await p.complete(x), await fsa.complete(x), rel=1e-9)
            if want > -math.inf:
                live.append(x)
        assert live
        await p.assert_contract(live[:4], rtol=1e-9, atol=1e-9)

    run(check())


def kleene_weight(rules, x, prefix):
    """Total weight of the strings `x` (or, with `prefix`, `x` then anything) by brute force.

    Bar-Hillel: each symbol X becomes a matrix over the states 0..n of the automaton
    reading `x` (state n loops on every byte when `prefix`); a rule's matrix is the
    product of its body's; the grammar's matrices are iterated from zero to their
    fixed point (Kleene), with no Newton step, no unary closure and no items.
    """
    n = len(x)
    size = n + 1
    term = {}
    for t in (A, B):
        m = np.zeros((size, size))
        for i in range(n):
            m[i, i + 1] = 1.0 if x[i] == t else 0.0
        if prefix:
            m[n, n] = 1.0
        term[t] = m
    heads = sorted({h for _, h, _ in rules})
    val = {h: np.zeros((size, size)) for h in heads}
    for _ in range(20_000):
        new = {h: np.zeros((size, size)) for h in heads}
        for w, head, body in rules:
            prod = np.eye(size)
            for y in body:
                prod = prod @ (term[y] if y in term else val.get(y, np.zeros((size, size))))
            new[head] += w * prod
        change = max(np.max(np.abs(new[h] - val[h])) for h in heads)
        val = new
        if change <= 1e-17:
            break
    return val["S"][0, n]


def random_recursive_grammar(rng: random.Random) -> list:
    """Rules over S, X, Y with recursion, unary and empty bodies; weights kept small."""
    names = ["S", "X", "Y"]
    rules = [(0.2, "S", ("X", "Y")), (0.2, "S", ("Y", "X", "S"))]  # every name in use
    for head in names:
        rules.append((rng.uniform(0.1, 0.3), head, (rng.choice([A, B]),)))  # productive
        for _ in range(rng.randint(2, 4)):
            size = rng.choice([0, 1, 1, 2, 2, 3])
            body = tuple(rng.choice(names + [A, B]) for _ in range(size))
            rules.append((rng.uniform(0.05, 0.25), head, body))
    return rules


@pytest.mark.parametrize("seed", range(10))
def test_recursive_grammars_match_a_kleene_fixed_point(seed):
    rng = random.Random(seed)
    rules = random_recursive_grammar(rng)
    p = WCFG(WeightedGrammar(S="S", V={A, B}, rules=rules))
    contexts = [[]] + [[t] for t in (A, B)] + [[s, t] for s in (A, B) for t in (A, B)]
    contexts += [[rng.choice([A, B]) for _ in range(3)] for _ in range(3)]

    async def check():
        for x in contexts:
            assert_log_close(await p.complete(x), log(kleene_weight(rules, x, False)), rel=1e-9)
            assert_log_close(await p.prefix(x), log(kleene_weight(rules, x, True)), rel=1e-9)
        live = [x for x in contexts if await p.prefix(x) > -math.inf]
        await p.assert_contract(live[:5], rtol=1e-9, atol=1e-9)

    run(check())


def test_long_contexts_do_not_underflow():
    p = WCFG.from_string("0.01: S -> a S\n0.99: S -> b")
    z = 0.99 / 0.99
    n = 300  # 0.01 ** 300 is far below the smallest float
    assert_log_close(run(p.prefix([A] * n)), n * math.log(0.01) + math.log(z), rel=1e-9)
    assert_log_close(run(p.complete([A] * n + [B])), n * math.log(0.01) + math.log(0.99), rel=1e-9)
    row = run(p.logw_next([A] * n)).weights
    np.testing.assert_allclose(np.exp(row), [0.01, 0.99, 0.0], atol=1e-12)


# ---------------------------------------------------------------- divergence, bad input
@pytest.mark.parametrize(
    "text",
    [
        "0.6: S -> S S\n0.5: S -> a",  # z = 0.6 z^2 + 0.5 has no solution
        "1.5: S -> S\n1.0: S -> a",
        "1.0: S -> S\n1.0: S -> a",  # infinitely many derivations of "a", each of weight 1
        "1.0: S -> a S\n0.5: S -> b",
        "0.5: S -> A\n1.0: A -> B\n2.0: B -> A\n1.0: B -> b",
    ],
)
def test_divergent_grammars_raise(text):
    with pytest.raises(ValueError, match="diverges"):
        WCFG.from_string(text)


def test_unreachable_or_unproductive_rules_do_not_matter():
    p = WCFG.from_string("1.0: S -> a\n2.0: U -> U U\n1.0: U -> b\n1.0: S -> D a\n1.0: D -> D")
    assert p.vocab == [A, B]
    assert run(p.prefix([])) == pytest.approx(0.0, abs=1e-15)
    assert run(p.complete([A])) == pytest.approx(0.0, abs=1e-15)
    assert run(p.prefix([B])) == -math.inf
    empty = WCFG.from_string("1.0: S -> S a")  # no finite derivation: nothing weighs anything
    assert run(empty.prefix([])) == -math.inf
    with pytest.raises(ValueError, match="weight zero"):
        run(empty.logw_next([]))


def test_unparseable_line_is_named():
    with pytest.raises(ValueError, match=r"line 3: 'S -> a b'") as info:
        WeightedGrammar.from_string("# comment\n1.0: S -> a\nS -> a b\n")
    assert "weight: Head -> body" in str(info.value)
    with pytest.raises(ValueError, match=r"line 1: 'x: S -> a'.*not a number"):
        WCFG.from_string("x: S -> a")
    with pytest.raises(ValueError, match=r"line 2: '-1: S -> b'.*>= 0"):
        WCFG.from_string("1: S -> a\n-1: S -> b")
    with pytest.raises(ValueError, match="line 2: '1: a -> b': rule head 'a' is a terminal"):
        WeightedGrammar.from_string("1: S -> a\n1: a -> b")
    with pytest.raises(ValueError, match=r"both as terminals and as rule heads: \['a'\]"):
        WeightedGrammar.from_string("1: a -> b\n1: S -> a")


def test_parser_reads_genlm_grammar_text():
    g = WeightedGrammar.from_string(
        "# a comment\n\n  0.5: S → a S  \n0.25: S -> hé B\n1: B ->\n0: S -> z"
    )
    assert g.S == "S"
    assert g.V == {"a", "hé", "z"}  # `z` is a terminal of a weight-zero rule, which is dropped
    assert [(r.w, r.head, r.body) for r in g] == [
        (0.5, "S", ("a", "S")),
        (0.25, "S", ("hé", "B")),
        (1.0, "B", ()),
    ]
    b = g.to_bytes()  # as genlm-grammar's: the terminals of the rules, spelled
    assert b.V == {A, ord("h"), 0xC3, 0xA9}
    assert b.rules[1].body == (ord("h"), 0xC3, 0xA9, "B")
    p = WCFG(b)
    assert run(p.complete("hé".encode())) == pytest.approx(math.log(0.25))
    words = WCFG.from_string("0.5: S -> the N\n0.5: N -> cat\n0.5: N -> dog", to_bytes=False)
    assert words.vocab == ["cat", "dog", "the"]
    assert run(words.complete(["the", "dog"])) == pytest.approx(math.log(0.25))
    assert run(words.prefix(["the"])) == pytest.approx(math.log(0.5))


def test_language_is_by_derivation_height_as_in_genlm_grammar():
    g = WeightedGrammar.from_string("0.5: S -> a S\n0.5: S -> b\n1: S -> A\n1: A -> c")
    assert g.language(1) == {("b",): 0.5}
    lang = g.language(3)
    assert lang == {
        ("b",): 0.5,
        ("c",): 1.0,
        ("a", "b"): 0.25,
        ("a", "c"): 0.5,
        ("a", "a", "b"): 0.125,
    }
    assert lang["zzz"] == 0.0  # a missing string weighs zero
    assert g.language(0) == {}


def test_contexts_as_bytes_lists_of_ints_or_bytes():
    p = WCFG.from_string(P_GRAMMAR)
    want = math.log(0.4)
    for context in (b"ab", bytearray(b"ab"), [A, B], [b"a", b"b"], [np.int64(A), np.int64(B)]):
        assert run(p.prefix(context)) == pytest.approx(want)
    assert run(p.prefix(b"az")) == -math.inf  # a byte the grammar does not use weighs zero
    assert run(p.complete([A, 200])) == -math.inf
    for bad in ([b"ab"], ["a"], [300], [A, EOS, B]):
        with pytest.raises(ValueError):
            run(p.prefix(bad))
    assert p.encode(b"ab") == [0, 1]
    row = run(p.logw_next(b"a"))
    assert row[B] == row.weights[p.lookup[b"b"]] == pytest.approx(math.log(0.4 / 0.5))
    assert run(p.score([A, B, C, EOS])) == pytest.approx(math.log(0.2))


# ---------------------------------------------------------------- construction, views
class Float:  # genlm-grammar's semiring classes are told apart by name
    pass


class Boolean:
    pass


class FakeRule:
    def __init__(self, w, head, body):
        self.w, self.head, self.body = w, head, body


class FakeCFG:
    """Duck-typed genlm-grammar CFG: R (the semiring class), S, V, rules."""

    def __init__(self, semiring):
        self.R, self.S, self.V = semiring, "S", {A, B}
        self.rules = [
            FakeRule(3.0, "S", ("A", "B")),
            FakeRule(2.0, "S", ("A", "B", "B")),
            FakeRule(1.0, "A", (A,)),
            FakeRule(1.0, "B", (B,)),
        ]


def test_a_genlm_grammar_cfg_is_converted():
    cfg = FakeCFG(Float)
    p = WCFG(cfg)
    assert p.cfg is cfg and p.spawn().cfg is cfg
    assert run(p.prefix(b"a")) == pytest.approx(math.log(5))
    assert run(p.complete(b"abb")) == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="Float"):
        WCFG(FakeCFG(Boolean))


def test_non_float_grammars_and_non_grammars_are_refused():
    with pytest.raises(ValueError, match="Float"):
        WCFG(WeightedGrammar.from_string("true: S -> a", semiring="boolean"))
    with pytest.raises(TypeError, match="WeightedGrammar"):
        WCFG("1.0: S -> a")
    with pytest.raises(ValueError, match="no terminals"):
        WCFG.from_string("1.0: S ->")
    with pytest.raises(ValueError, match="semiring"):
        WeightedGrammar(semiring="log")


def test_boolean_grammar_language():
    g = WeightedGrammar.from_string("true: S -> a\n1: S -> A\n1: A -> a\nfalse: S -> b", "boolean")
    assert g.language(3) == {("a",): True}


def test_equality_repr_spawn_and_cache():
    p = WCFG.from_string(P_GRAMMAR)
    q = WCFG.from_string("\n".join(reversed(P_GRAMMAR.strip().split("\n"))))
    assert p.cfg == q.cfg  # rules in any order
    assert p.cfg != WCFG.from_string(P_GRAMMAR.replace("0.20: S -> a b c", "0.21: S -> a b c")).cfg
    assert "0.2: S → 'a' 'b' 'c'" in repr(p.cfg)
    assert repr(p).startswith("WCFG(cfg=WeightedGrammar(start='S')")
    assert "&#x27;a&#x27;" in p._repr_html_() and p._repr_html_().startswith("<pre")
    run(p.prefix(b"ab"))
    assert p._columns_cache
    s = p.spawn()
    assert s is not p and s.cfg == p.cfg and not s._columns_cache
    assert run(s.prefix(b"ab")) == run(p.prefix(b"ab"))
    p.clear_cache()
    assert not p._columns_cache and not p._next_cache
    assert run(p.prefix(b"ab")) == pytest.approx(math.log(0.4))


def test_batch_methods_and_direct_sampling():
    p = WCFG.from_string(P_GRAMMAR)
    contexts = [[], [A], [A, B], [C, C]]
    run(p.assert_batch_consistency(contexts))
    seqs = run(direct_token_sampler(p, seed=0).smc(4, 0.5, 5, seed=0))
    lang = p.cfg.language(10)
    for context in seqs.contexts:
        assert context[-1] is EOS and tuple(context[:-1]) in lang


def test_a_reading_far_less_likely_than_another_is_kept():
    """After a^n, the X reading outweighs Y by ~900^n; a final b leaves only Y (log space)."""
    p = WCFG.from_string(
        "0.5: S -> X\n0.5: S -> Y\n0.9: X -> a X\n0.1: X -> c\n0.001: Y -> a Y\n0.999: Y -> b"
    )
    n = 150
    want = math.log(0.5) + n * math.log(0.001) + math.log(0.999)
    assert_log_close(run(p.complete([A] * n + [B])), want, rel=1e-9)
    assert_log_close(run(p.prefix([A] * n + [B])), want, rel=1e-9)
    x_reading = math.log(0.5) + n * math.log(0.9)
    assert_log_close(run(p.prefix([A] * n)), x_reading, rel=1e-9)  # Y's share is below 1e-300
