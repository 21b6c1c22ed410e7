"""Constraints as potentials: regexes and automata, grammars, JSON schemas, Python checks, SQL.

Most compile through llguidance (`guidance.py`) into fast token masks.
"""
