"""The solver: composes a lattice, a geometry, an init, a compute and results plug-ins, and runs.

The run loop advances the compute engine in chunks that end exactly on the steps where a
results plug-in is due, so the engine sees long uninterrupted batches and results never force
extra host copies.
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from thelma_py import parallel
from thelma_py.backend import Backend, dtype_of, select_backend
from thelma_py.geometry.domain import Geometry
from thelma_py.host_copy import HostCopier, PendingCopy
from thelma_py.lattice import Lattice, lattice_by_name
from thelma_py.modules.init.fields import Equilibrium
from thelma_py.nodes import NodeTags


class DivergenceError(RuntimeError):
    """The run produced NaN or infinity, or a speed above ``max_velocity``; the message gives
    the step and the first bad node."""


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the solver finished its batch, wrote its checkpoints, stopped.

    ``signal_name`` is 'SIGINT' or 'SIGTERM', ``step`` the step reached, ``checkpoints`` the
    directories written.
    """

    def __init__(self, signal_name: str, step: int, checkpoints: list[Path]):
        self.signal_name, self.step, self.checkpoints = signal_name, step, checkpoints
        where = (f"; checkpoint written to {', '.join(map(str, checkpoints))}" if checkpoints
                 else "; no checkpoint plug-in, nothing saved")
        super().__init__(f"{signal_name} received: stopped cleanly at step {step}{where}")


def _mpi_lor():
    from mpi4py import MPI

    return MPI.LOR


def _lattice(value: Lattice | str) -> Lattice:
    if isinstance(value, Lattice):
        return value
    if not isinstance(value, str):
        raise TypeError(f"lattice must be a Lattice or a name such as 'D2Q9', got {value!r}")
    return lattice_by_name(value)


def _check_geometry(instance, attribute, value) -> None:
    if not isinstance(value, Geometry):
        raise TypeError(f"geometry must be a thelma_py.geometry.Geometry (e.g. "
                        f"tp.geometry.cavity(...)), got {type(value).__name__}")


def _check_compute(instance, attribute, value) -> None:
    if not callable(getattr(value, "create", None)):
        raise TypeError(f"compute must be a compute plug-in (tp.plugin('compute', 'lbm', ...)), "
                        f"got {value!r}")


def _check_init(instance, attribute, value) -> None:
    if not callable(getattr(value, "fields", None)):
        raise TypeError(f"init must be an init plug-in (tp.plugin('init', ...)), got {value!r}")


