"""Weighted context-free grammars: `WCFG` with exact prefix weights, and `WeightedGrammar`."""
