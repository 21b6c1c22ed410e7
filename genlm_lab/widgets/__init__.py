"""Live views of every layer: tries, beams, particles, constraints, backends.

Each view is a pure function from data to static HTML/SVG (what nbviewer,
GitHub and nbval see) plus an anywidget that draws the same data live in
JupyterLab, Notebook 7 and VS Code. Updates flow kernel -> browser only.
"""

from genlm_lab.widgets.beam_view import BeamDebugger, BeamView, beam_data, beam_html
from genlm_lab.widgets.ensemble_view import EnsembleView, ensemble_data, ensemble_html
from genlm_lab.widgets.figures import ess_log_ml_figure, weight_histogram
from genlm_lab.widgets.inference_visualizer import InferenceVisualizer
from genlm_lab.widgets.mask_view import MaskView, mask_data, mask_data_of, mask_html
from genlm_lab.widgets.monitor import BackendMonitor, monitor_data, monitor_html
from genlm_lab.widgets.particle_view import ParticleView, particle_data, particles_html
from genlm_lab.widgets.profile_view import ProfileView, profile_data, profile_html
from genlm_lab.widgets.report import record_report_html, write_report
from genlm_lab.widgets.trie_view import TrieView, trie_data, trie_html

__all__ = [
    "BackendMonitor",
    "BeamDebugger",
    "BeamView",
    "EnsembleView",
    "InferenceVisualizer",
    "MaskView",
    "ParticleView",
    "ProfileView",
    "TrieView",
    "beam_data",
    "beam_html",
    "ensemble_data",
    "ensemble_html",
    "ess_log_ml_figure",
    "mask_data",
    "mask_data_of",
    "mask_html",
    "monitor_data",
    "monitor_html",
    "particle_data",
    "particles_html",
    "profile_data",
    "profile_html",
    "record_report_html",
    "trie_data",
    "trie_html",
    "weight_histogram",
    "write_report",
]
