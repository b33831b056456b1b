"""CUDA source for sparse-storage LBM steps (see :mod:`.sparse` for the layout), generated from
the lattice descriptor and the traced collision and boundary code, like the dense kernels.

One thread per stored node n, populations (Q, N) structure of arrays. Pull with two buffers:
for i ≥ 1, ``j = nbr[(i − 1) N + n]``; j ≥ 0 reads ``src[i N + j]``, j < 0 reads the bounced
``src[ī N + n]`` (one load either way, the index is chosen) plus Ladd's term of boundary row
−1 − j when walls move. Then the collision (:func:`.collision.collide`, traced) and the stores.

Open-boundary nodes (a plane of the box) and nodes next to interpolated bodies run a second,
small kernel after the bulk one: it recomputes them from ``src`` with their rule
(:mod:`.boundaries`, :mod:`.interpolated`, traced; one arm per (kind, face) and one for
interpolated links) and overwrites what the bulk kernel wrote there. Both kernels exist
twice: ``*_macro`` also stores ρ and u.

The kernels of the in-place AA scheme (``AA_KERNELS``, described in :mod:`.sparse_aa`) are
generated here too, from the same pieces.
"""

from __future__ import annotations

from thelma_py.codegen import cuda
from thelma_py.codegen.expr import Emitter, Expr
from thelma_py.codegen.kernel_args import GIVEN, Arg, KernelArgs
from thelma_py.modules.compute.lbm import boundaries
from thelma_py.modules.compute.lbm.collision import uniform_arguments, wall_momentum
from thelma_py.modules.compute.lbm.interpolated import interpolated_bounce
from thelma_py.modules.compute.lbm.kernels import STORE16, KernelConfig, _collision
from thelma_py.modules.compute.lbm.sparse import AA_REFUSAL
from thelma_py.store16 import FORMATS, cuda_functions

KERNELS = {False: "lbm_sparse_step", True: "lbm_sparse_step_macro"}
OPEN_KERNELS = {False: "lbm_sparse_open", True: "lbm_sparse_open_macro"}


def kernel_name(cfg: KernelConfig) -> str:
    return "sparse_" + cfg.name


def _check(cfg: KernelConfig) -> None:
    if cfg.scheme != "pull":
        raise ValueError(f"sparse kernels stream by pull (two buffers) or AA (one, "
                         f":mod:`.sparse_aa`), not {cfg.scheme!r}")


def _ladd(cfg: KernelConfig, i: int):
    """Ladd's term of population i for the wall of boundary row ``r`` (traced)."""
    row = "bc[4 * r + {}]"
    velocity = [Expr(row.format(a), atom=True) for a in range(cfg.lattice.d)]
    return wall_momentum(cfg.lattice, i, velocity, Expr(row.format(3), atom=True))


def _load(cfg: KernelConfig, i: int, node: str, target: str) -> str:
    """C statement: ``target`` = streamed population i of stored node ``node`` (pull through
    the neighbour table, bounce-back entries decoded)."""
    lat = cfg.lattice
    if i == 0:
        return f"{target} = {cuda.pop_load(lat, 0, f'src[{node}]', cfg.store)};"
    opp = int(lat.opposite[i])
    read = cuda.pop_load(lat, i, f"src[j >= 0 ? {i} * N + j : {opp} * N + {node}]", cfg.store)
    text = f"{{ const int j = nbr[{i - 1} * N + {node}]; {target} = {read};"
    if cfg.moving_walls:
        text += f" if (j < 0) {{ const int r = -1 - j; {target} += {_ladd(cfg, i)}; }}"
    return text + " }"


def _header(cfg: KernelConfig) -> str:
    lines = cuda.header(kernel_name(cfg), __name__, cfg.real)
    if cfg.store == "fp32":
        return "\n".join(lines + [cuda.STORE])
    return "\n".join(lines + [cuda_functions(FORMATS[cfg.store]), STORE16])


def step_args(scheme: str, open_nodes: bool = False, store: str = "fp32",
              uniforms: tuple[str, ...] = ()) -> KernelArgs:
    """Arguments of the sparse kernels: the buffers (``f`` for AA, else ``src`` and ``dst``;
    ``pop_t`` in 16-bit storage) and the open kernel's node arrays
    (:func:`.sparse_cuda.open_arrays`) are given at each launch, the rest is held by the
    engine (:class:`.sparse_cuda.CudaSparseLbm`), the collision model's ``uniforms`` last
    (:func:`.collision.uniform_arguments`)."""
    pop = "real_t" if store == "fp32" else "pop_t"
    buffers = ([Arg("f", f"{pop}*", GIVEN)] if scheme == "aa" else
               [Arg("src", f"const {pop}*", GIVEN), Arg("dst", f"{pop}*", GIVEN)])
    lines = [buffers, [Arg("nbr", "const int*"), Arg("bc", "const real_t*")],
             [Arg("omega", "real_t"), Arg("omega_minus", "real_t"),
              Arg("n_nodes", "int", "nodes")],
             [Arg("rho_out", "real_t*", "rho"), Arg("u_out", "real_t*", "u")]]
    if open_nodes:
        lines += [[Arg("n_open", "int"), Arg("open_node", "const int*", GIVEN),
                   Arg("open_arm", "const int*", GIVEN)],
                  [Arg("open_values", "const real_t*", GIVEN),
                   Arg("open_src", "const int*", GIVEN)],
                  [Arg("curved", "const real_t*", GIVEN)]]
    if uniforms:
        lines.append([Arg(name, "real_t") for name in uniforms])
    return KernelArgs("lbm sparse open" if open_nodes else "lbm sparse step", lines)


