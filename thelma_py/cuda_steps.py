"""How the CUDA engines step: batches replayed from CUDA graphs, and the overlapped schedule of
a rank in a distributed run. Shared by the LBM (dense and sparse) and LW-ACM engines.

Both are mixins over what every CUDA engine holds: ``cp`` (the cupy module), ``current`` and
``phase`` (the buffer parity, which a launch advances), and ``_launch(store, advance=True,
rows=None, planes=None)``, one step kernel on the current stream (``store``: also write ρ and
u; ``rows`` / ``planes``: (first, count) of the y rows / z planes to update; ``advance``
False: keep the parity, another launch completes the step).
"""

from __future__ import annotations

from thelma_py.parallel import check_gpu_box

GRAPH_STEPS = 32
"""Steps captured per CUDA graph (even, so two-buffer and AA schemes return to their parity)."""
GRAPH_BELOW_NODES = 1 << 22
"""Use graphs for domains smaller than this (launch overhead matters only there)."""


class GraphSteps:
    """``step(n)``: n − 1 plain steps, then one that stores ρ and u; on small domains runs of
    plain steps replay a captured graph of :data:`GRAPH_STEPS` launches, cached by parity.

    The engine holds ``nodes``, ``_graphs`` (a dict; cleared whenever the buffers or the
    parity are set from outside) and ``_stream`` (None until the first capture)."""

    stochastic = False
    """Stochastic rounding: each launch takes its own seed (a replayed graph would repeat the
    captured ones), so such an engine launches every step itself."""

    def _graph(self):
        """A CUDA graph of GRAPH_STEPS plain steps from the current parity (cached)."""
        key = (self.current, self.phase)
        if key not in self._graphs:
            cp = self.cp
            if self._stream is None:
                self._stream = cp.cuda.Stream(non_blocking=True)
            stream = self._stream
            with stream:
                stream.begin_capture()
                try:
                    for _ in range(GRAPH_STEPS):
                        self._launch(False)
                finally:
                    graph = stream.end_capture()
            self._graphs[key] = graph
        return self._graphs[key]

    def step(self, n: int = 1) -> None:
        if n <= 0:
            return
        plain = n - 1
        use_graph = (not self.stochastic and self.nodes < GRAPH_BELOW_NODES
                     and plain >= 2 * GRAPH_STEPS)
        if use_graph:
            while plain >= GRAPH_STEPS:
                graph = self._graph()  # capture leaves the parity where replay will
                graph.launch(self.cp.cuda.get_current_stream())
                plain -= GRAPH_STEPS
        for _ in range(plain):
            self._launch(False)
        self._launch(True)


def overlapped_launches(layers: int, group: int = 1, origin: int = 0
                        ) -> tuple[list[tuple[int, int]], tuple[int, int] | None]:
    """(boundary launches, interior launch or None) of the overlapped schedule as (first,
    count) of local layers, for ``layers`` local layers along the cut. The owned layers are
    [1, L − 1); the boundary launches hold layers 1 and L − 2 (they read the ghost layers the
    exchange writes), each with the rest of its group of ``group`` layers on the global grid
    (``origin``: the global row of layer 1 modulo ``group``); the interior launch the layers
    between. With groups of 1: (1, 1), (L − 2, 1) and (2, L − 4)."""
    last = layers - 1
    first_end = min(last, 1 + group - origin)  # past the group of layer 1
    last_start = max(1, last - 1 - (last - 2 + origin) % group)  # the group of L − 2
    if last_start < first_end:  # one group holds both
        return [(1, last - 1)], None
    boundary = [(1, first_end - 1), (last_start, last - last_start)]
    interior = (first_end, last_start - first_end)
    return boundary, interior if interior[1] > 0 else None


class OverlappedSteps:
    """``step_distributed``: the steps of a rank whose grown box is cut along one axis
    (docs/DESIGN.md, "Several GPUs"), the exchange of the ghost layers hidden behind the
    update of the interior. The engine plans its layers in ``distribute`` (:meth:`_plan_layers`)
    and offers ``halo_arrays()``, whose first array is what a step reads across the cut."""

    def _plan_layers(self, box, row_group: int = 1) -> None:
        """The cut axis ('planes': z, 'rows': y) and the layers along it, for
        :meth:`step_distributed`; ``row_group``: rows a kernel updates together (the single
        step's ``thread_rows``), grouped from the first row of each launch: across a y cut the
        launches then start where one GPU's groups start (:func:`overlapped_launches`, planned
        once here)."""
        self._cut = check_gpu_box(box, self.lattice)
        self._layers = self.nz if self._cut == "planes" else self.ny
        if self._layers < 3:
            raise ValueError(f"a rank needs at least one owned layer along the cut, got "
                             f"{self._layers - 2}")
        self._group = row_group if self._cut == "rows" else 1
        origin = box.lower[1] % self._group  # global row of layer 1, modulo the group
        self._schedule = overlapped_launches(self._layers, self._group, origin)
        self._halo_stream = None

    def step_distributed(self, n: int, exchange, overlap: bool = True) -> None:
        """``n`` steps of a distributed run; ``exchange.exchange(f, stream)`` refreshes the
        ghost layers of ``f`` (stream-ordered). The last step also stores ρ and u.

        With ``overlap``, each step runs the interior layers [2, L − 2) on the current stream
        while, on a second stream, the exchange and then the two boundary layers 1 and L − 2
        run; events join the streams before the next step. Without it, the exchange and then
        one launch over the owned layers [1, L − 1). Ghost layers (0, L − 1) are never updated:
        owned nodes read only the ghost values the exchange writes."""
        cp = self.cp
        last = self._layers - 1
        for k in range(n):
            store = k == n - 1
            src = self.halo_arrays()[0]
            main = cp.cuda.get_current_stream()
            if not overlap:
                exchange.exchange(src, main)
                self._launch(store, advance=False, **{self._cut: (1, last - 1)})
                self.current = 1 - self.current
                continue
            halo = self._get_halo_stream()
            ready, done = self._events
            boundary, interior = self._schedule
            halo.wait_event(main.record(ready))  # the previous step wrote src
            with halo:  # enqueued first: the exchange starts before the interior fills the GPU
                exchange.exchange(src, halo)
                for layers in boundary:
                    self._launch(store, advance=False, **{self._cut: layers})
            if interior is not None:
                self._launch(store, advance=False, **{self._cut: interior})
            main.wait_event(halo.record(done))
            self.current = 1 - self.current

    def _get_halo_stream(self):
        """A non-blocking stream of the highest priority (boundary layers go first)."""
        if self._halo_stream is None:
            cp = self.cp
            try:  # CUDA clamps a priority beyond the device's range to its highest
                self._halo_stream = cp.cuda.Stream(non_blocking=True, priority=-1000)
            except TypeError:  # a CuPy without priorities: the default one
                self._halo_stream = cp.cuda.Stream(non_blocking=True)
            # two events reused every step (a wait takes the record made just before it)
            self._events = tuple(cp.cuda.Event(disable_timing=True) for _ in range(2))
        return self._halo_stream
