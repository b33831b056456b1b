"""draw the CSV outputs of a run (history, forces, probes, profiles, residual, timings) as PNG

``thelma plot PATH...`` takes run directories (every ``*.csv`` below them) or CSV files and
writes one PNG per CSV (a profile series ``<prefix>_<step>.csv`` gives one PNG), next to the CSV
or into ``--out``. The kind of a file is told by its header, as the results plug-ins write it:

- history ``step,mean_rho,max_speed,kinetic_energy``: each quantity against the step;
- forces ``step,Fx_<b>,...,cD_<b>,cL_<b>``: c_D and c_L per body, their mean over the second
  half of the record and, where c_L oscillates (three upward crossings of its mean in that
  half), the Strouhal number St = f D / U (``--length`` D and ``--velocity`` U in lattice
  units; without them f in 1/step), computed by the 2D-2 validation's own measure;
- probes ``step,<field>_x<i>_y<j>[_z<k>]``: one panel per field, one line per probe;
- profiles ``x|y|z,<field>...``: each field along the line, a few steps of the series;
- residual ``step,residual``: log scale;
- timings ``step,seconds_per_step``: MLUPS per record where the node count is known
  (``--nodes``, or the ``shape`` of the ``summary.json`` that ``thelma run --out`` writes
  beside it), else the step time.

Any other CSV of numbers is drawn column by column against its first column. matplotlib (the
``plot`` extra) is imported only here and only when drawing; the validation report
(:mod:`thelma_py.tools.report`) draws through :func:`save_figure` too.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import attrs
import numpy as np

from thelma_py.tools.case_input import CliError

INSTALL = "pip install 'thelma-py[plot]'"
KINDS = ("history", "forces", "probes", "profile", "residual", "timings", "table")
"""What ``--only`` accepts: the kinds of CSV files (table: any other CSV of numbers)."""
PROFILE_LINES = 6
"""Most steps of a profile series drawn in one figure (evenly spread, the last included)."""

_PROBE = re.compile(r"^(?P<field>[a-z]+)_(?P<point>x\d+_y\d+(?:_z\d+)?)$")
_FORCE = re.compile(r"^(?P<name>F[xyz]|cD|cL)_(?P<body>\d+)$")
_SERIES = re.compile(r"^(?P<prefix>.+)_(?P<step>\d+)$")


# -- matplotlib ---------------------------------------------------------------------------------
def plotting_available() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib.figure  # noqa: F401
    except ImportError:
        return False
    return True


def new_figure(figsize: tuple[float, float] = (9.0, 4.0)):
    """A matplotlib Figure outside pyplot (no global state, nothing to close); one line naming
    the extra to install when matplotlib is missing."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise CliError(f"plots need matplotlib, which is not installed: {INSTALL}") from None
    return Figure(figsize=figsize)


def save_figure(draw: Callable, path: Path, figsize: tuple[float, float] = (9.0, 4.0),
                dpi: int = 90):
    """Draw on a new Figure with ``draw(fig)``, save it as ``path`` and return the Figure."""
    fig = new_figure(figsize)
    draw(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    return fig


# -- reading ----------------------------------------------------------------------------------
@attrs.frozen
class Table:
    """A CSV of numbers: column names in file order, one float array per column."""

    path: Path
    columns: tuple[str, ...]
    data: dict[str, np.ndarray] = attrs.field(eq=False, repr=False)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.data[name]


def read_table(path: Path) -> Table:
    """Read a CSV with one header row and numbers below (``nan`` allowed)."""
    lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path}: empty file, expected a CSV header row")
    columns = tuple(name.strip() for name in lines[0].split(","))
    try:
        rows = [[float(v) for v in line.split(",")] for line in lines[1:]]
    except ValueError:
        raise ValueError(f"{path}: not a CSV of numbers below its header") from None
    if any(len(row) != len(columns) for row in rows):
        raise ValueError(f"{path}: rows do not all have the {len(columns)} columns of the header")
    values = np.array(rows, dtype=np.float64).reshape(len(rows), len(columns))
    return Table(Path(path), columns, {c: values[:, k] for k, c in enumerate(columns)})


def kind_of(columns: Sequence[str]) -> str:
    """Which results plug-in wrote a CSV with this header (see the module docstring)."""
    columns = tuple(columns)
    rest = columns[1:]
    if columns == ("step", "mean_rho", "max_speed", "kinetic_energy"):
        return "history"
    if columns == ("step", "residual"):
        return "residual"
    if columns == ("step", "seconds_per_step"):
        return "timings"
    if columns[:1] == ("step",) and rest and all(_FORCE.match(c) for c in rest):
        return "forces"
    if columns[:1] == ("step",) and rest and all(_PROBE.match(c) for c in rest):
        return "probes"
    if columns[:1] in (("x",), ("y",), ("z",)) and rest:
        return "profile"
    return "table"


