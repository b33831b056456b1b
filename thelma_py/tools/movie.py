"""turn a PNG series of a directory into an MP4 movie or an animated GIF/PNG

``thelma movie DIR [--pattern GLOB] [--fps N] [--out FILE]`` takes the PNG files of DIR that
match the pattern, in natural order (``frame_9`` before ``frame_10``), and writes them as one
movie. The frames must all have the same size. The format follows the output's suffix:

- ``.mp4`` (the default, ``DIR/movie.mp4``): H.264 through imageio-ffmpeg, whose wheel brings
  its own ffmpeg binary; frames of odd width or height get one black row or column (the
  yuv420p pixel format of ordinary players needs even sizes);
- ``.gif`` or ``.png`` (animated PNG, lossless): Pillow only, whose writers keep every frame
  in memory until the end (use MP4 for long series).

Both come with the ``movie`` extra (``pip install 'thelma-py[movie]'``). Without a pattern, a
directory holding several series (``image_rho_*.png`` and ``image_speed_*.png``, say) is
refused with the patterns to choose from, rather than interleaving them.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from thelma_py.tools.case_input import CliError

INSTALL = "pip install 'thelma-py[movie]'"
FORMATS = {".mp4": "MP4 (H.264)", ".gif": "animated GIF", ".png": "animated PNG"}
_DIGITS = re.compile(r"(\d+)")


def natural_key(path: Path) -> tuple:
    """Sort key reading the digit runs of a name as numbers: frame_9 < frame_10."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(path.name))


def series_pattern(path: Path) -> str:
    """The glob of a frame's series: its name with the last number as ``*``
    (image_rho_0100.png: image_rho_*.png; frame_7_u.png: frame_*_u.png)."""
    return re.sub(r"\d+(?=\D*$)", "*", path.name)


def find_frames(directory: Path, pattern: str | None = None,
                exclude: Path | None = None) -> list[Path]:
    """The PNG files of ``directory`` matching ``pattern`` (default ``*.png``, which must then
    hold one series), in natural order, ``exclude`` (the output) left out."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CliError(f"{directory}: not a directory (give the directory of the PNG series)")
    skip = None if exclude is None else Path(exclude).resolve()
    frames = sorted((p for p in directory.glob(pattern or "*.png")
                     if p.is_file() and p.suffix.lower() == ".png" and p.resolve() != skip),
                    key=natural_key)
    if not frames:
        raise CliError(f"no PNG files matching {pattern or '*.png'!r} in {directory}")
    series = sorted({series_pattern(p) for p in frames})
    if pattern is None and len(series) > 1:
        choices = ", ".join(f"'{glob}'" for glob in series)
        raise CliError(f"{directory} holds {len(series)} PNG series: choose one with --pattern, "
                       f"one of {choices}")
    return frames


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise CliError(f"thelma movie reads PNG frames with Pillow, which is not installed: "
                       f"{INSTALL}") from None
    return Image


def frame_size(frames: Sequence[Path]) -> tuple[int, int]:
    """(width, height) shared by all frames (read from the PNG headers only)."""
    image = _pillow()
    sizes = {}
    for path in frames:
        with image.open(path) as frame:
            sizes.setdefault(frame.size, path)
        if len(sizes) > 1:
            (first, a), (other, b) = sizes.items()
            raise CliError(f"frames differ in size: {a.name} is {first[0]}x{first[1]}, "
                           f"{b.name} is {other[0]}x{other[1]}; a movie needs one size")
    return next(iter(sizes))


def rgb_frames(frames: Sequence[Path], even: bool = False) -> Iterator[np.ndarray]:
    """Each frame as an (height, width, 3) uint8 array, one at a time; ``even`` pads odd sizes
    with a black row or column."""
    image = _pillow()
    for path in frames:
        with image.open(path) as frame:
            rgb = np.asarray(frame.convert("RGB"))
        if even and (rgb.shape[0] % 2 or rgb.shape[1] % 2):
            rgb = np.pad(rgb, ((0, rgb.shape[0] % 2), (0, rgb.shape[1] % 2), (0, 0)))
        yield np.ascontiguousarray(rgb)


def write_mp4(frames: Sequence[Path], out: Path, fps: float) -> None:
    try:
        import imageio_ffmpeg
    except ImportError:
        raise CliError(f"writing .mp4 needs imageio-ffmpeg, which is not installed: {INSTALL} "
                       "(or write --out movie.gif, which needs Pillow only)") from None
    width, height = frame_size(frames)
    size = (width + width % 2, height + height % 2)
    writer = imageio_ffmpeg.write_frames(str(out), size, fps=fps, codec="libx264",
                                         pix_fmt_out="yuv420p", macro_block_size=1)
    writer.send(None)  # start ffmpeg
    try:
        for rgb in rgb_frames(frames, even=True):
            writer.send(rgb)
    finally:
        writer.close()


class _LazyFrames:
    """The frames as Pillow images, read one at a time on every pass: Pillow's PNG writer
    walks ``append_images`` twice, so a generator would lose all frames after the first."""

    def __init__(self, frames: Sequence[Path]) -> None:
        self.frames = frames

    def __len__(self) -> int:
        return len(self.frames)

    def __iter__(self) -> Iterator:
        image = _pillow()
        return (image.fromarray(rgb) for rgb in rgb_frames(self.frames))


def write_animation(frames: Sequence[Path], out: Path, fps: float) -> None:
    """Animated GIF or PNG through Pillow (one loop forever)."""
    image = _pillow()
    frame_size(frames)
    first, *rest = frames
    duration = max(1, round(1000.0 / fps))  # ms per frame
    with image.open(first) as start:
        start.convert("RGB").save(out, save_all=True, append_images=_LazyFrames(rest),
                                  duration=duration, loop=0)


def make_movie(directory: Path, out: Path | None = None, *, pattern: str | None = None,
               fps: float = 10.0) -> tuple[Path, int]:
    """Write the PNG series of ``directory`` as ``out`` (default ``directory/movie.mp4``);
    returns (the file, the number of frames)."""
    out = Path(directory) / "movie.mp4" if out is None else Path(out)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        allowed = ", ".join(f"{s} ({name})" for s, name in FORMATS.items())
        raise CliError(f"cannot write {out.name}: the output must end in {allowed}")
    if not 0 < fps < math.inf:
        raise CliError(f"--fps must be a positive number of frames per second, got {fps}")
    frames = find_frames(directory, pattern, exclude=out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".mp4":
        write_mp4(frames, out, fps)
    else:
        write_animation(frames, out, fps)
    return out, len(frames)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, metavar="DIR", help="directory of the PNG series")
    parser.add_argument("--pattern", metavar="GLOB",
                        help="which PNG files, e.g. 'image_rho_*.png' (default: *.png, which "
                        "must hold one series)")
    parser.add_argument("--fps", type=float, default=10.0, help="frames per second")
    parser.add_argument("--out", type=Path, metavar="FILE",
                        help=f"the movie: {', '.join(f'{s} ({n})' for s, n in FORMATS.items())}"
                        " (default: DIR/movie.mp4)")


def run(args: argparse.Namespace) -> int:
    out, count = make_movie(args.directory, args.out, pattern=args.pattern, fps=args.fps)
    print(f"movie      {out}: {count} frames at {args.fps:g} per second")
    return 0
