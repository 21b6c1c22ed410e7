"""Molecular synthesis: write one more molecule, in SMILES, like twenty shown; scored by its QED.

The molecule task of Loula et al. (ICLR 2025) and Lipkin et al. (COLM 2025),
with instances as genlm-eval builds them: 100 prompts, each listing 20
molecules drawn without replacement from a pool of GDB-17 molecules
(Ruddigkeit et al. 2012), the draws made one after another by one
`random.Random(1234)`; from the same pool, the same instances as genlm-eval's.
The shipped pool is the 30-molecule GDB-17 sample genlm-eval bundles
(`data/gdb17_sample.smi`, see `data/NOTICE.md`); the papers drew from the
50-million-molecule GDB-17 set, which `MolecularSynthesisDomain.from_smiles`
reads where you have it (any SMILES file: one molecule per line, first column).

The score of an answer is the QED (quantitative estimate of drug-likeness,
Bickerton et al. 2012, RDKit's `QED.qed`) of the molecule it writes, in
[0, 1]; 0 where RDKit cannot read it as a molecule (`Chem.MolFromSmiles`
fails, or the text is empty: genlm-eval scores an empty answer as a valid
molecule, QED 0.34). A run's "weighted accuracy" is then its posterior
expected QED, invalid answers counting 0, as in the papers.

The constraint is `smiles.smiles_constraint()`: a SMILES grammar times the
`partialsmiles` prefix check. RDKit and partialsmiles come with the `domains`
extra, imported when first needed.
"""

from __future__ import annotations

import random
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from genlm_lab.eval.core import Dataset, EvaluationResult, Evaluator, Instance
from genlm_lab.eval.domain import Domain
from genlm_lab.eval.domains.smiles import SmilesProduct, require, smiles_constraint

__all__ = [
    "MolecularSynthesisDataset",
    "MolecularSynthesisDomain",
    "MolecularSynthesisEvaluator",
    "MolecularSynthesisInstance",
    "load_gdb17_sample",
    "molecule_qed",
    "read_smiles",
]

#: genlm-eval's draw: 100 instances of 20 molecules each, seed 1234.
N_INSTANCES, N_MOLECULES, SEED = 100, 20, 1234

_INSTRUCTION = (
    "You are a chemist. Each line below gives a molecule in SMILES notation. "
    "Write one more molecule in SMILES whose chemical properties are like theirs."
)


class MolecularSynthesisInstance(Instance):
    """The molecules one prompt shows."""

    molecules: list[str]
    instance_id: int

    def __repr__(self) -> str:
        return f"{len(self.molecules)} molecules from {self.molecules[0]} (id: {self.instance_id})"


def read_smiles(path: str | Path) -> list[str]:
    """The molecules of a SMILES file: the first column of each non-blank line, in file order."""
    with open(path, encoding="utf-8") as f:
        return [line.split()[0] for line in f if line.strip()]


def load_gdb17_sample() -> list[str]:
    """The 30 shipped GDB-17 molecules (genlm-eval's sample), in file order."""
    text = resources.files("genlm_lab.eval").joinpath("data/gdb17_sample.smi").read_text("utf-8")
    return [line.split()[0] for line in text.splitlines() if line.strip()]


class MolecularSynthesisDataset(Dataset[MolecularSynthesisInstance]):
    """Prompts as instances, each a list of molecules (ids are positions in the list).

    Args:
        prompt_molecules: the molecules of each prompt.
    """

    def __init__(self, prompt_molecules: list[list[str]]) -> None:
        self.prompt_molecules = [list(ms) for ms in prompt_molecules]

    @classmethod
    def from_molecules(
        cls,
        molecules: list[str],
        n_molecules: int = N_MOLECULES,
        n_instances: int = N_INSTANCES,
        seed: int = SEED,
    ) -> MolecularSynthesisDataset:
        """`n_instances` prompts of `n_molecules` molecules each, drawn as genlm-eval draws them.

        Each prompt draws `n_molecules` distinct positions of the pool
        (`random.sample`), all draws from one `random.Random(seed)` in turn.

        Raises:
            ValueError: if the pool holds fewer than `n_molecules` molecules, or a count is < 1.
        """
        if n_molecules < 1 or n_instances < 1:
            raise ValueError(
                f"n_molecules and n_instances must be >= 1, got {n_molecules} and {n_instances}"
            )
        if len(molecules) < n_molecules:
            raise ValueError(
                f"a prompt of {n_molecules} molecules needs a pool of at least as many; "
                f"this one holds {len(molecules)}"
            )
        rng = random.Random(seed)
        return cls(
            [
                [molecules[i] for i in rng.sample(range(len(molecules)), n_molecules)]
                for _ in range(n_instances)
            ]
        )

    def __len__(self) -> int:
        return len(self.prompt_molecules)

    def __iter__(self):
        for i, molecules in enumerate(self.prompt_molecules):
            yield MolecularSynthesisInstance(molecules=molecules, instance_id=i)

    @property
    def schema(self) -> type[MolecularSynthesisInstance]:
        return MolecularSynthesisInstance


