"""Live views of every layer: tries, beams, particles, backends.

Each view is a pure function from data to static HTML/SVG (what nbviewer,
GitHub and nbval see) plus an anywidget that draws the same data live in
JupyterLab, Notebook 7 and VS Code. Updates flow kernel -> browser only.
"""

from genlm_lab.widgets.monitor import BackendMonitor, monitor_data, monitor_html
from genlm_lab.widgets.particle_view import ParticleView, particle_data, particles_html

__all__ = [
    "BackendMonitor",
    "ParticleView",
    "monitor_data",
    "monitor_html",
    "particle_data",
    "particles_html",
]
