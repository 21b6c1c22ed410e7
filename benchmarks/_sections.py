"""Write one standalone benchmark's section of RESULTS.md, leaving every other section alone."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def write_section(name: str, text: str, before: str) -> None:
    """Replace the `## name` section with `text`, or add it before the `## before` section."""
    old = RESULTS.read_text()
    if f"## {name}" in old:
        start = old.index(f"## {name}")
        end = old.find("\n## ", start + 1)
        new = old[:start] + text + ("\n" + old[end + 1 :] if end >= 0 else "")
    else:
        start = old.index(f"## {before}")
        new = old[:start] + text + "\n" + old[start:]
    RESULTS.write_text(new)
