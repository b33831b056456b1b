"""Time averages of a flow for ParaView: mean density and velocity, Reynolds stresses.

Every ``every`` steps from step ``begin`` on, the plug-in adds ρ, u and the products u_a u_b
of every node to running sums kept where the fields live (on the GPU in a CUDA run, so a
sample copies nothing to the host), in float64. :meth:`FlowStatistics.write` (called at
``write_every``, at the end of the run and by hand) writes ``<path>/<prefix>.vti`` atomically:

- ``rho_mean`` ⟨ρ⟩ and ``u_mean`` ⟨u⟩;
- ``reynolds_stress`` ⟨u′_a u′_b⟩ = ⟨u_a u_b⟩ − ⟨u_a⟩⟨u_b⟩ (the covariance over the samples,
  divided by their count), six components in ParaView's order of a symmetric tensor: xx, yy,
  zz, xy, yz, xz (the z ones zero in 2D);
- ``u_rms`` √⟨u′_a²⟩ by component and ``tke`` ½ Σ_a ⟨u′_a²⟩.

The sums take (1 + D + D(D+1)/2) × 8 bytes a node, 80 in 3D, and the array path a product
buffer 8 more (88 in 3D, 56 in 2D), on top of the run (:func:`sums_bytes_per_node`); a device that
lacks them is refused with the bytes needed and free. On a GPU a sample is one kernel
(:mod:`.statistics_kernel`), which needs no buffer and gives the array path's bits.
Checkpoints keep the sums (:meth:`FlowStatistics.state_arrays`), so a resumed run averages
over the same samples as one that did not stop, bit for bit.

In a distributed run each rank sums the fields of its output piece (its sub-box and the first
plane of its + neighbour, ghost layers refreshed at each sample: one halo exchange a sample)
and writes ``<prefix>_r<rank>.vti``; rank 0 adds ``<prefix>.pvti``, which ParaView opens as the
whole domain, the same numbers as one domain.
"""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import numpy as np

from thelma_py.codegen.compile import compile_module
from thelma_py.files import atomic_write_text, ensure_writable_dir
from thelma_py.modules.results.statistics_kernel import (
    KERNEL_NAME,
    MAX_SAMPLE_NODES,
    add_with_kernel,
    sample_source,
)
from thelma_py.modules.results.vtk import (
    FILE_PRECISIONS,
    WRITERS,
    check_prefix,
    write_rank_piece,
    write_vti,
)
from thelma_py.modules.results.vtk_xml import COMPRESSIONS
from thelma_py.registry import register
from thelma_py.results import Results
from thelma_py.schedule import Every, as_schedule

STATISTICS_FIELDS = ("rho_mean", "u_mean", "reynolds_stress", "u_rms", "tke")
"""The fields of the statistics file (see the module docstring)."""
NO_SAMPLE = ("statistics: no sample was taken yet; run past the plug-in's first sampled step "
             "(its begin and every) before asking for the fields")
TENSOR_ORDER = ((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2))
"""Components (a, b) of ``reynolds_stress`` in the file: ParaView's symmetric tensor order."""


def velocity_pairs(d: int) -> list[tuple[int, int]]:
    """The (a, b), a ≤ b, of the products u_a u_b summed for a D-dimensional velocity, in the
    order of :data:`TENSOR_ORDER` (those it holds)."""
    return [(a, b) for a, b in TENSOR_ORDER if b < d]


def sums_bytes_per_node(d: int, buffer: bool = True) -> int:
    """Device bytes a node's running sums take: ρ, D velocities, D(D+1)/2 products and, with
    ``buffer`` (the array path), the buffer of one product, float64."""
    return 8 * (1 + buffer + d + len(velocity_pairs(d)))


def uses_kernel(backend, nodes: int) -> bool:
    """Whether a sample of ``nodes`` nodes on ``backend`` is one kernel
    (:mod:`.statistics_kernel`) rather than array operations."""
    return bool(backend.is_gpu) and nodes < MAX_SAMPLE_NODES


