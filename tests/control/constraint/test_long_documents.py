"""Documents of 100 KB through every byte-level potential: no recursion, no quadratic re-reads."""

from __future__ import annotations

import asyncio
import json
import math
import random

from genlm_lab.backend import ToyLM
from genlm_lab.control import (
    EOS,
    BoolCFG,
    BoolFSA,
    BoolPredicate,
    JsonSchema,
    PromptedLLM,
    PythonRegex,
)

SIZE = 100_000


def run(coro):
    return asyncio.run(coro)


def words(rng: random.Random, size: int) -> bytes:
    out, n = [], 0
    while n < size:
        word = "".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 9)))
        out.append(word)
        n += len(word) + 1
    return (" ".join(out) + ".").encode()


def check_long(potential, text: bytes, bad: bytes, walk: int = 100) -> None:
    """complete/prefix of the whole text and of a wrong one; masks along the last `walk` bytes."""
    assert len(text) >= SIZE
    assert run(potential.complete(list(text))) == 0
    assert run(potential.prefix(list(text[:-1]))) == 0
    assert run(potential.complete(list(bad))) == -math.inf
    for cut in range(len(text) - walk, len(text)):
        weights = run(potential.logw_next(list(text[:cut])))
        assert weights[text[cut]] == 0, cut
    assert run(potential.logw_next(list(text)))[EOS] == 0


def test_a_regex_reads_100_kb():
    text = words(random.Random(0), SIZE)
    fsa = BoolFSA.from_regex(r"([a-h]+ )*[a-h]+\.")
    check_long(fsa, text, text[:-1] + b"!")
    stats = fsa.engine._states.stats
    # each byte consumed about once: the walk moves states forward instead of re-reading
    assert stats["consumed"] < 4 * len(text), stats


def test_a_grammar_reads_100_kb_of_nested_expressions():
    rng = random.Random(1)
    parts, depth = [], 0
    while len(parts) < SIZE * 3 // 4:
        if rng.random() < 0.3:
            parts.append("(")
            depth += 1
        parts.append(str(rng.randint(0, 99)))
        while depth and rng.random() < 0.25:
            parts.append(")")
            depth -= 1
        parts.append(rng.choice("+*"))
    parts.append("1" + ")" * depth)
    text = "".join(parts).encode()
    cfg = BoolCFG.from_lark(
        'start: expr\nexpr: term (("+"|"-") term)*\nterm: factor ("*" factor)*\n'
        'factor: /[0-9]+/ | "(" expr ")"\n'
    )
    check_long(cfg, text, text + b")")


def test_a_json_schema_reads_100_kb():
    rng = random.Random(2)
    items = []
    while len(json.dumps(items)) < SIZE:
        items.append({"id": len(items), "name": "".join(rng.choice("xyz") for _ in range(20))})
    schema = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
            "required": ["id", "name"],
        },
    }
    text = json.dumps(items, indent=2).encode()
    js = JsonSchema(
        schema, key_order="any", line_breaks=2, strict=False
    )  # pretty-printed: accept it all
    bad = json.dumps([*items, {"id": "x", "name": "y"}]).encode()
    check_long(js, text, bad)


def test_a_python_regex_reads_100_kb():
    text = words(random.Random(3), SIZE)
    p = PythonRegex(r"(?:[a-h]++ )*+[a-h]++\.")  # possessive: no backtracking over 100 KB
    check_long(p, text, text[:-1] + b"?", walk=5)


def test_a_predicate_reads_100_kb():
    text = words(random.Random(4), SIZE)

    def prefix_ok(t: bytes) -> bool:
        return b".." not in t and all(c == 32 or c == 46 or 97 <= c <= 104 for c in t[-64:])

    pred = BoolPredicate(prefix_ok, lambda t: t.endswith(b"."))
    check_long(pred, text, text + b"!", walk=20)


def test_token_masks_along_a_100_kb_context():
    """Over a token vocabulary: a 100 KB context scored whole, then masks along its last steps."""
    tokens = [b"a", b"b", b"ab", b" ", b"a ", b"."]
    llm = PromptedLLM(ToyLM([*tokens, b"$"], eos=b"$", seed=0))
    constraint = BoolFSA.from_regex(r"([ab]+ )*[ab]+\.").coerce(llm)
    rng = random.Random(5)
    ids: list[int] = [0]
    for _ in range(SIZE):
        pick = rng.choice([2, 4, 0, 1, 3])
        if not (pick == 3 and ids[-1] in (3, 4)):  # no two blanks in a row
            ids.append(pick)
    ids += [0, 5]
    context = [llm.vocab[i] for i in ids]
    assert sum(len(tokens[i]) for i in ids) >= SIZE
    assert run(constraint.complete(context)) == 0
    for cut in range(len(context) - 50, len(context)):
        assert run(constraint.logw_next(context[:cut])).weights[ids[cut]] == 0
    assert run(constraint.complete(context[:-1])) == -math.inf
    assert constraint.engine._states.stats["consumed"] < 4 * len(context)
