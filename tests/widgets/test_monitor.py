import pytest

from genlm_lab.backend import ToyLM
from genlm_lab.widgets import BackendMonitor, monitor_data


def test_monitor_rows_follow_the_backend_counters():
    llm = ToyLM([b"a", b"b"], seed=0)
    mon = BackendMonitor(llm)
    for _ in range(3):
        llm.next_token_logprobs_sync([0])
    mon.refresh()
    rows = {r["name"]: r["value"] for r in mon.view_data()["rows"]}
    assert rows["queries"] == 3 and rows["batches"] == 3
    assert rows["mean batch size"] == 1.0
    assert rows["cache hit rate"] == 0.0
    html = mon._repr_html_()
    assert "<td>queries</td><td class='genlm-num'>3</td>" in html


def test_mean_batch_size_counts_requests_per_forward_call():
    data = monitor_data({"queries": 10, "batches": 2, "cache_hits": 4, "tokens_computed": 9})
    rows = {r["name"]: r["value"] for r in data["rows"]}
    assert rows["mean batch size"] == 3.0  # (10 - 4) computed requests in 2 forwards
    assert rows["cache hit rate"] == 0.4


def test_monitor_rejects_objects_without_stats():
    with pytest.raises(ValueError, match="no `stats` dict"):
        BackendMonitor(object())
    with pytest.raises(ValueError, match="lacks the counters"):
        monitor_data({"queries": 1})


async def test_monitor_polls_the_running_loop_until_stopped():
    import asyncio

    llm = ToyLM([b"a", b"b"], seed=0)
    mon = BackendMonitor(llm, interval=0.01)
    llm.next_token_logprobs_sync([0])
    await asyncio.sleep(0.05)
    assert mon.data["rows"][0] == {"name": "queries", "value": 1}
    mon.close()
    llm.next_token_logprobs_sync([0])
    await asyncio.sleep(0.05)
    assert mon.data["rows"][0]["value"] == 1  # no longer polled
