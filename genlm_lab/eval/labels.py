"""Short labels of a stored instance's content, for tables and tooltips (`instance_label`)."""

from __future__ import annotations

import json

__all__ = ["instance_label"]

#: Instance fields shown first, in this order, when an instance is labelled.
_LABEL_FIELDS = ("name", "pattern", "question", "title", "text")


def instance_label(data: str | dict | None, width: int = 48) -> str:
    """A short label of an instance's content: its name, pattern, question, ... (JSON or dict)."""
    if data is None:
        return ""
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return data[:width]
    fields = [k for k in _LABEL_FIELDS if isinstance(data.get(k), str)]
    fields += [k for k, v in data.items() if isinstance(v, dict)]  # a schema, say
    fields += [k for k, v in data.items() if k != "instance_id" and isinstance(v, str)]
    if not fields:
        text = json.dumps({k: v for k, v in data.items() if k != "instance_id"}, default=str)
    else:
        value = data[fields[0]]
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
