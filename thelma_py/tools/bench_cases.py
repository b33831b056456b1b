"""The bench cases and the record of a bench run, shared by ``thelma bench`` and its parts
(:mod:`.bench_output`, :mod:`.bench_ranks`), which import them from here rather than from
:mod:`.bench`, which imports them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from pathlib import Path

from thelma_py.geometry import domain

CASES = ("periodic", "cavity", "shell", "probe", "obstacles", "slip-obstacles", "porous")
"""periodic: fully periodic box; cavity: closed box, walls beyond the faces, moving lid;
shell: the same box with a one-node solid shell stored in the lattice and a moving lid layer;
probe: periodic box with one solid node (runs the wall-aware kernel with one flagged tile);
obstacles: channel along the last axis (z, or y in 2D) with a Zou-He velocity inlet, a pressure
outlet, walls beyond the other faces and a sphere (disc) of diameter size/4; slip-obstacles: the
same with free-slip side faces (their edges too; the LW-ACM bar of issue #18); porous: periodic
box of random overlapping solid spheres at a given fluid fraction, MLUPS counted over fluid
nodes (:mod:`thelma_py.tools.bench_porous`)."""


def geometry_for(case: str, size: int, dim: int, fluid_fraction: float = 0.3
                 ) -> domain.Geometry:
    shape = (size,) * dim
    if case == "porous":
        from thelma_py.tools.bench_porous import porous_geometry

        return porous_geometry(size, dim, fluid_fraction)
    lid = (0.05, 0.0, 0.0)[:dim]
    top = "+z" if dim == 3 else "+y"
    if case == "periodic":
        return domain.periodic_box(shape)
    if case == "cavity":
        return domain.cavity(shape, lid, lid_face=top)
    if case == "probe":
        geo = domain.periodic_box(shape)
        geo.wall(domain.Box([size // 2] * dim, [size // 2] * dim))
        return geo
    if case in ("obstacles", "slip-obstacles"):
        from thelma_py.geometry.shapes import Sphere

        # flow along the last axis: its faces hold whole warps of boundary nodes (on an x
        # face every warp would hold one, and run the boundary function for it)
        geo = domain.Geometry(shape)
        flow = [0.0] * dim
        flow[-1] = 0.05
        geo.inlet(f"-{top[1]}", velocity=flow)
        geo.outlet(top, rho=1.0)
        if case == "slip-obstacles":
            for face in ("-x", "+x", "-y", "+y")[: 2 * (dim - 1)]:
                geo.free_slip(face)
        geo.body(Sphere([size / 2 - 0.5] * (dim - 1) + [size / 4], size / 8))
        return geo
    if case == "shell":
        geo = domain.Geometry(shape)
        for face in domain.FACES[: 2 * dim]:
            if face != top:
                geo.wall(geo.face(face))
        geo.wall(geo.face(top), velocity=lid)
        return geo
    raise ValueError(f"unknown bench case {case!r}; valid: {CASES}")


def environment(cp) -> dict:
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    commit = os.environ.get("THELMA_COMMIT", "")  # a copy of a commit, run elsewhere
    try:
        commit = commit or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = "unknown"
    return {"device": name, "driver": cp.cuda.runtime.driverGetVersion(),
            "runtime": cp.cuda.runtime.runtimeGetVersion(), "cupy": cp.__version__,
            "python": platform.python_version(), "commit": commit or "unknown",
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}


def save(path: Path | None, payload: dict) -> None:
    """Write the results JSON atomically (after every configuration, so that a run cut short
    keeps what it measured)."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    tmp.replace(path)
