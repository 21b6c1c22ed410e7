"""Run GenLM code unchanged: `import genlm.backend` & co. resolve to genlm_lab.

`install()` puts an import hook first on `sys.meta_path`. From then on, in
this process, every module path of genlm-backend, genlm-bytes,
genlm-control and llamppl that `MODULE_MAP` names resolves to the genlm_lab
module(s) that document the same names. There are no adapters here: a GenLM
module path is either an alias of one genlm_lab module (the very same module
object, so `monkeypatch.setattr` on it patches genlm_lab) or, where GenLM
gathers names that genlm_lab keeps in several modules, a thin re-export
module that looks names up in those modules, in order.

A GenLM path the map does not name (the MLX backend, say) raises
`ModuleNotFoundError` saying so, rather than falling through to a real
GenLM package that may also be installed: mixing the two would hand
genlm_lab objects to GenLM code and the other way round. For the same
reason `install()` refuses, with `CompatError`, when a real GenLM package
is already imported.

`genlm-lab run script.py [args]` runs a script with the hook installed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Iterable, Mapping
from typing import Any

from genlm_lab.util.errors import GenlmLabError

__all__ = [
    "MODULE_MAP",
    "UNMAPPED",
    "CompatError",
    "install",
    "installed",
    "run_path",
    "uninstall",
]

#: Top-level GenLM packages the hook owns, with the distribution each comes from.
ROOTS: dict[str, str] = {
    "genlm.backend": "genlm-backend",
    "genlm.bytes": "genlm-bytes",
    "genlm.control": "genlm-control",
    "llamppl": "llamppl",
}

_B, _Y, _C, _S = "genlm_lab.backend", "genlm_lab.bytes", "genlm_lab.control", "genlm_lab.smc"

#: GenLM module path -> genlm_lab module (an alias) or tuple of modules (a re-export,
#: names looked up in order). Paths with children in the map must be re-exports.
MODULE_MAP: dict[str, str | tuple[str, ...]] = {
    # genlm-backend 0.3.1
    "genlm.backend": (_B, "genlm_lab.tokenization", "genlm_lab.trie"),
    "genlm.backend.llm": (_B, f"{_B}.registry"),
    "genlm.backend.llm.base": (f"{_B}.base", f"{_B}.mock"),
    "genlm.backend.llm.hf": f"{_B}.hf",
    "genlm.backend.llm.vllm": f"{_B}.vllm",
    "genlm.backend.tokenization": ("genlm_lab.tokenization",),
    "genlm.backend.tokenization.token": "genlm_lab.tokenization.token",
    "genlm.backend.tokenization.vocab": "genlm_lab.tokenization.vocab",
    "genlm.backend.tokenization.bytes": (
        "genlm_lab.tokenization.bytes",
        "genlm_lab.tokenization.vocab",
    ),
    "genlm.backend.trie": ("genlm_lab.trie",),
    "genlm.backend.trie.base": "genlm_lab.trie.char_trie",
    "genlm.backend.trie.async_impl": "genlm_lab.trie.async_trie",
    "genlm.backend.trie.parallel": "genlm_lab.trie.parallel",
    # genlm-bytes 0.2.0
    "genlm.bytes": (_Y, "genlm_lab.util"),
    "genlm.bytes.byte_lm": (_Y,),
    "genlm.bytes.byte_lm.beam": (f"{_Y}.beam", f"{_Y}.params"),
    "genlm.bytes.byte_lm.heal": f"{_Y}.heal",
    "genlm.bytes.byte_lm.lm_state": (f"{_Y}.lm_state", f"{_Y}.base"),
    "genlm.bytes.byte_lm.trie_state": (f"{_Y}.trie_state", f"{_Y}.trie"),
    "genlm.bytes.trie": f"{_Y}.trie",
    "genlm.bytes.util": (f"{_Y}.probs", "genlm_lab.util.escape", "genlm_lab.util"),
    # genlm-control 0.4.1
    "genlm.control": (_C,),
    "genlm.control.constant": f"{_C}.core.constant",
    "genlm.control.typing": f"{_C}.core.token_types",
    "genlm.control.potential": (_C,),
    "genlm.control.potential.base": f"{_C}.potential.base",
    "genlm.control.potential.autobatch": f"{_C}.potential.operators",
    "genlm.control.potential.operators": f"{_C}.potential.operators",
    "genlm.control.potential.product": f"{_C}.potential.operators",
    "genlm.control.potential.tempered": f"{_C}.potential.tempered",
    "genlm.control.potential.normalized": f"{_C}.potential.normalized",
    "genlm.control.potential.testing": f"{_C}.potential.checks",
    "genlm.control.potential.coerce": f"{_C}.potential.coerce",
    "genlm.control.potential.multi_proc": f"{_C}.potential.multi_proc",
    "genlm.control.potential.stateful": f"{_C}.potential.stateful",
    "genlm.control.potential.streaming": f"{_C}.potential.streaming",
    "genlm.control.potential.built_in": (_C,),
    "genlm.control.potential.built_in.llm": f"{_C}.lm.llm",
    "genlm.control.potential.built_in.bytellm": f"{_C}.lm.bytellm",
    "genlm.control.potential.built_in.wfsa": f"{_C}.constraint.fsa",
    "genlm.control.potential.built_in.cfg": f"{_C}.constraint.cfg",
    "genlm.control.potential.built_in.wcfg": (f"{_C}.wcfg.potential", f"{_C}.constraint.cfg"),
    "genlm.control.potential.built_in.json": (
        f"{_C}.constraint.json.schema",
        f"{_C}.constraint.json.stream",
    ),
    "genlm.control.potential.built_in.ensemble": f"{_C}.potential.ensemble",
    "genlm.control.potential.built_in.canonical": f"{_C}.lm.canonical",
    "genlm.control.sampler": (_C,),
    "genlm.control.sampler.token": (
        f"{_C}.sampler.token",
        f"{_C}.sampler.awrs",
        f"{_C}.sampler.awrs_estimators",
        f"{_C}.sampler.set",
    ),
    "genlm.control.sampler.set": f"{_C}.sampler.set",
    "genlm.control.sampler.sequence": (
        f"{_C}.inference.smc",
        f"{_C}.inference.particle",
        f"{_C}.inference.sequences",
        f"{_C}.inference.ensemble",  # genlm-control main's EnsembleSMC, SequencesExt
    ),
    "genlm.control.sampler.smc": (f"{_C}.inference.smc", f"{_C}.inference.particle", _S),
    "genlm.control.sampler.unit": (
        f"{_C}.sampler.unit",
        f"{_C}.sampler.boundaries",
        f"{_C}.sampler.signal_boundaries",
    ),
    "genlm.control.sampler.resampling": f"{_S}.resample",
    # genlm-control main's conditional SMC (sampler/csmc.py; csmc_memory.py is its older name)
    "genlm.control.sampler.csmc": f"{_C}.inference.csmc",
    "genlm.control.sampler.csmc_memory": f"{_C}.inference.csmc",
    # genlm-control main's Python syntax potential
    "genlm.control.potential.built_in.python_parser": f"{_C}.constraint.python_syntax",
    # genlm-control main's Harmony chat potential (gpt-oss's format)
    "genlm.control.potential.harmony": f"{_C}.lm.harmony",
    # genlm-control's KL metrics (evaluation/metrics.py)
    "genlm.control.evaluation": (f"{_C}.evaluation",),
    "genlm.control.evaluation.metrics": f"{_C}.evaluation.metrics",
    # genlm-control's visualiser: here it opens the widgets' views, no server
    "genlm.control.viz": "genlm_lab.widgets.inference_visualizer",
    "genlm.control.util": (
        f"{_C}.core.util",
        f"{_C}.core.weights",
        f"{_C}.sampler.draws",
        "genlm_lab.util",
        "genlm_lab.tokenization",  # `Token`, which genlm-control's util re-exports
    ),
    "genlm.control.sampler.smc_record": f"{_C}.core.util",
    # llamppl 0.2.3
    "llamppl": (_S, f"{_S}.cached_lm", "genlm_lab.util.math"),
    "llamppl.llms": (f"{_S}.cached_lm", "genlm_lab.tokenization"),
    "llamppl.modeling": f"{_S}.model",
    "llamppl.distributions": (f"{_S}.distributions", f"{_S}.lm_context"),
    "llamppl.distributions.distribution": f"{_S}.distributions",
    "llamppl.distributions.bernoulli": f"{_S}.distributions",
    "llamppl.distributions.geometric": f"{_S}.distributions",
    "llamppl.distributions.logcategorical": f"{_S}.distributions",
    "llamppl.distributions.tokencategorical": f"{_S}.distributions",
    "llamppl.distributions.transformer": f"{_S}.distributions",
    "llamppl.distributions.lmcontext": f"{_S}.lm_context",
    "llamppl.inference": (f"{_S}.inference", f"{_S}.steer", f"{_S}.resample"),
    "llamppl.inference.resampling": f"{_S}.resample",
    "llamppl.inference.smc_standard": f"{_S}.inference",
    "llamppl.inference.smc_steer": f"{_S}.steer",
    "llamppl.inference.smc_record": f"{_S}.record",
    "llamppl.util": "genlm_lab.util.math",
}

#: GenLM module paths with no genlm_lab counterpart, and why.
UNMAPPED: dict[str, str] = {
    "genlm.backend.llm.mlx": "the Apple MLX backend is not implemented; use backend='hf'",
    "genlm.backend.llm.sgl": "the SGLang backend is not implemented; use backend='vllm'",
    "genlm.backend.cache": "genlm-backend's cache internals; genlm_lab caches in the backend",
}

_MARK = "__genlm_lab_compat__"


class CompatError(GenlmLabError, ImportError):
    """`install()` cannot alias a GenLM package (a real one is already imported)."""


def _is_ours(module: Any) -> bool:
    name = getattr(module, "__name__", "") or ""
    return bool(getattr(module, _MARK, False)) or name.split(".")[0] == "genlm_lab"


def _root_of(fullname: str) -> str | None:
    for root in ROOTS:
        if fullname == root or fullname.startswith(root + "."):
            return root
    return None


def _reexport(fullname: str, sources: tuple[str, ...]) -> types.ModuleType:
    """A package-like module whose names are those of `sources`, looked up in order."""
    modules = [importlib.import_module(s) for s in sources]
    module = types.ModuleType(fullname, f"genlm_lab.compat: {fullname} -> {', '.join(sources)}")
    names: list[str] = []
    for m in modules:
        for n in getattr(m, "__all__", [n for n in vars(m) if not n.startswith("_")]):
            if n not in names:
                names.append(n)

    def __getattr__(name: str) -> Any:
        for m in modules:
            if hasattr(m, name):
                return getattr(m, name)
        raise AttributeError(
            f"module {fullname!r} (genlm_lab.compat, from {', '.join(sources)}) "
            f"has no attribute {name!r}"
        )

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = lambda: sorted(set(names) | set(module.__dict__))  # type: ignore[method-assign]
    module.__all__ = names
    module.__path__ = []  # a package: the map may name children
    setattr(module, _MARK, True)
    return module


def _namespace() -> types.ModuleType:
    """The `genlm` namespace: real `genlm.*` packages the map does not own (genlm-grammar) still load."""
    module = types.ModuleType("genlm", "genlm namespace (genlm_lab.compat)")
    module.__path__ = [
        os.path.join(p, "genlm") for p in sys.path if os.path.isdir(os.path.join(p or ".", "genlm"))
    ]
    setattr(module, _MARK, True)
    return module


class _Loader(importlib.abc.Loader):
    """Hands back an existing module; keeps a genlm_lab module's own `__spec__`."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        if not getattr(module, _MARK, False):
            module.__spec__ = self._spec  # importlib set the alias spec; restore the real one


