"""CUDA source for LBM steps, generated from the lattice descriptor, the tag layout and the
collision code in :mod:`.collision` (the same functions the NumPy reference runs).

One thread per node, structure of arrays with x fastest: population i of node n lives at
``f[i * N + n]``. Three memory schemes share one generator:

* ``pull``: read f*_i from x − c_i in ``src``, collide, write f*_i to x in ``dst``.
* ``push``: read the node's own pre-collision f_i from ``src``, collide, write f*_i to x + c_i
  in ``dst`` (the state held between steps is streamed, pre-collision).
* ``aa``: one array (Bailey et al. 2009). Even steps read f_i at x from slot i and write f*_i
  back to x in slot ī; odd steps read f_i from x − c_i slot ī and write f*_i to x + c_i slot i.

Walls: a node reads its tag only when its 32-node tile (one warp along x) contains a
non-fluid node or a wall link (:func:`thelma_py.codegen.tag_tables.tile_flags`); elsewhere the
tag is "fluid, no wall link", so the bulk of a closed box moves no tag bytes. Population loads
never wait for the tag (:func:`thelma_py.codegen.cuda.population_reads`): a wall link re-reads
its bounced value afterwards. Each kernel exists twice: ``*_macro`` also stores ρ and u, which
the engine runs only on the last step before the fields are read.
"""

from __future__ import annotations

import attrs

from thelma_py.codegen import cuda
from thelma_py.codegen.cuda import c3 as _c3
from thelma_py.codegen.expr import Emitter, Expr
from thelma_py.codegen.kernel_args import GIVEN, Arg, KernelArgs
from thelma_py.codegen.tag_tables import FACES, face_tag_function
from thelma_py.modules.compute.lbm import boundaries
from thelma_py.modules.compute.lbm import propagation as variants
from thelma_py.modules.compute.lbm.collision import (
    Relaxation,
    collide,
    uniform_arguments,
    wall_momentum,
)
from thelma_py.modules.compute.lbm.interpolated import interpolated_bounce
from thelma_py.store16 import (
    FORMATS,
    ROUNDINGS,
    STORES,
    cuda_dither,
    cuda_functions,
    cuda_stochastic,
    seed_arguments,
)
from thelma_py.tags import LINK_SHIFT

SCHEMES = ("pull", "push", "aa")
CUDA_OPTIONS = {"block": None, "min_blocks": 0, "streaming_stores": False,
                "propagation": "direct", "wall_launch": "fused", "moving_tiles": None,
                "wall_reads": None, "narrow": None}
"""Defaults of ``Lbm.cuda_options``; ``block`` None: 256 for dense fp32 pull and AA, else 128
(measured, NOTES runs 9, 40 and 42); ``moving_tiles`` None: on where it runs (dense storage,
direct propagation), as measured faster there (benchmarks/NOTES.md, run 23); ``wall_reads``
None: by measurement, ``Lbm.wall_reads`` (runs 37–38); ``narrow`` None: by measurement,
``Lbm.narrow`` (run 44: 32-bit indices for AA and 16-bit storage where they fit)."""
MOVING_TILE = 2
"""Tile flag bit (``moving_tiles``): a wall link of the tile ends on a moving wall."""
WALL_LAUNCHES = ("fused", "split")
"""``fused``: one kernel, stored tags read where a tile is flagged; ``split``: a bulk kernel that
skips flagged tiles (no stored tags; wall code only for the box's wall faces), then a kernel
over the list of flagged tiles only."""
"""Defaults of ``Lbm.cuda_options`` (the tuning fields of :class:`KernelConfig`)."""


