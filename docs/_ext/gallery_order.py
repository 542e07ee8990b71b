"""The gallery's order: a course, from the measure to data at scale.

sphinx-gallery sorts the examples of a folder with ``within_subsection_order``;
this key puts them in the order of :data:`COURSE` (a file not listed goes last,
by name, and ``tests/test_examples.py`` requires every example to be listed).
"""

#: The examples, in the order a student reads them.
COURSE = (
    "plot_sparseness_measure.py",
    "plot_projection_steps.py",
    "plot_orl_sparseness_sweep.py",
    "plot_natural_on_off.py",
    "plot_your_own_data.py",
    "plot_command_line.py",
    "plot_compare_methods.py",
    "plot_l1_versus_constraint.py",
    "plot_missing_values.py",
    "plot_orl_missing_pixels.py",
    "plot_held_out_counts.py",
    "plot_scale.py",
)


class CourseOrder:
    """Sort key of sphinx-gallery: an example's place in :data:`COURSE`."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename in COURSE:
            return (COURSE.index(filename), filename)
        return (len(COURSE), filename)

    def __repr__(self):
        # sphinx-gallery hashes the configuration's repr: keep it stable.
        return f"<{type(self).__name__}>"
