"""Shared helpers: `Chart`, log-space arithmetic, byte escaping for display, progress bars."""

from genlm_lab.util.chart import Chart
from genlm_lab.util.escape import byte_label, escape_bytes, html_bytes
from genlm_lab.util.math import logmeanexp, logsumexp, normalize_log_weights
from genlm_lab.util.progress import progress_bar, progress_enabled

__all__ = [
    "Chart",
    "byte_label",
    "escape_bytes",
    "html_bytes",
    "logmeanexp",
    "logsumexp",
    "normalize_log_weights",
    "progress_bar",
    "progress_enabled",
]