def _signature(cfg: KernelConfig, name: str, open_nodes: bool) -> str:
    return step_args(cfg.scheme, open_nodes, cfg.store,
                     uniform_arguments(cfg.relaxation)).signature(name, cfg.launch_bounds)


def _local_arm(cfg: KernelConfig, rule: boundaries.BoundaryRule, face: int) -> list[str]:
    """A local rule on a0..a{Q-1} with this node's values v (ux, uy, uz, ρ)."""
    lat = cfg.lattice
    em = Emitter(prefix="b")
    a = [Expr(f"a{i}", atom=True) for i in range(lat.q)]
    value = [Expr(f"v[{c}]", atom=True) for c in range(4)]
    rebuilt = rule.local(lat, boundaries.face_normal(lat, face), a, em.let, value, cfg.force)
    return (["const real_t* v = open_values + 4 * t;"] + em.lines
            + [f"f{i} = {r};" for i, r in enumerate(rebuilt) if r is not a[i]])


def _neighbour_arm(cfg: KernelConfig, rule: boundaries.BoundaryRule, face: int) -> list[str]:
    """A copy rule: missing f_i = streamed population k of the stored node open_src[i][t]
    (−1 where that node is solid or beyond a face: the bounced value stays)."""
    lat = cfg.lattice
    lines = []
    for i, (k, _) in rule.sources(lat, boundaries.face_normal(lat, face)).items():
        lines.append(f"{{ const int m = open_src[{i} * n_open + t]; "
                     f"if (m >= 0) {_load(cfg, k, 'm', f'f{i}')} }}")
    return lines


def _interpolated_arm(cfg: KernelConfig) -> list[str]:
    """Interpolated bounce-back (:func:`.interpolated.interpolated_bounce`, traced) on every
    wall link of the node, with its weight rows ``curved[t]`` ((Q − 1) x 3; halfway links
    carry (1, 0, 0)); x + c_i is the upstream entry of ī, read with weight 0 where solid."""
    lat = cfg.lattice
    lines = [f"const real_t* w = curved + (size_t){3 * (lat.q - 1)} * t;"]
    for i in range(1, lat.q):
        j = int(lat.opposite[i])
        weights = [Expr(f"w[{3 * (i - 1) + k}]", atom=True) for k in range(3)]
        own = [Expr(cuda.pop_load(lat, k, f"src[{k} * N + o]", cfg.store), atom=True)
               for k in (j, i)]
        value = interpolated_bounce(weights, own[0], Expr("next", atom=True), own[1],
                                    _ladd(cfg, i) if cfg.moving_walls else 0.0)
        beyond = cuda.pop_load(lat, j, f"src[{j} * N + (k >= 0 ? k : o)]", cfg.store)
        lines.append(f"{{ const int e = nbr[{i - 1} * N + o]; if (e < 0) {{ "
                     f"const int r = -1 - e; (void)r; const int k = nbr[{j - 1} * N + o]; "
                     f"const real_t next = {beyond}; "
                     f"f{i} = {value}; }} }}")
    return lines


def _arms(cfg: KernelConfig):
    """(comment, lines) of the open kernel's arms, numbered as ``open_arm`` numbers them:
    the (kind, face) pairs of ``cfg.boundaries``, then interpolated nodes."""
    for kind, face_name in cfg.boundaries:
        face = boundaries.face_code(face_name)
        rule = boundaries.rule(kind)
        arm = _neighbour_arm if rule.neighbour else _local_arm
        yield f"{kind} {face_name}", arm(cfg, rule, face)
    if cfg.interpolated:
        yield "INTERPOLATED", _interpolated_arm(cfg)


def _body(cfg: KernelConfig, store: bool, node: str) -> str:
    """Loads, (open rule), collision and stores for stored node ``node``."""
    q = cfg.lattice.q
    lines = [f"real_t f{i}; {_load(cfg, i, node, f'f{i}')}" for i in range(q)]
    if node != "n":  # the open-boundary kernel
        lines += [f"const real_t a{i} = f{i}; (void)a{i};" for i in range(q)]
        lines.append("const int arm = open_arm[t];")
        for number, (comment, arm) in enumerate(_arms(cfg)):
            lines.append(f"if (arm == {number}) {{  // {comment}")
            lines += ["    " + line for line in arm]
            lines.append("}")
    code = "\n".join("    " + line for line in lines)
    body, rho, u = _collision(cfg)
    code += "\n" + body
    out = [f"const size_t at = {node};"]
    if store:
        out += [f"rho_out[at] = {rho};"] + [f"u_out[{a} * N + at] = {ua};"
                                             for a, ua in enumerate(u)]
    write = "__stcs" if cfg.streaming_stores else "store"
    out += [f"{write}(&dst[{i} * N + at], {cuda.pop_value(cfg.lattice, i, f'p{i}', cfg.store)});"
            for i in range(q)]
    return code + "\n" + "\n".join("    " + line for line in out)