@attrs.frozen
class KernelConfig(cuda.KernelConfig):
    """Everything that is baked into the source text (the cache key): the shared fields of
    :class:`thelma_py.codegen.cuda.KernelConfig` (force, moving_walls, block, min_blocks are
    keyword-only) and the LBM ones."""

    relaxation: Relaxation
    real: str = attrs.field(validator=attrs.validators.in_(cuda.REALS))  # after relaxation
    scheme: str = attrs.field(default="pull", validator=attrs.validators.in_(SCHEMES))
    streaming_stores: bool = False
    """Store populations with the evict-first hint (__stcs)."""
    boundaries: tuple = attrs.field(default=(), converter=lambda v: tuple(sorted(
        (str(k), str(f)) for k, f in v)))
    """(node kind name, face) pairs of the open boundaries present; () for none."""
    interpolated: bool = attrs.field(default=False)
    """INTERPOLATED nodes present (bodies with interpolated bounce-back; pull only)."""
    propagation: str = attrs.field(default="direct",
                                   validator=attrs.validators.in_(variants.PROPAGATIONS))
    """How populations with c_x ≠ 0 cross between threads (:mod:`.propagation`)."""

    wall_launch: str = attrs.field(default="fused", validator=attrs.validators.in_(WALL_LAUNCHES))
    """One kernel for every tile, or the bulk and the flagged (wall) tiles apart."""

    moving_tiles: bool = attrs.field(default=False)
    """Ladd's moving-wall term only in tiles flagged :data:`MOVING_TILE` (one warp-uniform
    branch); other wall links bounce back plainly, with no wall-row lookups."""

    box_walls: int = attrs.field(default=0, validator=attrs.validators.in_(range(1 << len(FACES))))
    """Faces of the stored box that are walls (bits of
    :data:`thelma_py.codegen.tag_tables.FACES`): clean tiles compute their links across them."""

    wall_reads: str = attrs.field(default="refetch",
                                  validator=attrs.validators.in_(cuda.WALL_READS))
    """Populations across wall links: re-read after the tag, or loaded once from a selected
    address (:func:`thelma_py.codegen.cuda.population_reads`)."""

    @moving_tiles.validator
    def _check_moving_tiles(self, _, value):
        if value and self.propagation != "direct":
            raise ValueError("moving_tiles runs with propagation 'direct'")

    @propagation.validator
    def _check_propagation(self, _, value):
        variants.check(value, self.scheme, bool(self.boundaries or self.interpolated))

    @wall_launch.validator
    def _check_wall_launch(self, _, value):
        if value == "split" and self.propagation != "direct":
            raise ValueError("wall_launch 'split' runs with propagation 'direct' (a bulk block "
                             "may skip some of its warps, so it cannot share a barrier)")

    store: str = attrs.field(default="fp32", kw_only=True, validator=attrs.validators.in_(STORES))
    """Population storage: fp32 (real_t) or a 16-bit format of f_i − w_i
    (:mod:`thelma_py.store16`; fp32 arithmetic). Every population read (bulk, walls, open
    boundaries, interpolated links) decodes, every store encodes."""
    shifted: bool = attrs.field(default=False, kw_only=True)
    """16-bit storage: the collision runs in the stored f_i − w_i (no w_i added at each read
    and taken away at each write, :func:`.collision.collide`): :meth:`.Lbm.shifts` decides,
    from the whole geometry (no open boundaries or interpolated bodies) and the model."""

    @shifted.validator
    def _check_shifted(self, _, value):
        if value and (self.store == "fp32" or self.boundaries or self.interpolated
                      or not self.relaxation.shifts):
            raise ValueError("shifted populations need 16-bit storage, no open boundaries or "
                             "interpolated bodies, and a model that relaxes f − f_eq")

    @wall_reads.validator
    def _check_wall_reads(self, _, value):
        if value == "select" and self.propagation != "direct":
            raise ValueError("wall_reads 'select' runs with propagation 'direct' (the variants "
                             "load before any thread may return)")

    @store.validator
    def _check_store(self, _, value):
        if value == "fp32":
            return
        if self.real != "float":
            raise ValueError(f"store={value!r} keeps fp32 arithmetic; use precision float32")
        if self.propagation != "direct":
            raise ValueError(f"store={value!r} runs with propagation 'direct' (the variants "
                             "move fp32 values)")

    @interpolated.validator
    def _check_interpolated(self, _, value):
        if value and self.scheme != "pull":
            raise ValueError("interpolated bodies read the post-collision populations of two "
                             "nodes per link, which only the pull scheme holds; use "
                             "streaming='pull'")

    @boundaries.validator
    def _check_boundaries(self, _, value):
        for kind, face in value:
            boundaries.check_arm(self.lattice, kind, face, self.scheme)

    narrow: bool = attrs.field(default=False, kw_only=True)
    """32-bit population indices from each thread's node (:data:`.cuda.NARROW_PROLOGUE`): for
    buffers of fewer than 2^31 values (:func:`.cuda.narrow_fits`), direct propagation."""

    @narrow.validator
    def _check_narrow(self, _, value):
        if value and self.propagation != "direct":
            raise ValueError("narrow indices run with propagation 'direct' (the variants index "
                             "their own exchanges)")

    rounding: str = attrs.field(default="nearest", kw_only=True,
                                validator=attrs.validators.in_(ROUNDINGS))
    """16-bit storage: each store rounds to nearest, or stochastically (``pop_encode_sr`` with
    :func:`thelma_py.store16.dither_bits` of the node's global coordinates, the launch's
    seed words and the rank's origin ``ox, oy, oz``; pull only, where a node stores its own
    populations)."""

    @rounding.validator
    def _check_rounding(self, _, value):
        if value == "stochastic" and (self.store == "fp32" or self.scheme != "pull"):
            raise ValueError("stochastic rounding is for 16-bit storage with pull streaming")

    @property
    def name(self) -> str:
        store = "" if self.store == "fp32" else f"_{self.store}"
        sr = "_sr" if self.rounding == "stochastic" else ""
        return (f"lbm_{self.lattice.name}_{self.relaxation.kind}_{self.real}_{self.scheme}"
                f"{store}{sr}")


