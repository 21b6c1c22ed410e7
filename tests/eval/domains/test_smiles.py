"""smiles: the grammar against lark's Earley parser and RDKit's SMILES; the partial-SMILES check
against the parser itself, on every prefix of the shipped molecules and on hand-picked dead ones."""

from __future__ import annotations

import math
import os
import random
import sys

import pytest

rdkit = pytest.importorskip("rdkit", reason="the domains extra: pip install -e '.[domains]'")
partialsmiles = pytest.importorskip("partialsmiles")

from lark import Lark  # noqa: E402
from lark.exceptions import LarkError  # noqa: E402
from rdkit import Chem, RDConfig, rdBase  # noqa: E402

from genlm_lab.control import BoolCFG, Coerced  # noqa: E402
from genlm_lab.eval.domains.molecular_synthesis import load_gdb17_sample  # noqa: E402
from genlm_lab.eval.domains.smiles import (  # noqa: E402
    SMILES_GRAMMAR,
    PartialSmiles,
    SmilesProduct,
    smiles_constraint,
)

GOLD = load_gdb17_sample()


def _parser_says(text: str, partial: bool) -> bool:
    """partialsmiles' own verdict, asked directly (the reference for `PartialSmiles`)."""
    try:
        partialsmiles.ParseSmiles(text, partial=partial)
    except Exception:  # noqa: BLE001 - any error of the parser is a refusal
        return False
    return True


async def _live(potential, data: bytes) -> bool:
    return await potential.prefix(list(data)) == 0.0


async def _accepts(potential, data: bytes) -> bool:
    return await potential.complete(list(data)) == 0.0


async def test_every_prefix_of_every_shipped_molecule_is_live_and_each_whole_one_accepted():
    assert len(GOLD) == 30
    checked = 0
    for lead in (b"", b" "):
        potential = PartialSmiles(lead=lead)
        for smiles in GOLD:
            data = lead + smiles.encode()
            assert all([await _live(potential, data[:i]) for i in range(len(data) + 1)]), smiles
            assert await _accepts(potential, data), smiles
            checked += len(data) + 1
    assert checked == sum(2 * len(s) + 3 for s in GOLD)


@pytest.mark.parametrize(
    "dead",
    [
        "C)",  # closes a branch never opened
        "CC(C)(C)(C)C",  # a carbon with five bonds
        "F(F)F",  # a fluorine with two bonds
        "O=O=O",  # an oxygen with four bonds
        "C==C",  # two bond symbols in a row
        "Ca",  # calcium outside brackets
        "C C",  # a space inside a molecule
        "CC\n",  # a line break
        "1C",  # a ring closure before any atom
    ],
)
async def test_hand_picked_dead_prefixes_are_refused(dead):
    potential = PartialSmiles()
    assert not await _live(potential, dead.encode())
    assert not await _accepts(potential, dead.encode())
    assert not await _live(PartialSmiles(lead=b" "), b" " + dead.encode())


async def test_unfinished_molecules_are_live_but_not_accepted():
    potential = PartialSmiles(lead=b" ")
    unfinished = [" C1CC", " c1cc", " CC(", " C=", " [NH4", " "]
    assert [await _live(potential, s.encode()) for s in unfinished] == [True] * 6
    assert [await _accepts(potential, s.encode()) for s in unfinished] == [False] * 6
    assert not await _live(potential, b"C")  # the lead is missing
    assert not await _accepts(potential, b"")


