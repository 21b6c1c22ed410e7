"""Regenerate views.ipynb, the notebook the browser tests run: python tests/browser/make_notebook.py.

Each cell prints the numbers the test expects (computed in the kernel), so the
test compares the drawn DOM with the kernel's own data.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

CELLS = [
    new_markdown_cell(
        "Browser test notebook for genlm_lab views: run all cells; tests read the DOM."
    ),
    new_code_cell(
        """import asyncio

from IPython.display import display

from genlm_lab.backend import ToyLM
from genlm_lab.bytes import BeamParams
from genlm_lab.smc import smc_standard, smc_steer
from genlm_lab.smc.examples.lipogram import Lipogram
from genlm_lab.widgets import BackendMonitor, BeamDebugger, ParticleView, TrieView

VOCAB = [b"a", b"b", b"ab", b"<script>", b"\\n", b"\\xff", b"abc", b" the"]
llm = ToyLM(VOCAB, seed=3)"""
    ),
    new_code_cell(
        """trie_view = TrieView.from_lm(llm, "ab", depth=3, top_k=4)
display(trie_view)
print("TRIE NODES", len(trie_view.view_data()["nodes"]))"""
    ),
    new_code_cell(
        """dbg = BeamDebugger(llm, b"ab\\n<script>\\xff the", BeamParams(K=3))
await dbg.step(4)
display(dbg)
print("BEAM ROWS", len(dbg.view_data()["step"]["candidates"]))"""
    ),
    new_code_cell(
        """class SlowLipogram(Lipogram):
    \"\"\"A lipogram whose steps take 0.1 s, so the live view can be watched.\"\"\"

    async def step(self):
        await asyncio.sleep(0.1)
        await super().step()


monitor = BackendMonitor(llm)
view = ParticleView()
display(view)
result = await smc_standard(
    SlowLipogram(llm, prompt="a", forbidden="c", max_tokens=30), 8, observers=[view], seed=0
)
gen = view.view_data()["genealogy"]
print("GENEALOGY", sum(len(c) for c in gen), sum(len(c) for c in gen[1:]), len(gen))"""
    ),
    new_code_cell(
        """steer_view = ParticleView()
display(steer_view)
steered = await smc_steer(
    Lipogram(llm, prompt="a", forbidden="c", max_tokens=6), 3, 2, observers=[steer_view], seed=0
)
data = steer_view.view_data()
gen = data["genealogy"]
print("STEER", len(data["particles"]), data["n_kept"], sum(len(c) for c in gen[1:]), len(gen))"""
    ),
    new_code_cell(
        """monitor.refresh()
display(monitor)
print("QUERIES", llm.stats["queries"])"""
    ),
    new_code_cell('print("ALL CELLS DONE")'),
]


def main() -> None:
    nb = new_notebook(cells=CELLS)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(Path(__file__).with_name("views.ipynb")))


if __name__ == "__main__":
    main()
