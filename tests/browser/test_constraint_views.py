"""MaskView and the ParticleView of a constrained run, live in a real JupyterLab.

The test writes a small notebook into the lab's root: a MaskView of a ToyLM
times a regex (with an AWRS trace), and a `control.SMC` run with a critic whose
sampler sleeps a little each step so the live view can be watched. Each cell
prints the numbers the views should draw.
"""

from __future__ import annotations

import shutil
import time

import pytest
from _views_page import NOISE, all_cells_ran, open_and_run_all, printed
from conftest import NOTEBOOKS

SETUP = """import asyncio

from IPython.display import display

from genlm_lab.backend import ToyLM
from genlm_lab.control import SMC, BoolFSA, BoolPredicate, PromptedLLM
from genlm_lab.control.sampler.token import DirectTokenSampler
from genlm_lab.widgets import MaskView, ParticleView

VOCAB = [b"a", b"b", b"ab", b"<script>", b"\\n", b"\\xff", b"abc", b" the", b"<eos>"]
llm = PromptedLLM(ToyLM(VOCAB, eos=b"<eos>", seed=3))
regex = BoolFSA.from_regex(r"[ab]{24,}").coerce(llm)"""

MASK = """trace = {"drawn": [b"<script>", b"\\n", b"a", b"ab"], "rejected": [b"<script>", b"\\n"],
         "accepted": [b"a", b"ab"], "n_draws": 4, "n_checks": 4, "logw": -1.5}
mask = await MaskView.of(llm * regex, [llm.vocab[0]], awrs=trace)
display(mask)
d = mask.view_data()
nodes = d["trie"]["nodes"]
print("MASK", len(d["rows"]), sum(not r["allowed"] for r in d["rows"]), len(nodes),
      sum(n["blocked"] for n in nodes), len(d["awrs"]["draws"]))"""

RUN = """class SlowSampler(DirectTokenSampler):
    \"\"\"A direct sampler whose draws take 0.15 s, so the live view can be watched.\"\"\"

    async def sample_with_info(self, context):
        await asyncio.sleep(0.15)
        return await super().sample_with_info(context)


critic = BoolPredicate(lambda t: b"bbb" not in t, name="no_bbb").coerce(llm)
view = ParticleView()
display(view)
run = await SMC(SlowSampler(llm * regex), critic)(
    8, ess_threshold=0.5, max_tokens=40, observers=[view], seed=0
)
data = view.view_data()
print("CONTROL", len(data["particles"]), len(data["factor_names"]),
      sum(p["killed"] is not None for p in data["particles"]))"""


def _factor_cells(page) -> list[str]:
    return page.locator(".genlm-live.genlm-particles").first.evaluate(
        "el => [...el.querySelectorAll('td.genlm-factor')].map(e => e.textContent)"
    )


def test_mask_and_constrained_particle_views_draw_live(page, notebook, screenshot):
    notebook(page, "constraint_views", SETUP, MASK, RUN, workspace="constraints")

    # MaskView: one row per token (ToyLM: the whole vocabulary), blocked ones marked.
    n_rows, n_blocked, n_nodes, n_blocked_nodes, n_draws = printed(page, "MASK")
    mask = page.locator(".genlm-live.genlm-mask")
    mask.locator("table tbody tr").first.wait_for(timeout=60_000)
    assert mask.locator("table tbody tr").count() == n_rows
    assert mask.locator("tr.genlm-blocked").count() == n_blocked > 0
    assert mask.locator("td.genlm-blocks").count() >= n_blocked
    assert mask.locator(".genlm-awrs-draws .genlm-tok").count() == n_draws
    assert mask.locator(".genlm-awrs-draws .genlm-rejected").count() == 2
    assert "<script>" in mask.locator("table").text_content()  # drawn as text ...
    assert mask.locator("script").count() == 0  # ... never as markup
    screenshot(mask, "mask_view")

    # The toggle shows the vocabulary's trie with the blocked subtrees greyed.
    mask.locator("button.genlm-toggle").click()
    trie = mask.locator(".genlm-mask-trie")
    trie.wait_for(timeout=30_000)
    if trie.locator("svg").count():
        assert trie.locator("g.node").count() == n_nodes
        assert trie.locator("g.node.genlm-blocked").count() == n_blocked_nodes > 0
    else:  # no graphviz: the HTML tree
        assert trie.locator("li").count() == n_nodes
        assert trie.locator("li.genlm-blocked").count() == n_blocked_nodes > 0
    screenshot(mask, "mask_view_trie")
    mask.locator("button.genlm-toggle").click()
    mask.locator("table tbody tr").first.wait_for(timeout=30_000)

    # ParticleView of control.SMC while the cell runs: per-factor weights move.
    page.wait_for_selector(".genlm-live.genlm-particles td.genlm-factor", timeout=90_000)
    first = _factor_cells(page)
    time.sleep(1.0)
    second = _factor_cells(page)
    assert len(first) == 16 and len(second) == 16, (first, second)  # 8 particles x 2 factors
    assert first != second, "per-factor weights did not change while the SMC cell ran"

    n_particles, n_factors, n_killed = printed(page, "CONTROL")
    particles = page.locator(".genlm-live.genlm-particles").first
    page.wait_for_function(
        "() => document.querySelector('.genlm-live.genlm-particles .genlm-status')"
        ".textContent.includes('finished')",
        timeout=60_000,
    )
    assert particles.locator("tbody tr[data-index]").count() == n_particles
    assert particles.locator("td.genlm-factor").count() == n_particles * n_factors
    assert particles.locator(".genlm-killed").count() == n_killed
    heads = particles.locator("thead th").all_text_contents()
    assert "log w PromptedLLM" in heads and "log w BoolFSA" in heads, heads
    screenshot(particles, "control_particle_view")

    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors


@pytest.mark.slow
def test_constraints_tutorial_draws_its_views(page, lab, screenshot):
    base, token, root = lab
    name = "07_constraints.ipynb"
    if not (NOTEBOOKS / name).exists():
        pytest.skip(f"notebooks/{name} does not exist")
    shutil.copy(NOTEBOOKS / name, root / name)
    open_and_run_all(page, f"{base}/lab/workspaces/tutorial-07/tree/{name}?reset&token={token}")
    outcome = all_cells_ran(page)
    assert outcome == "done", outcome
    page.wait_for_function(
        "() => document.querySelectorAll('.genlm-live.genlm-particles').length >= 5"
        " && document.querySelectorAll('.genlm-live.genlm-mask').length >= 5",
        timeout=60_000,
    )
    for view in page.locator(".genlm-live.genlm-particles").all():
        # A run ends finished or, when the constraint kills every particle, all_dead: batched
        # float32 forwards differ with batch composition, so Lab's run may differ from nbval's.
        status = view.locator(".genlm-status").text_content()
        assert "finished" in status or "all_dead" in status, status
        assert view.locator("td.genlm-factor").count() > 0
    # The broken city regex on SmolLM2: ␣Paris blocked, the trie under ␣P greyed.
    broken = page.locator(".genlm-live.genlm-mask").nth(4)
    assert "BoolFSA" in broken.locator("tr.genlm-blocked").first.text_content()
    broken.locator("button.genlm-toggle").click()
    broken.locator(".genlm-mask-trie").wait_for(timeout=30_000)
    assert broken.locator(".genlm-mask-trie .genlm-blocked").count() > 0
    screenshot(broken, "mask_view_smollm2")
    errors = [e for e in page.console_errors if not NOISE.search(e)]
    assert not errors, errors