class _Finder(importlib.abc.MetaPathFinder):
    """Resolves GenLM module paths through `MODULE_MAP`."""

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "genlm":
            module = _namespace()
        elif _root_of(fullname) is None:
            return None
        elif fullname in MODULE_MAP:
            dest = MODULE_MAP[fullname]
            module = (
                importlib.import_module(dest)
                if isinstance(dest, str)
                else _reexport(fullname, dest)
            )
        else:
            why = UNMAPPED.get(fullname, "no genlm_lab module documents its names")
            raise ModuleNotFoundError(
                f"genlm_lab.compat maps no module to {fullname!r}: {why}", name=fullname
            )
        spec = importlib.machinery.ModuleSpec(fullname, _Loader(module))
        if hasattr(module, "__path__"):
            spec.submodule_search_locations = list(module.__path__)
        return spec


_FINDER: _Finder | None = None


def _real_imports() -> list[str]:
    return sorted(
        name
        for name, module in list(sys.modules.items())
        if module is not None and _root_of(name) is not None and not _is_ours(module)
    )


def install(model_aliases: Mapping[str, str] | None = None) -> None:
    """Make the GenLM module paths of `MODULE_MAP` resolve to genlm_lab in this process.

    Args:
        model_aliases: hub model names to load as a genlm_lab model instead,
            e.g. `{"gpt2": "tiny-random"}` (no hub is reachable offline).

    Raises:
        CompatError: if a real genlm-backend / genlm-bytes / genlm-control /
            llamppl module is already imported: run `install()` first, in a
            fresh process.
    """
    global _FINDER
    real = _real_imports()
    if real:
        dists = sorted({ROOTS[_root_of(n) or ""] for n in real})
        raise CompatError(
            f"real GenLM packages are already imported in this process: {', '.join(dists)} "
            f"({', '.join(real[:3])}{', ...' if len(real) > 3 else ''}); call "
            "genlm_lab.compat.install() before any GenLM import, in a fresh process"
        )
    if model_aliases:
        from genlm_lab.backend.models import register_model_alias

        for name, dest in model_aliases.items():
            register_model_alias(name, dest)
    if _FINDER is None:
        _FINDER = _Finder()
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def installed() -> bool:
    """Whether the hook is on `sys.meta_path`."""
    return _FINDER is not None and _FINDER in sys.meta_path


def uninstall() -> None:
    """Remove the hook and forget the aliased GenLM modules (genlm_lab stays imported)."""
    if _FINDER is not None and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name in [n for n in sys.modules if n == "genlm" or _root_of(n) is not None]:
        if _is_ours(sys.modules[name]):
            del sys.modules[name]


def run_path(script: str, argv: Iterable[str] = ()) -> None:
    """Run `script` as `__main__` with the hook installed and `sys.argv` = [script, *argv]."""
    import runpy

    install()
    old_argv, old_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [script, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = old_argv
        if sys.path and sys.path[0] != old_path0:
            del sys.path[0]
