"""Every demo runs headless, writes its figure, and shows what it says it shows."""

import numpy as np
import pytest

from nmfsc import l1_for_sparseness, project


def test_sparseness_measure_demo(tmp_path, capsys):
    from demos import sparseness_measure

    values = sparseness_measure.main(["--out", str(tmp_path)])
    assert values["one spike"] == pytest.approx(1.0)
    assert values["constant"] == pytest.approx(0.0)
    assert values["constant x 1000"] == pytest.approx(values["constant"])
    assert values["geometric decay 0.5^i"] > values["geometric decay 0.8^i"]
    assert (tmp_path / "sparseness_measure.png").stat().st_size > 0
    assert "one spike" in capsys.readouterr().out


@pytest.mark.parametrize("target", [0.3, 0.8, 0.95])
def test_projection_steps_demo_ends_at_the_projection(tmp_path, target):
    from demos import projection_steps

    steps, result = projection_steps.main(["--out", str(tmp_path), "--sparseness", str(target)])
    l1 = l1_for_sparseness(target, 3)
    np.testing.assert_allclose(steps[-1][1], result, atol=1e-12)
    np.testing.assert_allclose(result, project(projection_steps.X, l1, 1.0), atol=1e-12)
    # Every sphere step lands on the circle, every plane point has the right sum.
    for name, point in steps[1:]:
        assert point.sum() == pytest.approx(l1, abs=1e-12)
        if "circle" in name:
            assert np.linalg.norm(point) == pytest.approx(1.0, abs=1e-12)
    assert (tmp_path / "projection_steps.png").stat().st_size > 0


def test_sparseness_sweep_demo_on_swimmer(tmp_path, capsys):
    from demos import sparseness_sweep

    runs = sparseness_sweep.main(["--out", str(tmp_path), "--max-iter", "60"])
    assert [r["sparseness_w"] for r in runs] == list(sparseness_sweep.SPARSENESS)
    # The knob works: the sparsest basis is more local than the least sparse one.
    assert runs[-1]["locality"] > runs[0]["locality"]
    assert all(0.0 <= r["part_recovery"] <= 1.0 for r in runs)
    assert (tmp_path / "sparseness_sweep_swimmer.png").stat().st_size > 0
    assert "locality" in capsys.readouterr().out
