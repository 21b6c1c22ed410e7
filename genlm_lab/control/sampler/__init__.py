"""Token samplers: direct, set-based (eager, top-k), AWRS, and multi-token units with boundaries."""
