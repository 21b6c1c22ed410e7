"""Batched KV plumbing for `AsyncTransformer`: cached prefixes in, new segments out.

Rows with different cached prefixes share one forward: each prefix is
left-padded to the longest (the model's attention mask hides the padding),
and the keys and values the forward computes for each row's new tokens are
cut out again as one segment per row for the token-trie cache.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch

from genlm_lab.backend._cache import KVHandle


class KVWorkspace:
    """Reusable storage for the padded keys and values of one forward at a time.

    Copying 32 cached prefixes into fresh memory costs more in page faults
    than in copying (the kernel zeroes every new page); reusing one buffer
    that stays mapped makes the copy several times cheaper. Storage larger
    than `max_bytes` is allocated per call and not kept, so a rare long
    prefill does not pin memory.

    Args:
        max_bytes: largest buffer kept between forwards.
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._flat: torch.Tensor | None = None

    def take(self, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """An uninitialised contiguous tensor of `shape`, with `like`'s dtype and device.

        Valid until the next `take`: the caller must not keep views of it.
        """
        numel = math.prod(shape)
        if numel * like.element_size() > self.max_bytes:
            return like.new_empty(shape)
        flat = self._flat
        if (
            flat is None
            or flat.numel() < numel
            or flat.dtype != like.dtype
            or flat.device != like.device
        ):
            flat = self._flat = like.new_empty(numel)
        return flat[:numel].view(shape)


def padded_cache(
    handles: list[KVHandle], n_past: int, n_new: int, workspace: KVWorkspace | None = None
) -> Any:
    """A DynamicCache holding each row's cached prefix, left-padded to n_past tokens.

    One row with one cached segment is passed as is (no copy). Otherwise the
    prefixes are copied once into storage (from `workspace` when given) with
    room for the n_new tokens the forward appends in place (instead of
    concatenating, which copies again).
    """
    pieces = [h.pieces() for h in handles]
    if len(handles) == 1 and len(pieces[0]) == 1:
        buf = pieces[0][0].unsqueeze(2)  # (layers, 2, 1, heads, n, dim)
        return _dynamic_cache([(buf[i, 0], buf[i, 1]) for i in range(buf.shape[0])], n_past)
    first = next(p[0] for p in pieces if p)
    layers, _, heads, _, dim = first.shape
    shape = (layers, 2, len(handles), heads, n_past + n_new, dim)
    buf = workspace.take(shape, first) if workspace is not None else first.new_empty(shape)
    for i, (h, segs) in enumerate(zip(handles, pieces, strict=True)):
        at = n_past - h.length
        if at:
            buf[:, :, i, :, :at].zero_()  # masked, but must stay finite
        if segs:  # one strided write per row, not one per segment
            torch.cat(segs, dim=-2, out=buf[:, :, i, :, at:n_past])
    return _dynamic_cache([(buf[i, 0], buf[i, 1]) for i in range(layers)], n_past)


def _dynamic_cache(pairs: list[tuple[torch.Tensor, torch.Tensor]], n_past: int) -> Any:
    """A DynamicCache whose layer i holds pairs[i][:, :, :n_past], without copying.

    Where the storage is longer than n_past, new keys and values are written
    into it in place. The public constructor would copy every tensor; where
    the cache's layers are not plain `DynamicLayer`s (other transformers
    versions), it is used instead.
    """
    from transformers import DynamicCache

    cache = DynamicCache(ddp_cache_data=[(k[..., :0, :], v[..., :0, :]) for k, v in pairs])
    layers = getattr(cache, "layers", None)
    if layers is None or any(type(layer).__name__ != "DynamicLayer" for layer in layers):
        return DynamicCache(
            ddp_cache_data=[(k[..., :n_past, :], v[..., :n_past, :]) for k, v in pairs]
        )
    prefilled = _prefilled_layer_class()
    for i, (k, v) in enumerate(pairs):
        layers[i] = prefilled(k, v, n_past)
    return cache


@functools.cache
def _prefilled_layer_class() -> type:
    from transformers.cache_utils import DynamicLayer

    class _PrefilledLayer(DynamicLayer):
        """A DynamicLayer over preallocated storage; appends write in place when they fit."""

        def __init__(self, keys: torch.Tensor, values: torch.Tensor, n_past: int) -> None:
            super().__init__()
            self._storage = (keys, values)
            self.keys, self.values = keys[..., :n_past, :], values[..., :n_past, :]
            self.dtype, self.device = keys.dtype, keys.device
            self.is_initialized = True

        def update(self, key_states, value_states, *args, **kwargs):
            keys, values = self._storage
            n, m = self.keys.shape[-2], key_states.shape[-2]
            if n + m > keys.shape[-2] or key_states.shape[0] != keys.shape[0]:
                return super().update(key_states, value_states, *args, **kwargs)
            keys[..., n : n + m, :] = key_states
            values[..., n : n + m, :] = value_states
            self.keys, self.values = keys[..., : n + m, :], values[..., : n + m, :]
            return self.keys, self.values

    return _PrefilledLayer


def _layer_kv(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return list(zip(cache.key_cache, cache.value_cache, strict=True))  # older transformers


def new_segments(
    cache: Any, n_past: int, n_new: int, lengths: list[int]
) -> list[torch.Tensor] | None:
    """Each row's keys and values of its new tokens, (layers, 2, heads, n_i, dim), or None.

    None means the cache does not hold every position of every layer with one
    shape (sliding windows, mixed head sizes), so it cannot be reused by rows.
    """
    if cache is None:
        return None
    kv = _layer_kv(cache)
    shape = kv[0][0].shape
    if any(k.shape != shape or v.shape != shape for k, v in kv) or shape[2] != n_past + n_new:
        return None
    new = torch.stack([torch.stack((k[:, :, n_past:], v[:, :, n_past:])) for k, v in kv])
    return [new[:, :, i, :, :n].clone() for i, n in enumerate(lengths)]
