"""Shared test set-ups: small domains with every boundary kind the LBM tags carry."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import attrs
import numpy as np
import pytest

from thelma_py.geometry import Geometry, Sphere
from thelma_py.lattice import D2Q9, D3Q19, D3Q27, Lattice
from thelma_py.modules.compute.lbm.collision import (
    CollisionModel,
    collision_model,
    collision_models,
)

LATTICES = {"D2Q9": D2Q9, "D3Q19": D3Q19, "D3Q27": D3Q27}
COLLISIONS = tuple(collision_models())
"""Every registered collision model, from the table: a new model is tested once registered."""


def supported(lattice_name: str, collision: str) -> bool:
    """Whether the model runs on the lattice (MRT has no D3Q27 basis); the pairs it refuses
    are tested once, for the refusal itself (test_collision_models.py), not skipped here."""
    return collision_model(collision).unsupported(LATTICES[lattice_name]) is None


def config(lattice_name: str, collision: str, *rest):
    """pytest parameters (lattice, collision, *rest)."""
    return pytest.param(lattice_name, collision, *rest)


def configs(*more: Iterable) -> list:
    """:func:`config` for every lattice and registered model that runs on it, times one of
    each of ``more``."""
    return [config(lat, coll, *rest) for lat, coll in itertools.product(LATTICES, COLLISIONS)
            if supported(lat, coll) for rest in itertools.product(*more)]


CONFIGS = configs()
COMBOS = [(lat, coll) for lat, coll in itertools.product(LATTICES, COLLISIONS)
          if supported(lat, coll)]
"""(lattice, model) pairs that run."""


def duct_collision(name: str) -> CollisionModel:
    """Model ``name`` as the open-boundary tests run it: MRT with ``odd='magic'`` (the published
    s_m = 1.98 diverges at D3Q19 Zou-He edges; see ``Mrt.odd``), others as registered."""
    model = collision_model(name)
    return attrs.evolve(model, odd="magic") if hasattr(model, "odd") else model


def walled_geometry(lattice: Lattice) -> Geometry:
    """Periodic along x; walls beyond the other faces; a moving lid on the top face; a moving
    solid sphere (disc) inside; an odd x size so tiles are ragged."""
    if lattice.d == 2:
        geo = Geometry((37, 24), periodic=(True, False))
        geo.edge("+y", velocity=(0.06, 0.0))
        geo.wall(Sphere((12.3, 10.7), 4.2), velocity=(0.0, 0.02))
    else:
        geo = Geometry((37, 14, 12), periodic=(True, False, False))
        geo.edge("+z", velocity=(0.05, 0.01, 0.0))
        geo.wall(Sphere((12.3, 6.7, 5.2), 3.1), velocity=(0.0, 0.02, -0.01))
    return geo


def moving_body_box(lattice_name: str, compute: str, steps: int):
    """A periodic box with a body force g and one moving interpolated sphere, run ``steps``
    on the CPU (the momentum-balance tests of the force plug-ins): (solver, body id, g)."""
    import thelma_py as tp

    dim = 2 if lattice_name == "D2Q9" else 3
    shape = (24, 16) if dim == 2 else (14, 10, 8)
    g = (1e-5, 2e-6, 0.0)[:dim]
    geo = Geometry(shape, periodic=(True,) * dim)
    body = geo.body(Sphere(tuple(n / 2 - 0.3 for n in shape), 3.1),
                    velocity=(0.0, 0.01, 0.0)[:dim], interpolated=True)
    solver = tp.compose(lattice_name, geo, tp.plugin("compute", compute, nu=0.1, force=g),
                        device="cpu")
    solver.run(steps)
    return solver, body, g


def random_state(lattice: Lattice, shape, dtype, seed: int = 0) -> np.ndarray:
    """Post-collision populations far from equilibrium: f_eq(random ρ, u) plus noise."""
    rng = np.random.default_rng(seed)
    rho = 1.0 + 0.05 * rng.standard_normal(shape)
    u = [0.04 * rng.standard_normal(shape) for _ in range(lattice.d)]
    f = np.array(lattice.equilibrium(rho, u))
    f *= 1.0 + 0.05 * rng.standard_normal(f.shape)
    return f.astype(dtype)


OPEN_SETUPS = ("zou-he", "equilibrium", "characteristic", "neighbour")
"""Open-boundary set-ups: Zou-He inlet/outlet; equilibrium inlet/outlet; characteristic inlet
with an equilibrium outlet; outflow and free-slip (pull and push only: the AA scheme refuses
them)."""


def open_geometry(lattice: Lattice, setup: str) -> Geometry:
    """A channel along x with open faces, a solid sphere, and walls (a moving lid) elsewhere.

    The inlet is parabolic in y (a function of global coordinates); open faces meet walls at
    edges, and in 'neighbour' an inlet meets a free-slip face (declared last, it owns the
    shared nodes)."""
    u0 = 0.04
    if lattice.d == 2:
        geo = Geometry((37, 20))
        n = 20

        def profile(x, y):
            s = (y + 0.5) / n
            return (4 * u0 * s * (1 - s), 0.002 * np.sin(3.0 * s))
        geo.wall(Sphere((12.3, 9.7), 3.2), velocity=(0.0, 0.01))
        lid, slip = ("+y", (0.03, 0.0)), ("-y", "+y")
    else:
        geo = Geometry((37, 12, 10))
        n = 12

        def profile(x, y, z):
            s = (y + 0.5) / n
            return (4 * u0 * s * (1 - s) * (1 + 0.1 * np.cos(z)), 0.0 * y, 0.001 * z)
        geo.wall(Sphere((12.3, 5.7, 4.2), 2.6), velocity=(0.0, 0.01, -0.005))
        lid, slip = ("+z", (0.03, 0.01, 0.0)), ("-y", "+z")
    if setup == "zou-he":
        geo.edge(*lid[:1], velocity=lid[1])
        geo.inlet("-x", velocity=profile)
        geo.outlet("+x", rho=lambda *c: 1.0 + 0.001 * np.cos(c[1]))
    elif setup == "equilibrium":
        geo.edge(*lid[:1], velocity=lid[1])
        geo.inlet("-x", velocity=(u0, 0.0, 0.0)[: lattice.d], kind="equilibrium")
        geo.outlet("+x", rho=0.999, kind="equilibrium")
    elif setup == "characteristic":
        geo.edge(*lid[:1], velocity=lid[1])
        geo.inlet("-x", velocity=profile, kind="characteristic")
        geo.outlet("+x", rho=0.999, kind="equilibrium")
    elif setup == "neighbour":
        geo.inlet("-x", velocity=profile)
        geo.outflow("+x")
        for face in slip:
            geo.free_slip(face)
    else:
        raise ValueError(f"unknown open setup {setup!r}; valid: {OPEN_SETUPS}")
    return geo


TOLERANCE = {np.float32: 1e-5, np.float64: 1e-12}
"""CUDA against NumPy after STEPS steps: both evaluate the same traced expressions, so they
differ by fused multiply-adds only (~1e-7 in fp32, ~1e-15 in fp64); a wrong link is O(1e-2)."""
STEPS = 120
"""More than two CUDA-graph batches of 32 steps, plus a remainder."""


def cpu_and_gpu(params, lattice: Lattice, tags, dtype):
    """The NumPy and the CUDA engine of ``params`` on ``tags``, both holding the same random
    state (:func:`random_state`)."""
    from thelma_py.backend import select_backend

    cpu = params.create(lattice, tags, select_backend("cpu"), np.dtype(dtype))
    gpu = params.create(lattice, tags, select_backend("cuda"), np.dtype(dtype))
    f = random_state(lattice, tags.tags.shape, dtype)
    cpu.load_state({"f": f})
    gpu.load_state({"f": f})
    return cpu, gpu


def relative_l2(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def assert_velocity_close(u_gpu: np.ndarray, u_cpu: np.ndarray, dtype) -> None:
    """u agrees to TOLERANCE relative, or, where the flow is nearly at rest, to 100 ulp of
    ρ ≈ 1 in RMS: u = Σ c_i f_i / ρ cancels populations of order 0.1, so its rounding error
    is about ε·ρ however small u is (measured on an H100 in fp32: relative 1.1e-5 to 1.3e-5
    at |u| ≈ 1e-3, i.e. 1e-8 absolute). A wrong link shows as an error of order u itself."""
    relative = relative_l2(u_gpu, u_cpu)
    rms = float(np.sqrt(np.mean((u_gpu.astype(np.float64) - u_cpu) ** 2)))
    assert relative < TOLERANCE[dtype] or rms < 100 * np.finfo(dtype).eps, (relative, rms)


def assert_gpu_matches_numpy(cpu, gpu, tags, dtype, steps: int = STEPS) -> None:
    """Poison the GPU outputs, run both engines, compare f, rho and u on the fluid nodes."""
    gpu.poison()
    cpu.step(steps)
    gpu.step(steps)
    fluid = tags.fluid
    f_gpu = gpu.state()["f"]
    assert np.isfinite(f_gpu[:, fluid]).all(), "unwritten fluid populations (NaN poison)"
    assert relative_l2(f_gpu[:, fluid], cpu.f[:, fluid]) < TOLERANCE[dtype]
    rho_c, u_c = cpu.macroscopic()
    rho_g, u_g = (a.get() for a in gpu.macroscopic())
    assert np.isfinite(rho_g[fluid]).all() and np.isfinite(u_g[:, fluid]).all()
    assert relative_l2(rho_g[fluid], rho_c[fluid]) < TOLERANCE[dtype]
    assert_velocity_close(u_g[:, fluid], u_c[:, fluid], dtype)


def assert_restart_is_bit_for_bit(tmp_path, make_solver, steps: int = 6) -> None:
    """``steps`` steps, a checkpoint, ``steps`` more in a fresh solver from ``make_solver()``
    give the velocity of 2 ``steps`` straight steps exactly."""
    straight = make_solver()
    straight.run(2 * steps)
    first = make_solver()
    first.run(steps)
    path = first.save_checkpoint(tmp_path / "ck")
    again = make_solver()
    assert again.load_checkpoint(path) == steps
    again.run(steps)
    np.testing.assert_array_equal(np.asarray(again.velocity()), np.asarray(straight.velocity()))
