"""Reproduce the figures of Hoyer (2004) from the real data.

``python -m reproduce all`` runs every figure script; ``python -m reproduce fig3``
runs one. See ``python -m reproduce --help`` and REPRODUCTION.md.
"""

FIGURES = ("fig1", "fig2", "fig3", "fig4", "fig5", "fig6", "sec5", "convergence")
