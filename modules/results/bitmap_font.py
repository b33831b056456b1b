"""A 3×5 pixel font (digits, capitals and a few signs) for colour-bar numbers and labels.

Drawn for this project; each glyph is five rows of three cells ('#' on, '.' off). Text is
drawn upper case, scaled by an integer factor, one empty column between glyphs.
"""

from __future__ import annotations

import numpy as np

_GLYPHS = {
    "0": "###|#.#|#.#|#.#|###", "1": ".#.|##.|.#.|.#.|###", "2": "###|..#|###|#..|###",
    "3": "###|..#|.##|..#|###", "4": "#.#|#.#|###|..#|..#", "5": "###|#..|###|..#|###",
    "6": "###|#..|###|#.#|###", "7": "###|..#|.#.|.#.|.#.", "8": "###|#.#|###|#.#|###",
    "9": "###|#.#|###|..#|###", "A": ".#.|#.#|###|#.#|#.#", "B": "##.|#.#|##.|#.#|##.",
    "C": ".##|#..|#..|#..|.##", "D": "##.|#.#|#.#|#.#|##.", "E": "###|#..|##.|#..|###",
    "F": "###|#..|##.|#..|#..", "G": ".##|#..|#.#|#.#|.##", "H": "#.#|#.#|###|#.#|#.#",
    "I": "###|.#.|.#.|.#.|###", "J": "..#|..#|..#|#.#|.#.", "K": "#.#|#.#|##.|#.#|#.#",
    "L": "#..|#..|#..|#..|###", "M": "#.#|###|###|#.#|#.#", "N": "##.|#.#|#.#|#.#|#.#",
    "O": ".#.|#.#|#.#|#.#|.#.", "P": "##.|#.#|##.|#..|#..", "Q": ".#.|#.#|#.#|##.|.##",
    "R": "##.|#.#|##.|#.#|#.#", "S": ".##|#..|.#.|..#|##.", "T": "###|.#.|.#.|.#.|.#.",
    "U": "#.#|#.#|#.#|#.#|###", "V": "#.#|#.#|#.#|#.#|.#.", "W": "#.#|#.#|###|###|#.#",
    "X": "#.#|#.#|.#.|#.#|#.#", "Y": "#.#|#.#|.#.|.#.|.#.", "Z": "###|..#|.#.|#..|###",
    ".": "...|...|...|...|.#.", "-": "...|...|###|...|...", "+": "...|.#.|###|.#.|...",
    "=": "...|###|...|###|...", ":": "...|.#.|...|.#.|...", "/": "..#|..#|.#.|#..|#..",
    "_": "...|...|...|...|###", "|": ".#.|.#.|.#.|.#.|.#.", " ": "...|...|...|...|...",
    "(": "..#|.#.|.#.|.#.|..#", ")": "#..|.#.|.#.|.#.|#..", "?": "##.|..#|.#.|...|.#.",
}
WIDTH, HEIGHT = 3, 5


def text_mask(text: str, scale: int = 2) -> np.ndarray:
    """Boolean mask (rows, columns) of ``text`` at ``scale`` pixels per font cell; characters
    without a glyph are drawn as '?'."""
    text = text.upper()
    mask = np.zeros((HEIGHT, max(len(text) * (WIDTH + 1) - 1, 1)), dtype=bool)
    for i, char in enumerate(text):
        rows = _GLYPHS.get(char, _GLYPHS["?"]).split("|")
        mask[:, i * (WIDTH + 1):i * (WIDTH + 1) + WIDTH] = [[c == "#" for c in r] for r in rows]
    return np.kron(mask, np.ones((scale, scale), dtype=bool))


def draw_text(image: np.ndarray, text: str, row: int, column: int, scale: int = 2,
              colour=(255, 255, 255), shadow=(0, 0, 0)) -> None:
    """Draw ``text`` into the uint8 (H, W, 3) host ``image`` at (row, column) (top left), with
    a one-cell shadow so that it reads on any background; clipped at the edges."""
    mask = text_mask(text, scale)
    for offset, tint in ((scale, shadow), (0, colour)):
        if tint is None:
            continue
        top, left = row + offset, column + offset
        h = min(mask.shape[0], image.shape[0] - top)
        w = min(mask.shape[1], image.shape[1] - left)
        if h <= 0 or w <= 0 or top < 0 or left < 0:
            continue
        image[top:top + h, left:left + w][mask[:h, :w]] = tint
