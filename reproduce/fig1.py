"""Figure 1: standard NMF on the three image data sets.

Caption (Hoyer 2004): "NMF applied to various image datasets. (a) Basis images
given by NMF applied to face image data from the CBCL database, following Lee
and Seung. In this case NMF produces a parts-based representation of the data.
(b) Basis images derived from the ORL face image database, following Li et al.
Here, the NMF representation is global rather than parts-based. (c) Basis
vectors from NMF applied to ON/OFF-contrast filtered natural image data. Top:
Weights for the ON-channel. Middle: Corresponding weights for the OFF-channel.
Bottom: Weights for ON minus weights for OFF. (Here, gray pixels denote zero.)
Note that NMF represents this natural image data using circularly symmetric
features."

Settings (SPEC.md): (a) CBCL, divergence NMF, M = 49; (b) ORL, Euclidean NMF,
M = 25; (c) natural ON/OFF patches, Euclidean NMF, M = 72.
Claims as numbers: locality of (a) above that of (b) (parts-based vs global);
orientation of (c) low (circular blobs; compare Figure 5).
"""

from reproduce._figure import figure_main
from reproduce._panels import scores

CAPTION = __doc__.split('"')[1]
PANELS = {
    "fig1a": "(a) CBCL, divergence NMF",
    "fig1b": "(b) ORL, Euclidean NMF",
    "fig1c": "(c) natural, Euclidean NMF",
}
RUNS = tuple(PANELS)


def claims(runs):
    a, b, c = (scores(runs[n]) for n in ("fig1a", "fig1b", "fig1c"))
    return {
        "locality_mean_1a_cbcl": a["locality"]["mean"],
        "locality_mean_1b_orl": b["locality"]["mean"],
        "1a_more_local_than_1b": a["locality"]["mean"] > b["locality"]["mean"],
        "orientation_mean_1c_natural": c["orientation"]["mean"],
    }


def main(options):
    return figure_main(options, "fig1", CAPTION, PANELS, claims, runs=RUNS)
