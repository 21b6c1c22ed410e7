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
#: Seconds of one worker's time per unit, from `make test --durations`; a guide to the
#: order only (a stale entry makes the two workers end less together, nothing worse).
COSTS: dict[str, float] = {
    "notebooks/08_evaluation.ipynb": 160,
    "notebooks/03_byte_beam.ipynb": 70,
    "notebooks/07_constraints.ipynb": 55,
    "notebooks/05_debugging_beams.ipynb": 55,
    "notebooks/04_smc.ipynb": 50,
    "notebooks/00_quickstart.ipynb": 40,
    "notebooks/06_workshop.ipynb": 40,
    "notebooks/02_tries.ipynb": 35,
    "notebooks/09_your_own_potential.ipynb": 35,
    "notebooks/01_backends.ipynb": 35,
    "tests/test_vocab_stack.py[gemma3]": 110,
    "tests/test_vocab_stack.py[qwen3]": 45,
    "tests/test_vocab_stack.py[gemini]": 40,
    "tests/test_vocab_stack.py[llama3_1]": 38,
    "tests/test_vocab_stack.py[gptoss]": 33,
    "tests/test_vocab_stack.py[llama3]": 30,
    "tests/test_vocab_stack.py[gpt4o]": 25,
    "tests/test_vocab_stack.py[yi]": 22,
    "tests/test_vocab_stack.py[claude]": 22,
    "tests/test_vocab_stack.py[deepseek_v3]": 18,
    "tests/test_vocab_stack.py[gpt2]": 17,
    "tests/test_vocab_stack.py[gpt35turbo]": 17,
    "tests/tokenization/test_panel.py[gemma3]": 25,
    "tests/eval/test_store.py": 60,
    "tests/test_doc_examples.py": 55,
    "tests/test_packaging.py": 50,
    "tests/test_cli.py": 50,
    "tests/control/constraint/python_regex/test_panel.py": 48,
    "tests/test_conformance_script.py": 40,
    "tests/control/constraint/python_regex/test_trie.py": 31,
    "tests/test_architecture.py": 27,
    "tests/util/test_threads.py": 24,
    "tests/test_compat.py": 22,
    "tests/control/constraint/json/test_generation.py": 21,
    "tests/backend/test_default_model.py": 20,
    "tests/browser/test_views_in_lab.py": 125,
    "tests/browser/test_constraint_views.py": 120,
    "tests/browser/test_playground.py": 120,
    "tests/browser/test_notebooks_open_clean.py": 52,
    "tests/browser/test_results_view.py": 30,
    "tests/browser/test_results_models.py": 27,
    "tests/browser/views.ipynb": 21,
    "tests/browser/test_views_in_notebook7.py": 20,
    "tests/browser/test_untrusted_notebooks.py": 17,
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
