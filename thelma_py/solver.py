"""The solver: composes a lattice, a geometry, an init, a compute and results plug-ins, and runs.

The run loop advances the compute engine in chunks that end exactly on the steps where a
results plug-in is due, so the engine sees long uninterrupted batches and results never force
extra host copies.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from thelma_py import checkpoints, divergence, memory, parallel, run_figures
from thelma_py.backend import Backend, dtype_of, select_backend
from thelma_py.compute import ComputeEngine, ComputePlugin
from thelma_py.divergence import DivergenceError
from thelma_py.domain import Domain
from thelma_py.host_copy import HostCopier, PendingCopy
from thelma_py.initial import InitPlugin, default_init
from thelma_py.interrupts import RunInterrupted, SignalWatch
from thelma_py.lattice import Lattice, lattice_by_name
from thelma_py.nodes import NodeTags
from thelma_py.outputs import Outputs, check_distributed
from thelma_py.results import as_results

__all__ = ["DivergenceError", "RunInterrupted", "Solver", "compose"]


def _lattice(value: Lattice | str) -> Lattice:
    if isinstance(value, Lattice):
        return value
    if not isinstance(value, str):
        raise TypeError(f"lattice must be a Lattice or a name such as 'D2Q9', got {value!r}")
    return lattice_by_name(value)


def _check_geometry(instance, attribute, value) -> None:
    if not isinstance(value, Domain):
        raise TypeError(f"geometry must be a thelma_py.geometry.Geometry (e.g. "
                        f"tp.geometry.cavity(...)), got {type(value).__name__}")


def _check_compute(instance, attribute, value) -> None:
    if not isinstance(value, ComputePlugin):
        raise TypeError(f"compute must be a compute plug-in (tp.plugin('compute', 'lbm', ...)), "
                        f"got {value!r}")


def _check_init(instance, attribute, value) -> None:
    if not isinstance(value, InitPlugin):
        raise TypeError(f"init must be an init plug-in (tp.plugin('init', ...)), got {value!r}")


def _check_results(instance, attribute, value) -> None:
    for result in value:
        as_results(result)  # raises for what cannot be a results plug-in


def _check_count(instance, attribute, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{attribute.name} must be a non-negative integer (0 turns the check "
                         f"off), got {value!r}")


def _check_max_velocity(instance, attribute, value) -> None:
    if value is not None and not (isinstance(value, int | float) and 0 < value < math.inf):
        raise ValueError(f"max_velocity must be a positive lattice speed (e.g. 0.3) or None, "
                         f"got {value!r}")


@attrs.define(eq=False)
class Solver:
    """A runnable simulation. Build with :func:`compose` or directly.

    ``results`` are results plug-ins (:class:`thelma_py.results.Results`; plain objects with
    ``schedule`` and ``__call__(solver)`` are adapted). The pieces: :mod:`.outputs` (when
    results are called), :mod:`.divergence` and :mod:`.interrupts` (run management),
    :mod:`.run_figures` (summary), :mod:`.checkpoints` (the checkpoint format).
    """

    lattice: Lattice = attrs.field(converter=_lattice)
    geometry: Domain = attrs.field(validator=_check_geometry)
    compute: ComputePlugin = attrs.field(validator=_check_compute)
    init: InitPlugin = attrs.field(factory=default_init, validator=_check_init)
    results: list = attrs.field(factory=list, converter=list, validator=_check_results)
    device: str = "auto"
    precision: str = "float64"
    check_every: int = attrs.field(default=1000, validator=_check_count)
    """Steps between NaN checks of the density (0 turns the check off)."""
    max_velocity: float | None = attrs.field(default=None, validator=_check_max_velocity)
    """With the NaN check, stop with :class:`DivergenceError` where |u| exceeds this."""
    decomposition: str | tuple | None = None
    """Ranks per axis for a distributed run ('1x1x4' or (1, 1, 4)); None: chosen to minimise
    the cut area when the run has several MPI ranks."""
    comm: object = attrs.field(default=None, repr=False)
    """MPI communicator; None: COMM_WORLD when started by an MPI launcher, else one domain."""
    handle_signals: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    """During :meth:`run` (main thread only), turn SIGINT/SIGTERM into: finish the batch, write
    the checkpoint plug-ins, raise :class:`RunInterrupted`."""

    dtype: np.dtype = attrs.field(init=False)
    backend: Backend = attrs.field(init=False)
    tags: NodeTags = attrs.field(init=False)
    engine: ComputeEngine = attrs.field(init=False)
    time_step: int = attrs.field(init=False, default=0)
    _compute_seconds: float = attrs.field(init=False, default=0.0)
    results_seconds: float = attrs.field(init=False, default=0.0)
    _steps_timed: int = attrs.field(init=False, default=0)
    _batch_times: list = attrs.field(init=False, factory=list, repr=False)
    _pending_batches: list = attrs.field(init=False, factory=list, repr=False)
    """(steps, timer) of engine batches whose device time is not known yet."""
    stop_reason: str | None = attrs.field(init=False, default=None)
    """Why the last :meth:`run` ended early (set by :meth:`stop`), or None."""
    rank_box: parallel.RankBox | None = attrs.field(init=False, default=None, repr=False)
    """This rank's sub-box (:class:`thelma_py.parallel.RankBox`), None for one domain."""
    _outputs: Outputs = attrs.field(init=False, factory=Outputs, repr=False)
    _host_copier: HostCopier | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        self.dtype = dtype_of(self.precision)
        self.backend = select_backend(self.device)
        if self.decomposition is None:
            self.decomposition = parallel.requested_decomposition.get()
        comm = self.comm
        if comm is None and (self.decomposition is not None or parallel.launched_by_mpi()):
            comm = parallel.world()
        if comm is not None and (comm.size > 1 or self.decomposition is not None):
            check_distributed(self.results)
            self.rank_box, self.tags, self.engine = parallel.build_rank(
                comm, self.geometry, self.lattice, self.compute, self.backend, self.dtype,
                self.decomposition)
        else:  # nothing large is allocated before the estimate says it fits
            memory.check_fits(self.lattice, self.geometry.shape, self.compute, self.backend,
                              self.dtype)
            self.tags = self.geometry.evaluate(self.lattice)
            self.engine = self.compute.create(self.lattice, self.tags, self.backend, self.dtype)
        box = self.rank_box
        lower, shape = (box.lower, box.shape) if box else (None, None)
        coords = self.geometry.coordinates(lower, shape)
        window = tuple(slice(lo, lo + n) for lo, n in zip(reversed(lower), reversed(shape),
                                                          strict=True)) if box else None
        rho, u = self.init.fields(coords, self.tags.tags.shape, window)
        self.engine.initialize(self.backend.to_device(rho.astype(self.dtype)),
                               self.backend.to_device(u.astype(self.dtype)))

    # -- information -------------------------------------------------------------------------
    @property
    def node_count(self) -> int:
        return self.geometry.node_count

    @property
    def shape(self) -> tuple[int, ...]:
        return self.geometry.shape

    def __repr__(self) -> str:
        lines = [f"Solver({self.lattice.name}, {'x'.join(map(str, self.shape))}, "
                 f"backend={self.backend.name}, {self.dtype.name})",
                 f"  init:    {self.init!r}",
                 f"  compute: {self.compute!r}"]
        lines += [f"  results: {r!r}" for r in self.results]
        return "\n".join(lines)

    # -- fields ------------------------------------------------------------------------------
    def density(self) -> np.ndarray:
        """Host copy of ρ, shape (Nz, Ny, Nx) or (Ny, Nx)."""
        return self.backend.to_host(self.engine.macroscopic()[0])

    def velocity(self) -> np.ndarray:
        """Host copy of u, shape (D, Nz, Ny, Nx) or (D, Ny, Nx); zero in solid nodes."""
        return self.backend.to_host(self.engine.macroscopic()[1])

    def fields(self) -> dict[str, np.ndarray]:
        """Host copies of the standard fields: rho, u and node kind."""
        rho, u = self.engine.macroscopic()
        return {"rho": self.backend.to_host(rho), "u": self.backend.to_host(u),
                "kind": self.tags.kind}

    def _copier(self) -> HostCopier:
        if self._host_copier is None:
            self._host_copier = HostCopier(self.backend)
        return self._host_copier

    def reserve_host_copies(self, count: int) -> int:
        """Pin host memory for ``count`` snapshots of :meth:`fields_later` now (at the start of
        a run) rather than at the first snapshots; returns how many were reserved."""
        rho, u = self.engine.macroscopic()
        return self._copier().reserve({"rho": rho, "u": u}, count, interleave=("u",))

    def fields_later(self) -> PendingCopy:
        """Like :meth:`fields`, as a :class:`~thelma_py.host_copy.PendingCopy` to call later
        (from an output thread): on a GPU the device-to-host copy runs on its own stream while
        the next steps compute. Release it after use so that its pinned buffers are reused."""
        rho, u = self.engine.macroscopic()
        return self._copier().start({"rho": rho, "u": u}, interleave=("u",),
                                    extra={"kind": self.tags.kind})

    # -- running -----------------------------------------------------------------------------
    def step(self, n: int = 1) -> None:
        """Advance ``n`` steps without calling results plug-ins."""
        if n < 0:
            raise ValueError(f"steps must be >= 0, got {n}")
        timer = self.backend.timer()
        self.engine.step(n)
        self._pending_batches.append((n, timer.stop()))
        self.time_step += n
        self._settle(wait=False)

    def _settle(self, wait: bool = True) -> None:
        """Account the batches whose time is known (all of them, waiting, if ``wait``)."""
        while self._pending_batches and (wait or self._pending_batches[0][1].ready()):
            n, timer = self._pending_batches.pop(0)
            seconds = timer.seconds()
            self._compute_seconds += seconds
            self._batch_times.append((n, seconds))
            self._steps_timed += n

    @property
    def compute_seconds(self) -> float:
        """Device (GPU) or wall (CPU) seconds of the engine batches run so far."""
        self._settle()
        return self._compute_seconds

    @property
    def steps_timed(self) -> int:
        """Steps run by this solver (not since step 0 when resumed)."""
        self._settle()
        return self._steps_timed

    @property
    def batch_times(self) -> list:
        """(steps, seconds) of every engine batch, for the spread of the step rate."""
        self._settle()
        return self._batch_times

    def stop(self, reason: str) -> None:
        """Ask :meth:`run` to end after the results due at this step (e.g. on convergence)."""
        self.stop_reason = str(reason)

    def run(self, steps: int) -> dict:
        """Advance ``steps`` steps, calling results plug-ins when due; returns :meth:`summary`."""
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
        self.stop_reason = None
        with SignalWatch(self.handle_signals) as signals:
            self._outputs.start(self)
            end = self.time_step + int(steps)
            self._outputs.begin_run(self, end)
            while self.time_step < end and self.stop_reason is None:
                target = self._outputs.next_stop(self, end)
                if self.check_every:
                    target = min(target, (self.time_step // self.check_every + 1)
                                 * self.check_every)
                self.step(target - self.time_step)
                if self.check_every and self.time_step % self.check_every == 0:
                    self.check_finite()
                    self.check_velocity()
                self._outputs.call_due(self)
                pending = signals.pending(self)
                if pending:  # write every checkpoint plug-in at this step, then stop
                    name = signals.take(pending)
                    raise RunInterrupted(name, self.time_step, self._outputs.interrupt(self))
        return self.summary()

    def finish(self) -> None:
        """Let results plug-ins close their files (time-series indexes, CSV files)."""
        self._outputs.finish(self)

    def check_finite(self) -> None:
        """Raise :class:`DivergenceError` naming the first node where ρ or u is not finite."""
        divergence.check_finite(self)

    def check_velocity(self) -> None:
        """Raise :class:`DivergenceError` at the first node where |u| > ``max_velocity``."""
        divergence.check_velocity(self)

    # -- distributed runs --------------------------------------------------------------------
    @property
    def lead(self) -> bool:
        """True where shared files are written: rank 0 of a distributed run, or one domain."""
        return self.rank_box is None or self.rank_box.cart.rank == 0

    def reduce(self, values, op: str = "sum") -> np.ndarray:
        """``values`` (float64) summed ('sum') or maxed ('max') over the ranks: the same array
        on every rank, which every rank must ask for. One domain: returned as they are."""
        values = np.asarray(values, dtype=np.float64)
        if self.rank_box is None:
            return values
        return parallel.allreduce(self.rank_box.cart, values, op)

    def piece_fields(self) -> tuple:
        """Distributed run: (ρ, u, kind) on this rank's output piece
        (:meth:`~thelma_py.parallel.RankBox.piece`), which reaches one plane into the +
        neighbour; the ghost layers are refreshed first (collective: every rank asks). ρ and u
        live where the engine's state does (device arrays on a GPU: copy them with
        ``backend.to_host``), the node kinds on the host."""
        if self.rank_box is None:
            raise ValueError("piece_fields() is for distributed runs; one domain has fields()")
        return self.engine.piece_fields()

    def gather(self, value) -> list | None:
        """``value`` of every rank, in rank order, as a list on the lead rank (None on the
        others), which every rank must ask for. One domain: ``[value]``."""
        if self.rank_box is None:
            return [value]
        return self.rank_box.cart.gather(value, root=0)

    # -- figures -----------------------------------------------------------------------------
    @property
    def mlups(self) -> float:
        """Million lattice-node updates per second over the compute time so far (all nodes)."""
        return run_figures.mlups(self.node_count, self.steps_timed, self.compute_seconds)

    def batch_mlups(self) -> np.ndarray:
        """MLUPS of every timed engine batch (batches of zero duration left out)."""
        return run_figures.batch_mlups(self.node_count, self.batch_times)

    def summary(self) -> dict:
        """Run figures (:func:`thelma_py.run_figures.summary`)."""
        return run_figures.summary(self)

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path) -> Path:
        """Write a checkpoint directory at ``path`` (atomically); see :mod:`.checkpoints`."""
        return checkpoints.write_checkpoint(self, Path(path))

    def load_checkpoint(self, path: str | Path) -> int:
        """Continue from a checkpoint written by a run of the same configuration.

        ``path`` is a checkpoint directory or the root of a ``checkpoint`` plug-in (its latest
        checkpoint is taken). Refuses a checkpoint of another configuration, naming what
        differs. Results due at the checkpoint step are not called again. Returns the step.
        """
        step = checkpoints.load_checkpoint(self, Path(path))
        self._outputs.resumed_step = step
        return step


def compose(lattice: Lattice | str, geometry: Domain, compute: ComputePlugin,
            init: InitPlugin | None = None, results: Sequence = (), device: str = "auto",
            precision: str = "float64", check_every: int = 1000,
            max_velocity: float | None = None, decomposition: str | tuple | None = None,
            comm=None) -> Solver:
    """Build a :class:`Solver` from plug-ins (see :func:`thelma_py.plugin`).

    Under an MPI launcher the domain is split over the ranks (``decomposition`` such as
    '1x1x4' overrides the automatic choice); ``comm`` picks another communicator."""
    if isinstance(results, str) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a list of results plug-ins, got {results!r}")
    return Solver(lattice=lattice, geometry=geometry, compute=compute,
                  init=init if init is not None else default_init(), results=list(results),
                  device=device, precision=precision, check_every=check_every,
                  max_velocity=max_velocity, decomposition=decomposition, comm=comm)
