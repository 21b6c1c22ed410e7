"""SMILES as a constraint: a grammar of the notation times a check of the chemistry so far.

Two byte-level boolean potentials, multiplied by `smiles_constraint`:

- `SMILES_GRAMMAR`, a Lark grammar of OpenSMILES's syntax (atoms, bracket
  atoms, bonds, ring closures, branches, dot-separated parts), written here
  from the OpenSMILES specification. A context-free grammar, not a regex:
  branches nest. Its masks come from llguidance over the whole vocabulary
  at once, so it is cheap.
- `PartialSmiles`, a prefix is live iff the `partialsmiles` parser (O'Boyle)
  accepts it as the start of a SMILES string: the syntax, and the chemistry
  that can already be judged (valences of closed atoms, aromatic systems that
  can no longer be kekulized). A whole text is accepted iff that parser
  accepts it as a complete SMILES string. Each check re-parses the text (tens
  of microseconds), so on a vocabulary it walks the tokens' byte trie, asking
  only about bytes that SMILES can hold and skipping every dead subtree.

`smiles_constraint` multiplies them with `SmilesProduct`, whose coercion onto
an LM's tokens coerces each factor on its own (the same weights; the
grammar's token masks stay one native call instead of a check per trie node).

`partialsmiles` is an optional dependency (the `domains` extra): it is
imported when a `PartialSmiles` is built, with an ImportError naming the
extra where it is missing.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from genlm_lab.control import BoolCFG, LazyWeights, Potential, Product
from genlm_lab.control.potential import is_join

__all__ = ["SMILES_GRAMMAR", "PartialSmiles", "SmilesProduct", "require", "smiles_constraint"]

#: The 118 element symbols (a bracket atom may name any of them).
ELEMENTS = (
    "H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge "
    "As Se Br Kr Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm "
    "Eu Gd Tb Dy Ho Er Tm Yb Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U "
    "Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og"
).split()

# A bracket atom: [isotope? symbol chirality? hydrogens? charge? class?] (OpenSMILES 3.1).
_SYMBOL = "|".join([*ELEMENTS, "se", "as", "b", "c", "n", "o", "p", "s", r"\*"])
_CHIRAL = r"@@?|@TH[12]|@AL[12]|@SP[1-3]|@TB(1[0-9]|20|[1-9])|@OH(2[0-9]|30|1[0-9]|[1-9])"
_CHARGE = r"\+\+|--|[+-](1[0-5]|[0-9])?"
BRACKET_ATOM = rf"\[[0-9]{{0,3}}({_SYMBOL})({_CHIRAL})?(H[0-9]?)?({_CHARGE})?(:[0-9]+)?\]"

#: OpenSMILES's syntax after one space (the prompt ends in "Molecule:"). Chemistry
#: (valences, aromaticity, ring closures left open) is `PartialSmiles`'s part.
SMILES_GRAMMAR = rf"""
start: " " chain
chain: branched_atom (LINK? branched_atom)*
branched_atom: atom ring_bond* branch*
atom: ORGANIC | BRACKET
ring_bond: BOND? RING
branch: "(" LINK? chain ")"
LINK: BOND | "."
BOND: /[-=#$:\/\\]/
RING: /[0-9]|%[0-9][0-9]/
ORGANIC: /Cl|Br|[BCNOPSFI*]|[bcnops]/
BRACKET: /{BRACKET_ATOM}/
"""

#: Bytes a SMILES string can hold; any other byte is dead without asking the parser.
SMILES_BYTES = frozenset(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789[]()=#$:/\\.%+-@*"
)

_EXTRA = "pip install 'genlm-lab[domains]'"
_VERDICTS = 1 << 18  # (text, whole) -> verdict entries kept per potential
_COERCED = 2  # coercions onto LM vocabularies kept (`PartialSmiles.coerce`)
_COERCIONS: OrderedDict[tuple, Potential] = OrderedDict()


def require(module: str) -> Any:
    """Import an optional dependency of the molecule domain.

    Raises:
        ImportError: naming the `domains` extra, where `module` is not installed.
    """
    from importlib import import_module

    try:
        return import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"the molecular_synthesis domain needs {module!r}, which is not installed: {_EXTRA}"
        ) from exc


class PartialSmiles(Potential):
    """A byte-level constraint: the text after `lead` must be (the start of) valid SMILES.

    `prefix(x)` is 0 iff `x` is a prefix of `lead`, or starts with `lead` and
    `partialsmiles.ParseSmiles(rest, partial=True)` accepts the rest;
    `complete(x)` iff `x` starts with `lead` and the parser accepts the rest as
    a whole molecule (`partial=False`). Anything the parser raises, its own
    errors or a crash on malformed input (an IndexError on "C%"), is a refusal.

    Args:
        lead: bytes every answer starts with before its SMILES (b" " after "Molecule:").

    Raises:
        ImportError: if partialsmiles is not installed (it names the extra to install).
    """

    is_boolean = True

    def __init__(self, lead: bytes = b"") -> None:
        if not isinstance(lead, (bytes, bytearray)):
            raise ValueError(f"lead must be bytes, got {type(lead).__name__} {lead!r:.40}")
        partialsmiles = require("partialsmiles")
        self._parse = partialsmiles.ParseSmiles
        super().__init__(list(range(256)))
        self.lead = bytes(lead)
        self.kind = "partial SMILES"
        self.source = f"partialsmiles {partialsmiles.__version__} after {self.lead!r}"
        self._verdicts: OrderedDict[tuple[bytes, bool], bool] = OrderedDict()
        self.calls = 0

    def _parses(self, data: bytes, whole: bool) -> bool:
        """The parser's verdict on `data` (after the lead), cached."""
        key = (data, whole)
        found = self._verdicts.get(key)
        if found is not None:
            return found
        self.calls += 1
        try:
            self._parse(data.decode("ascii"), partial=not whole)
            ok = True
        except Exception:  # noqa: BLE001 - every error of the parser is a refusal (see above)
            ok = False
        self._verdicts[key] = ok
        if len(self._verdicts) > _VERDICTS:
            self._verdicts.popitem(last=False)
        return ok

    def viable(self, data: bytes) -> bool:
        """Whether the bytes may still start an accepted text (the prefix check)."""
        n = len(self.lead)
        if len(data) <= n:
            return self.lead.startswith(data)
        rest = data[n:]
        return data[:n] == self.lead and SMILES_BYTES.issuperset(rest) and self._parses(rest, False)

    def accepts(self, data: bytes) -> bool:
        """Whether the bytes are the lead and then one whole valid SMILES string."""
        n = len(self.lead)
        rest = data[n:]
        return (
            data[:n] == self.lead
            and bool(rest)
            and SMILES_BYTES.issuperset(rest)
            and self._parses(rest, True)
        )

    async def prefix(self, context: Sequence[Any]) -> float:
        return 0.0 if self.viable(bytes(self.encode(context))) else -math.inf

    async def complete(self, context: Sequence[Any]) -> float:
        return 0.0 if self.accepts(bytes(self.encode(context))) else -math.inf

    async def logw_next(self, context: Sequence[Any]) -> LazyWeights:
        """Next-byte log-weights (EOS last): the parser asked only about bytes SMILES holds.

        Raises:
            ValueError: if `context` is already ruled out (nothing can follow it).
        """
        data = bytes(self.encode(context))
        if not self.viable(data):
            raise ValueError(
                f"the context {data!r:.60} has weight zero under {self.name}; nothing can follow it"
            )
        out = np.full(257, -math.inf)
        for byte in range(256):
            if self.viable(data + bytes((byte,))):
                out[byte] = 0.0
        out[256] = 0.0 if self.accepts(data) else -math.inf
        return self.make_lazy_weights(out)

    def walk_byte_trie(self, trie: Any, data: bytes) -> np.ndarray:
        """Log-weights (0 or -inf) of a byte trie's tokens after the bytes `data`, EOS last.

        The hook `Coerced` calls for a vocabulary of byte strings (`trie` has
        `children`, `ends` and `n_tokens`, as `PythonRegex.walk_byte_trie`
        reads them): the parser is asked only about bytes that lead to a token
        and that SMILES can hold, and a dead node rules out its subtree.

        Raises:
            ValueError: if `data` is already ruled out (nothing can follow it).
        """
        if not self.viable(data):
            raise ValueError(
                f"the context {data!r:.60} has weight zero under {self.name}; nothing can follow it"
            )
        out = np.full(trie.n_tokens + 1, -math.inf)
        out[list(trie.ends[0])] = 0.0  # empty tokens leave the context as it is
        stack = [(0, data)]
        while stack:
            node, path = stack.pop()
            for byte, child in trie.children[node].items():
                longer = path + bytes((byte,))
                if not self.viable(longer):
                    continue
                out[list(trie.ends[child])] = 0.0
                if trie.children[child]:
                    stack.append((child, longer))
        out[-1] = 0.0 if self.accepts(data) else -math.inf
        return out

    def coerce(
        self,
        other: Potential | Sequence[Any],
        f: Callable[[Sequence[Any]], Any] | None = None,
        prune: bool = True,
    ) -> Potential:
        """This check over `other`'s tokens (`Potential.coerce`), reused per vocabulary and lead.

        Every instance of the domain coerces onto the same LM: the byte trie of
        a 49,152-token vocabulary takes a good part of a second to build, so the
        last few coercions (`_COERCED` of them) are kept and handed out again.
        """
        if not is_join(f) or not isinstance(other, Potential):
            return super().coerce(other, f=f, prune=prune)
        key = (self.lead, tuple(other.vocab), other.eos, prune)
        found = _COERCIONS.get(key)
        if found is None:
            found = _COERCIONS[key] = super().coerce(other, f=f, prune=prune)
            while len(_COERCIONS) > _COERCED:
                _COERCIONS.popitem(last=False)
        _COERCIONS.move_to_end(key)
        return found

    def spawn(self) -> PartialSmiles:
        return PartialSmiles(self.lead)

    def __repr__(self) -> str:
        return f"PartialSmiles(lead={self.lead!r})"


class SmilesProduct(Product):
    """The product grammar x `PartialSmiles` whose coercion coerces each factor on its own.

    `coerce(p1 * p2, f=b"".join)` weighs a token sequence as `p1` and `p2` weigh
    its bytes, which is `coerce(p1) * coerce(p2)`: built that way, the grammar
    keeps its native token masks and the parser walks the trie by itself.

    Attributes:
        kind: both factors' kinds.
        source: the grammar's text, then the parser's version and lead, so that
            a run's stored identity changes with either.
    """

    def __init__(self, p1: Potential, p2: Potential) -> None:
        super().__init__(p1, p2)
        self.kind = f"{getattr(p1, 'kind', p1.name)} x {getattr(p2, 'kind', p2.name)}"
        self.source = f"{getattr(p1, 'source', repr(p1))}\n{getattr(p2, 'source', repr(p2))}"

    def coerce(
        self,
        other: Potential | Sequence[Any],
        f: Callable[[Sequence[Any]], Any] | None = None,
        prune: bool = True,
    ) -> Potential:
        if not is_join(f):
            return super().coerce(other, f=f, prune=prune)
        return self.p1.coerce(other, f=f, prune=prune) * self.p2.coerce(other, f=f, prune=prune)

    def spawn(self) -> SmilesProduct:
        return SmilesProduct(self.p1.spawn(), self.p2.spawn())

    def __repr__(self) -> str:
        return f"SmilesProduct({self.p1!r}, {self.p2!r})"


def smiles_constraint() -> SmilesProduct:
    """The molecule domain's constraint: `SMILES_GRAMMAR` x `PartialSmiles(lead=b" ")`.

    Raises:
        ImportError: if partialsmiles is not installed (naming the extra).
    """
    return SmilesProduct(BoolCFG.from_lark(SMILES_GRAMMAR), PartialSmiles(lead=b" "))
