"""How many tokens a constraint needs to end: what budgets refuse on, never more than it must.

A run with `max_tokens` keeps only sequences of at most that many tokens
(EOS included). After a prefix with `left` tokens still allowed, a
*finisher* answers `fits(context, left)`: False only where no sequence of at
most `left` tokens (EOS included) completes the prefix under the constraint.
That is soundness: a prefix some completion ends in time is never refused, so
refusing what does not fit leaves the run's target exactly p(x | constraint,
len(x) <= max_tokens). Tightness (refusing everything that cannot fit) is
efficiency, and depends on what is known of the constraint:

- `AutomatonDistance`: exact. For a constraint whose language is a byte
  automaton (an explicit `BoolFSA(automaton)`, and a regex or Python regex
  made only of ASCII literals, sets of them, groups, alternation and repeats),
  the fewest tokens to an accepting state, over this vocabulary's tokens, by a
  shortest path over automaton state x token: each state's successors are read
  by running the automaton down the vocabulary's byte trie (all nodes of a
  depth at once), and distances by a backward breadth-first search, once.
- `SearchDistance`: sound, exact where its search finishes. For any other
  boolean constraint (llguidance's regexes, Lark grammars, JSON schemas, a
  Python regex with backreferences, a `BoolPredicate`): a prefix the
  constraint accepts fits; with one token left, one it does not accept does
  not (exact); with two left, a JSON text is decided exactly too (it ends in
  the byte that closes its first value, so only the tokens ending in that
  byte, however many a string allows, are checked); otherwise a short completion, where the constraint can name one
  (`JsonSchema.finish`, `BoolCFG.finish` for a Lark grammar, counted in the fewest
  tokens that spell it), proves it
  fits, and a depth-first search over the tokens the constraint allows, with a
  node budget, proves that nothing fits. Where neither proves anything (too
  many tokens allowed, too many nodes) the prefix is kept and counted as
  "unproven" in `stats`.
- A regex or Python regex that is not plain, and a regular Lark grammar
  (`cfg_relax.regular_relaxation`), also give their `SearchDistance` a lower
  bound: the exact count of an automaton that holds every text of the
  constraint (`dfa.relaxed_dfa`, `regex_relax`: each class read as every
  dialect's), refused on at any depth.
- `joint_finisher`: a product needs one completion that ends every factor,
  which each factor's own answer does not prove. Automata join into one
  `AutomatonDistance` of their intersection (exact); other factors get a
  `JointSearch` over the tokens all of them allow (exact two tokens from the
  end, and on small vocabularies).
- On a vocabulary of at most `SearchDistance.max_branch_default` usable
  tokens, `finisher_for` searches at any depth: exact wherever `max_nodes`
  suffices (the brute-force tests' vocabularies).
- `FinishGuide`: a guess, not a bound. Where the constraint names a short
  finish, its token count steers SMC (a twist and a proposal that are both
  divided out: `Budget.over` and `Budget.twist` in `inference.budgets`), so
  particles head for an ending in time without anything refused on a guess.
"""

from genlm_lab.control.constraint.finish_distance.automaton import AutomatonDistance
from genlm_lab.control.constraint.finish_distance.dfa import ByteDfa, plain_ascii_regex
from genlm_lab.control.constraint.finish_distance.finisher import finisher_for
from genlm_lab.control.constraint.finish_distance.guide import FinishGuide
from genlm_lab.control.constraint.finish_distance.joint import JointSearch, joint_finisher
from genlm_lab.control.constraint.finish_distance.search import SearchDistance
from genlm_lab.control.constraint.finish_distance.tokens import Finisher, token_bytes

__all__ = [
    "AutomatonDistance",
    "ByteDfa",
    "FinishGuide",
    "Finisher",
    "JointSearch",
    "SearchDistance",
    "finisher_for",
    "joint_finisher",
    "plain_ascii_regex",
    "token_bytes",
]
