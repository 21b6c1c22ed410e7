"""molecular_synthesis: genlm-eval's draw of prompts, QED scores against RDKit asked directly, the
constraint on every shipped molecule, and end-to-end runs (a SMILES toy LM, tiny-random)."""

from __future__ import annotations

import random
import sys

import pytest

pytest.importorskip("rdkit", reason="the domains extra: pip install -e '.[domains]'")
pytest.importorskip("partialsmiles")

from rdkit import Chem, rdBase  # noqa: E402
from rdkit.Chem import QED  # noqa: E402

from genlm_lab.backend.toy import ToyLM  # noqa: E402
from genlm_lab.control import PromptedLLM  # noqa: E402
from genlm_lab.eval import Method, ModelOutput, ModelResponse, load_domain, run_evaluation  # noqa: E402
from genlm_lab.eval.domains.molecular_synthesis import (  # noqa: E402
    MolecularSynthesisDomain,
    MolecularSynthesisInstance,
    load_gdb17_sample,
    molecule_qed,
    read_smiles,
)


def _rdkit_qed(smiles: str) -> float:
    """QED by RDKit asked directly (0 where it reads no molecule): the independent answer."""
    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(smiles) if smiles else None
    return 0.0 if mol is None or mol.GetNumAtoms() == 0 else QED.qed(mol)


def test_the_prompts_are_genlm_evals_draw_from_the_shipped_sample():
    """100 prompts of 20 distinct molecules, drawn as genlm-eval draws them: the global
    `random` seeded with 1234, then `random.sample` of positions, prompt after prompt."""
    domain = load_domain("molecular_synthesis")
    pool = load_gdb17_sample()
    state = random.getstate()
    try:
        random.seed(1234)
        expected = [[pool[i] for i in random.sample(range(30), 20)] for _ in range(100)]
    finally:
        random.setstate(state)
    instances = list(domain.dataset)
    assert [i.molecules for i in instances] == expected
    assert [i.instance_id for i in instances] == list(range(100)) and len(domain) == 100
    assert all(len(set(i.molecules)) == 20 for i in instances)
    assert len(pool) == 30 and pool[0] == "BrC1=C2C3C4C3N(CC4C#C)C2=NC(=O)S1"


def test_the_prompt_lists_each_molecule_on_its_line_and_ends_ready_for_one_more():
    domain = load_domain("molecular_synthesis")
    instance = next(iter(domain.dataset))
    lines = domain.prompt(instance).split("\n")
    assert lines[1:-1] == [f"Molecule: {m}" for m in instance.molecules]
    assert lines[-1] == "Molecule:" and "SMILES" in lines[0]
    assert domain.eos == (b"\n",) and domain.response(" CCO") == "CCO"


def test_a_smaller_draw_and_a_bad_pool_are_checked(tmp_path):
    path = tmp_path / "few.smi"
    path.write_text("CCO ethanol\n\nc1ccccc1 benzene\nCC(=O)O\n")
    assert read_smiles(path) == ["CCO", "c1ccccc1", "CC(=O)O"]
    domain = MolecularSynthesisDomain.from_smiles(path, n_instances=4, n_molecules=2, seed=0)
    instances = list(domain.dataset)
    assert len(instances) == 4 and all(len(set(i.molecules)) == 2 for i in instances)
    with pytest.raises(ValueError, match="holds 3"):
        MolecularSynthesisDomain(["CCO", "C", "N"], n_molecules=4)


VALID = [
    "CCO",  # ethanol
    "c1ccccc1",  # benzene
    "CC(=O)Oc1ccccc1C(=O)O",  # aspirin
    "C[C@@H](N)C(=O)O",  # L-alanine
    "[NH4+].[Cl-]",
    "BrC1=C2C3C4C3N(CC4C#C)C2=NC(=O)S1",  # the first shipped GDB-17 molecule
]
INVALID = [
    "C1CC",  # a ring left open
    "c1cc",  # an aromatic ring left open
    "CC(C)(C)(C)C",  # a pentavalent carbon
    "c1cccc1",  # five aromatic carbons: no Kekulé form
    "C(",
    "hello",
    "",
]


def test_scores_are_rdkits_qed_and_zero_for_what_is_no_molecule():
    domain = load_domain("molecular_synthesis")
    instance = next(iter(domain.dataset))
    for smiles in VALID:
        result = domain.evaluator.evaluate_sample(instance, f" {smiles}\n")  # whitespace stripped
        assert result.desc == "valid" and result.score == pytest.approx(
            _rdkit_qed(smiles), abs=1e-12
        )
        assert 0 < result.score < 1
    for smiles in INVALID:
        result = domain.evaluator.evaluate_sample(instance, smiles)
        assert (result.score, result.desc) == (0.0, "invalid")
        assert _rdkit_qed(smiles) == 0.0
    # Bickerton et al. (2012) list aspirin's QED as 0.55.
    assert domain.evaluator.evaluate_sample(instance, VALID[2]).score == pytest.approx(
        0.55, abs=0.005
    )
    assert len(VALID) == 6 and len(INVALID) == 7