STORE16 = "__device__ __forceinline__ void store(pop_t* p, pop_t v) { *p = v; }"
""":data:`thelma_py.codegen.cuda.STORE` for 16-bit populations."""


def _header(cfg: KernelConfig) -> str:
    lines = cuda.header(cfg.name, __name__, cfg.real, cfg.lattice)
    if cfg.store == "fp32":
        return "\n".join(lines + [cuda.STORE])
    stochastic = [cuda_stochastic(FORMATS[cfg.store])] if cfg.rounding == "stochastic" else []
    return "\n".join(lines + [cuda_functions(FORMATS[cfg.store]), *stochastic, STORE16])


def _wall_term(cfg: KernelConfig, i: int, at: tuple[str, str, str] = ("x", "y", "z")
               ) -> tuple[str, str]:
    """(setup statement, C expression) of Ladd's term for population i bounced back at the node
    with coordinates ``at`` (:func:`thelma_py.codegen.cuda.wall_term` of :func:`wall_momentum`).
    """
    return cuda.wall_term(cfg.lattice, i, wall_momentum, at)


def step_args(scheme: str, store: str = "fp32", uniforms: tuple[str, ...] = (),
              rounding: str = "nearest", q: int = 0) -> KernelArgs:
    """Arguments of the step kernels: the population buffers (``f`` for AA, else ``src`` and
    ``dst``; ``pop_t``, uint16, in 16-bit storage) and the node range ``y0``, ``z0`` are given
    at each launch, the rest is held by the engine (:class:`.cuda.CudaLbm`) under the names in
    ``source``, the collision model's ``uniforms`` last
    (:func:`.collision.uniform_arguments`); stochastic rounding adds the launch's seed words
    (:func:`thelma_py.store16.seed_arguments` of the ``q`` populations) and the global
    coordinates ``ox, oy, oz`` of node 0 (before the uniforms)."""
    if rounding == "stochastic" and q < 1:
        raise ValueError("stochastic rounding needs q, the populations a node (its seed words)")
    pop = "real_t" if store == "fp32" else "pop_t"
    buffers = ([Arg("f", f"{pop}*", GIVEN)] if scheme == "aa" else
               [Arg("src", f"const {pop}*", GIVEN), Arg("dst", f"{pop}*", GIVEN)])
    return KernelArgs("lbm step", [
        buffers,
        [Arg("tags", "const tag_t*", "tag_words"), Arg("tile_flags", "const unsigned char*")],
        [Arg("bc", "const real_t*"), Arg("edge_bc", "const int*"), Arg("periodic", "int")],
        [Arg("omega", "real_t"), Arg("omega_minus", "real_t"), Arg("nx", "int"),
         Arg("ny", "int"), Arg("nz", "int")],
        [Arg("rho_out", "real_t*", "rho"), Arg("u_out", "real_t*", "u")],
        [Arg("open_table", "const int*"), Arg("open_values", "const real_t*")],
        [Arg("y0", "int", GIVEN), Arg("z0", "int", GIVEN)],
        [Arg("curved_nodes", "const int*"), Arg("curved_weights", "const real_t*"),
         Arg("n_curved", "int")],
        *([[Arg(name, "unsigned", GIVEN) for name in seed_arguments(q)],
           [Arg("ox", "int"), Arg("oy", "int"), Arg("oz", "int")]]
          if rounding == "stochastic" else []),
        *([[Arg(name, "real_t") for name in uniforms]] if uniforms else []),
    ])


