"""Figure 3: NMF with sparseness constraints on the CBCL faces.

Caption (Hoyer 2004): "Features learned from the CBCL face image database using
NMF with sparseness constraints. (a) The sparseness of the basis images were
fixed to 0.8, slightly higher than the average sparseness produced by standard
NMF, yielding a similar result. The sparseness of the coefficients was
unconstrained. (b) Here, we switched the sparseness constraints such that the
coefficients were constrained to 0.8 but the basis images were unconstrained.
Note that this creates a global representation similar to that given by vector
quantization. (c) Illustration of another way to obtain a global
representation: setting the sparseness of the basis images to a low value
(here: 0.2) also yields a non-local representation."

Settings (SPEC.md): CBCL, nmfsc, M = 49: (a) sW = 0.8, (b) sH = 0.8, (c) sW = 0.2.
Claims as numbers: (a) achieves sW = 0.8 and is local; (b) and (c) are less
local than (a); the mean basis sparseness of standard NMF on CBCL (Figure 1a's
run) is slightly below 0.8.
"""

from reproduce._figure import figure_main
from reproduce._panels import scores

CAPTION = __doc__.split('"')[1]
PANELS = {"fig3a": "(a) sW = 0.8", "fig3b": "(b) sH = 0.8", "fig3c": "(c) sW = 0.2"}
RUNS = (*PANELS, "fig1a")


def claims(runs):
    loc = {n: scores(runs[n])["locality"]["mean"] for n in ("fig3a", "fig3b", "fig3c", "fig1a")}
    sw = runs["fig3a"].stats["sparseness_W_columns"]
    plain = runs["fig1a"].stats["sparseness_W_columns"]["mean"]
    return {
        "3a_sparseness_W": sw,
        "3a_sparseness_W_within_1e-6_of_0.8": abs(sw["min"] - 0.8) < 1e-6
        and abs(sw["max"] - 0.8) < 1e-6,
        "plain_nmf_cbcl_mean_sparseness_W": plain,
        "plain_nmf_slightly_below_0.8": plain < 0.8,
        "locality_mean": loc,
        "3a_more_local_than_3b_and_3c": loc["fig3a"] > max(loc["fig3b"], loc["fig3c"]),
    }


def main(options):
    return figure_main(options, "fig3", CAPTION, PANELS, claims, runs=RUNS)