# -- drawing, one function per kind -------------------------------------------------------------
@attrs.frozen
class Options:
    """What the command line may change in a figure."""

    logx: bool = False
    logy: bool = False
    length: float = 1.0
    """Reference length D of the Strouhal number (lattice units)."""
    velocity: float = 1.0
    """Reference velocity U of the Strouhal number (lattice units)."""
    nodes: int | None = None
    """Lattice nodes per step, for MLUPS (None: from summary.json beside the CSV)."""


def _axes(fig, count: int) -> list:
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    return list(np.atleast_1d(fig.subplots(rows, columns, squeeze=False)).reshape(-1))[:count]


def _scales(axes: Iterable, options: Options, logy: bool = False) -> None:
    for ax in axes:
        if options.logx:
            ax.set_xscale("log")
        if options.logy or logy:
            ax.set_yscale("log")


def draw_history(fig, table: Table, options: Options) -> None:
    names = table.columns[1:]
    axes = _axes(fig, len(names))
    for ax, name in zip(axes, names, strict=True):
        ax.plot(table["step"], table[name], "-")
        ax.set(xlabel="step", title=name.replace("_", " "))
    _scales(axes, options)


def force_summary(table: Table, body: str, options: Options) -> dict[str, float]:
    """Means of c_D and c_L over the second half of the record, and the shedding measures of
    the 2D-2 validation (:func:`thelma_py.cases.cylinder_2d2.shedding_measures`: St from the
    upward crossings of c_L − mean, NaN below three crossings)."""
    from thelma_py.cases.cylinder_2d2 import shedding_measures

    step, cd, cl = table["step"], table[f"cD_{body}"], table[f"cL_{body}"]
    late = step >= step[0] + (step[-1] - step[0]) / 2
    out = {"c_D_mean": float(cd[late].mean()), "c_L_mean": float(cl[late].mean())}
    if len(step) >= 2:
        measures = shedding_measures(step, cd, cl, options.length, options.velocity)
        out.update(St=measures["St"], periods=measures["periods"])
    else:
        out.update(St=math.nan, periods=0)
    return out


def draw_forces(fig, table: Table, options: Options) -> dict[str, dict[str, float]]:
    bodies = sorted({_FORCE.match(c)["body"] for c in table.columns[1:]}, key=int)
    drag, lift = fig.subplots(1, 2)
    summaries = {}
    for body in bodies:
        s = summaries[body] = force_summary(table, body, options)
        line = drag.plot(table["step"], table[f"cD_{body}"], "-", label=f"body {body}")[0]
        drag.axhline(s["c_D_mean"], color=line.get_color(), ls=":", lw=1)
        strouhal = "" if math.isnan(s["St"]) else (
            f", St = {s['St']:.4f}" if (options.length, options.velocity) != (1.0, 1.0)
            else f", f = {s['St']:.4g} / step")
        lift.plot(table["step"], table[f"cL_{body}"], "-", color=line.get_color(),
                  label=f"body {body}: mean {s['c_L_mean']:.4g}{strouhal}")
        line.set_label(f"body {body}: mean {s['c_D_mean']:.4g}")
    drag.set(xlabel="step", ylabel="c_D", title="drag (dotted: mean over the second half)")
    lift.set(xlabel="step", ylabel="c_L", title="lift")
    for ax in (drag, lift):
        ax.legend(fontsize=8)
    _scales((drag, lift), options)
    return summaries


def draw_probes(fig, table: Table, options: Options) -> None:
    matches = [_PROBE.match(c) for c in table.columns[1:]]
    fields = list(dict.fromkeys(m["field"] for m in matches))
    axes = _axes(fig, len(fields))
    for ax, field in zip(axes, fields, strict=True):
        for m in (m for m in matches if m["field"] == field):
            ax.plot(table["step"], table[m.string], "-", label=m["point"].replace("_", " "))
        ax.set(xlabel="step", title=field)
        ax.legend(fontsize=7)
    _scales(axes, options)


def draw_residual(fig, table: Table, options: Options) -> None:
    ax = fig.subplots()
    ax.plot(table["step"], table["residual"], "-")
    ax.set(xlabel="step", ylabel="‖u_n − u_(n−k)‖₁ / ‖u_n‖₁", title="velocity residual")
    _scales([ax], options, logy=True)


