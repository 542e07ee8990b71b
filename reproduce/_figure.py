"""The common main() of the figure scripts that run factorisations."""

from reproduce._harness import figure_json, run_experiment
from reproduce._invocation import close_suite, note_drawn, start_suite
from reproduce._output import write_figure_set
from reproduce._panels import panel_figure, run_entry
from reproduce.experiments import pick


def run_all(experiments, options):
    """Run (or load) every experiment, with a suite progress bar; name -> RunResult.

    The results are noted as drawn by the next figure written
    (:func:`reproduce._invocation.note_drawn`)."""
    start_suite(len(experiments), options)
    try:
        results = {exp.name: run_experiment(exp, options) for exp in experiments}
    finally:
        close_suite()
    for result in results.values():
        note_drawn(result)  # the next figure written draws these
    return results


def figure_main(options, name, caption, panels, claims, *, runs=None, parameters=None):
    """Run a figure's experiments, draw its panels, write PNG/PDF/JSON as a set; return the paths.

    ``panels`` maps each run drawn, in panel order, to its label; ``runs`` names
    every run the figure needs, in the order they run (default: the panels'), from
    :data:`reproduce.experiments.EXPERIMENTS`. ``claims(runs)`` turns the runs
    (name -> RunResult) into the figure's claim numbers.
    """
    results = run_all(pick(*(panels if runs is None else runs)), options)
    fig = panel_figure([results[n] for n in panels], list(panels.values()))
    payload = {
        "parameters": parameters or {},
        "experiments": {n: run_entry(r) for n, r in results.items()},
        "claims": claims(results),
    }
    return write_figure_set(
        fig, options.out_dir, name, figure_json(options, name, caption, payload)
    )