def wall_args(scheme: str, store: str = "fp32", uniforms: tuple[str, ...] = (),
              rounding: str = "nearest", q: int = 0) -> KernelArgs:
    """Arguments of the wall-tile kernels of ``wall_launch='split'``: those of
    :func:`step_args` and the list of flagged tiles (tile index x / TILE + tiles_x (y + ny z))."""
    return KernelArgs("lbm wall tiles", [*step_args(scheme, store, uniforms, rounding, q).lines,
                                         [Arg("wall_tiles", "const int*"),
                                          Arg("n_wall_tiles", "int")]])


def _wall_tile_prologue(prologue: str) -> str:
    """The thread prologue of a wall-tile kernel: one warp per listed tile (1D grid)."""
    head = ("    const int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "    const int y = blockIdx.y + y0;\n"
            "    const int z = blockIdx.z + z0;\n")
    assert head in prologue
    return prologue.replace(head, (
        "    const int listed = (int)((blockIdx.x * blockDim.x + threadIdx.x) / TILE);\n"
        "    if (listed >= n_wall_tiles) return;\n"
        "    const int t = wall_tiles[listed], tiles_x = (nx + TILE - 1) / TILE;\n"
        "    const int x = (t % tiles_x) * TILE + (int)(threadIdx.x % TILE);\n"
        "    const int y = (t / tiles_x) % ny;\n"
        "    const int z = (t / tiles_x) / ny;\n"
        "    (void)y0; (void)z0;\n"))


def _writes(cfg: KernelConfig, parity: str) -> list[str]:
    """C statements storing p0..p{Q-1}, with bounce-back where the destination is a wall."""
    lat, opp, narrow = cfg.lattice, cfg.lattice.opposite, cfg.narrow
    store = "__stcs" if cfg.streaming_stores else "store"
    lines, bits = [], [None] * lat.q
    if cfg.rounding == "stochastic":  # pull: every population is stored at its own node
        lines, bits = cuda_dither(lat.q, "x + ox", "y + oy", "z + oz")
    for i in range(lat.q):
        array = cuda.buffer("f" if cfg.scheme == "aa" else "dst", narrow)
        if cfg.scheme == "pull":
            target = bounce = cuda.slot_index(lat, i, narrow=narrow)
        elif cfg.scheme == "aa" and parity == "even":  # in place, into the opposite slot
            target = bounce = cuda.slot_index(lat, opp[i], narrow=narrow)
        else:  # push and AA odd: to the downstream node, or bounced into slot ī here
            target, bounce = (cuda.slot_index(lat, i, i, +1, narrow),
                              cuda.slot_index(lat, opp[i], narrow=narrow))
        value = cuda.pop_value(lat, i, f"p{i}", cfg.store, cfg.shifted, bits[i])  # w_i = w_ī
        if i == 0 or target == bounce:
            lines.append(f"{store}({address(f'{array}[{target}]')}, {value});")
            continue
        # p_i heads for x + c_i; if that node is solid, link ī of x crosses the wall and the
        # population comes straight back as ī, with Ladd's term for direction ī.
        j = opp[i]
        wall = f"((tag >> {LINK_SHIFT + j - 1}) & 1)"
        # narrow: one 32-bit index select; wide: the two addresses (as measured before)
        chosen = (address(f"{array}[{wall} ? {bounce} : {target}]") if narrow else
                  f"{wall} ? {address(f'{array}[{bounce}]')} : {address(f'{array}[{target}]')}")
        if cfg.moving_walls:
            setup, term = _wall_term(cfg, j)
            # moving_tiles: elsewhere the term is ±0 (one more uniform test, no code copied)
            moving = f"{wall} && (tile & {MOVING_TILE})" if cfg.moving_tiles else wall
            lines.append(f"real_t q{i} = p{i};\n"
                         f"if ({moving}) {{ {setup} q{i} += {term}; }}\n"
                         f"{store}({chosen}, "
                         f"{cuda.pop_value(lat, i, f'q{i}', cfg.store, cfg.shifted, bits[i])});")
        else:
            lines.append(f"{store}({chosen}, {value});")
    return lines