def _non_negative(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be a step number >= 0, got {value!r}")


def moments(samples: int, sums: dict[str, np.ndarray], d: int) -> dict[str, np.ndarray]:
    """The statistics fields (host arrays, float64) from the running sums of ``samples``
    samples: 'rho' (node shape S), 'u' (D, *S), 'uu' (one row per :func:`velocity_pairs`)."""
    if samples < 1:
        raise ValueError(NO_SAMPLE)
    rho_mean = sums["rho"] / samples
    u_mean = sums["u"] / samples
    stress = np.zeros((6, *rho_mean.shape))
    for row, (a, b) in enumerate(velocity_pairs(d)):
        stress[TENSOR_ORDER.index((a, b))] = sums["uu"][row] / samples - u_mean[a] * u_mean[b]
    # rounding can leave a variance a few ulps below zero where the flow does not move
    variance = np.maximum(stress[:d], 0.0)
    return {"rho_mean": rho_mean, "u_mean": u_mean, "reynolds_stress": stress,
            "u_rms": np.sqrt(variance), "tke": 0.5 * variance.sum(axis=0)}


@register("results", "statistics")
@attrs.define(kw_only=True)
class FlowStatistics(Results):
    """Running time averages of ρ, u and u_a u_b on the device; the means, Reynolds stresses,
    r.m.s. velocities and turbulent kinetic energy written as ``<path>/<prefix>.vti`` (a
    ``.pvti`` of the ranks' pieces in a distributed run)."""

    supports_distributed = True

    path: Path | None = attrs.field(default=None, converter=attrs.converters.optional(Path))
    """Output directory (created by :meth:`start`); None: keep the sums, write no file
    (:meth:`fields` gives them)."""
    prefix: str = attrs.field(default="statistics", validator=check_prefix)
    """File name stem: ``<prefix>.vti``, with ``<prefix>.json`` (samples, steps)."""
    schedule: Every = attrs.field(alias="every", default=10, converter=as_schedule,
                                  validator=attrs.validators.instance_of(Every))
    """When to sample: every N steps (an int) or an Every. Samples closer than the flow's
    correlation time add little. Measured on an H200 at 256³ (``benchmarks/statistics_cost.py``):
    a sample costs 1.2 steps of D3Q19 BGK fp32 and 1.3 of D3Q27 K17 with 16-bit populations, so
    every 10 steps costs about 12 % of the run, every 100 steps 1 %."""
    begin: int = attrs.field(default=0, validator=_non_negative)
    """First step that may be sampled: leave out the start-up transient."""
    write_every: int | None = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.and_(attrs.validators.instance_of(int), attrs.validators.gt(0))))
    """Also write the file at the sampled steps that are multiples of this (None: at the end
    of the run only)."""
    precision: str = attrs.field(default="float32", validator=attrs.validators.in_(FILE_PRECISIONS))
    """Floating-point type in the file (the sums are float64 either way)."""
    writer: str = attrs.field(default="builtin", validator=attrs.validators.in_(WRITERS))
    compression: str = attrs.field(default="none", validator=attrs.validators.in_(COMPRESSIONS))
    samples: int = attrs.field(default=0, init=False)
    """Samples summed so far."""
    first_step: int | None = attrs.field(default=None, init=False)
    last_step: int | None = attrs.field(default=None, init=False)
    """The first and the last step sampled."""
    _sums: dict | None = attrs.field(default=None, init=False, repr=False)
    _backend: object = attrs.field(default=None, init=False, repr=False)
    _product: object = attrs.field(default=None, init=False, repr=False)
    _kernel: object = attrs.field(default=None, init=False, repr=False)

    def start(self, solver) -> None:
        """Check the output directory and that the device holds the sums."""
        if self.path is not None:
            ensure_writable_dir(self.path, who="statistics results")
        if self._sums is None:
            self._allocate(solver)

    def _allocate(self, solver) -> None:
        box = solver.rank_box
        extent = tuple(solver.shape) if box is None else box.piece()[1]
        d, shape = len(extent), tuple(reversed(extent))
        per_node = sums_bytes_per_node(d, not uses_kernel(solver.backend, int(np.prod(shape))))
        needed = per_node * int(np.prod(shape))
        memory = solver.backend.memory()
        if memory is not None and needed > memory[0]:
            raise MemoryError(
                f"statistics: the running sums of ρ, u and u_a u_b need {needed / 2**30:.2f} GiB "
                f"of device memory ({per_node} B a node, float64) but "
                f"{memory[0] / 2**30:.2f} GiB is free; sample a smaller run or leave the "
                "statistics plug-in out")
        self._backend, xp = solver.backend, solver.backend.xp
        self._sums = {"rho": xp.zeros(shape), "u": xp.zeros((d, *shape)),
                      "uu": xp.zeros((len(velocity_pairs(d)), *shape))}

    def __call__(self, solver) -> None:
        if self._sums is None:
            self.start(solver)
        step = int(solver.time_step)
        if step < self.begin or step == self.last_step:  # a run's end calls due plug-ins again
            return
        rho, u = (solver.engine.macroscopic() if solver.rank_box is None
                  else solver.piece_fields()[:2])
        self.add_sample(rho, u)
        self.samples += 1
        self.first_step = step if self.first_step is None else self.first_step
        self.last_step = step
        if self.write_every and step % self.write_every == 0:
            self.write(solver)

    def add_sample(self, rho, u) -> None:
        """Add ρ (node shape) and u (D, node shape) to the sums (allocated by :meth:`start`),
        without counting a sample: on a GPU in one kernel (:mod:`.statistics_kernel`, the same
        bits), else by array operations."""
        sums, xp, d = self._sums, self._backend.xp, u.shape[0]
        if uses_kernel(self._backend, rho.size):
            if self._kernel is None:  # compiled and looked up once: a run samples often
                self._kernel = compile_module(sample_source(velocity_pairs(d), d, u.dtype)
                                              ).get_function(KERNEL_NAME)
            add_with_kernel(self._kernel, sums, rho, u, xp)
            return
        if self._product is None:
            self._product = xp.empty(rho.shape)
        sums["rho"] += rho
        sums["u"] += u
        for row, (a, b) in enumerate(velocity_pairs(d)):
            # in float64 (exact for fp32 fields), into one buffer for every pair
            sums["uu"][row] += xp.multiply(u[a], u[b], out=self._product, dtype=np.float64)

    def fields(self, solver) -> dict[str, np.ndarray]:
        """The statistics so far as host arrays (see :func:`moments`); in a distributed run
        those of this rank's output piece."""
        if self._sums is None or self.samples == 0:
            raise ValueError(NO_SAMPLE)
        host = solver.backend.to_host
        return moments(self.samples, {name: host(value) for name, value in self._sums.items()},
                       len(solver.shape))

    def write(self, solver) -> Path | None:
        """Write ``<prefix>.vti`` (distributed: the ranks' pieces and ``<prefix>.pvti``) and
        ``<prefix>.json`` (samples and steps) from the sums so far; returns the file to open,
        None where there is no path or no sample yet."""
        if self.path is None or self.samples == 0:
            return None
        fields = self.fields(solver)
        options = {"names": STATISTICS_FIELDS, "precision": self.precision,
                   "writer": self.writer, "compression": self.compression,
                   "node_shape": fields["rho_mean"].shape}
        if solver.rank_box is None:
            target = self.path / f"{self.prefix}.vti"
            write_vti(target, fields, **options)
        else:
            target = self.path / f"{self.prefix}.pvti"
            write_rank_piece(self.path, self.prefix, solver.rank_box, fields, **options)
        if solver.lead:
            atomic_write_text(self.path / f"{self.prefix}.json",
                              _summary_json(self.samples, self.first_step, self.last_step,
                                            self.schedule.steps))
        return target

    def finish(self, solver) -> None:
        self.write(solver)

    def state_dict(self) -> dict:
        return {"samples": self.samples, "first_step": self.first_step,
                "last_step": self.last_step}

    def load_state_dict(self, state: dict) -> None:
        self.samples = int(state.get("samples", 0))
        self.first_step, self.last_step = state.get("first_step"), state.get("last_step")

    def state_arrays(self) -> dict[str, np.ndarray]:
        """The running sums, for a checkpoint (host copies)."""
        if self._sums is None:
            return {}
        return {name: self._backend.to_host(value) for name, value in self._sums.items()}

    def load_state_arrays(self, solver, arrays: dict[str, np.ndarray]) -> None:
        """Restore the sums a checkpoint kept (their shapes must be this domain's)."""
        if self._sums is None:
            self._allocate(solver)
        for name, value in self._sums.items():
            if name not in arrays or arrays[name].shape != value.shape:
                raise ValueError(f"statistics: the checkpoint's sums do not fit this domain "
                                 f"({name}: {getattr(arrays.get(name), 'shape', None)} against "
                                 f"{value.shape})")
            value[...] = solver.backend.to_device(arrays[name])


def _summary_json(samples: int, first: int | None, last: int | None, every: int) -> str:
    return json.dumps({"samples": samples, "first_step": first, "last_step": last,
                       "every": every}) + "\n"
