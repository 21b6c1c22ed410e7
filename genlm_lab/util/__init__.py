"""Shared helpers: `Chart`, log-space arithmetic and byte escaping for display."""

from genlm_lab.util.chart import Chart
from genlm_lab.util.escape import byte_label, escape_bytes, html_bytes
from genlm_lab.util.math import logmeanexp, logsumexp, normalize_log_weights

__all__ = [
    "Chart",
    "byte_label",
    "escape_bytes",
    "html_bytes",
    "logmeanexp",
    "logsumexp",
    "normalize_log_weights",
]