def run_nodes(csv: Path) -> int | None:
    """Lattice nodes of the run, from the ``summary.json`` beside ``csv`` (None if absent)."""
    summary = csv.parent / "summary.json"
    try:
        shape = json.loads(summary.read_text())["shape"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return int(np.prod(shape))


def draw_timings(fig, table: Table, options: Options) -> None:
    ax = fig.subplots()
    nodes = options.nodes if options.nodes is not None else run_nodes(table.path)
    seconds = table["seconds_per_step"]
    if nodes:
        ax.plot(table["step"], nodes / seconds / 1e6, "o-", markersize=3)
        ax.set(ylabel="MLUPS", title=f"step rate ({nodes} nodes; compute time only)")
    else:
        ax.plot(table["step"], seconds * 1e6, "o-", markersize=3)
        ax.set(ylabel="µs per step", title="step time (MLUPS: pass --nodes or keep "
               "summary.json beside the CSV)")
    ax.set(xlabel="step")
    _scales([ax], options)


def draw_profiles(fig, tables: Sequence[Table], options: Options) -> None:
    """A series of profiles: up to :data:`PROFILE_LINES` steps, evenly spread, last included."""
    pick = np.unique(np.linspace(0, len(tables) - 1, min(len(tables), PROFILE_LINES))
                     .round().astype(int))
    first = tables[0]
    axis, names = first.columns[0], first.columns[1:]
    axes = _axes(fig, len(names))
    for k in pick:
        table = tables[k]
        match = _SERIES.match(table.path.stem)
        label = f"step {int(match['step'])}" if match else table.path.stem
        for ax, name in zip(axes, names, strict=True):
            ax.plot(table[axis], table[name], "-", label=label)
    for ax, name in zip(axes, names, strict=True):
        ax.set(xlabel=axis, title=name)
    axes[0].legend(fontsize=7)
    _scales(axes, options)


def draw_table(fig, table: Table, options: Options) -> None:
    x, names = table.columns[0], table.columns[1:]
    if not names:
        raise ValueError(f"{table.path}: one column only, nothing to draw against it")
    axes = _axes(fig, len(names))
    for ax, name in zip(axes, names, strict=True):
        ax.plot(table[x], table[name], "-")
        ax.set(xlabel=x, title=name)
    _scales(axes, options)


DRAW = {"history": draw_history, "forces": draw_forces, "probes": draw_probes,
        "residual": draw_residual, "timings": draw_timings, "table": draw_table}


# -- files ------------------------------------------------------------------------------------
@attrs.frozen
class Plot:
    """One figure: its kind, the CSV files drawn, the PNG written, the Figure itself and what
    the drawing measured (forces: per body the means and St)."""

    kind: str
    sources: tuple[Path, ...]
    png: Path
    figure: object = attrs.field(eq=False, repr=False)
    measures: dict = attrs.field(factory=dict)


def csv_files(paths: Sequence[Path]) -> dict[Path, bool]:
    """The CSV files named and every ``*.csv`` below the directories named (sorted), each with
    whether it was named itself."""
    found = {}
    for path in map(Path, paths):
        if path.is_dir():
            found.update((f, found.get(f, False)) for f in sorted(path.rglob("*.csv")))
        elif path.is_file():
            found[path] = True
        else:
            raise CliError(f"{path}: no such file or directory (give run directories or CSV "
                           "files)")
    return found


def group(tables: Sequence[Table]) -> list[tuple[str, list[Table]]]:
    """(kind, tables) per figure: profile files of one directory and prefix make one figure."""
    out, series = [], {}
    for table in tables:
        kind = kind_of(table.columns)
        match = _SERIES.match(table.path.stem)
        if kind == "profile":
            key = (table.path.parent, match["prefix"] if match else table.path.stem)
            if key not in series:
                series[key] = []
                out.append((kind, series[key]))
            series[key].append(table)
        else:
            out.append((kind, [table]))
    for kind, members in out:
        if kind == "profile":
            members.sort(key=lambda t: int(_SERIES.match(t.path.stem)["step"])
                         if _SERIES.match(t.path.stem) else -1)
    return out


def png_path(tables: Sequence[Table], out: Path | None, single: bool) -> Path:
    first = tables[0].path
    match = _SERIES.match(first.stem)
    stem = match["prefix"] if len(tables) > 1 and match else first.stem
    if out is None:
        return first.with_name(f"{stem}.png")
    if single and out.suffix.lower() == ".png":
        return out
    return out / f"{stem}.png"


def plot_files(paths: Sequence[Path], *, out: Path | None = None,
               only: Sequence[str] | None = None, options: Options = Options()) -> list[Plot]:
    """Draw every CSV of ``paths`` (see the module docstring); return the figures written."""
    unknown = sorted(set(only or ()) - set(KINDS))
    if unknown:
        raise CliError(f"unknown kind(s) {', '.join(unknown)}: choose from {', '.join(KINDS)}")
    if not plotting_available():
        raise CliError(f"thelma plot needs matplotlib, which is not installed: {INSTALL}")
    tables = []
    for path, named in csv_files(paths).items():
        try:
            table = read_table(path)
        except ValueError as error:
            if named:
                raise
            # a CSV of another kind found in a directory (text columns): not ours to draw
            warnings.warn(f"{error}, not drawn", stacklevel=2)
            continue
        if len(table[table.columns[0]]):
            tables.append(table)
        else:
            warnings.warn(f"{table.path}: no rows below the header, not drawn", stacklevel=2)
    groups = [(k, t) for k, t in group(tables) if not only or k in only]
    if not groups:
        wanted = f" of kind {', '.join(only)}" if only else ""
        raise CliError(f"no CSV files{wanted} in {', '.join(map(str, paths))}")
    if out is not None and out.suffix.lower() == ".png" and len(groups) > 1:
        raise CliError(f"--out {out} names one PNG file, but there are {len(groups)} figures "
                       f"({', '.join(k for k, _ in groups)}): give a directory, or one CSV")
    if out is not None:
        (out if out.suffix.lower() != ".png" else out.parent).mkdir(parents=True, exist_ok=True)
    plots = []
    for kind, members in groups:
        png = png_path(members, out, single=len(groups) == 1)
        measures = {}

        def draw(fig, kind=kind, members=members, measures=measures):
            if kind == "profile":
                draw_profiles(fig, members, options)
            else:
                measures.update(DRAW[kind](fig, members[0], options) or {})

        figure = save_figure(draw, png, figsize=(11.0, 4.0))
        plots.append(Plot(kind, tuple(t.path for t in members), png, figure, measures))
    return plots


# -- command line -------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="run directories (every *.csv below them) or CSV files")
    parser.add_argument("--out", type=Path, help="directory of the PNG files, or a .png file "
                        "when there is one figure (default: beside each CSV)")
    parser.add_argument("--only", nargs="+", choices=KINDS, metavar="KIND",
                        help=f"only these kinds: {', '.join(KINDS)} (default: all)")
    parser.add_argument("--logx", action="store_true", help="log scale on the x axes")
    parser.add_argument("--logy", action="store_true",
                        help="log scale on the y axes (the residual always has one)")
    parser.add_argument("--length", type=float, default=1.0, metavar="D",
                        help="reference length of the Strouhal number St = f D / U, lattice "
                        "units (with --velocity; without both: f in 1/step)")
    parser.add_argument("--velocity", type=float, default=1.0, metavar="U",
                        help="reference velocity of the Strouhal number, lattice units")
    parser.add_argument("--nodes", type=int, metavar="N",
                        help="lattice nodes, for MLUPS in the timings plot (default: from "
                        "summary.json beside the CSV)")


def run(args: argparse.Namespace) -> int:
    for name in ("length", "velocity"):
        value = getattr(args, name)
        if not 0 < value < math.inf:
            raise CliError(f"--{name} must be a positive number, got {value}")
    if args.nodes is not None and args.nodes < 1:
        raise CliError(f"--nodes must be a positive number of lattice nodes, got {args.nodes}")
    options = Options(logx=args.logx, logy=args.logy, length=args.length,
                      velocity=args.velocity, nodes=args.nodes)
    for plot in plot_files(args.paths, out=args.out, only=args.only, options=options):
        sources = (str(plot.sources[0]) if len(plot.sources) == 1
                   else f"{plot.sources[0].parent}/ ({len(plot.sources)} files)")
        print(f"{plot.kind:<9} {sources} -> {plot.png}")
        for body, m in plot.measures.items():
            shedding = ("" if math.isnan(m["St"]) else
                        f", St = f D / U {m['St']:.5g} over {m['periods']} periods")
            print(f"          body {body}: mean c_D {m['c_D_mean']:.6g}, mean c_L "
                  f"{m['c_L_mean']:.6g} (second half){shedding}")
    return 0