@lru_cache(maxsize=1 << 16)
def molecule_qed(smiles: str) -> float | None:
    """QED of the molecule `smiles` writes, or None where RDKit reads no molecule from it.

    RDKit parses and sanitises (valences, aromaticity), the molecule is
    kekulized as genlm-eval does, and `QED.qed` scores it. An empty text is no
    molecule. RDKit's own error messages are kept off stderr.

    Raises:
        ImportError: if RDKit is not installed (naming the extra to install).
    """
    require("rdkit")
    from rdkit import Chem, rdBase
    from rdkit.Chem import QED

    if not smiles:
        return None
    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(smiles)
        if mol is None or mol.GetNumAtoms() == 0:
            return None
        try:
            Chem.Kekulize(mol)
        except Exception:  # noqa: BLE001 - RDKit raises its own kekulization errors
            return None
        return float(QED.qed(mol))


class MolecularSynthesisEvaluator(Evaluator[MolecularSynthesisInstance]):
    """Score: the QED of the answer's molecule (see the module docstring), 0 if RDKit reads none.

    The answer is stripped of surrounding whitespace first (the leading space after
    "Molecule:"). `desc` is "valid" or "invalid"; a valid answer's metadata holds
    its QED.
    """

    @property
    def version(self) -> str:
        """The checker's version and RDKit's: another RDKit may read or score a molecule
        differently, so stored runs are scored afresh under it."""
        return f"1 (rdkit {require('rdkit').__version__})"

    def evaluate_sample(
        self, instance: MolecularSynthesisInstance, response: Any
    ) -> EvaluationResult:
        qed = molecule_qed(str(response).strip())
        if qed is None:
            return EvaluationResult(score=0.0, desc="invalid")
        return EvaluationResult(score=qed, desc="valid", metadata={"qed": qed})


class MolecularSynthesisDomain(Domain):
    """Molecular synthesis with a few-shot SMILES prompt; one molecule per line.

    Args:
        molecules: the pool the prompts draw from; default: the 30 shipped GDB-17 molecules.
        n_instances: prompts (100 as in genlm-eval).
        n_molecules: molecules per prompt (20).
        seed: the draw's seed (1234).

    Raises:
        ValueError: if the pool is smaller than `n_molecules`.
    """

    name = "molecular_synthesis"
    eos = (b"\n",)

    def __init__(
        self,
        molecules: list[str] | None = None,
        n_instances: int = N_INSTANCES,
        n_molecules: int = N_MOLECULES,
        seed: int = SEED,
    ) -> None:
        pool = load_gdb17_sample() if molecules is None else list(molecules)
        dataset = MolecularSynthesisDataset.from_molecules(pool, n_molecules, n_instances, seed)
        super().__init__(dataset, MolecularSynthesisEvaluator())
        self.molecules = pool

    @classmethod
    def from_smiles(cls, path: str | Path, **kwargs: Any) -> MolecularSynthesisDomain:
        """The domain over the molecules of a SMILES file (e.g. GDB-17's 50-million set)."""
        return cls(read_smiles(path), **kwargs)

    def prompt(self, instance: MolecularSynthesisInstance) -> str:
        """The instruction, one "Molecule: ..." line per molecule, then "Molecule:" to continue."""
        shots = "".join(f"Molecule: {m}\n" for m in instance.molecules)
        return f"{_INSTRUCTION}\n{shots}Molecule:"

    def constraint(self, instance: MolecularSynthesisInstance) -> SmilesProduct:
        """A space, then SMILES: the grammar times the partial-SMILES check (`smiles`)."""
        return smiles_constraint()

    def response(self, text: str) -> str:
        """The molecule: the answer without its leading space."""
        return text.strip()
