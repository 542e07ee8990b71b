"""Section 5: Local NMF and Sparse NMF on the ORL and natural data.

Text (Hoyer 2004, Section 5.1): "Li et al noted that NMF found only global
features from the ORL database and suggested an extension they call Local
Non-negative Matrix Factorization (LNMF). Their method indeed produces local
features from the ORL database, similar to those given by our method (Figure
4c). However, it does not produce oriented filters from natural image data
(results not shown)."

Settings (SPEC.md): Local NMF on ORL (M = 25) and natural data (M = 72); Sparse
NMF (Liu et al. 2003) on both with alpha in {1, 100, 10000}. Expected: LNMF is
local on ORL but gives circular blobs on natural data; SNMF gives blobs on
natural data; only nmfsc (Figure 5) gives oriented features.
Claims as numbers: LNMF's locality on ORL against standard NMF's (Figure 1b);
the orientation of every LNMF/SNMF natural-image basis against nmfsc's (Figure 5).
"""

from reproduce._figure import figure_main
from reproduce._panels import scores
from reproduce.experiments import EXPERIMENTS as ALL

CAPTION = __doc__.split('"')[1]
ALPHAS = (1, 100, 10000)
OWN = ["sec5_lnmf_orl", "sec5_lnmf_natural"] + [
    f"sec5_snmf_{d}_alpha{a}" for d in ("orl", "natural") for a in ALPHAS
]
RUNS = (*OWN, "fig1b", "fig5")
PANELS = {
    "sec5_lnmf_orl": "LNMF, ORL",
    "sec5_lnmf_natural": "LNMF, natural",
    "sec5_snmf_natural_alpha100": "SNMF alpha = 100, natural",
}


def claims(runs):
    loc = {
        n: scores(runs[n])["locality"]["mean"] for n in OWN + ["fig1b"] if ALL[n].dataset == "orl"
    }
    orient = {
        n: scores(runs[n])["orientation"]["mean"]
        for n in OWN + ["fig5"]
        if ALL[n].dataset == "natural"
    }
    natural_baselines = [n for n in orient if n != "fig5"]
    return {
        "locality_mean_orl": loc,
        "lnmf_more_local_than_plain_nmf_on_orl": loc["sec5_lnmf_orl"] > loc["fig1b"],
        "orientation_mean_natural": orient,
        "only_nmfsc_oriented": all(orient[n] < orient["fig5"] for n in natural_baselines),
    }


def main(options):
    return figure_main(
        options,
        "sec5",
        CAPTION,
        PANELS,
        claims,
        runs=RUNS,
        parameters={"alphas": list(ALPHAS)},
    )