def test_the_ensemble_score_is_the_expected_qed():
    domain = load_domain("molecular_synthesis")
    instance = MolecularSynthesisInstance(molecules=["CCO"], instance_id=0)
    answers = {"CCO": 0.5, "c1ccccc1": 0.3, "C1CC": 0.2}
    output = ModelOutput(
        responses=[ModelResponse(response=a, weight=w) for a, w in answers.items()]
    )
    got = domain.evaluator.evaluate_ensemble(instance, output)["weighted_accuracy"]
    assert got == pytest.approx(sum(w * _rdkit_qed(a) for a, w in answers.items()), abs=1e-12)


def test_a_missing_rdkit_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "rdkit", None)
    with pytest.raises(ImportError, match=r"genlm-lab\[domains\]"):
        molecule_qed("CCCO-not-cached-yet")


async def test_the_constraint_accepts_every_shipped_molecule_as_bytes_and_as_tokens(tiny_random_hf):
    from genlm_lab.backend.hf import AsyncTransformer

    domain = load_domain("molecular_synthesis")
    instance = next(iter(domain.dataset))
    constraint = domain.constraint(instance)
    pool = load_gdb17_sample()
    assert [await constraint.complete(list(b" " + m.encode())) for m in pool] == [0.0] * 30
    lm = AsyncTransformer(*tiny_random_hf)
    on_tokens = constraint.coerce(PromptedLLM(lm, eos_byte_strings=[b"\n"]), f=b"".join)
    tokenized = [
        [lm.byte_vocab[i] for i in lm.tokenizer.encode(" " + m, add_special_tokens=False)]
        for m in pool
    ]
    assert [await on_tokens.complete(t) for t in tokenized] == [0.0] * 30
    assert await constraint.complete(list(b" C1CC")) == -float("inf")


class _NoPrompt(MolecularSynthesisDomain):
    """The domain with an empty prompt, for a toy LM that cannot spell the instruction."""

    def prompt(self, instance: MolecularSynthesisInstance) -> str:
        return ""


async def test_smc_on_a_smiles_toy_lm_scores_its_posterior_by_rdkit():
    """A toy LM over SMILES pieces ends molecules often: every answer SMC returns is a molecule,
    and the run's score is the posterior expectation of RDKit's QED."""
    lm = ToyLM([b" C", b"C", b"O", b"N", b"(", b")", b"=", b"1", b"\n"], seed=5, eos=b"\n")
    domain = _NoPrompt(n_instances=2)
    method = Method(kind="smc", n_particles=6, max_tokens=8, seed=1)
    results = await run_evaluation(domain.dataset, method.adaptor(domain, lm), domain.evaluator)
    assert results["n_errors"] == 0 and results["n_instances"] == 2
    outputs = [outs[0] for outs in results["all_instance_outputs"]]
    scored = [r for out in outputs for r in out.responses]
    assert scored and all(_rdkit_qed(r.response) > 0 for r in scored)
    for out, row in zip(outputs, results["all_instance_results"], strict=True):
        expected = sum(r.weight * _rdkit_qed(r.response) for r in out.responses)
        assert row[0]["weighted_accuracy"] == pytest.approx(expected, abs=1e-9)
    assert len(outputs) == 2


@pytest.mark.filterwarnings("ignore::genlm_lab.smc.AllParticlesDied")  # random weights
async def test_awrs_and_base_run_end_to_end_on_tiny_random(tiny_random_hf):
    from genlm_lab.backend.hf import AsyncTransformer

    lm = AsyncTransformer(*tiny_random_hf)
    domain = load_domain("molecular_synthesis", n_instances=1)
    checked = 0
    for kind in ("awrs_smc", "base"):
        method = Method(kind=kind, n_particles=2, max_tokens=12)
        results = await run_evaluation(domain.dataset, method.adaptor(domain, lm), domain.evaluator)
        assert results["n_errors"] == 0 and results["n_instances"] == 1
        for outs, row in zip(
            results["all_instance_outputs"], results["all_instance_results"], strict=True
        ):
            out = outs[0]
            assert out.metadata["status"] in ("finished", "all_dead")
            expected = sum(r.weight * _rdkit_qed(r.response) for r in out.responses)
            assert row[0]["weighted_accuracy"] == pytest.approx(expected, abs=1e-9)
            checked += 1
    assert checked == 2
