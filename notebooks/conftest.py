"""nbval set-up for the tutorials: their kernels draw no progress bars.

Bars (on by default in a notebook) carry timings and widget ids that change
every run; the stored outputs were written without them (scripts/run_notebooks.py).

A notebook's cells run in order in one kernel: under pytest-xdist, `make test`
uses `--dist loadfile`, which keeps each notebook (one file) on one worker.
"""

import os

os.environ.setdefault("GENLM_LAB_PROGRESS", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
