"""Where an SMC run's wall time goes: a per-step cost profile.

`Profiler`, `profile_frame` and `PROFILE_COLUMNS` live in
`genlm_lab.util.profile` (byte beams profile themselves with them too),
which explains how time is charged, and are re-exported here. During the
particles' step the loop's component is "lm.forward": the batched model
calls run there, between the particles' turns.

Components of a run (`SMCRecord.profile`, a DataFrame of step, component,
calls, seconds):

- "start": the particles' `start()`;
- "model" (genlm_lab.smc) or "sampler" (control.SMC): the particles' own
  `step` code outside any potential (drawing, weights, bookkeeping);
- "lm.forward": batched LM forwards and the event loop; "lm.batch_rows"
  and "lm.cache_hits" are counters (seconds 0): rows computed in those
  forwards and queries the backend's cache answered;
- "<factor>.prefix" / ".complete" / ".logw_next" / ".mask" (a boolean
  factor's `logw_next`) / ".score": each potential's own time, by name;
- "critic": the critic's `score`;
- "resampling", "record" (the step entry and record file), "observers"
  (views, loggers), "alarms";
- "profiler": the profiler's own set-up (finding the LM backends, once);
- "other": the loop's own remainder; small.

With profiling off nothing of this runs: the inference loop takes the plain
path. Profile one run at a time per event loop: runs that share a loop share
its wall time, so each one's profile would hold some of the other's work.
"""

from __future__ import annotations

from genlm_lab.util.profile import PROFILE_COLUMNS, Profiler, profile_frame

__all__ = ["PROFILE_COLUMNS", "Profiler", "profile_frame"]