def _check_results(instance, attribute, value) -> None:
    for result in value:
        if not callable(result):
            raise TypeError(f"results must be results plug-ins (callables with a schedule, see "
                            f"tp.plugin('results', ...)), got {result!r}")


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

    ``results`` are results plug-ins (objects with ``schedule``, ``__call__(solver)`` and
    optionally ``start(solver)`` / ``finish(solver)``).
    """

    lattice: Lattice = attrs.field(converter=_lattice)
    geometry: Geometry = attrs.field(validator=_check_geometry)
    compute: object = attrs.field(validator=_check_compute)
    init: object = attrs.field(factory=Equilibrium, validator=_check_init)
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
    engine: object = attrs.field(init=False)
    time_step: int = attrs.field(init=False, default=0)
    compute_seconds: float = attrs.field(init=False, default=0.0)
    results_seconds: float = attrs.field(init=False, default=0.0)
    steps_timed: int = attrs.field(init=False, default=0)
    batch_times: list = attrs.field(init=False, factory=list, repr=False)
    """(steps, seconds) of every engine batch, for the spread of the step rate."""
    stop_reason: str | None = attrs.field(init=False, default=None)
    """Why the last :meth:`run` ended early (set by :meth:`stop`), or None."""
    rank_box: object = attrs.field(init=False, default=None, repr=False)
    """This rank's sub-box (:class:`thelma_py.parallel.RankBox`), None for one domain."""
    _started: bool = attrs.field(init=False, default=False)
    _resumed_step: int | None = attrs.field(init=False, default=None)
    _signal: int | None = attrs.field(init=False, default=None)
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
            self._build_distributed(comm)
        else:
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

    def _build_distributed(self, comm) -> None:
        # one GPU per rank (local rank mod device count), made current before any allocation
        device = parallel.select_device(comm) if self.backend.is_gpu else None
        unsupported = sorted({type(r).__name__ for r in self.results
                              if not getattr(r, "supports_distributed", False)})
        if unsupported:
            from thelma_py.registry import available

            able = sorted(name for name, factory in available("results").items()
                          if getattr(factory, "supports_distributed", False))
            raise ValueError(f"results plug-in(s) {unsupported} do not run distributed yet; "
                             f"distributed runs take {', '.join(able)}")
        dims = self.decomposition
        if isinstance(dims, str):
            dims = parallel.parse_dims(dims, self.geometry.dim)
        self.rank_box = box = parallel.RankBox.create(comm, self.geometry.shape,
                                                      self.geometry.periodic, dims,
                                                      gpu=self.backend.is_gpu)
        self.tags = self.geometry.evaluate(self.lattice, box.lower, box.shape)
        grown = self.geometry.evaluate(self.lattice, box.grown_lower, box.grown_shape,
                                       ghost=True)
        local = self.compute.create(self.lattice, grown, self.backend, self.dtype)
        self.engine = parallel.DistributedEngine(local, box, device)

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
        start = self.backend.clock()
        self.engine.step(n)
        seconds = self.backend.clock() - start
        self.compute_seconds += seconds
        self.batch_times.append((n, seconds))
        self.steps_timed += n
        self.time_step += n

    def stop(self, reason: str) -> None:
        """Ask :meth:`run` to end after the results due at this step (e.g. on convergence)."""
        self.stop_reason = str(reason)

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        for result in self.results:
            if hasattr(result, "start"):
                result.start(self)
        if self.time_step != self._resumed_step:  # a checkpoint is written after those ran
            self._call_due()

    def _ordered_results(self) -> list:
        """Results in call order: checkpoints last, so a checkpoint at step n follows every
        other output of step n (a resumed run must not repeat them)."""
        return sorted(self.results, key=lambda r: bool(getattr(r, "after_others", False)))

    def _call_due(self) -> None:
        start = time.perf_counter()
        for result in self._ordered_results():
            schedule = getattr(result, "schedule", None)
            if schedule is not None and schedule.due(self.time_step):
                result(self)
        self.results_seconds += time.perf_counter() - start

    # -- signals -----------------------------------------------------------------------------
    def _on_signal(self, signum, frame) -> None:
        if self._signal is not None:  # a second signal: stop now, without waiting
            raise KeyboardInterrupt(f"{signal.Signals(signum).name} received twice")
        self._signal = signum

    def _install_handlers(self) -> dict:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, self._on_signal)
        return previous

    def _pending_signal(self) -> int:
        """The signal to act on after this batch (0: none). In a distributed run the ranks
        agree on it, so that all of them write the checkpoint at the same step."""
        local = int(self._signal or 0)
        if self.rank_box is None:
            return local
        return int(self.reduce([local], op="max")[0])

    def _interrupt(self) -> None:
        """After a signal: write every checkpoint plug-in at this step, then stop the run."""
        name = signal.Signals(self._signal).name
        self._signal = None
        written = []
        for result in self.results:
            if hasattr(result, "write_now"):
                written.append(result.write_now(self))
        raise RunInterrupted(name, self.time_step, written)

    def run(self, steps: int) -> dict:
        """Advance ``steps`` steps, calling results plug-ins when due; returns :meth:`summary`."""
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
        self.stop_reason = None
        previous = self._install_handlers()
        try:
            self._start()
            end = self.time_step + int(steps)
            for result in self.results:  # optional hook: progress bars need the target step
                if hasattr(result, "begin_run"):
                    result.begin_run(self, end)
            while self.time_step < end and self.stop_reason is None:
                stops = [end]
                for result in self.results:
                    schedule = getattr(result, "schedule", None)
                    if schedule is not None:
                        stops.append(schedule.next_after(self.time_step))
                if self.check_every:
                    stops.append((self.time_step // self.check_every + 1) * self.check_every)
                target = min(stops)
                self.step(target - self.time_step)
                if self.check_every and self.time_step % self.check_every == 0:
                    self.check_finite()
                    self.check_velocity()
                self._call_due()
                pending = self._pending_signal()
                if pending:
                    self._signal = pending
                    self._interrupt()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._signal = None
        return self.summary()

    def finish(self) -> None:
        """Let results plug-ins close their files (time-series indexes, CSV files)."""
        for result in self.results:
            if hasattr(result, "finish"):
                result.finish(self)

    def check_finite(self) -> None:
        """Raise :class:`DivergenceError` naming the first node where ρ or u is not finite."""
        rho, u = self.engine.macroscopic()
        xp = self.backend.xp
        bad = ~xp.isfinite(rho) | ~xp.isfinite(u).all(axis=0)
        if not self._anywhere(bool(bad.any())):
            return
        position = self._first_position(bad) if bool(bad.any()) else "(on another rank)"
        raise DivergenceError(
            f"the run diverged: first non-finite value at step {self.time_step}, node "
            f"(x, y{', z' if len(position) == 3 else ''}) = {position}. Lower the lattice "
            "velocity, raise the resolution, or use collision='mrt'.")

    def _anywhere(self, flag: bool) -> bool:
        """True on every rank when ``flag`` holds on any (so that all ranks stop together)."""
        if self.rank_box is None:
            return flag
        return bool(self.rank_box.cart.allreduce(flag, op=_mpi_lor()))

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

    def gather(self, value) -> list | None:
        """``value`` of every rank, in rank order, as a list on the lead rank (None on the
        others), which every rank must ask for. One domain: ``[value]``."""
        if self.rank_box is None:
            return [value]
        return self.rank_box.cart.gather(value, root=0)

    def _first_position(self, bad) -> tuple[int, ...]:
        """Global (x, y[, z]) of the first True node of a backend boolean array."""
        flat = int(self.backend.xp.argmax(bad.reshape(-1)))
        index = np.unravel_index(flat, bad.shape)
        return tuple(int(i) + lo for i, lo in zip(reversed(index), self.tags.lower, strict=True))

    def check_velocity(self) -> None:
        """Raise :class:`DivergenceError` at the first node where |u| > ``max_velocity``."""
        if self.max_velocity is None:
            return
        u = self.engine.macroscopic()[1]
        speed2 = (u * u).sum(axis=0)
        bad = speed2 > self.max_velocity**2
        if not self._anywhere(bool(bad.any())):
            return
        if not bool(bad.any()):
            raise DivergenceError(f"|u| exceeds max_velocity = {self.max_velocity} at step "
                                  f"{self.time_step} on another rank")
        position = self._first_position(bad)
        speed = math.sqrt(float(speed2.reshape(-1)[int(self.backend.xp.argmax(bad.reshape(-1)))]))
        raise DivergenceError(
            f"|u| = {speed:.4g} exceeds max_velocity = {self.max_velocity} at step "
            f"{self.time_step}, first at node (x, y{', z' if len(position) == 3 else ''}) = "
            f"{position}. The run is going unstable: lower the lattice velocity or raise the "
            "resolution.")

    @property
    def mlups(self) -> float:
        """Million lattice-node updates per second over the compute time so far (all nodes)."""
        if self.compute_seconds <= 0:
            return math.nan
        return self.node_count * self.steps_timed / self.compute_seconds / 1e6

    def batch_mlups(self) -> np.ndarray:
        """MLUPS of every timed engine batch (batches of zero duration left out)."""
        rates = [self.node_count * n / t / 1e6 for n, t in self.batch_times if n and t > 0]
        return np.asarray(rates, dtype=np.float64)

    def summary(self) -> dict:
        """Run figures: MLUPS over the compute time and its mean/spread over batches, time in
        results (output), bytes per node and, where the backend measured its copy bandwidth,
        the fraction of it this run reached (None otherwise)."""
        rates = self.batch_mlups()
        bandwidth = getattr(self.backend, "copy_bandwidth", None)  # bytes/s, if measured
        # per lattice node, like the MLUPS: sparse engines count per stored (fluid) node
        traffic = self.engine.traffic_bytes_per_node * getattr(self.engine, "stored_fraction", 1)
        fraction = (None if not bandwidth or not math.isfinite(self.mlups)
                    else round(self.mlups * 1e6 * traffic / bandwidth, 4))
        return {
            "lattice": self.lattice.name,
            "shape": list(self.shape),
            "backend": self.backend.describe(),
            "precision": self.dtype.name,
            "steps": self.time_step,
            "compute_seconds": round(self.compute_seconds, 6),
            "results_seconds": round(self.results_seconds, 6),
            "mlups": round(self.mlups, 3),
            "mlups_batch_mean": round(float(rates.mean()), 3) if len(rates) else None,
            "mlups_batch_std": round(float(rates.std()), 3) if len(rates) else None,
            "batches": len(rates),
            "bytes_per_node": traffic,
            "copy_bandwidth_fraction": fraction,
            "stopped": self.stop_reason,
        }

    # -- checkpoints -------------------------------------------------------------------------
    def save_checkpoint(self, path: str | Path) -> Path:
        """Write a checkpoint directory at ``path`` (atomically); see :mod:`.checkpoint`."""
        from thelma_py.modules.results.checkpoint import write_checkpoint

        return write_checkpoint(self, Path(path))

    def load_checkpoint(self, path: str | Path) -> int:
        """Continue from a checkpoint written by a run of the same configuration.

        ``path`` is a checkpoint directory or the root of a ``checkpoint`` plug-in (its latest
        checkpoint is taken). Refuses a checkpoint of another configuration, naming what
        differs. Results due at the checkpoint step are not called again. Returns the step.
        """
        from thelma_py.modules.results.checkpoint import load_checkpoint

        step = load_checkpoint(self, Path(path))
        self._resumed_step = step
        return step


def compose(lattice: Lattice | str, geometry: Geometry, compute, init=None,
            results: Sequence = (), device: str = "auto", precision: str = "float64",
            check_every: int = 1000, max_velocity: float | None = None,
            decomposition: str | tuple | None = None, comm=None) -> Solver:
    """Build a :class:`Solver` from plug-ins (see :func:`thelma_py.plugin`).

    Under an MPI launcher the domain is split over the ranks (``decomposition`` such as
    '1x1x4' overrides the automatic choice); ``comm`` picks another communicator."""
    if isinstance(results, str) or not isinstance(results, Sequence):
        raise TypeError(f"results must be a list of results plug-ins, got {results!r}")
    return Solver(lattice=lattice, geometry=geometry, compute=compute,
                  init=init if init is not None else Equilibrium(), results=list(results),
                  device=device, precision=precision, check_every=check_every,
                  max_velocity=max_velocity, decomposition=decomposition, comm=comm)
