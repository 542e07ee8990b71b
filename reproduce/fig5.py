"""Figure 5: NMF with sparseness constraints on natural image patches.

Caption (Hoyer 2004): "Basis vectors from ON/OFF-filtered natural images
obtained using NMF with sparseness constraints. The sparseness of the
coefficients was fixed at 0.85, and the sparseness of the basis images was
unconstrained. As opposed to standard NMF (cf Figure 1c), the representation is
based on oriented, Gabor-like, features."

Settings (SPEC.md): natural ON/OFF patches, nmfsc, M = 72, sH = 0.85.
Claims as numbers: the orientation score of this basis is above that of
standard NMF on the same data (Figure 1c's run), and sH = 0.85 is achieved.
Also the *oriented share*: the fraction of the 72 features whose orientation
exceeds 0.5 (and 0.4), where 0 is a round blob, about 0.7 an edge in a Gaussian
window and 0.84 a Gabor patch (see :func:`nmfsc.scores.orientation`).
"""

from reproduce._figure import figure_main
from reproduce._harness import IMAGE_SHAPES
from reproduce._panels import scores

CAPTION = __doc__.split('"')[1]
PANELS = {"fig5": "nmfsc, sH = 0.85"}
RUNS = (*PANELS, "fig1c")
ORIENTED_THRESHOLDS = (0.4, 0.5)


def shares_above(values):
    """Threshold -> fraction of the orientation ``values`` above it."""
    return {str(t): float((values > t).mean()) for t in ORIENTED_THRESHOLDS}


def oriented_share(run):
    """Threshold -> fraction of the run's features with orientation above it."""
    from nmfsc.scores import orientation

    return shares_above(orientation(run.W, IMAGE_SHAPES["natural"], on_off=True))


def claims(runs):
    orient = {n: scores(runs[n])["orientation"] for n in ("fig5", "fig1c")}
    return {
        "orientation": orient,
        "fig5_more_oriented_than_fig1c": orient["fig5"]["mean"] > orient["fig1c"]["mean"],
        "sparseness_H_rows": runs["fig5"].stats["sparseness_H_rows"],
        "oriented_share": {n: oriented_share(runs[n]) for n in ("fig5", "fig1c")},
    }


def main(options):
    return figure_main(options, "fig5", CAPTION, PANELS, claims, runs=RUNS)
