"""The common main() of the figure scripts that run factorisations."""

from reproduce._harness import close_suite, run_experiment, start_suite, write_json
from reproduce._panels import panel_figure, run_entry


def run_all(experiments, options):
    """Run (or load) every experiment, with a suite progress bar; name -> RunResult."""
    start_suite(len(experiments), options)
    try:
        return {exp.name: run_experiment(exp, options) for exp in experiments}
    finally:
        close_suite()


def figure_main(options, *, name, caption, experiments, shown, labels, claims, parameters=None):
    """Run ``experiments``, draw the runs named in ``shown``, write PNG/PDF/JSON.

    ``claims(runs)`` turns the runs into the figure's claim numbers.
    """
    from nmfsc.plotting import save_figure

    runs = run_all(experiments, options)
    fig = panel_figure([runs[n] for n in shown], labels)
    paths = list(save_figure(fig, options.out_dir / name))
    payload = {
        "parameters": parameters or {},
        "experiments": {n: run_entry(r) for n, r in runs.items()},
        "claims": claims(runs),
    }
    paths.append(write_json(options, name, caption, payload))
    return paths
