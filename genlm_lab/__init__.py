"""genlm_lab: a research workbench for probabilistic programming with language models."""

__version__ = "0.1.0"