async def test_prefix_and_complete_are_the_parser_on_mutated_molecules():
    """Gold prefixes with one to three random SMILES characters appended: the potential says
    what partialsmiles says; live texts are prefix-closed; an accepted text is live."""
    rng = random.Random(0)
    alphabet = list("CcNnOoSsBrlF()=#123%[]H+-@.")
    potential = PartialSmiles()
    texts = set()
    for _ in range(300):
        g = rng.choice(GOLD)
        texts.add(
            g[: rng.randrange(len(g) + 1)] + "".join(rng.choices(alphabet, k=rng.randint(1, 3)))
        )
    live = [t for t in texts if _parser_says(t, partial=True)]
    whole = [t for t in texts if _parser_says(t, partial=False)]
    assert [await _live(potential, t.encode()) for t in texts] == [t in live for t in texts]
    assert [await _accepts(potential, t.encode()) for t in texts] == [t in whole for t in texts]
    assert all([await _live(potential, t[:-1].encode()) for t in live])
    assert set(whole) <= set(live)
    assert len(live) > 50 and len(texts) - len(live) > 50 and whole  # both kinds were met


async def test_token_masks_equal_brute_force_over_a_small_vocabulary():
    """`walk_byte_trie` (via `Coerced`) against the parser asked about each token's bytes."""
    pieces = ["C", "c", "N", "n", "O", "(", ")", "=", "1", "2", "[", "]", "H", "+", "l", "Br", " "]
    vocab = sorted({(a + b).encode() for a in pieces for b in ["", *pieces]} | {b"\n", b"CC(=O)"})
    lead = b" "
    coerced = Coerced(PartialSmiles(lead=lead), vocab)
    contexts = [[b" "], [b" ", b"C"], [b" ", b"C", b"C", b"("], [b" ", b"c", b"1"], [b" ", b"["]]
    for context in contexts:
        data = b"".join(context)
        got = (await coerced.logw_next(context)).weights
        want = [_parser_says((data + t)[1:].decode(), True) for t in vocab]
        assert [w == 0.0 for w in got[:-1]] == want, data
        assert (got[-1] == 0.0) == (len(data) > 1 and _parser_says(data[1:].decode(), False))
        assert set(got.tolist()) <= {0.0, -math.inf}
    assert len(vocab) > 250


async def test_byte_weights_equal_the_prefix_check_on_each_byte():
    potential = PartialSmiles(lead=b" ")
    data = b" CC(=C"
    weights = (await potential.logw_next(list(data))).weights
    fresh = PartialSmiles(lead=b" ")
    want = [await _live(fresh, data + bytes((b,))) for b in range(256)]
    assert [w == 0.0 for w in weights[:256]] == want and sum(want) > 5
    assert weights[256] == -math.inf  # an open branch cannot end
    with pytest.raises(ValueError, match="weight zero"):
        await potential.logw_next(list(b" C)"))


def _rdkit_smiles(n: int) -> list[str]:
    """`n` molecules of RDKit's NCI sample (seeded), as RDKit itself writes them."""
    path = os.path.join(RDConfig.RDDataDir, "NCI", "first_5K.smi")
    with open(path) as f:
        lines = [line.split()[0] for line in f if line.strip()]
    out = []
    with rdBase.BlockLogs():
        for s in random.Random(1).sample(lines, n):
            mol = Chem.MolFromSmiles(s)
            if mol is not None:
                out.append(Chem.MolToSmiles(mol))
    return out


#: What the NCI sample lacks: stereo, isotopes, charges, two-digit rings, dots, classes.
SYNTAX = [
    "C[C@@H](N)C(=O)O",  # L-alanine
    "F/C=C/F",
    "F/C=C\\F",
    "[13CH4]",
    "[2H]C([2H])([2H])[2H]",
    "[NH4+].[Cl-]",
    "[O-][N+](=O)c1ccccc1",
    "[Fe+2]",
    "[Cu++]",
    "C%10CCCCC%10",
    "C1CC2CCC1C2",
    "[CH3:1][OH:2]",
    "c1cc[nH]c1",
    "[se]1cccc1",
    "C#N",
    "*C",
    "N[C@](C)(F)C(=O)O",
    "C1=CC=CC=C1",
]


