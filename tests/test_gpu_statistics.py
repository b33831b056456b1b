"""The ``statistics`` plug-in on the GPU: sums kept on the device equal the NumPy path's, and
16-bit populations are averaged as their decoded fields. Skipped without a GPU (conftest.py)."""

from __future__ import annotations

import numpy as np
import pytest

import thelma_py as tp

pytestmark = pytest.mark.gpu


def lid_box(device, precision, store="fp32", n=12):
    """A 3D lid-driven box started from rest: a transient, so every stress is non-zero."""
    stats = tp.plugin("results", "statistics", every=5, begin=10)
    extra = {"store": store} if store != "fp32" else {}
    solver = tp.compose("D3Q19", tp.geometry.cavity((n, n, n), lid_velocity=(0.05, 0.0, 0.02)),
                        tp.plugin("compute", "lbm", nu=0.02, collision="trt", **extra),
                        results=[stats], device=device, precision=precision)
    return solver, stats


@pytest.mark.parametrize("precision, tolerance", [("float64", 1e-10), ("float32", 1e-4)])
def test_device_sums_equal_the_numpy_path(precision, tolerance):
    """The same run on the GPU and on the CPU: the fields agree to the engines' own agreement
    (fp64: rounding; fp32: the kernels' fp32 sums drift by ~1e-6 of u over 200 steps, and the
    stresses are differences of such values), relative to each field's largest value."""
    fields = []
    for device in ("cuda", "cpu"):
        solver, stats = lid_box(device, precision)
        solver.run(200)
        assert stats.samples == 39
        fields.append(stats.fields(solver))
    gpu, cpu = fields
    for name in cpu:
        scale = np.abs(cpu[name]).max()
        assert scale > 0, name
        np.testing.assert_allclose(gpu[name], cpu[name], rtol=0, atol=tolerance * scale,
                                   err_msg=name)


def test_16_bit_populations_are_averaged_as_their_decoded_fields():
    """fp16s on the GPU: the plug-in's means and stresses are those of the fields the solver
    hands out at the sampled steps (``velocity()``, a two-pass mean and covariance here)."""
    solver, stats = lid_box("cuda", "float32", store="fp16s")
    samples = []
    for _ in range(20):
        solver.run(5)
        if solver.time_step >= 10:
            samples.append(solver.velocity().astype(np.float64))
    u = np.stack(samples)
    got = stats.fields(solver)
    assert stats.samples == len(samples) == 19
    centred = u - u.mean(axis=0)
    np.testing.assert_allclose(got["u_mean"], u.mean(axis=0), rtol=0, atol=1e-12)
    xy = (centred[:, 0] * centred[:, 1]).mean(axis=0)
    np.testing.assert_allclose(got["reynolds_stress"][3], xy, rtol=0,
                               atol=1e-9 * np.abs(xy).max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_sample_kernel_gives_the_bits_of_the_array_path(dtype, monkeypatch):
    """On the GPU, one sample kernel against CuPy's array operations (the path of pieces past
    2^31 nodes, forced here): the same running sums bit for bit, in 3D and 2D, and the two-pass
    covariance of the fields."""
    from tests.test_statistics import assert_covariance_in_paraviews_order, random_fields, sampled
    from thelma_py.backend import select_backend
    from thelma_py.modules.results import statistics

    gpu = select_backend("cuda")
    assert_covariance_in_paraviews_order(dtype, gpu)
    rho, u = random_fields(dtype, samples=7, shape=(17, 33, 65), seed=11)
    for fields in ((rho, u), (rho[:, 0], u[:, :2, 0])):
        kernel, _ = sampled(*fields, gpu)
        with monkeypatch.context() as patch:
            patch.setattr(statistics, "MAX_SAMPLE_NODES", 0)
            arrays, _ = sampled(*fields, gpu)
        assert kernel._kernel is not None and arrays._kernel is None
        for name, value in arrays._sums.items():
            np.testing.assert_array_equal(gpu.to_host(kernel._sums[name]), gpu.to_host(value),
                                          name)
