"""thelma movie: a PNG series written as MP4, GIF and animated PNG and read back frame by frame."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from thelma_py.tools import cli, movie

Image = pytest.importorskip("PIL.Image")  # the movie extra; CI installs it with the test extra

FRAMES = 12
WIDTH, HEIGHT = 45, 31  # odd on purpose: H.264 in yuv420p needs even sizes


def frame(k: int) -> np.ndarray:
    """Frame k: a grey level rising with k and a white square moving right by 3 px a frame."""
    rgb = np.full((HEIGHT, WIDTH, 3), 10 * k, dtype=np.uint8)
    rgb[10:20, 3 * k:3 * k + 8] = 255
    return rgb


@pytest.fixture
def series(tmp_path):
    """image_rho_<step>.png for steps 0, 50, ..., 550 written unpadded, so that text order
    (0, 100, 150, ..., 50, 500, 550) differs from the step order."""
    folder = tmp_path / "frames"
    folder.mkdir()
    for k in range(FRAMES):
        Image.fromarray(frame(k)).save(folder / f"image_rho_{50 * k}.png")
    return folder


def test_frames_come_in_step_order(series):
    names = [p.name for p in movie.find_frames(series)]
    assert names == [f"image_rho_{50 * k}.png" for k in range(FRAMES)]


def test_mp4_has_every_frame_in_order(series, tmp_path, capsys):
    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    assert cli.main(["movie", str(series), "--fps", "6"]) == 0
    out = series / "movie.mp4"
    assert f"{out}: {FRAMES} frames at 6 per second" in capsys.readouterr().out
    count, seconds = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert count == FRAMES and seconds == pytest.approx(FRAMES / 6, abs=0.1)
    reader = imageio_ffmpeg.read_frames(str(out))
    meta = next(reader)
    assert tuple(meta["size"]) == (WIDTH + 1, HEIGHT + 1)  # one black column and row added
    decoded = [np.frombuffer(b, np.uint8).reshape(HEIGHT + 1, WIDTH + 1, 3) for b in reader]
    assert len(decoded) == FRAMES
    for k, picture in enumerate(decoded):
        # lossy: the flat grey (10 levels apart from frame to frame) within 5 levels, and the
        # square's centre still white (255, against a grey of 110 at most)
        assert abs(int(picture[2, 2:40].mean()) - 10 * k) < 5, k
        assert picture[15, 3 * k + 4].min() > 200, k


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_animated_gif_and_png_hold_every_frame(series, tmp_path, suffix):
    out = tmp_path / f"movie{suffix}"
    written, count = movie.make_movie(series, out, fps=4)
    assert written == out and count == FRAMES
    with Image.open(out) as animation:
        assert animation.n_frames == FRAMES and animation.size == (WIDTH, HEIGHT)
        assert animation.info["duration"] == 250  # ms per frame at 4 per second
        for k in range(FRAMES):
            animation.seek(k)
            # both are exact here: APNG is lossless, and each frame has two colours (GIF)
            np.testing.assert_array_equal(np.asarray(animation.convert("RGB")), frame(k))


def test_an_animated_png_in_the_folder_is_not_its_own_frame(series):
    out, count = movie.make_movie(series, series / "movie.png")
    assert count == FRAMES
    again, count = movie.make_movie(series, series / "movie.png")  # overwrite: still 12
    assert count == FRAMES


def test_pattern_picks_one_series(series):
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(series / "image_speed_0.png")
    with pytest.raises(cli.CliError, match="holds 2 PNG series.*'image_rho_\\*.png', "
                                           "'image_speed_\\*.png'"):
        movie.find_frames(series)
    assert len(movie.find_frames(series, "image_rho_*.png")) == FRAMES


def test_a_number_inside_the_name_is_a_series_too(tmp_path):
    for k in (10, 9, 100):
        Image.fromarray(frame(k % 12)).save(tmp_path / f"frame_{k}_u.png")
    assert [p.name for p in movie.find_frames(tmp_path)] == [
        "frame_9_u.png", "frame_10_u.png", "frame_100_u.png"]


@pytest.mark.parametrize(("args", "message"), [
    (["{dir}", "--out", "{tmp}/m.avi"],
     "the output must end in .mp4 (MP4 (H.264)), .gif (animated GIF), .png (animated PNG)"),
    (["{tmp}/missing"], "not a directory"),
    (["{dir}", "--pattern", "other_*.png"], "no PNG files matching 'other_*.png'"),
    (["{dir}", "--fps", "0", "--out", "{tmp}/m.gif"], "--fps must be a positive number"),
])
def test_bad_input_gives_one_line(series, tmp_path, capsys, args, message):
    args = [a.format(dir=series, tmp=tmp_path) for a in args]
    assert cli.main(["movie", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("thelma movie: error:") and message in err and "\n" not in err


def test_frames_of_different_sizes_are_refused(series, capsys):
    Image.fromarray(np.zeros((HEIGHT, WIDTH + 2, 3), np.uint8)).save(series / "image_rho_999.png")
    assert cli.main(["movie", str(series), "--out", str(series / "m.gif")]) == 2
    err = capsys.readouterr().err
    assert (f"frames differ in size: image_rho_0.png is {WIDTH}x{HEIGHT}, image_rho_999.png is "
            f"{WIDTH + 2}x{HEIGHT}") in err


def test_without_imageio_ffmpeg_mp4_names_the_extra(series, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # `import imageio_ffmpeg` fails
    assert cli.main(["movie", str(series)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("thelma movie: error: writing .mp4 needs imageio-ffmpeg, which is not "
                   "installed: pip install 'thelma-py[movie]' (or write --out movie.gif, which "
                   "needs Pillow only)")
    assert cli.main(["movie", str(series), "--out", str(series.parent / "m.gif")]) == 0


def test_without_pillow_one_line_names_the_extra(series, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert cli.main(["movie", str(series), "--out", str(series.parent / "m.gif")]) == 2
    assert "reads PNG frames with Pillow, which is not installed: pip install " \
        "'thelma-py[movie]'" in capsys.readouterr().err
