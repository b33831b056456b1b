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
non-fluid node or a wall link (``tile_flags``); elsewhere the tag is "fluid, no wall link",
so the bulk of a closed box moves no tag bytes. Population loads never wait for the tag: a wall
link re-reads its bounced value afterwards. Each kernel exists twice: ``*_macro`` also stores
ρ and u, which the engine runs only on the last step before the fields are read.
"""

from __future__ import annotations

import attrs
import numpy as np

from thelma_py.codegen.expr import Emitter, Expr
from thelma_py.lattice import Lattice
from thelma_py.modules.compute.lbm import boundaries
from thelma_py.modules.compute.lbm.collision import Relaxation, collide, wall_momentum
from thelma_py.modules.compute.lbm.interpolated import interpolated_bounce
from thelma_py.tags import LINK_SHIFT, OPEN_KINDS, TagLayout

SCHEMES = ("pull", "push", "aa")
TILE = 32
"""Nodes along x per tile flag: one warp, so a clean tile is a uniform branch."""


@attrs.frozen
class KernelConfig:
    """Everything that is baked into the source text (the cache key)."""

    lattice: Lattice
    relaxation: Relaxation
    real: str = attrs.field(validator=attrs.validators.in_(("float", "double")))
    scheme: str = attrs.field(default="pull", validator=attrs.validators.in_(SCHEMES))
    force: tuple | None = None
    moving_walls: bool = True
    """False when every boundary row is at rest: no Ladd term."""
    block: int = 128
    """Threads per block along x (also the __launch_bounds__ limit)."""
    min_blocks: int = 0
    """Minimum resident blocks per SM asked of the compiler (0: let it choose registers)."""
    streaming_stores: bool = False
    """Store populations with the evict-first hint (__stcs)."""
    boundaries: tuple = attrs.field(default=(), converter=lambda v: tuple(sorted(
        (str(k), str(f)) for k, f in v)))
    """(node kind name, face) pairs of the open boundaries present; () for none."""
    interpolated: bool = attrs.field(default=False)
    """INTERPOLATED nodes present (bodies with interpolated bounce-back; pull only)."""

    @interpolated.validator
    def _check_interpolated(self, _, value):
        if value and self.scheme != "pull":
            raise ValueError("interpolated bodies read the post-collision populations of two "
                             "nodes per link, which only the pull scheme holds; use "
                             "streaming='pull'")

    @boundaries.validator
    def _check_boundaries(self, _, value):
        names = {k.name for k in OPEN_KINDS}
        for kind, face in value:
            try:  # a face, or an edge / corner of free-slip faces ('-y+z')
                boundaries.face_normal(self.lattice, face)
                edge = boundaries.face_code(face) >= boundaries.EDGE_CODE
            except ValueError:
                edge = None
            if kind not in names or edge is None or (edge and kind != "FREE_SLIP"):
                raise ValueError(f"unknown open boundary ({kind!r}, {face!r})")
            if self.scheme == "aa" and boundaries.is_neighbour_kind(kind):
                raise ValueError(
                    f"{kind.lower().replace('_', '-')} boundaries read a neighbour's streamed "
                    "populations, which the in-place AA scheme overwrites in the same step; "
                    "use streaming='pull' or 'push'")

    @property
    def name(self) -> str:
        return f"lbm_{self.lattice.name}_{self.relaxation.kind}_{self.real}_{self.scheme}"

    @property
    def launch_bounds(self) -> str:
        bounds = f"{self.block}, {self.min_blocks}" if self.min_blocks else f"{self.block}"
        return f"__launch_bounds__({bounds})"


def _c3(lattice: Lattice, i: int) -> tuple[int, int, int]:
    c = [int(v) for v in lattice.c[i]]
    return tuple(c + [0] * (3 - len(c)))


def _axis_index(axis: str, step: int) -> str:
    """Name of the wrapped coordinate x + step along an axis ('x', 'xm', 'xp')."""
    return axis if step == 0 else f"{axis}{'p' if step > 0 else 'm'}"


def _node(lattice: Lattice, i: int, sign: int) -> str:
    """Index expression of the node x + sign * c_i (periodic wrap)."""
    cx, cy, cz = (sign * v for v in _c3(lattice, i))
    if (cx, cy, cz) == (0, 0, 0):
        return "n"
    return f"({_axis_index('x', cx)} + nx * ({_axis_index('y', cy)} + ny * {_axis_index('z', cz)}))"


def _header(cfg: KernelConfig) -> str:
    layout = TagLayout(cfg.lattice)
    return "\n".join([
        f"// {cfg.name}: generated by thelma_py.modules.compute.lbm.kernels; do not edit",
        f"typedef {cfg.real} real_t;",
        f"typedef {layout.ctype} tag_t;",
        layout.cuda_defines(),
        f"#define TILE {TILE}",
        "__device__ __forceinline__ void store(real_t* p, real_t v) { *p = v; }",
    ])


def _prologue(offsets: bool = False) -> str:
    """Node coordinates of the thread; with ``offsets`` the grid covers rows y0.. and planes
    z0.. only (a distributed run launches the interior and the boundary planes apart)."""
    y, z = ("blockIdx.y + y0", "blockIdx.z + z0") if offsets else ("blockIdx.y", "blockIdx.z")
    return f"""    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = {y};
    const int z = {z};
    if (x >= nx) return;
    const int ny_ = ny;
    const size_t N = (size_t)nx * ny_ * nz;
    const int n = x + nx * (y + ny_ * z);
    const int xm = x == 0 ? nx - 1 : x - 1, xp = x == nx - 1 ? 0 : x + 1;
    const int ym = y == 0 ? ny - 1 : y - 1, yp = y == ny - 1 ? 0 : y + 1;
    const int zm = z == 0 ? nz - 1 : z - 1, zp = z == nz - 1 ? 0 : z + 1;
    (void)xm; (void)xp; (void)ym; (void)yp; (void)zm; (void)zp;"""


def _wall_term(cfg: KernelConfig, i: int, at: tuple[str, str, str] = ("x", "y", "z")
               ) -> tuple[str, str]:
    """(setup statement, C expression) of Ladd's term for population i bounced back at the node
    with coordinates ``at``.

    The wall is the upstream node x − c_i of the link. Its boundary row comes from its tag when
    it is stored, or from the edge table when it lies beyond a non-periodic face.
    """
    cx, cy, cz = _c3(cfg.lattice, i)
    row = f"bc[4 * id{i} + {{}}]"
    velocity = [Expr(row.format(a), atom=True) for a in range(cfg.lattice.d)]
    term = wall_momentum(cfg.lattice, i, velocity, Expr(row.format(3), atom=True))
    X, Y, Z = at
    setup = (f"const int id{i} = wall_id({X} - ({cx}), {Y} - ({cy}), {Z} - ({cz}), nx, ny, nz, "
             "periodic, tags, edge_bc);")
    return setup, str(term)


_WALL_ID = """
// Boundary row of the (solid) node at unwrapped coordinates (X, Y, Z): from its tag when it is
// stored, else from the edge table indexed by which faces of the domain it lies beyond (27
// regions). edge_bc[27..32] bound the domain's own layers in the stored box along x, y, z
// (the whole box, except on a distributed rank whose ghost layer lies beyond a face).
__device__ __forceinline__ int wall_id(int X, int Y, int Z, int nx, int ny, int nz, int periodic,
                                       const tag_t* __restrict__ tags,
                                       const int* __restrict__ edge_bc)
{
    if (periodic & 1) X = (X + nx) % nx;
    if (periodic & 2) Y = (Y + ny) % ny;
    if (periodic & 4) Z = (Z + nz) % nz;
    if (X >= 0 && X < nx && Y >= 0 && Y < ny && Z >= 0 && Z < nz)
        return (int)((tags[X + (size_t)nx * (Y + (size_t)ny * Z)] >> TAG_BC_SHIFT) & TAG_BC_MASK);
    const int ox = X < edge_bc[27] ? 0 : (X > edge_bc[28] ? 2 : 1);
    const int oy = Y < edge_bc[29] ? 0 : (Y > edge_bc[30] ? 2 : 1);
    const int oz = Z < edge_bc[31] ? 0 : (Z > edge_bc[32] ? 2 : 1);
    return edge_bc[ox + 3 * oy + 9 * oz];
}
"""


def _signature(cfg: KernelConfig, name: str) -> str:
    two = cfg.scheme != "aa"
    arrays = ("const real_t* __restrict__ src, real_t* __restrict__ dst" if two
              else "real_t* __restrict__ f")
    return (f'extern "C" __global__ void {cfg.launch_bounds} {name}(\n'
            f"    {arrays},\n"
            "    const tag_t* __restrict__ tags, const unsigned char* __restrict__ tile_flags,\n"
            "    const real_t* __restrict__ bc, const int* __restrict__ edge_bc, int periodic,\n"
            "    real_t omega, real_t omega_minus, int nx, int ny, int nz,\n"
            "    real_t* __restrict__ rho_out, real_t* __restrict__ u_out,\n"
            "    const int* __restrict__ open_table, const real_t* __restrict__ open_values,\n"
            "    int y0, int z0,\n"
            "    const int* __restrict__ curved_nodes, const real_t* __restrict__ curved_weights,"
            " int n_curved)")


def _reads(cfg: KernelConfig, parity: str) -> tuple[list[str], list[str]]:
    """C statements loading f0..f{Q-1}: (loads, wall fix-ups).

    The loads never depend on the tag, so all Q of them are in flight at once while the tile
    flag and tag arrive; a wall link then re-reads its bounced population (rare)."""
    lat, opp = cfg.lattice, cfg.lattice.opposite
    loads, fixups = [], []
    for i in range(lat.q):
        if cfg.scheme == "pull":
            source, bounce = f"src[{i} * N + {_node(lat, i, -1)}]", f"src[{opp[i]} * N + n]"
        elif cfg.scheme == "push":
            source = bounce = f"src[{i} * N + n]"
        elif parity == "even":
            source = bounce = f"f[{i} * N + n]"
        else:
            source, bounce = f"f[{opp[i]} * N + {_node(lat, i, -1)}]", f"f[{i} * N + n]"
        loads.append(f"real_t f{i} = {source};")
        if i == 0 or source == bounce:
            continue
        wall = f"((tag >> {LINK_SHIFT + i - 1}) & 1)"
        fix = f"f{i} = {bounce};"
        if cfg.moving_walls:
            setup, term = _wall_term(cfg, i)
            fix = f"{setup} f{i} = {bounce} + {term};"
        fixups.append(f"if ({wall}) {{ {fix} }}")
    return loads, fixups


def _writes(cfg: KernelConfig, parity: str) -> list[str]:
    """C statements storing p0..p{Q-1}, with bounce-back where the destination is a wall."""
    lat, opp = cfg.lattice, cfg.lattice.opposite
    store = "__stcs" if cfg.streaming_stores else "store"
    lines = []
    for i in range(lat.q):
        if cfg.scheme == "pull":
            target = bounce = f"dst[{i} * N + n]"
        elif cfg.scheme == "push":
            target, bounce = f"dst[{i} * N + {_node(lat, i, +1)}]", f"dst[{opp[i]} * N + n]"
        elif parity == "even":
            target = bounce = f"f[{opp[i]} * N + n]"
        else:
            target, bounce = f"f[{i} * N + {_node(lat, i, +1)}]", f"f[{opp[i]} * N + n]"
        if i == 0 or target == bounce:
            lines.append(f"{store}({address(target)}, p{i});")
            continue
        # p_i heads for x + c_i; if that node is solid, link ī of x crosses the wall and the
        # population comes straight back as ī, with Ladd's term for direction ī.
        j = opp[i]
        wall = f"((tag >> {LINK_SHIFT + j - 1}) & 1)"
        if cfg.moving_walls:
            setup, term = _wall_term(cfg, j)
            lines.append(f"real_t q{i} = p{i};\n"
                         f"if ({wall}) {{ {setup} q{i} += {term}; }}\n"
                         f"{store}({wall} ? {address(bounce)} : {address(target)}, q{i});")
        else:
            lines.append(f"{store}({wall} ? {address(bounce)} : {address(target)}, p{i});")
    return lines


def address(element: str) -> str:
    """'a[i]' -> '&a[i]' (stores go through a function so that cache hints can be chosen)."""
    return f"&{element}"


def _collision(cfg: KernelConfig) -> tuple[str, Expr, list]:
    em = Emitter()
    f = [Expr(f"f{i}", atom=True) for i in range(cfg.lattice.q)]
    post, rho, u = collide(cfg.relaxation, f, em.let, Expr("omega", atom=True),
                           Expr("omega_minus", atom=True), cfg.force)
    for i, p in enumerate(post):
        em.let(p, f"p{i}")
    return em.code(4), rho, u


def _kernel(cfg: KernelConfig, parity: str, store: bool) -> str:
    suffix = "" if cfg.scheme != "aa" else f"_{parity}"
    name = f"lbm_step{suffix}{'_macro' if store else ''}"
    loads, fixups = _reads(cfg, parity)
    writes = _writes(cfg, parity)
    body, rho, u = _collision(cfg)
    pad = " " * 4
    # Every node runs the wall-aware path: clean tiles take a constant 'fluid, no wall link'
    # tag and move no tag bytes. (Measured on an H200: this path ran a periodic box faster than
    # a variant without any tag logic, 25.6 against 24.8 GLUPS; see benchmarks/NOTES.md.)
    lines = ["const unsigned char tile = "
             "tile_flags[(x / TILE) + ((nx + TILE - 1) / TILE) * (y + ny_ * z)];"]
    lines += loads
    lines += ["const tag_t tag = tile ? tags[n] : (tag_t)KIND_FLUID;"]
    if cfg.boundaries or cfg.interpolated:  # those kinds stream and collide; walls stop
        lines += ["if ((tag & TAG_KIND_MASK) == KIND_WALL) return;"] + fixups
        lines += _open_call(cfg)
    else:
        lines += ["if ((tag & TAG_KIND_MASK) != KIND_FLUID) return;"] + fixups
    code = "\n".join(pad + line.replace("\n", "\n" + pad) for line in lines)
    code += "\n" + body
    if store:
        code += "\n" + "\n".join([f"    rho_out[n] = {rho};"] +
                                  [f"    u_out[{a} * N + n] = {ua};" for a, ua in enumerate(u)])
    code += "\n" + "\n".join(pad + line.replace("\n", "\n" + pad) for line in writes)
    return f"{_signature(cfg, name)}\n{{\n{_prologue(offsets=True)}\n{code}\n}}\n"


def kernel_names(scheme: str) -> dict[tuple[str, bool], str]:
    """Entry points by (parity, store_macro); parity is '' for two-buffer schemes."""
    if scheme == "aa":
        return {(p, s): f"lbm_step_{p}{'_macro' if s else ''}"
                for p in ("even", "odd") for s in (False, True)}
    return {("", s): f"lbm_step{'_macro' if s else ''}" for s in (False, True)}


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


def _plane_index(face: int) -> str:
    """C expression of the node's index in its face plane (see open_nodes.plane_index)."""
    return ("y + ny * z", "x + nx * z", "x + nx * y")[face // 2]


def _streamed(cfg: KernelConfig, k: int, target: str) -> str:
    """C statement: ``target`` = the streamed (pre-collision, wall fix-up included) population
    k at the node m = (X, Y, Z) with tag tm, as a thread of that node would read it."""
    lat = cfg.lattice
    if cfg.scheme == "push":
        return f"{target} = src[{k} * N + m];"
    cx, cy, cz = _c3(lat, k)
    upstream = (f"((X - ({cx}) + nx) % nx) + nx * (((Y - ({cy}) + ny) % ny) + ny * "
                f"((Z - ({cz}) + nz) % nz))")
    bounce = f"src[{lat.opposite[k]} * N + m]"
    setup, term = _wall_term(cfg, k, ("X", "Y", "Z")) if cfg.moving_walls else ("", "")
    bounced = f"{setup} {target} = {bounce} + {term};" if term else f"{target} = {bounce};"
    return (f"if ((tm >> {LINK_SHIFT + k - 1}) & 1) {{ {bounced.strip()} }} "
            f"else {target} = src[{k} * N + {upstream}];")


def _neighbour_arm(cfg: KernelConfig, kind: str, face: int) -> list[str]:
    lat = cfg.lattice
    normal = boundaries.face_normal(lat, face)
    lines = []
    for i, (k, offset) in boundaries.sources(lat, kind, normal).items():
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


def _local_arm(cfg: KernelConfig, kind: str, face: int) -> list[str]:
    lat = cfg.lattice
    em = Emitter(prefix="b")
    f = [Expr(f"a{i}", atom=True) for i in range(lat.q)]
    value = [Expr(f"v[{c}]", atom=True) for c in range(4)]
    normal = boundaries.face_normal(lat, face)
    rebuilt = boundaries.local_rule(lat, kind, normal, f, em.let, value, cfg.force)
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
        value = interpolated_bounce(weights, Expr(f"src[{j} * N + n]", atom=True),
                                    Expr("next", atom=True), Expr(f"src[{i} * N + n]", atom=True),
                                    Expr(term) if term else 0.0)
        # x + c_i is read only where it is fluid (b != 0): elsewhere it may be beyond the box
        lines.append(f"if ((tag >> {LINK_SHIFT + i - 1}) & 1) {{ {setup} "
                     f"const real_t next = {weights[1]} != (real_t)0 ? "
                     f"src[{j} * N + {beyond}] : (real_t)0; f[{i}] = {value}; }}")
    return lines


def _open_function(cfg: KernelConfig) -> str:
    """``open_boundary``: one arm per (kind, face) present, each traced from
    :mod:`.boundaries`. __noinline__ keeps its registers out of the bulk path."""
    q = cfg.lattice.q
    head = ("__device__ __noinline__ void open_boundary(real_t* f, const tag_t tag, const int x,"
            " const int y, const int z, const int nx, const int ny, const int nz,"
            " const int periodic, const real_t* __restrict__ src,"
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
        arm = (_neighbour_arm if boundaries.is_neighbour_kind(kind) else _local_arm)(
            cfg, kind, face)
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
    parts = [_header(cfg), _WALL_ID]
    if cfg.boundaries or cfg.interpolated:
        parts.append(_open_function(cfg))
    for parity in parities:
        for store in (False, True):
            parts.append(_kernel(cfg, parity, store))
    return "\n".join(parts)


def edge_table(tags) -> np.ndarray:
    """Boundary ids of the 27 regions beyond the faces, in wall_id's (ox + 3 oy + 9 oz) order,
    then (first, last) stored layer inside the domain along x, y, z (all layers, except where
    a distributed rank's ghost layer lies beyond a non-periodic face)."""
    halo = tags.halo_bc_id
    if halo.ndim == 2:
        halo = halo[None]
    nz, ny, nx = halo.shape
    table = np.zeros(27 + 6, dtype=np.int32)
    stored = tuple(reversed(tags.tags.shape)) + (1,) * (3 - tags.tags.ndim)
    lower = tuple(tags.lower) + (0,) * (3 - len(tags.lower))
    total = tuple(tags.global_shape) + (1,) * (3 - len(tags.global_shape))
    periodic = tuple(tags.periodic) + (True,) * (3 - len(tags.periodic))
    for a in range(3):
        inside = (0, stored[a] - 1) if periodic[a] else (
            max(0, -lower[a]), min(stored[a], total[a] - lower[a]) - 1)
        table[27 + 2 * a: 29 + 2 * a] = inside
    for oz in range(3):
        for oy in range(3):
            for ox in range(3):
                x = (0, nx // 2, nx - 1)[ox]
                y = (0, ny // 2, ny - 1)[oy]
                z = (0, nz // 2, nz - 1)[oz] if nz > 1 else 0
                table[ox + 3 * oy + 9 * oz] = halo[z, y, x]
    return table


def any_per_tile(mask: np.ndarray) -> np.ndarray:
    """Per 32-node tile along x of a node mask ((Nz,) Ny, Nx): does any node of it hold?
    Shape (Nz or 1, Ny, ceil(Nx / 32)), the layout of the tile flags."""
    mask = mask if mask.ndim == 3 else mask[None]
    nz, ny, nx = mask.shape
    padded = np.pad(mask, ((0, 0), (0, 0), (0, (-nx) % TILE)), constant_values=False)
    return padded.reshape(nz, ny, -1, TILE).any(axis=-1)


def tile_flags(tags) -> np.ndarray:
    """One byte per 32-node tile along x: 1 where a node is not fluid or has a wall link."""
    layout = tags.layout
    plain = (layout.kind(tags.tags) == 1) & (layout.links(tags.tags) == 0)
    return any_per_tile(~plain).astype(np.uint8)