def address(element: str) -> str:
    """'a[i]' -> '&a[i]' (stores go through a function so that cache hints can be chosen)."""
    return f"&{element}"


def _by_tile(moving: list[str], rest: list[str]) -> list[str]:
    """Statements ``moving`` in tiles flagged :data:`MOVING_TILE`, ``rest`` elsewhere (one
    uniform branch: a tile is one warp; per link it held more registers in the AA odd step)."""
    pad = "    "
    return ([f"if (tile & {MOVING_TILE}) {{"] + [pad + m for m in moving]
            + ["} else {"] + [pad + r for r in rest] + ["}"])


def _collision(cfg: KernelConfig) -> tuple[str, Expr, list]:
    em = Emitter()
    f = [Expr(f"f{i}", atom=True) for i in range(cfg.lattice.q)]
    uniforms = tuple(Expr(name, atom=True) for name in uniform_arguments(cfg.relaxation))
    post, rho, u = collide(cfg.relaxation, f, em.let, Expr("omega", atom=True),
                           Expr("omega_minus", atom=True), cfg.force, cfg.shifted, uniforms)
    for i, p in enumerate(post):
        em.let(p, f"p{i}")
    return em.code(4), rho, u


def _kernel(cfg: KernelConfig, parity: str, store: bool, part: str = "") -> str:
    """One step kernel; ``part`` '' (every tile), 'bulk' (clean tiles only, no wall code) or
    'walls' (the listed flagged tiles) for ``wall_launch='split'``."""
    suffix = "" if cfg.scheme != "aa" else f"_{parity}"
    name = f"lbm_step{suffix}{'_macro' if store else ''}{'_' + part if part else ''}"
    # a split launch's bulk kernel without wall faces has a constant tag: nothing to select
    reads = "refetch" if part == "bulk" and not cfg.box_walls else cfg.wall_reads
    loads, fixups = cuda.population_reads(cfg.lattice, cfg.scheme, parity,
                                          wall_momentum if cfg.moving_walls else None, cfg.store,
                                          reads, cfg.narrow, cfg.shifted)
    writes = _writes(cfg, parity)
    if cfg.moving_tiles and cfg.moving_walls:  # wall-row lookups only where a wall moves
        fixups = _by_tile(fixups, cuda.population_reads(cfg.lattice, cfg.scheme, parity, None,
                                                         cfg.store, reads, cfg.narrow,
                                                         cfg.shifted)[1])
    body, rho, u = _collision(cfg)
    pad = " " * 4
    # Every node runs the wall-aware path: clean tiles compute their tag (fluid, and the links
    # across wall faces of the box) and move no tag bytes. (Measured on an H200: this path ran
    # a periodic box faster than a variant without any tag logic, 25.6 against 24.8 GLUPS; a
    # closed box flags no tile for its faces: benchmarks/NOTES.md, runs 5 and 38.)
    lines = ["const unsigned char tile = "
             "tile_flags[(x / TILE) + ((nx + TILE - 1) / TILE) * (y + ny_ * z)];"]
    if part == "bulk":  # a warp is a tile: the flagged ones are the wall kernel's
        lines.append("if (tile) return;")
    elif part == "walls":
        lines = lines if cfg.moving_tiles else []
    moved = cfg.propagation != "direct"  # a variant of .propagation: no early returns
    if moved and cfg.scheme == "pull":
        loads = variants.pull_loads(cfg.lattice, cfg.propagation, cfg.block, loads)
    computed = "face_tag(x, y, z, nx, ny, nz)" if cfg.box_walls else "(tag_t)KIND_FLUID"
    bulk = ("const tag_t tag = (tag_t)KIND_FLUID;  // no wall code survives"
            if not cfg.box_walls else f"const tag_t tag = {computed};")
    tag = [{"": f"const tag_t tag = tile ? tags[n] : {computed};", "bulk": bulk,
            "walls": "const tag_t tag = tags[n];"}[part]]
    if reads == "select":  # the tag first: the loads take their addresses from it
        lines += tag + ["if ((tag & TAG_KIND_MASK) == KIND_WALL) return;"
                        if cfg.boundaries or cfg.interpolated else
                        "if ((tag & TAG_KIND_MASK) != KIND_FLUID) return;"] + loads + fixups
        lines += _open_call(cfg) if cfg.boundaries or cfg.interpolated else []
    elif cfg.boundaries or cfg.interpolated:  # those kinds stream and collide; walls stop
        lines += loads + tag + ["if ((tag & TAG_KIND_MASK) == KIND_WALL) return;"] + fixups
        lines += _open_call(cfg)
    elif moved and cfg.scheme == "push":  # every thread reaches the shifts of the stores
        lines += loads + tag
        lines += ["const bool live = inside && (tag & TAG_KIND_MASK) == KIND_FLUID;"] + fixups
        writes = variants.push_writes(cfg.lattice, cfg.propagation, cfg.block, writes,
                                      LINK_SHIFT, "__stcs" if cfg.streaming_stores else "store")
    else:
        lines += loads + tag + ["if ((tag & TAG_KIND_MASK) != KIND_FLUID) return;"] + fixups
    code = "\n".join(pad + line.replace("\n", "\n" + pad) for line in lines)
    code += "\n" + body
    if store:
        macro = ([f"rho_out[n] = {rho};"] +
                 [f"u_out[{a} * N + n] = {ua};" for a, ua in enumerate(u)])
        if moved and cfg.scheme == "push":
            macro = ["if (live) {"] + ["    " + m for m in macro] + ["}"]
        code += "\n" + "\n".join("    " + m for m in macro)
    code += "\n" + "\n".join(pad + line.replace("\n", "\n" + pad) for line in writes)
    uniforms = uniform_arguments(cfg.relaxation)
    q = cfg.lattice.q
    args = (wall_args(cfg.scheme, cfg.store, uniforms, cfg.rounding, q) if part == "walls"
            else step_args(cfg.scheme, cfg.store, uniforms, cfg.rounding, q))
    signature = args.signature(name, cfg.launch_bounds)
    prologue = cuda.prologue(offsets=True)
    if moved:
        prologue = variants.clamped_prologue(prologue)
    if part == "walls":
        prologue = _wall_tile_prologue(prologue)
    if cfg.narrow:
        arrays = ("f",) if cfg.scheme == "aa" else ("src", "dst")
        prologue += cuda.NARROW_PROLOGUE + "\n" + cuda.narrow_pointers(arrays)
    return f"{signature}\n{{\n{prologue}\n{code}\n}}\n"


