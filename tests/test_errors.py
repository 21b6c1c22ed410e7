"""genlm_lab.errors: every public error and warning shares one base, is listed, and pickles."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil
import re
import warnings

import pytest

import genlm_lab
import genlm_lab.errors as errors
from genlm_lab.errors import GenlmLabError, GenlmLabWarning

#: Exceptions with a public name that never leave their module: caught where raised.
INTERNAL = {
    # json.loads's object_pairs_hook raises it; JsonSchema turns it into InvalidGrammar
    "genlm_lab.control.constraint.json.reading.RepeatedKey",
}

#: Where each class was defined before the layers' errors modules: still importable there.
FIRST_HOMES = {
    "genlm_lab.backend.default_model": ["ModelNotFoundError"],
    "genlm_lab.bytes.params": ["EmptyBeamError"],
    "genlm_lab.bytes.probs": ["ByteProbsLengthError"],
    "genlm_lab.bytes.interval": ["IntervalWarning"],
    "genlm_lab.smc.deaths": ["AllParticlesDied"],
    "genlm_lab.tokenization.bytes": ["ByteDecoderError", "ByteVocabError"],
    "genlm_lab.control.constraint.errors": ["FinishWarning", "InvalidGrammar"],
    "genlm_lab.control.inference.smc": ["BudgetTooSmall"],
    "genlm_lab.control.inference.sequences": ["SequencesLengthError"],
    "genlm_lab.control.core.util": ["BatchAbandoned"],
    "genlm_lab.control.constraint.json.reading": ["InvalidSchema"],
    "genlm_lab.control.constraint.json.stream.text_input": ["Incomplete", "ParseError"],
    "genlm_lab.control": ["BudgetTooSmall", "FinishWarning", "InvalidGrammar"],
    "genlm_lab.bytes": ["ByteProbsLengthError", "EmptyBeamError", "IntervalWarning"],
    "genlm_lab.smc": ["AllParticlesDied"],
    "genlm_lab.backend": ["ModelNotFoundError"],
    "genlm_lab.tokenization": ["ByteDecoderError", "ByteVocabError"],
}


def _table() -> dict[str, tuple[str, list[str]]]:
    """The docstring's table: class name -> (layer, built-in bases)."""
    rows = {}
    for line in errors.__doc__.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].startswith("`"):
            rows[cells[1].strip("`")] = (cells[0], re.findall(r"`(\w+)`", cells[2]))
    return rows


def _defined_exceptions() -> dict[str, type]:
    """Every exception class with a public name defined in any module of genlm_lab."""
    found = {}
    for info in pkgutil.walk_packages(genlm_lab.__path__, "genlm_lab."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = obj
    return found


def _instance(cls: type) -> BaseException:
    if cls is errors.EmptyBeamError:
        return cls(99, 2, "healing is off")
    return cls("what went wrong")


def test_the_table_documents_every_listed_name_and_only_those():
    assert sorted(_table()) == sorted(errors.__all__)


@pytest.mark.parametrize("name", errors.__all__)
def test_each_listed_name_shares_the_base_and_keeps_its_documented_builtin_base(name):
    cls = getattr(errors, name)
    layer, builtins = _table()[name]
    assert builtins, name
    for base in builtins:
        assert issubclass(cls, getattr(__import__("builtins"), base)), (name, base)
    if cls not in (GenlmLabError, GenlmLabWarning):
        assert issubclass(cls, GenlmLabWarning if issubclass(cls, Warning) else GenlmLabError)
    assert cls.__module__.startswith(f"genlm_lab.{layer}"), (name, cls.__module__, layer)


def test_invalid_grammar_is_still_a_value_error():
    with pytest.raises(ValueError, match="bad"):
        raise errors.InvalidGrammar("bad")


def test_every_public_exception_class_of_the_package_is_listed():
    listed = {getattr(errors, name) for name in errors.__all__}
    missing = [
        path
        for path, cls in _defined_exceptions().items()
        if cls not in listed and path not in INTERNAL
    ]
    assert not missing, "add these to genlm_lab/errors.py (or INTERNAL here):\n" + "\n".join(
        missing
    )
    assert all(errors.__name__ != cls.__module__ for cls in listed)  # imported, not defined there


@pytest.mark.parametrize("module, names", sorted(FIRST_HOMES.items()))
def test_the_first_homes_still_export_the_same_classes(module, names):
    mod = importlib.import_module(module)
    assert names
    for name in names:
        assert getattr(mod, name) is getattr(errors, name), (module, name)
        assert name in getattr(mod, "__all__", [name]), (module, name)


@pytest.mark.parametrize("name", errors.__all__)
def test_each_pickles_with_its_type_message_and_arguments(name):
    error = _instance(getattr(errors, name))
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert (str(back), back.args) == (str(error), error.args)


def test_empty_beam_error_pickles_with_its_fields():
    back = pickle.loads(pickle.dumps(errors.EmptyBeamError(99, 2, "healing is off")))
    assert (back.byte, back.position, back.reason) == (99, 2, "healing is off")
    assert "byte 99 ('c') at position 2; healing is off" in str(back)


def test_one_filter_on_the_warning_base_reaches_every_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", GenlmLabWarning)
        for name in errors.__all__:
            cls = getattr(errors, name)
            if issubclass(cls, Warning) and cls is not GenlmLabWarning:
                with pytest.raises(cls):
                    warnings.warn("said", cls, stacklevel=1)
