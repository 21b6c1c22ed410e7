"""Language models as potentials: `PromptedLLM`, `ByteLLM`, token maps, canonical tokenization."""