def kernel_names(scheme: str, part: str = "") -> dict[tuple[str, bool], str]:
    """Entry points by (parity, store_macro); parity is '' for two-buffer schemes; ``part``
    'bulk' or 'walls' for the two kernels of ``wall_launch='split'``."""
    end = f"_{part}" if part else ""
    if scheme == "aa":
        return {(p, s): f"lbm_step_{p}{'_macro' if s else ''}{end}"
                for p in ("even", "odd") for s in (False, True)}
    return {("", s): f"lbm_step{'_macro' if s else ''}{end}" for s in (False, True)}


def _open_call(cfg: KernelConfig) -> list[str]:
    """Kernel lines that hand a non-fluid (open-boundary) node to ``open_boundary``: the
    populations pass through a local array, so the bulk path keeps its registers."""
    q = cfg.lattice.q
    buffer = "f" if cfg.scheme == "aa" else "src"
    values = ", ".join(f"f{i}" for i in range(q))
    back = " ".join(f"f{i} = fb[{i}];" for i in range(q))
    return ["if ((tag & TAG_KIND_MASK) != KIND_FLUID) {",
            f"    real_t fb[{q}] = {{{values}}};",
            f"    open_boundary(fb, tag, x, y, z, nx, ny, nz, periodic, {buffer}, tags, bc, "
            "edge_bc, open_table, open_values, curved_nodes, curved_weights, n_curved);",
            f"    {back}",
            "}"]


