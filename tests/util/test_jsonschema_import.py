"""util.jsonschema_import: jsonschema checks IRIs as before, its parser built only when asked."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.util import find_spec

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(find_spec("rfc3987_syntax") is None, reason="rfc3987-syntax not installed"),
]

IRIS = ["http://example.com/ä?q=1#x", "urn:isbn:0451450523", "no scheme", "http://[::1", "é:x", ""]

CHECK = """
import json, sys
{imports}
parser_built = "rfc3987_syntax.syntax_helpers" in sys.modules
import rfc3987_syntax  # before any IRI check: the stand-in must be out of sys.modules by now
real = hasattr(rfc3987_syntax, "syntax_parser")
checker = jsonschema.FormatChecker()
verdicts = {{
    fmt: [checker.conforms(iri, fmt) for iri in {iris!r}] for fmt in ("iri", "iri-reference")
}}
print(json.dumps({{"parser_built": parser_built, "verdicts": verdicts, "real": real}}))
"""


def _run(imports: str) -> dict:
    code = CHECK.format(imports=imports, iris=IRIS)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_iri_formats_are_checked_as_by_a_plain_import_and_the_parser_waits():
    plain = _run("import jsonschema")
    ours = _run("import genlm_lab.control\nimport jsonschema")
    assert plain["parser_built"] and not ours["parser_built"]
    assert ours["verdicts"] == plain["verdicts"]
    for verdicts in plain["verdicts"].values():  # the panel has IRIs of both kinds
        assert True in verdicts and False in verdicts
    assert ours["real"]  # later imports of the package get the real one, not the stand-in
