"""Constraints as potentials: regexes and automata, grammars, JSON schemas, Python checks.

Most compile through llguidance (`llg/`, its adapter) into fast token masks.
"""
