"""Run copy-as-code's Python as a notebook cell would (top-level `await`), for the tests."""

from __future__ import annotations

import textwrap
from typing import Any


async def run_pasted(code: str) -> Any:
    """The `sequences` that `code` makes, run in a fresh namespace as a pasted cell runs it."""
    namespace: dict = {}
    body = textwrap.indent(code.replace("sequences.decoded_posterior\n", ""), "    ")
    exec(f"async def _reproduce():\n{body}\n    return sequences\n", namespace)
    return await namespace["_reproduce"]()
