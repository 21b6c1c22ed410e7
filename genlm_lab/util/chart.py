"""`Chart`: a dict of values with a default, for distributions and scores."""

from __future__ import annotations

import heapq
import html
import math
import numbers
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from genlm_lab.util.escape import escape_bytes

#: Rows shown by the notebook reprs; the rest are counted ("… n more"), as pandas does.
MAX_ROWS = 20


def format_key(key: Any) -> str:
    """Readable text for a chart key: bytes escaped, byte slots named."""
    if isinstance(key, (bytes, bytearray)):
        return escape_bytes(bytes(key), visible_space=True)
    return str(key)


class Chart(dict):
    """A dictionary with a default value, plus the operations of a distribution.

    Missing keys read as `zero` (without being inserted), so charts add and
    multiply pointwise like sparse vectors. Tables render readably in Jupyter
    (`_repr_html_`) and convert to pandas.

    Args:
        zero: the value of every key not stored.
        vals: initial `(key, value)` pairs or a mapping.
    """

    def __init__(self, zero: Any = 0, vals: Iterable | dict = ()) -> None:
        super().__init__(vals)
        self.zero = zero

    def __missing__(self, key: Hashable) -> Any:
        return self.zero

    def spawn(self) -> Chart:
        """An empty chart with the same zero."""
        return Chart(self.zero)

    def copy(self) -> Chart:
        return Chart(self.zero, self)

    def __reduce__(self):
        return (Chart, (self.zero, dict(self)))

    def __add__(self, other: dict) -> Chart:
        out = self.copy()
        for key, value in other.items():
            out[key] = out[key] + value
        return out

    def __mul__(self, other: dict) -> Chart:
        out = self.spawn()
        for key, value in self.items():
            product = value * (other[key] if key in other else getattr(other, "zero", 0))
            if product != self.zero:
                out[key] = product
        return out

    def trim(self) -> Chart:
        """The chart without entries equal to zero."""
        return Chart(self.zero, {k: v for k, v in self.items() if v != self.zero})

    def sum(self) -> Any:
        return sum(self.values(), start=type(self.zero)(0) if self.zero == 0 else 0)

    def _check_nonempty(self, what: str) -> None:
        if not self:
            raise ValueError(f"Chart.{what}() of an empty chart: it has no entries")

    def max(self) -> Any:
        self._check_nonempty("max")
        return max(self.values())

    def min(self) -> Any:
        self._check_nonempty("min")
        return min(self.values())

    def argmax(self) -> Hashable:
        """The key of the largest value."""
        self._check_nonempty("argmax")
        return max(self, key=self.__getitem__)

    def argmin(self) -> Hashable:
        self._check_nonempty("argmin")
        return min(self, key=self.__getitem__)

    def top(self, k: int) -> Chart:
        """The `k` entries with the largest values, largest first (all of them if k > len).

        Raises:
            ValueError: if `k` is not an integer >= 0.
        """
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"Chart.top(k) needs an integer k >= 0, got {k!r}")
        keys = sorted(self, key=self.__getitem__, reverse=True)[:k]
        return Chart(self.zero, [(key, self[key]) for key in keys])

    def sort(self, **kwargs: Any) -> Chart:
        return Chart(self.zero, [(k, self[k]) for k in sorted(self, **kwargs)])

    def sort_descending(self) -> Chart:
        return self.top(len(self))

    def normalize(self) -> Chart:
        """Values divided by their sum (unchanged when the sum is zero).

        Raises:
            ValueError: if the sum is infinite or NaN (every value would read NaN or 0).
        """
        total = self.sum()
        if isinstance(total, float) and not math.isfinite(total):
            raise ValueError(
                f"Chart.normalize(): the values sum to {total}, which cannot be divided out"
            )
        if total == 0:
            return self.copy()
        return Chart(self.zero, [(k, v / total) for k, v in self.items()])

    def filter(self, keep: Callable[[Hashable], bool]) -> Chart:
        return Chart(self.zero, [(k, v) for k, v in self.items() if keep(k)])

    def map_values(self, f: Callable[[Any], Any]) -> Chart:
        return Chart(f(self.zero), [(k, f(v)) for k, v in self.items()])

    def map_keys(self, f: Callable[[Hashable], Hashable]) -> Chart:
        return Chart(self.zero, [(f(k), v) for k, v in self.items()])

    def project(self, f: Callable[[Hashable], Hashable]) -> Chart:
        """Map every key through `f`, summing the values of keys that collide."""
        out = self.spawn()
        for key, value in self.items():
            new_key = f(key)
            out[new_key] = out[new_key] + value
        return out

    def metric(self, other: dict) -> float:
        """Largest absolute difference over the union of keys (NaN if any difference is NaN)."""
        other = other if isinstance(other, Chart) else Chart(self.zero, other)
        gaps = [_gap(self[k], other[k]) for k in self.keys() | other.keys()]
        if any(g != g for g in gaps):  # max() would keep or drop a NaN by key order
            return math.nan
        return max(gaps, default=0)

    def assert_equal(
        self,
        want: dict,
        *,
        domain: Iterable | None = None,
        tol: float = 1e-5,
        verbose: bool = False,
        throw: bool = True,
    ) -> None:
        """Raise `AssertionError` naming every key whose values differ by more than tol.

        Args:
            want: the expected values (a mapping; missing keys read as `zero`).
            domain: the keys to compare (default: the union of both charts' keys).
            tol: the largest absolute difference that counts as equal.
            verbose: print one line per key, marked ✓ or ✗.
            throw: raise on a difference (False: only print, with verbose).

        Raises:
            ValueError: if both `verbose` and `throw` are False (nothing would be checked).
        """
        if not (verbose or throw):
            raise ValueError("assert_equal(verbose=False, throw=False) would check nothing")
        want = want if isinstance(want, Chart) else Chart(self.zero, want)
        keys = self.keys() | want.keys() if domain is None else domain
        bad = []
        for k in keys:
            ok = _gap(self[k], want[k]) <= tol
            if not ok:
                bad.append((k, self[k], want[k]))
            if verbose:
                print(
                    f"{'✓' if ok else '✗'} {k!r}: {self[k]}" + ("" if ok else f", want {want[k]}")
                )
        if bad and throw:
            lines = "\n".join(f"  {k!r}: got {g}, want {w}" for k, g, w in bad)
            raise AssertionError(f"{len(bad)} value(s) differ by more than {tol}:\n{lines}")

    def compare(self, other: dict, *, domain: Iterable | None = None):
        """A DataFrame with one row per key: `key`, `self`, `other` and their gap `metric`."""
        import pandas as pd

        other = other if isinstance(other, Chart) else Chart(self.zero, other)
        keys = self.keys() | other.keys() if domain is None else domain
        rows = [
            {"key": k, "self": self[k], "other": other[k], "metric": _gap(self[k], other[k])}
            for k in keys
        ]
        return pd.DataFrame(rows, columns=["key", "self", "other", "metric"])

    def to_dict(self) -> dict:
        return dict(self)

    def to_pandas(self, key_name: str = "key", value_name: str = "value"):
        """A DataFrame with one row per entry, largest value first."""
        import pandas as pd

        rows = sorted(self.items(), key=lambda kv: kv[1], reverse=True)
        return pd.DataFrame({key_name: [k for k, _ in rows], value_name: [v for _, v in rows]})

    def __repr__(self) -> str:
        return f"Chart({self.zero!r}, {dict(self.trim())!r})"

    def __str__(self, style_value: Callable[[Hashable, Any], Any] | None = None) -> str:
        """One line per non-zero entry, largest first; `style_value(key, value)` formats values."""
        rows = self.trim().sort_descending()
        show = style_value or (lambda k, v: v)
        body = "\n".join(f"  {format_key(k)!r}: {show(k, v)}," for k, v in rows.items())
        return "Chart {\n" + body + ("\n" if body else "") + "}"

    def _shown_rows(self) -> tuple[list[tuple[Hashable, Any]], int]:
        """The `MAX_ROWS` largest non-zero entries, largest first, and how many others there are."""
        rows = self.trim()
        top = heapq.nlargest(MAX_ROWS, rows.items(), key=lambda kv: kv[1])
        return top, len(rows) - len(top)

    def _repr_html_(self) -> str:
        """A monospace table of the largest entries; past `MAX_ROWS`, a last row counts the rest."""
        top, more = self._shown_rows()
        cells = "".join(
            f"<tr><td><code>{html.escape(format_key(k))}</code></td>"
            f"<td style='text-align:right'>{html.escape(_fmt(v))}</td></tr>"
            for k, v in top
        )
        if more:
            cells += (
                f"<tr class='genlm-more'><td colspan='2'>… {more:,} more "
                f"({len(top) + more:,} entries; <code>.to_pandas()</code> has all)</td></tr>"
            )
        return (
            '<div style="font-family: Monospace;"><table><thead><tr><th>key</th><th>value</th>'
            f"</tr></thead><tbody>{cells}</tbody></table></div>"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's text form: `repr` while small, else the largest entries and a count.

        `repr` stays complete (it round-trips); this keeps a 49,152-token chart
        from filling a notebook's text output.
        """
        top, more = self._shown_rows()
        if not more:
            printer.text(repr(self))
            return
        body = ", ".join(f"{k!r}: {v!r}" for k, v in top)
        printer.text(f"Chart({self.zero!r}, {{{body}, ...}})  # … {more:,} more entries")


def _gap(a: Any, b: Any) -> Any:
    """|a - b|, but 0 for equal values: two equal infinities (log 0 = -inf) do not differ."""
    return 0 if a == b else abs(a - b)


def _fmt(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)