async def test_grammar_accepts_the_smiles_rdkit_writes_and_the_shipped_molecules():
    grammar = BoolCFG.from_lark(SMILES_GRAMMAR)
    written = [s for s in _rdkit_smiles(300) if "->" not in s and "<-" not in s]  # dative bonds:
    # an RDKit extension, not OpenSMILES
    with rdBase.BlockLogs():
        rewritten = [Chem.MolToSmiles(Chem.MolFromSmiles(s)) for s in SYNTAX]
    texts = [*written, *GOLD, *SYNTAX, *rewritten]
    refused = [s for s in texts if not await _accepts(grammar, b" " + s.encode())]
    assert refused == []
    assert len(written) > 250 and any("@" in s for s in rewritten) and any("%" in s for s in SYNTAX)


async def test_grammar_agrees_with_lark_on_broken_molecules():
    """llguidance's reading of the grammar against lark's Earley parser: gold molecules with
    one character deleted, doubled or replaced."""
    lark = Lark(SMILES_GRAMMAR, parser="earley", lexer="dynamic")
    grammar = BoolCFG.from_lark(SMILES_GRAMMAR)
    rng = random.Random(2)
    texts = set()
    for _ in range(120):
        g = rng.choice(GOLD)
        i = rng.randrange(len(g))
        texts.add(
            rng.choice(
                [g[:i] + g[i + 1 :], g[:i] + g[i] + g[i:], g[:i] + "()[]=%1"[i % 7] + g[i + 1 :]]
            )
        )

    def lark_parses(text: str) -> bool:
        try:
            lark.parse(" " + text)
        except LarkError:
            return False
        return True

    verdicts = {t: lark_parses(t) for t in texts}
    assert {t: await _accepts(grammar, b" " + t.encode()) for t in texts} == verdicts
    assert 10 < sum(verdicts.values()) < len(texts) - 10  # both kinds were met


@pytest.mark.parametrize("text", [" C1=CC=CC=C1)", " C(", " [C", " C%1", "C", " C..C", " (C)"])
async def test_grammar_refuses_hand_picked_syntax_errors(text):
    assert not await _accepts(BoolCFG.from_lark(SMILES_GRAMMAR), text.encode())


async def test_the_constraint_is_both_checks_and_coerces_factor_by_factor(tiny_random_hf):
    from genlm_lab.backend.hf import AsyncTransformer
    from genlm_lab.control import PromptedLLM

    constraint = smiles_constraint()
    assert isinstance(constraint, SmilesProduct)
    assert "partialsmiles 2.0" in constraint.source and "chain" in constraint.source
    # The grammar alone takes a pentavalent carbon; the product refuses it.
    assert await _accepts(constraint.p1, b" CC(C)(C)(C)C")
    assert not await _accepts(constraint, b" CC(C)(C)(C)C")
    lm = AsyncTransformer(*tiny_random_hf)
    llm = PromptedLLM(lm, eos_byte_strings=[b"\n"])
    on_tokens = constraint.coerce(llm, f=b"".join)
    factors = on_tokens.factors()
    assert [type(f).__name__ for f in factors] == ["TokenConstraint", "Coerced"]
    # Another instance's constraint reuses the check's coercion onto the same vocabulary.
    assert smiles_constraint().coerce(llm, f=b"".join).factors()[1] is factors[1]
    checked = 0
    for smiles in GOLD[:1]:  # each mask walks the trie with the parser: ~0.1 s
        ids = lm.tokenizer.encode(" " + smiles, add_special_tokens=False)
        tokens = [lm.byte_vocab[i] for i in ids]
        assert b"".join(tokens) == b" " + smiles.encode()
        for k in range(len(tokens)):
            weights = await on_tokens.logw_next(tokens[:k])
            assert weights[tokens[k]] == 0.0, (smiles, k)
            checked += 1
        assert await on_tokens.complete(tokens) == 0.0
    assert checked >= 5


def test_a_missing_parser_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "partialsmiles", None)
    with pytest.raises(ImportError, match=r"genlm-lab\[domains\]"):
        PartialSmiles()
