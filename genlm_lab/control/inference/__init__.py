"""`SMC` over a token sampler and a critic, and the `Sequences` it returns."""
