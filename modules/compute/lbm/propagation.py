"""Propagation variants of the dense pull and push kernels (Mawson & Revell 2014): how the
populations with c_x ≠ 0 cross between neighbouring threads.

* ``direct``: every load (pull) or store (push) goes to x ± 1 in global memory, misaligned by
  one element (what :mod:`.kernels` emits on its own).
* ``shared``: the block moves its row aligned through shared memory and shifts it there by ±1;
  the one thread at the block's edge reads (pull) or writes (push) its neighbour directly.
* ``shuffle``: the same shift through ``__shfl_up_sync`` / ``__shfl_down_sync`` within a warp;
  the thread at the warp's edge reads or writes directly.

All three move the same values to the same places, so results are bit-identical. Every thread
of a block must reach the barrier or the shuffle: the prologue clamps threads beyond the box to
the last node instead of returning (:func:`clamped_prologue`), and a push kernel keeps solid
nodes running to the stores with ``live`` false instead of returning.

In a push step a node's neighbour decides whether the value it receives is written: the sender
broadcasts a mask of the directions it delivers (its own wall links are bounced back at home),
so each (slot, node) is written by exactly one thread, as in ``direct``.
"""

from __future__ import annotations

from thelma_py.codegen import cuda
from thelma_py.lattice import Lattice

PROPAGATIONS = ("direct", "shared", "shuffle")
FULL = "0xffffffffu"


def check(propagation: str, scheme: str, open_kinds: bool) -> None:
    """Raise where a variant cannot run: it needs two buffers and the plain wall path."""
    if propagation == "direct":
        return
    if scheme not in ("pull", "push"):
        raise ValueError(f"propagation {propagation!r} runs with streaming 'pull' or 'push' "
                         f"(two buffers), not {scheme!r}; use propagation='direct'")
    if open_kinds:
        raise ValueError(f"propagation {propagation!r} runs without open boundaries or "
                         "interpolated bodies; use propagation='direct'")


def clamped_prologue(prologue: str) -> str:
    """The thread prologue with threads beyond the box clamped to x = nx − 1 (``inside``
    false) instead of returning, so that they reach the barrier or shuffle."""
    head = "    const int x = blockIdx.x * blockDim.x + threadIdx.x;"
    ret = "    if (x >= nx) return;\n"
    assert head in prologue and ret in prologue
    return prologue.replace(ret, "").replace(
        head, "    const int x_thread = blockIdx.x * blockDim.x + threadIdx.x;\n"
              "    const bool inside = x_thread < nx;\n"
              "    const int x = inside ? x_thread : nx - 1;")


def moving(lattice: Lattice) -> list[int]:
    """Directions with c_x ≠ 0 (the misaligned ones)."""
    return [i for i in range(lattice.q) if cuda.c3(lattice, i)[0] != 0]


def _row(lattice: Lattice, i: int, sign: int) -> str:
    """Index of the node at (x, y + sign c_y, z + sign c_z): the aligned row of direction i."""
    _, cy, cz = (sign * v for v in cuda.c3(lattice, i))
    return (f"(x + nx * ({cuda.axis_index('y', cy)} + ny * {cuda.axis_index('z', cz)}))")


def _edge(propagation: str, toward: int) -> str:
    """C condition: this thread has no neighbour in its block (shared) or warp (shuffle) on
    the side ``toward`` (+1: x + 1, −1: x − 1), or that neighbour wraps around the box."""
    if propagation == "shared":
        lane, last = "threadIdx.x", "blockDim.x - 1"
    else:
        lane, last = "(threadIdx.x & 31)", "31"
    return f"({lane} == {last} || x == nx - 1)" if toward > 0 else f"({lane} == 0 || x == 0)"


def _shift(propagation: str, name: str, value: str, toward: int) -> str:
    """C expression: ``value`` of the thread at x + toward (shuffle), or the shared array
    ``name`` at that thread (shared)."""
    if propagation == "shared":
        return f"{name}[threadIdx.x {'+' if toward > 0 else '-'} 1]"
    return f"__shfl_{'down' if toward > 0 else 'up'}_sync({FULL}, {value}, 1)"


