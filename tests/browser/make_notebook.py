"""Regenerate views.ipynb (the notebook the browser tests run): python tests/browser/make_notebook.py."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

cells = [
    new_markdown_cell(
        "Browser test notebook for genlm_lab views: run all cells; tests read the DOM."
    ),
    new_code_cell("""import asyncio
import math
import random

from IPython.display import display

from genlm_lab.backend import ToyLM
from genlm_lab.widgets import BackendMonitor, ParticleView"""),
    new_code_cell("""# ParticleView, live: a hand-driven SMC loop (3 s) so the test can read it twice.
rng = random.Random(0)
N = 8
view = ParticleView()
display(view)
texts = [""] * N
lw = [0.0] * N
log_ml = 0.0
for t in range(30):
    incs = [rng.gauss(0, 1) for _ in range(N)]
    texts = [x + rng.choice("ab<\\n") for x in texts]
    lw = [w + d for w, d in zip(lw, incs)]
    ancestors = None
    if t % 10 == 9:
        ancestors = sorted(rng.randrange(N) for _ in range(N))
    view.on_step({"step": t, "particles": [
        {"text": x, "log_weight": w, "increment": d, "finished": False}
        for x, w, d in zip(texts, lw, incs)], "log_ml": -0.1 * t, "ancestors": ancestors})
    if ancestors:
        texts = [texts[a] for a in ancestors]
        lw = [0.0] * N
    await asyncio.sleep(0.1)
view.on_finish({"run_id": "browser-test", "steps": view._entries})
print("SMC DONE")"""),
    new_code_cell("""llm = ToyLM([b"a", b"b", b"ab", b"<script>"], seed=1)
monitor = BackendMonitor(llm)
display(monitor)
for _ in range(5):
    llm.next_token_logprobs_sync([0, 1])
monitor.refresh()"""),
    new_code_cell("""print("ALL CELLS DONE")"""),
]
nb = new_notebook(cells=cells)
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbformat.write(nb, str(__import__("pathlib").Path(__file__).with_name("views.ipynb")))
