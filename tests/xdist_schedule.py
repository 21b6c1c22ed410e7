"""How `make test`'s main lane hands its work to the xdist workers: heaviest first, browser last.

`--dist loadfile` keeps each file on one worker (a notebook's cells share one kernel,
a module's fixtures are built once) but hands the files out in collection order, so
one worker could start a 3-minute file while the other had finished. Here the work
units go out heaviest first (known costs below, else a small cost per test), and the
browser tests last on every worker, after each asyncio test of that worker (playwright's
sync API drives its own loop in the main thread; tests/browser/conftest.py).

A file in `BY_PARAMETER` is split into one unit per parameter id (its tests without
one form a unit of their own): its module-scoped fixtures are parametrized, say by
vocabulary, so the units share nothing and can run on different workers.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

BROWSER = "tests/browser/"
#: Files whose expensive fixtures are module-scoped and parametrized: one unit per value.
BY_PARAMETER = frozenset({"tests/test_vocab_stack.py", "tests/tokenization/test_panel.py"})
#: Seconds of one worker's time per unit (the units of over 8 s in a main-lane run on two
#: busy cores); a guide to the order only: a stale entry makes the two workers end less
#: together, nothing worse.
COSTS: dict[str, float] = {
    "tests/control/constraint/python_regex/test_trie_walk.py": 93,
    "tests/control/constraint/python_regex/test_panel.py": 85,
    "tests/control/constraint/json/test_generation.py": 38,
    "tests/test_vocab_stack.py[gemini]": 36,
    "tests/test_architecture.py": 30,
    "tests/test_vocab_stack.py[gpt4o]": 27,
    "tests/test_vocab_stack.py[gptoss]": 27,
    "tests/test_vocab_stack.py[gemma3]": 26,
    "tests/test_vocab_stack.py[qwen3]": 25,
    "tests/test_doc_examples.py": 23,
    "tests/test_vocab_stack.py[llama3]": 22,
    "tests/test_cli.py": 22,
    "tests/test_wheelhouse.py": 86,
    "tests/test_bench_quick.py": 31,
    "tests/test_docs.py": 30,
    "tests/control/inference/test_budgets.py": 21,
    "tests/test_packaging.py": 20,
    "tests/test_vocab_stack.py[llama3_1]": 20,
    "tests/eval/test_store.py": 18,
    "tests/test_vocab_stack.py[claude]": 17,
    "tests/control/constraint/budget/test_within.py": 16,
    "tests/control/constraint/json/test_schema.py": 16,
    "tests/test_compat.py": 16,
    "tests/bytes/test_lookahead.py": 15,
    "tests/control/inference/test_budget_guides.py": 15,
    "tests/tokenization/test_panel.py[gemma3]": 14,
    "tests/tokenization/test_control_tokens.py": 13,
    "tests/control/inference/test_smc.py": 13,
    "tests/test_vocab_stack.py[yi]": 13,
    "tests/backend/test_default_model.py": 12,
    "tests/control/constraint/cfg/test_finish.py": 10,
    "tests/control/lm/test_canonical.py": 10,
    "tests/control/constraint/fsa/test_bool_fsa.py": 10,
    "tests/test_vocab_stack.py[deepseek_v3]": 9,
    "tests/test_vocab_stack.py[gpt35turbo]": 8,
    "notebooks/08_evaluation.ipynb": 68,
    "notebooks/03_byte_beam.ipynb": 25,
    "notebooks/07_constraints.ipynb": 19,
    "notebooks/01_backends.ipynb": 15,
    "notebooks/05_debugging_beams.ipynb": 14,
    "notebooks/09_your_own_potential.ipynb": 14,
    "notebooks/06_workshop.ipynb": 12,
    "notebooks/02_tries.ipynb": 11,
    "notebooks/04_smc.ipynb": 11,
    "notebooks/00_quickstart.ipynb": 10,
    "tests/browser/test_views_in_lab.py": 69,
    "tests/browser/test_constraint_views.py": 56,
    "tests/browser/test_playground.py": 52,
    "tests/browser/test_notebooks_open_clean.py": 46,
    "tests/browser/test_untrusted_notebooks.py": 26,
    "tests/browser/test_results_models.py": 19,
    "tests/browser/test_results_view.py": 18,
    "tests/browser/test_views_in_notebook7.py": 13,
    "tests/browser/views.ipynb": 10,
}
PER_TEST = 0.15  # seconds, for a unit not listed above


def unit_of(nodeid: str) -> str:
    """The work unit of a test id: its file, or its file and parameter id in `BY_PARAMETER`."""
    path, _, rest = nodeid.partition("::")
    if path in BY_PARAMETER and rest.endswith("]") and "[" in rest:
        return f"{path}[{rest[rest.index('[') + 1 : -1]}]"
    return path


class HeaviestFirst(LoadFileScheduling):
    """`--dist loadfile` with units split as `unit_of` says and handed out heaviest first."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def _assign_work_unit(self, node) -> None:  # noqa: ANN001 - xdist's WorkerController
        """Move the heaviest waiting unit (browser units after all others) to the front."""
        unit = max(self.workqueue, key=lambda u: self._priority(u, len(self.workqueue[u])))
        self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)

    @staticmethod
    def _priority(unit: str, n_tests: int) -> tuple[bool, float]:
        return (not unit.startswith(BROWSER), COSTS.get(unit, PER_TEST * n_tests))
