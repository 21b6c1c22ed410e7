"""Write genlm_lab/eval/data/schemas/panel/: the benchmarks' SchemaStore panel, as shipped data.

The panel is `build_panel` of `benchmarks/bench_json_gen.py` (SchemaStore
schemas vendored by check-jsonschema, a test dependency). Each source file
becomes `panel/<source>.json` with its entries (schema with the definitions
it reaches, shortest document as `example`), its licence in words and the
name of its licence text, which is copied beside it from check-jsonschema's
`vendor/licenses/` (SchemaStore's own licence by default).

Run: `python scripts/build_schema_panel.py` (then `git status` shows what changed).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from bench_json_gen import SOURCES, _vendor, build_panel  # noqa: E402

from genlm_lab.eval.domains.json_schema_panel import reachable_definitions  # noqa: E402

OUT = ROOT / "genlm_lab" / "eval" / "data" / "schemas" / "panel"
#: check-jsonschema's licence files whose names differ from their schema's.
LICENCE_NAMES = {"gitlab-ci": "LICENSE.gitlab", "taskfile": "LICENSE.task"}
SCHEMASTORE = ("Apache-2.0 (SchemaStore)", "LICENSE.schemastore")


def licence_of(source: str) -> tuple[str, Path]:
    """(licence in words, licence text) of a vendored schema file."""
    licences = _vendor() / "licenses"
    if source not in SOURCES:
        return SCHEMASTORE[0], licences / SCHEMASTORE[1]
    path = licences / LICENCE_NAMES.get(source, f"LICENSE.{source}")
    if not path.is_file():
        raise FileNotFoundError(f"no licence text for {source} at {path}")
    return SOURCES[source], path


def panel_files() -> dict[str, dict]:
    """File name -> content of every panel file, as `build_panel` selects the schemas."""
    files: dict[str, dict] = {}
    for entry in build_panel():
        source = entry["id"].split(":")[0]
        licence, text = licence_of(source)
        data = files.setdefault(
            f"{source}.json",
            {"source": source, "licence": licence, "licence_file": text.name, "schemas": []},
        )
        data["schemas"].append(
            {
                "id": entry["id"],
                "schema": reachable_definitions(entry["schema"]),
                "example": json.loads(entry["shortest"]),
            }
        )
    return files


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for name, data in panel_files().items():
        (OUT / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
        text = licence_of(data["source"])[1]
        shutil.copyfile(text, OUT / text.name)
    count = sum(1 for _ in OUT.glob("*.json"))
    print(f"{OUT}: {count} files")


if __name__ == "__main__":
    main()
