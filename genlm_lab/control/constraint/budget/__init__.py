"""Token budgets: how many tokens a constraint still needs to end, never refusing what fits.

A run with `max_tokens` keeps only sequences of at most that many tokens
(EOS included). After a prefix with `left` tokens still allowed, a
*fit check* (`FitCheck`, made by `fit_check_for`) answers `fits(context,
left)`: False only where no sequence of at most `left` tokens (EOS included)
completes the prefix under the constraint. That is soundness: a prefix some
completion ends in time is never refused, so refusing what does not fit
leaves the run's target exactly p(x | constraint, len(x) <= max_tokens).
Tightness (refusing everything that cannot fit) is efficiency, and depends
on what the constraint's family tells the budget (`BudgetHooks`, on the
family's own class; this package imports no family):

- `exact_dfa` known (an explicit automaton, a plain regex): `AutomatonDistance`,
  exact. The fewest tokens to an accepting state over this vocabulary's
  tokens, by a shortest path over automaton state x token: each state's
  successors are read by running the automaton down the vocabulary's byte
  trie, and distances by a backward breadth-first search, once.
- otherwise `SearchDistance`: sound, exact where its search finishes. A
  prefix the constraint accepts fits; with one token left, one it does not
  accept does not; with two left, a family that says how its texts close
  (`closing`: a JSON document) is decided exactly too; otherwise a short
  completion, where the constraint can name one (`finish`, counted in the
  fewest tokens that spell it), proves it fits, and a depth-first search over
  the tokens the constraint allows, with a node budget, proves that nothing
  fits. Where neither proves anything the prefix is kept and counted as
  "unproven" in `stats`.
- `superset_regex` known (a regex that is not plain, a regular Lark grammar):
  the lower bound (`lower_bound`), the exact count of an automaton holding
  every text of the constraint, refused on at any depth.
- `joint_fit_check`: a product needs one completion that ends every factor.
  Automata join into one `AutomatonDistance` of their intersection (exact);
  other factors get a `JointSearch` over the tokens all of them allow.
- `FinishGuide`: a guess, not a bound. Where the constraint names a short
  finish, its token count steers SMC (a twist and a proposal that are both
  divided out: `Budget.overrun` and `Budget.twist` in `inference.budgets`),
  so particles head for an ending in time without anything refused on a guess.
- `WithinBudget`: a constraint and a budget as one potential of its own.
"""

from genlm_lab.control.constraint.budget.automaton import AutomatonDistance
from genlm_lab.control.constraint.budget.fit_check import byte_language, fit_check_for
from genlm_lab.control.constraint.budget.guide import FinishGuide
from genlm_lab.control.constraint.budget.hooks import QUOTE_BREAKERS, BudgetHooks, Closing
from genlm_lab.control.constraint.budget.joint import JointSearch, joint_fit_check
from genlm_lab.control.constraint.budget.lower_bound import lower_bound, superset_dfa
from genlm_lab.control.constraint.budget.search import SearchDistance
from genlm_lab.control.constraint.budget.tokens import FitCheck, token_bytes
from genlm_lab.control.constraint.budget.within import WithinBudget

__all__ = [
    "QUOTE_BREAKERS",
    "AutomatonDistance",
    "BudgetHooks",
    "Closing",
    "FinishGuide",
    "FitCheck",
    "JointSearch",
    "SearchDistance",
    "WithinBudget",
    "byte_language",
    "fit_check_for",
    "joint_fit_check",
    "lower_bound",
    "superset_dfa",
    "token_bytes",
]
