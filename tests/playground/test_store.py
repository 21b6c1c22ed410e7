"""Playground runs saved in a ResultsStore and reopened with their choices and views."""

import pytest

from genlm_lab.backend import load_model_by_name
from genlm_lab.eval.store import ResultsStore
from genlm_lab.playground import Playground, PlaygroundConfig, to_code


@pytest.fixture(scope="module")
def tiny():
    return load_model_by_name("tiny-random")


async def test_a_saved_run_reopens_with_its_choices_and_particles(tiny, tmp_path):
    config = PlaygroundConfig(
        prompt="Id: ", model="tiny-random", constraint="[a-z]{2}", n_particles=3, max_tokens=6
    )
    pg = Playground(config, lm=tiny)
    await pg.run()
    path = tmp_path / "results.sqlite"
    pg.store_path.value = str(path)
    pg.save_button.click()
    assert "saved as run" in pg.status.value
    run_id = int(pg.status.value.split("saved as run ")[1].split()[0])

    again = Playground.reopen(str(path), run_id, lm=tiny)
    assert again.current_config() == config
    assert again.code.state == "shown" and again.code.code == to_code(config)  # the run reopened
    shown = again.particles.view_data()
    assert [p["text"] for p in shown["particles"]] == [
        p["text"] for p in pg.particles.view_data()["particles"]
    ]
    assert again.record.steps == pg.record.steps
    reopened = {r["component"]: r["seconds"] for r in again.profile.view_data()["table"]}
    live = {r["component"]: r["seconds"] for r in pg.profile.view_data()["table"]}
    # the record's rows gain the finishing observers' own time after the live view has seen them
    assert reopened.keys() == live.keys()
    settled = set(live) - {"observers", "other"}
    assert {k: reopened[k] for k in settled} == pytest.approx({k: live[k] for k in settled})
    mask = await again.mask_at(1, 0)  # step 1; the reopened run builds its potentials on demand
    assert mask.view_data()["n_allowed"] == (await pg.mask_at(1, 0)).view_data()["n_allowed"]

    with ResultsStore(path) as store:
        run = store.run(run_id)
        assert run["domain"] == "playground" and run["model"] == "tiny-random"
    # the same choices saved again replace the run; other choices make another
    pg.save(str(path))
    pg.prompt.value = "Other: "
    await pg.run()
    pg.save(str(path))
    with ResultsStore(path) as store:
        runs = store.to_pandas("runs")
        assert (runs["domain"] == "playground").sum() == 2


def test_saving_before_a_run_and_opening_another_kind_of_run_are_named(tiny, tmp_path):
    pg = Playground(PlaygroundConfig(model="tiny-random"), lm=tiny)
    with pytest.raises(ValueError, match="no finished run"):
        pg.save(str(tmp_path / "r.sqlite"))
    pg.save_button.click()
    assert "name a store file" in pg.status.value


def test_a_store_given_stays_open_and_one_opened_from_a_path_is_closed(tmp_path):
    import sqlite3

    from genlm_lab.playground.store import open_store

    with ResultsStore(tmp_path / "given.sqlite") as store:
        with open_store(store) as opened:
            assert opened is store
        assert store.to_pandas("runs").empty  # still usable
    with open_store(tmp_path / "path.sqlite") as opened:
        assert str(opened.path).endswith("path.sqlite")
    with pytest.raises(sqlite3.ProgrammingError):
        opened._conn.execute("SELECT 1")