def _pop_type(cfg: KernelConfig) -> str:
    """C type of the population arrays: ``real_t``, or ``pop_t`` (uint16) in 16-bit storage."""
    return "real_t" if cfg.store == "fp32" else "pop_t"


def _plane_index(face: int) -> str:
    """C expression of the node's index in its face plane (see open_nodes.plane_index)."""
    return ("y + ny * z", "x + nx * z", "x + nx * y")[face // 2]


def _streamed(cfg: KernelConfig, k: int, target: str) -> str:
    """C statement: ``target`` = the streamed (pre-collision, wall fix-up included) population
    k at the node m = (X, Y, Z) with tag tm, as a thread of that node would read it."""
    lat = cfg.lattice
    def read(element: str) -> str:  # w_k = w_k̄: one shift for either slot
        return cuda.pop_load(lat, k, element, cfg.store)

    if cfg.scheme == "push":
        return f"{target} = {read(f'src[{k} * N + m]')};"
    cx, cy, cz = _c3(lat, k)
    upstream = (f"((X - ({cx}) + nx) % nx) + nx * (((Y - ({cy}) + ny) % ny) + ny * "
                f"((Z - ({cz}) + nz) % nz))")
    bounce = read(f"src[{lat.opposite[k]} * N + m]")
    setup, term = _wall_term(cfg, k, ("X", "Y", "Z")) if cfg.moving_walls else ("", "")
    bounced = f"{setup} {target} = {bounce} + {term};" if term else f"{target} = {bounce};"
    return (f"if ((tm >> {LINK_SHIFT + k - 1}) & 1) {{ {bounced.strip()} }} "
            f"else {target} = {read(f'src[{k} * N + {upstream}]')};")


def _neighbour_arm(cfg: KernelConfig, rule: boundaries.BoundaryRule, face: int) -> list[str]:
    lat = cfg.lattice
    normal = boundaries.face_normal(lat, face)
    lines = []
    for i, (k, offset) in rule.sources(lat, normal).items():
        d = list(offset) + [0] * (3 - lat.d)
        checks, coords = [], []
        for a, (axis, n, step) in enumerate(zip("xyz", ("nx", "ny", "nz"), d, strict=True)):
            if step == 0:
                coords.append(axis)
                continue
            v = f"{axis} + ({step})"
            coords.append(f"((periodic & {1 << a}) ? ({v} + {n}) % {n} : {v})")
            checks.append(f"((periodic & {1 << a}) || ({v} >= 0 && {v} < {n}))")
        ok = " && ".join(checks) if checks else "true"
        lines.append(f"if ({ok}) {{ const int X = {coords[0]}, Y = {coords[1]}, "
                     f"Z = {coords[2]}; const int m = X + nx * (Y + ny * Z); "
                     "const tag_t tm = tags[m]; "
                     "if ((tm & TAG_KIND_MASK) != KIND_WALL) { "
                     f"{_streamed(cfg, k, f'f[{i}]')} }} }}")
    return lines


def _local_arm(cfg: KernelConfig, rule: boundaries.BoundaryRule, face: int) -> list[str]:
    lat = cfg.lattice
    em = Emitter(prefix="b")
    f = [Expr(f"a{i}", atom=True) for i in range(lat.q)]
    value = [Expr(f"v[{c}]", atom=True) for c in range(4)]
    normal = boundaries.face_normal(lat, face)
    rebuilt = rule.local(lat, normal, f, em.let, value, cfg.force)
    lines = [f"const real_t* v = open_values + 4 * (base + {_plane_index(face)});"]
    lines += em.lines
    lines += [f"f[{i}] = {r};" for i, r in enumerate(rebuilt) if r is not f[i]]
    return lines


def _interpolated_arm(cfg: KernelConfig) -> list[str]:
    """Links of an INTERPOLATED node: its weight row is found by binary search in the sorted
    node list, then each cut link takes :func:`.interpolated.interpolated_bounce` (traced)."""
    lat = cfg.lattice
    row = 3 * (lat.q - 1)
    lines = ["const int n = x + nx * (y + ny * z);",
             "int lo = 0, hi = n_curved - 1;",
             "while (lo < hi) { const int mid = (lo + hi) >> 1; "
             "if (curved_nodes[mid] < n) lo = mid + 1; else hi = mid; }",
             f"const real_t* w = curved_weights + (size_t){row} * lo;"]
    for i in range(1, lat.q):
        j = lat.opposite[i]
        cx, cy, cz = _c3(lat, i)
        beyond = (f"((x + ({cx}) + nx) % nx) + nx * (((y + ({cy}) + ny) % ny) + ny * "
                  f"((z + ({cz}) + nz) % nz))")
        weights = [Expr(f"w[{3 * (i - 1) + k}]", atom=True) for k in range(3)]
        setup, term = _wall_term(cfg, i) if cfg.moving_walls else ("", "")
        own = [Expr(cuda.pop_load(lat, k, f"src[{k} * N + n]", cfg.store), atom=True)
               for k in (j, i)]
        value = interpolated_bounce(weights, own[0], Expr("next", atom=True), own[1],
                                    Expr(term) if term else 0.0)
        # x + c_i is read only where it is fluid (b != 0): elsewhere it may be beyond the box
        lines.append(f"if ((tag >> {LINK_SHIFT + i - 1}) & 1) {{ {setup} "
                     f"const real_t next = {weights[1]} != (real_t)0 ? "
                     f"{cuda.pop_load(lat, j, f'src[{j} * N + {beyond}]', cfg.store)} : (real_t)0;"
                     f" f[{i}] = {value}; }}")
    return lines


def _open_function(cfg: KernelConfig) -> str:
    """``open_boundary``: one arm per (kind, face) present, each traced from
    :mod:`.boundaries`. __noinline__ keeps its registers out of the bulk path."""
    q = cfg.lattice.q
    head = ("__device__ __noinline__ void open_boundary(real_t* f, const tag_t tag, const int x,"
            " const int y, const int z, const int nx, const int ny, const int nz,"
            f" const int periodic, const {_pop_type(cfg)}* __restrict__ src,"
            " const tag_t* __restrict__ tags, const real_t* __restrict__ bc,"
            " const int* __restrict__ edge_bc, const int* __restrict__ open_table,"
            " const real_t* __restrict__ open_values, const int* __restrict__ curved_nodes,"
            " const real_t* __restrict__ curved_weights, const int n_curved)")
    body = ["const size_t N = (size_t)nx * ny * nz;",
            "const int id = (int)((tag >> TAG_BC_SHIFT) & TAG_BC_MASK);",
            "const unsigned kind = (unsigned)(tag & TAG_KIND_MASK);",
            "const int face = open_table[2 * id];",
            "const int base = open_table[2 * id + 1];",
            "(void)N; (void)base; (void)src; (void)tags; (void)bc; (void)edge_bc;",
            "(void)face; (void)curved_nodes; (void)curved_weights; (void)n_curved;"]
    body += [f"const real_t a{i} = f[{i}];" for i in range(q)]
    body += [f"(void)a{i};" for i in range(q)]
    for kind, face_name in cfg.boundaries:
        face = boundaries.face_code(face_name)
        rule = boundaries.rule(kind)
        arm = (_neighbour_arm if rule.neighbour else _local_arm)(cfg, rule, face)
        body.append(f"if (kind == KIND_{kind} && face == {face}) {{  // {kind} {face_name}")
        body += ["    " + line for line in arm]
        body += ["    return;", "}"]
    if cfg.interpolated:
        body.append("if (kind == KIND_INTERPOLATED) {")
        body += ["    " + line for line in _interpolated_arm(cfg)]
        body.append("}")
    return head + "\n{\n" + "\n".join("    " + line for line in body) + "\n}\n"


def generate(cfg: KernelConfig) -> str:
    """The complete CUDA source for one configuration (deterministic text)."""
    parities = ("even", "odd") if cfg.scheme == "aa" else ("",)
    parts = [_header(cfg), cuda.WALL_ID]
    if cfg.box_walls:
        parts.append(face_tag_function(cfg.lattice, cfg.box_walls))
    if cfg.boundaries or cfg.interpolated:
        parts.append(_open_function(cfg))
    pieces = ("bulk", "walls") if cfg.wall_launch == "split" else ("",)
    for parity in parities:
        for store in (False, True):
            parts += [_kernel(cfg, parity, store, piece) for piece in pieces]
    return "\n".join(parts)
