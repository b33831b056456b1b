"""Why LW-ACM gains (or loses) kinetic energy as τ → ½: the CPU study behind
docs/validation/lwacm_energy.md.

Four parts, all on the NumPy engines (D2Q9, fp64, periodic):

1. ``table``: the issue's 2D Taylor-Green table (E/E0 after 200 / 800 / 1600 steps) for BGK LBM
   and both LW-ACM schemes, with the artificial Mach number u0 / c_a, c_a = √((2τ − 1)/3).
2. ``literal``: eq. (11) of Obrecht et al. (2014) coded again, literally, with np.roll (no code
   of the plug-in) and compared with both engines after 200 steps.
3. ``linear``: von Neumann analysis. The update is linearised about a uniform state (ρ = 1, U)
   for a Fourier mode k by differentiating the literal update numerically; the eigenvalues of the
   3 x 3 amplification matrix give the sound speed and the decay of the shear mode.
4. ``convergence``: decay rate of a resolved 2D vortex against ν (kx² + ky²): in diffusive
   scaling (τ and Re fixed, u0 ∝ 1/N, so u0 / c_a ∝ 1/N) and in acoustic scaling (u0 fixed).

Run (about 3 minutes on one core)::

    python benchmarks/lwacm_energy.py --json docs/validation/lwacm_energy.json
    python benchmarks/lwacm_energy.py --plot docs/validation/lwacm_energy.json

The plot step needs matplotlib and writes docs/validation/lwacm_energy.png.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

import thelma_py as tp
from thelma_py.cases import taylor_green

C = np.array([(0, 0), (1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)])
W = np.array([4 / 9] + [1 / 9] * 4 + [1 / 36] * 4)


def artificial_sound_speed(tau: float) -> float:
    """c_a = √((2τ − 1)/3) = c_s √(1 − κ): the Taylor expansion of eq. (11) gives
    ∂t ρ + (1 − κ) ∇·(ρu) = ∇²ρ / 6 and ∂t(ρu) + ∇·(ρuu) = −∇ρ/3 + ν(∇²(ρu) + 2∇∇·(ρu))."""
    return math.sqrt((2.0 * tau - 1.0) / 3.0)


# -- 2. eq. (11), literally -----------------------------------------------------------------------
def _feq(rho, u):
    cu = np.einsum("ia,a...->i...", C, u)
    usq = (u * u).sum(axis=0)
    return W[:, None, None] * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * usq)


def _fodd(rho, u):
    return 0.5 * (_feq(rho, u) - _feq(rho, -u))


def literal_step(rho, u, kappa):
    """f_i(x, t+1) = f^(e)_i(x − c_i) + κ (f^(e,o)_i(x) − f^(e,o)_i(x − c_i)); (ρ, u) of it."""
    feq, fo = _feq(rho, u), _fodd(rho, u)
    f = np.empty_like(feq)
    for i, (cx, cy) in enumerate(C):
        shift = lambda a, cx=cx, cy=cy: np.roll(a, (cy, cx), axis=(0, 1))  # noqa: E731
        f[i] = shift(feq[i]) + kappa * (fo[i] - shift(fo[i]))
    rho = f.sum(axis=0)
    return rho, np.einsum("ia,i...->a...", C, f) / rho


# -- 1. the table ---------------------------------------------------------------------------------
def kinetic_energy(u) -> float:
    return 0.5 * float((u * u).sum())


def tgv_energy(scheme: str, n: int, tau: float, u0: float, checkpoints=(200, 800, 1600)):
    nu = (tau - 0.5) / 3.0
    init = tp.plugin("init", "taylor-green", u0=u0, size=(n, n))
    compute = (tp.plugin("compute", "lbm", nu=nu, collision="bgk") if scheme == "lbm"
               else tp.plugin("compute", scheme, nu=nu))
    solver = tp.compose("D2Q9", tp.geometry.periodic_box((n, n)), compute, init=init,
                        device="cpu")
    e0 = kinetic_energy(solver.velocity())
    out, done = {}, 0
    for step in checkpoints:
        solver.step(step - done)
        done = step
        out[step] = kinetic_energy(solver.velocity()) / e0
    k2 = 2 * (2 * math.pi / n) ** 2
    exact = {s: math.exp(-2 * nu * k2 * s) for s in checkpoints}
    return {"scheme": scheme, "n": n, "tau": tau, "u0": u0,
            "mach_artificial": u0 / artificial_sound_speed(tau) if scheme != "lbm" else None,
            "energy": out, "exact": exact}


TABLE = [("lbm", 64, 0.501, 0.05), ("lwacm-fused", 64, 0.6, 0.05), ("lwacm", 64, 0.6, 0.05),
         ("lwacm-fused", 64, 0.52, 0.05), ("lwacm-fused", 64, 0.501, 0.05),
         ("lwacm", 64, 0.501, 0.05), ("lwacm-fused", 128, 0.501, 0.05),
         ("lwacm-fused", 64, 0.501, 0.01), ("lwacm-fused", 64, 0.501, 0.002),
         ("lwacm-fused", 64, 0.52, 0.01)]


def literal_check(n=64, tau=0.501, u0=0.05, steps=200) -> dict:
    """Max |Δu| / u0 between the literal eq. (11) and each engine after ``steps`` steps."""
    kappa = 2.0 * (1.0 - tau)
    nu = (tau - 0.5) / 3.0
    init = tp.plugin("init", "taylor-green", u0=u0, size=(n, n))
    out = {}
    for scheme in ("lwacm", "lwacm-fused"):
        solver = tp.compose("D2Q9", tp.geometry.periodic_box((n, n)),
                            tp.plugin("compute", scheme, nu=nu), init=init, device="cpu")
        rho, u = np.array(solver.density(), dtype=float), np.array(solver.velocity(), dtype=float)
        for _ in range(steps):
            rho, u = literal_step(rho, u, kappa)
        solver.step(steps)
        out[scheme] = float(np.abs(np.asarray(solver.velocity()) - u).max() / u0)
    return out


# -- 3. von Neumann -------------------------------------------------------------------------------
def amplification(k, tau: float, background=(0.0, 0.0), h: float = 1e-7) -> np.ndarray:
    """3 x 3 matrix G with (δρ, δu)(t+1) = G (δρ, δu)(t) for the mode e^{i k·x}, about the
    uniform state ρ = 1, u = background: central differences of the literal update on a
    single node whose upstream values carry the phase e^{−i k·c_i}."""
    kappa = 2.0 * (1.0 - tau)
    phase = np.exp(-1j * (C @ np.asarray(k, dtype=float)))
    base = np.array([1.0, *background], dtype=complex)

    def update(w_here):  # the update of the node x = 0 given the mode amplitude
        def fe(state):
            rho, u = state[0], state[1:]
            cu = C @ u
            return W * rho * (1 + 3 * cu + 4.5 * cu * cu - 1.5 * (u @ u))

        def fo(state):
            rho, u = state[0], state[1:]
            return 3 * W * rho * (C @ u)

        here = base + w_here
        f = np.empty(9, dtype=complex)
        for i in range(9):
            up = base + w_here * phase[i]
            f[i] = fe(up)[i] + kappa * (fo(here)[i] - fo(up)[i])
        rho = f.sum()
        return np.array([rho, *(C.T @ f) / rho])

    g = np.empty((3, 3), dtype=complex)
    for col in range(3):
        e = np.zeros(3, dtype=complex)
        e[col] = h
        g[:, col] = (update(e) - update(-e)) / (2 * h)
    return g


def linear_study(taus=(0.6, 0.52, 0.501), n=64) -> dict:
    """Per τ: the sound speed from the acoustic eigenvalues at k = 2π/n (along x), the shear
    eigenvalue against 1 − ν k²-ish exact FTCS value 1 − (2τ − 1)(1 − cos k)/3, and the largest
    |λ| over all k of the 64² lattice, at rest and with U = (0.05, 0)."""
    out = {}
    for tau in taus:
        k = 2 * math.pi / n
        lam = np.linalg.eigvals(amplification((k, 0.0), tau))
        acoustic = lam[np.argsort(-np.abs(np.angle(lam)))[:2]]
        shear = lam[np.argmin(np.abs(np.angle(lam)))]
        speed = float(np.abs(np.angle(acoustic)).max() / k)
        worst = {}
        for u in (0.0, 0.05):
            m = 0.0
            for kx in 2 * np.pi * np.arange(n) / n:
                for ky in 2 * np.pi * np.arange(n // 2 + 1) / n:
                    m = max(m, float(np.abs(np.linalg.eigvals(
                        amplification((kx, ky), tau, (u, 0.0)))).max()))
            worst[str(u)] = m
        out[str(tau)] = {
            "sound_speed_measured": speed, "sound_speed_taylor": artificial_sound_speed(tau),
            "sound_speed_lbm": 1 / math.sqrt(3),
            "acoustic_modulus": float(np.abs(acoustic).max()),
            "shear_eigenvalue": float(shear.real),
            "shear_ftcs": 1 - (2 * tau - 1) * (1 - math.cos(k)) / 3,
            "max_modulus": worst}
    return out


def stability_threshold(taus=(0.501, 0.52, 0.6), fractions=(0.5, 0.8, 0.95, 1.05, 1.5, 2.0),
                        n: int = 32) -> dict:
    """max |λ| − 1 over the k of an n² lattice for a uniform flow |U| = fraction · c_a, along x
    and along the diagonal (values of ±1e-9 are the noise of the numerical derivative)."""
    out = {}
    ks = 2 * np.pi * np.arange(n) / n
    for tau in taus:
        rows = []
        for frac in fractions:
            speed = frac * artificial_sound_speed(tau)
            growth = []
            for direction in ((1.0, 0.0), (math.sqrt(0.5), math.sqrt(0.5))):
                u = (speed * direction[0], speed * direction[1])
                growth.append(max(float(np.abs(np.linalg.eigvals(
                    amplification((kx, ky), tau, u))).max()) for kx in ks for ky in ks) - 1)
            rows.append({"u_over_ca": frac, "u": speed, "growth_x": growth[0],
                         "growth_diagonal": growth[1]})
        out[str(tau)] = rows
    return out


# -- 4. convergence ------------------------------------------------------------------------------
def decay_error(scheme: str, n: int, tau: float, u0: float, time: float = 0.5) -> float:
    """Relative error of the mean amplitude decay rate −ln(A(T)/u0)/T over T = ``time`` / r
    (r = ν (kx² + ky²), the exact rate): A is the projection on the initial mode."""
    nu = (tau - 0.5) / 3.0
    exact = taylor_green.decay_rate(n, nu)
    steps = max(1, int(round(time / exact)))
    init = tp.plugin("init", "taylor-green", u0=u0, size=(n, n))
    solver = tp.compose("D2Q9", tp.geometry.periodic_box((n, n)),
                        tp.plugin("compute", scheme, nu=nu), init=init, device="cpu")
    solver.step(steps)
    rate = -math.log(taylor_green.amplitude(solver) / u0) / steps
    return rate / exact - 1.0


def convergence(scheme="lwacm-fused", tau=0.6, reynolds=10.0, sizes=(16, 32, 64, 128),
                acoustic_u0=0.05) -> dict:
    """Diffusive scaling: Re = u0 n / (2π ν) fixed, so u0 = 2π ν Re / n. Acoustic: u0 fixed."""
    nu = (tau - 0.5) / 3.0
    diffusive = {n: decay_error(scheme, n, tau, 2 * math.pi * nu * reynolds / n) for n in sizes}
    acoustic = {n: decay_error(scheme, n, tau, acoustic_u0) for n in sizes}
    return {"scheme": scheme, "tau": tau, "reynolds": reynolds,
            "diffusive": diffusive, "acoustic": acoustic, "acoustic_u0": acoustic_u0}


def run_all() -> dict:
    t = time.time()
    result = {"table": [tgv_energy(*row) for row in TABLE]}
    result["literal"] = literal_check()
    result["linear"] = linear_study()
    result["stability"] = stability_threshold()
    result["convergence"] = [convergence(tau=0.6), convergence(tau=0.52, sizes=(16, 32, 64))]
    result["seconds"] = time.time() - t
    return result


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b, c) = plt.subplots(1, 3, figsize=(14, 4))
    ks = np.linspace(0.01, math.pi, 60)
    for tau in (0.6, 0.52, 0.501):
        speed = [abs(np.angle(np.linalg.eigvals(amplification((k, 0.0), tau)))).max() / k
                 for k in ks]
        a.plot(ks, speed, label=f"LW-ACM τ = {tau}")
        a.axhline(artificial_sound_speed(tau), ls=":", color="grey")
    a.axhline(1 / math.sqrt(3), color="k", ls="--", label="LBM c_s = 1/√3")
    a.set(xlabel="k (lattice)", ylabel="phase speed of the acoustic mode",
          title="von Neumann: c_a = √((2τ−1)/3) (dotted)")
    a.legend(fontsize=8)
    for row in data["table"]:
        if row["scheme"] == "lwacm":
            continue
        steps = [int(s) for s in row["energy"]]
        err = [row["energy"][str(s) if str(s) in row["energy"] else s] /
               row["exact"][str(s) if str(s) in row["exact"] else s] - 1 for s in steps]
        if row["mach_artificial"]:
            b.semilogx([row["mach_artificial"]], [abs(err[-1])], "o",
                       label=f"n={row['n']} τ={row['tau']} u0={row['u0']}")
    b.set(xlabel="u0 / c_a", ylabel="|E/E_exact − 1| at step 1600", yscale="log",
          title="2D TGV energy error vs artificial Mach")
    b.legend(fontsize=7)
    for conv in data["convergence"]:
        ns = [int(n) for n in conv["diffusive"]]
        c.loglog(ns, [abs(v) for v in conv["diffusive"].values()], "o-",
                 label=f"diffusive, τ={conv['tau']}, Re={conv['reynolds']}")
        c.loglog(ns, [abs(v) for v in conv["acoustic"].values()], "s--",
                 label=f"acoustic u0={conv['acoustic_u0']}, τ={conv['tau']}")
    n_ref = np.array([16, 64])
    c.loglog(n_ref, 0.05 * (n_ref / 16.0) ** -2, "k:", label="N⁻²")
    c.set(xlabel="N", ylabel="|decay-rate error|", title="convergence of the decay rate")
    c.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="run the study and write its JSON here")
    parser.add_argument("--plot", type=Path, help="plot a JSON written by --json")
    args = parser.parse_args(argv)
    if args.json:
        data = run_all()
        args.json.write_text(json.dumps(data, indent=1))
        print(json.dumps({k: v for k, v in data.items() if k != "table"}, indent=1))
        for row in data["table"]:
            print(row["scheme"], row["n"], row["tau"], row["u0"], row["mach_artificial"],
                  {k: round(v, 3) for k, v in row["energy"].items()},
                  round(list(row["exact"].values())[-1], 3))
    if args.plot:
        plot(json.loads(args.plot.read_text()), args.plot.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