def pull_loads(lattice: Lattice, propagation: str, block: int, loads: list[str]) -> list[str]:
    """Pull loads: ``loads`` (the direct ones, ``real_t f{i} = src[...];``) with the c_x ≠ 0
    ones replaced by an aligned load of the upstream row and a shift by −c_x."""
    out, shifts = [], []
    for i, line in enumerate(loads):
        cx = cuda.c3(lattice, i)[0]
        if cx == 0:
            out.append(line)
            continue
        direct = line.split(" = ", 1)[1].rstrip(";")
        aligned = f"src[{i} * N + {_row(lattice, i, -1)}]"
        toward = -cx  # f_i comes from x − c_x
        if propagation == "shared":
            out += [f"__shared__ real_t s{i}[{block}];", f"s{i}[threadIdx.x] = {aligned};"]
        else:
            out.append(f"const real_t a{i} = {aligned};")
        shifts.append(f"real_t f{i} = {_edge(propagation, toward)} ? {direct} : "
                      f"{_shift(propagation, f's{i}', f'a{i}', toward)};")
    if propagation == "shared":
        out.append("__syncthreads();")
    if propagation == "shuffle":  # every lane shuffles; the edge lane then reads directly
        shifts = [_shuffled_pull(s) for s in shifts]
    return out + shifts + ["if (!inside) return;"]


def _shuffled_pull(line: str) -> str:
    """``real_t fi = edge ? direct : shfl(...);`` → shuffle first (all lanes), then the edge
    lane's direct read, so that no lane skips the shuffle."""
    target, rest = line.split(" = ", 1)
    edge, rest = rest.split(" ? ", 1)
    direct, shuffled = rest.rsplit(" : ", 1)
    name = target.split()[-1]
    return f"{target} = {shuffled.rstrip(';')}; if {edge} {name} = {direct};"


def push_writes(lattice: Lattice, propagation: str, block: int, writes: list[str],
                link_shift: int, store_fn: str = "store") -> list[str]:
    """Push stores: ``writes`` (the direct ones of :func:`.kernels._writes`) with the c_x ≠ 0
    ones replaced by a shift by +c_x and an aligned store of the receiving row. A store
    happens where ``live`` (a fluid node inside the box)."""
    opp = lattice.opposite
    out = ["const unsigned long long sent = live ? "
           f"~((unsigned long long)tag >> {link_shift}) : 0ull;"]
    after = []
    if propagation == "shared":
        out += [f"__shared__ unsigned long long s_sent[{block}];", "s_sent[threadIdx.x] = sent;"]
    else:
        out += [f"const unsigned long long sent_m = __shfl_up_sync({FULL}, sent, 1);",
                f"const unsigned long long sent_p = __shfl_down_sync({FULL}, sent, 1);"]
    for i, line in enumerate(writes):
        cx = cuda.c3(lattice, i)[0]
        if cx == 0:
            out.append(f"if (live) {{ {line} }}" if "\n" not in line else
                       "if (live) {\n    " + line.replace("\n", "\n    ") + "\n}")
            continue
        j = opp[i]
        wall = f"((tag >> {link_shift + j - 1}) & 1)"
        # the direct statement ends with store(wall ? bounce : target, v): keep it for the
        # wall link and the edge thread, whose receiver lies beyond the block or warp
        *setup, store = line.split("\n")
        value = store.rsplit(", ", 1)[1].rstrip(");")
        out += setup
        out.append(f"if (live && ({wall} || {_edge(propagation, cx)})) {store}")
        toward = -cx  # the receiver at x takes what x − c_x sent
        target = f"dst[{i} * N + {_row(lattice, i, +1)}]"
        mask = (f"s_sent[threadIdx.x {'+' if toward > 0 else '-'} 1]" if propagation == "shared"
                else f"sent_{'p' if toward > 0 else 'm'}")
        if propagation == "shared":
            out.append(f"__shared__ real_t s{i}[{block}];")
            out.append(f"s{i}[threadIdx.x] = {value};")
            got = f"s{i}[threadIdx.x {'+' if toward > 0 else '-'} 1]"
        else:
            out.append(f"const real_t r{i} = {_shift(propagation, '', value, toward)};")
            got = f"r{i}"
        receive = (f"if (inside && !{_edge(propagation, toward)} && (({mask} >> {j - 1}) & 1))"
                   f" {store_fn}(&{target}, {got});")
        # shared: after the barrier; shuffle: at once (no value stays live until the end)
        (after if propagation == "shared" else out).append(receive)
    if propagation == "shared":
        out.append("__syncthreads();")
    return out + after