def _kernel(cfg: KernelConfig, store: bool) -> str:
    prologue = ("    const int n = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (n >= n_nodes) return;\n"
                "    const size_t N = (size_t)n_nodes;")
    return (f"{_signature(cfg, KERNELS[store], False)}\n{{\n{prologue}\n"
            f"{_body(cfg, store, 'n')}\n}}\n")


def _open_kernel(cfg: KernelConfig, store: bool) -> str:
    prologue = ("    const int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (t >= n_open) return;\n"
                "    const size_t N = (size_t)n_nodes;\n"
                "    const int o = open_node[t];")
    return (f"{_signature(cfg, OPEN_KERNELS[store], True)}\n{{\n{prologue}\n"
            f"{_body(cfg, store, 'o')}\n}}\n")


# -- AA in place (one buffer; see :mod:`.sparse_aa`) ----------------------------------------------

AA_KERNELS = {(parity, store): f"lbm_sparse_step_{parity}{'_macro' if store else ''}"
              for parity in ("even", "odd") for store in (False, True)}


def _aa_reads(cfg: KernelConfig, parity: str) -> list[str]:
    lat = cfg.lattice
    lines = []
    for i in range(lat.q):
        j = int(lat.opposite[i])
        if parity == "even" or i == 0:
            lines.append(f"real_t f{i} = {cuda.pop_load(lat, i, f'f[{i} * N + n]', cfg.store)};")
            continue
        read = cuda.pop_load(lat, i, f"f[e >= 0 ? {j} * N + e : {i} * N + n]", cfg.store)
        text = f"real_t f{i}; {{ const int e = nbr[{i - 1} * N + n]; f{i} = {read};"
        if cfg.moving_walls:
            text += f" if (e < 0) {{ const int r = -1 - e; f{i} += {_ladd(cfg, i)}; }}"
        lines.append(text + " }")
    return lines


def _aa_writes(cfg: KernelConfig, parity: str) -> list[str]:
    lat = cfg.lattice
    store = "__stcs" if cfg.streaming_stores else "store"
    lines = []
    for i in range(lat.q):
        j = int(lat.opposite[i])
        value = cuda.pop_value(lat, i, f"p{i}", cfg.store)  # w_i = w_ī: either slot
        if parity == "even":
            lines.append(f"{store}(&f[{j} * N + n], {value});")
            continue
        if i == 0:
            lines.append(f"{store}(&f[n], {value});")
            continue
        # p_i heads for x + c_i = the upstream entry of ī; a wall there sends it back as ī
        text = f"{{ const int k = nbr[{j - 1} * N + n]; real_t v = p{i};"
        if cfg.moving_walls:
            text += f" if (k < 0) {{ const int r = -1 - k; v += {_ladd(cfg, j)}; }}"
        v = cuda.pop_value(lat, i, "v", cfg.store)
        lines.append(text + f" {store}(k >= 0 ? &f[{i} * N + k] : &f[{j} * N + n], {v}); }}")
    return lines


def _aa_kernel(cfg: KernelConfig, parity: str, store: bool) -> str:
    pad = "    "
    lines = ["const int n = blockIdx.x * blockDim.x + threadIdx.x;",
             "if (n >= n_nodes) return;",
             "const size_t N = (size_t)n_nodes;"] + _aa_reads(cfg, parity)
    body, rho, u = _collision(cfg)
    out = []
    if store:
        out += [f"rho_out[n] = {rho};"] + [f"u_out[{a} * N + n] = {ua};"
                                            for a, ua in enumerate(u)]
    out += _aa_writes(cfg, parity)
    signature = _signature(cfg, AA_KERNELS[(parity, store)], False)
    return (f"{signature}\n{{\n" + "\n".join(pad + line for line in lines) + f"\n{body}\n"
            + "\n".join(pad + line for line in out) + "\n}\n")


def generate_aa(cfg: KernelConfig) -> str:
    """The complete CUDA source of one sparse AA configuration (deterministic text)."""
    if cfg.boundaries or cfg.interpolated:
        raise ValueError(AA_REFUSAL)
    parts = [_header(cfg)]
    parts += [_aa_kernel(cfg, parity, store) for parity in ("even", "odd")
              for store in (False, True)]
    return "\n".join(parts)


def generate_sparse(cfg: KernelConfig) -> str:
    """The complete CUDA source of one sparse configuration (deterministic text)."""
    if cfg.scheme == "aa":
        return generate_aa(cfg)
    _check(cfg)
    parts = [_header(cfg)]
    for store in (False, True):
        parts.append(_kernel(cfg, store))
    if cfg.boundaries or cfg.interpolated:
        for store in (False, True):
            parts.append(_open_kernel(cfg, store))
    return "\n".join(parts)
