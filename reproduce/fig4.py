"""Figure 4: NMF with sparseness constraints on the ORL faces.

Caption (Hoyer 2004): "Features learned from the ORL face image database using
NMF with sparseness constraints. When increasing the sparseness of the basis
images, the representation switches from a global one (like the one given by
standard NMF, cf Figure 1b) to a local one. Sparseness levels were set to (a)
0.5 (b) 0.6 (c) 0.75."

Settings (SPEC.md): ORL, nmfsc, M = 25, sW in {0.5, 0.6, 0.75}.
Claims as numbers: locality rises with sW, and all three are more local than
standard NMF on ORL (Figure 1b's run).
"""

from reproduce._figure import figure_main
from reproduce._panels import scores

CAPTION = __doc__.split('"')[1]
PANELS = {"fig4a": "(a) sW = 0.5", "fig4b": "(b) sW = 0.6", "fig4c": "(c) sW = 0.75"}
RUNS = (*PANELS, "fig1b")


def claims(runs):
    names = ("fig1b", "fig4a", "fig4b", "fig4c")
    loc = {n: scores(runs[n])["locality"]["mean"] for n in names}
    return {
        "locality_mean": loc,
        "locality_rises_with_sW": loc["fig4a"] < loc["fig4b"] < loc["fig4c"],
        "all_more_local_than_plain_nmf": min(loc["fig4a"], loc["fig4b"], loc["fig4c"])
        > loc["fig1b"],
        "achieved_sparseness_W": {n: runs[n].stats["sparseness_W_columns"] for n in names[1:]},
    }


def main(options):
    return figure_main(options, "fig4", CAPTION, PANELS, claims, runs=RUNS)
