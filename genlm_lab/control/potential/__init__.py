"""`Potential`, the weight function over token sequences, and its algebra.

Products, powers, coercions, normalisation, autobatching, worker processes,
ensembles, stateful and streaming potentials. The base class builds its
operators' subclasses in methods (`p * q`, `p.coerce(...)`), and those
subclasses' modules import the base: the one import circle of `control`,
kept inside this room on purpose (each import in `base.py` is deferred to
the method that needs it).
"""
