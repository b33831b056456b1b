"""16-bit storage of shifted values: formats, their NumPy twins and their CUDA functions.

A population f_i is stored as the 16-bit code of f_i − w_i (its deviation from rest, small in
every flow the solver is run for), computed in fp32 and rounded to nearest even. A format is
sign, ``exp_bits`` exponent bits with ``bias``, ``man_bits`` mantissa bits, subnormals, and the
all-ones exponent for ∞/NaN (a diverging run still shows NaN):

* ``fp16s``: IEEE binary16 (5 + 10 bits, bias 15); on the GPU the hardware conversion
  (``cvt.rn.f16.f32``), elsewhere the same integer rounding as below (bit-identical).
* ``fp16c``: 4 exponent + 11 mantissa bits, bias 15: |x| < 1, relative step 2⁻¹² (half of
  binary16's) and an absolute step 2⁻²⁵ near zero. The idea of a 16-bit format with more
  mantissa for shifted populations is FluidX3D's FP16C (Lehmann et al. 2022); this one is
  written from the format description here (its bias and ∞/NaN code are our choices:
  ``benchmarks/half_accuracy.py formats`` measured candidates on cavity states).

Encoding and decoding are written once as integer bit operations, then emitted as NumPy
(:func:`encode`, :func:`decode`) and as C (:func:`cuda_functions`) from the same constants.
"""

from __future__ import annotations

import attrs
import numpy as np

STORES = ("fp32", "fp16s", "fp16c")
"""Population storage formats: 32-bit floats, and the two 16-bit formats of :data:`FORMATS`."""


@attrs.frozen
class Format16:
    """A 16-bit float format: 1 sign, ``exp_bits`` exponent, ``man_bits`` mantissa bits."""

    name: str
    exp_bits: int
    man_bits: int = attrs.field()
    bias: int

    @man_bits.validator
    def _check(self, _, value):
        if 1 + self.exp_bits + value != 16:
            raise ValueError(f"{self.name}: 1 + {self.exp_bits} + {value} bits is not 16")

    @property
    def shift(self) -> int:
        """Float32 mantissa bits dropped by the format."""
        return 23 - self.man_bits

    @property
    def exp_max(self) -> int:
        """The all-ones exponent (∞ and NaN)."""
        return (1 << self.exp_bits) - 1

    @property
    def inf_code(self) -> int:
        return self.exp_max << self.man_bits

    @property
    def rebias(self) -> int:
        """What to subtract from float32 bits (sign cleared) to get the format's bits, times
        2^shift, in the normal range."""
        return (127 - self.bias) << 23

    @property
    def largest(self) -> float:
        """Largest finite value."""
        return float(2.0 ** (self.exp_max - 1 - self.bias) * (2 - 2.0 ** -self.man_bits))

    @property
    def smallest_normal(self) -> float:
        return float(2.0 ** (1 - self.bias))

    def value(self, code: np.ndarray) -> np.ndarray:
        """Exact float64 value of codes (an independent decoding, for tests and studies)."""
        code = np.asarray(code, dtype=np.int64)
        sign = np.where(code >> 15, -1.0, 1.0)
        e, m = (code >> self.man_bits) & self.exp_max, code & ((1 << self.man_bits) - 1)
        scale = 2.0 ** -self.man_bits
        with np.errstate(invalid="ignore"):
            v = np.where(e == 0, m * scale * 2.0 ** (1 - self.bias),
                         (1 + m * scale) * 2.0 ** (e.astype(np.float64) - self.bias))
            v = np.where(e == self.exp_max, np.where(m == 0, np.inf, np.nan), v)
        return sign * v


FORMATS = {"fp16s": Format16("fp16s", 5, 10, 15), "fp16c": Format16("fp16c", 4, 11, 15)}


def check_store(store: str) -> str:
    if store not in STORES:
        raise ValueError(f"store must be one of {', '.join(STORES)}, got {store!r}")
    return store


def encode(fmt: Format16, x, xp=np):
    """Round float32 values to the format (nearest, ties to even; overflow → ±∞): uint16.
    ``xp`` is the array module (NumPy or CuPy; only ``where`` and array methods are used)."""
    u = xp.ascontiguousarray(x.astype(np.float32)).view(np.uint32).astype(np.int64)
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    sh = fmt.shift
    # normal range: rebias, then round away the low ``shift`` bits (a carry moves the exponent)
    t = a - fmt.rebias
    normal = (t + (1 << (sh - 1)) - 1 + ((t >> sh) & 1)) >> sh
    normal = xp.where(normal > fmt.inf_code, fmt.inf_code, normal)
    # below the smallest normal: the 24-bit significand shifted by more (ties to even)
    e = (a >> 23) - 127 + fmt.bias
    s = (sh + 1 - e).clip(1, 26)
    m24 = (a & 0x7FFFFF) | 0x800000
    sub = (m24 + (1 << (s - 1)) - 1 + ((m24 >> s) & 1)) >> s
    code = xp.where(e >= 1, normal, xp.where(s > 25, 0, sub))
    code = xp.where(a > 0x7F800000, fmt.inf_code | (1 << (fmt.man_bits - 1)), code)
    return (code | sign).astype(np.uint16)


ROUNDINGS = ("nearest", "stochastic")
"""How a value is rounded to a 16-bit code: to nearest (ties to even), or stochastically (up
with probability equal to the fraction of a step: unbiased, so changes smaller than half a
step are not lost on average; the random bits come from :func:`dither_bits`)."""


def encode_stochastic(fmt: Format16, x, r, xp=np):
    """Round float32 values to the format stochastically: the magnitude's bits below the kept
    ones plus ``r >> (32 − shift)`` (uniform over a step), then truncated; ``r``: uint32 random
    bits per value (of which the top ``shift`` are used; fewer than 32 below the smallest
    normal, where up to 31 are). Overflow → ±∞, NaN → NaN, as :func:`encode`."""
    u = xp.ascontiguousarray(x.astype(np.float32)).view(np.uint32).astype(np.int64)
    r = r.astype(np.int64)
    sign = (u >> 16) & 0x8000
    a = u & 0x7FFFFFFF
    sh = fmt.shift
    normal = (a - fmt.rebias + (r >> (32 - sh))) >> sh
    normal = xp.where(normal > fmt.inf_code, fmt.inf_code, normal)
    e = (a >> 23) - 127 + fmt.bias
    s = (sh + 1 - e).clip(1, 31)
    m24 = (a & 0x7FFFFF) | 0x800000
    sub = (m24 + (r >> (32 - s))) >> s
    code = xp.where(e >= 1, normal, xp.where(sh + 1 - e > 31, 0, sub))
    code = xp.where(a > 0x7F800000, fmt.inf_code | (1 << (fmt.man_bits - 1)), code)
    return (code | sign).astype(np.uint16)


def _lowbias32(x, word=int):
    """Wellons' "lowbias32" hash of ``x``, values below 2³² held in 64 bits (Python ints, or
    uint64 arrays with ``word=np.uint64``): the one body of :func:`mix32` and :func:`seed_words`."""
    mask = word(0xFFFFFFFF)
    x ^= x >> word(16)
    x = (x * word(0x7FEB352D)) & mask
    x ^= x >> word(15)
    x = (x * word(0x846CA68B)) & mask
    x ^= x >> word(16)
    return x


def mix32(x, xp=np):
    """A 32-bit integer hash (Wellons' "lowbias32" constants) of uint32 values (any integer
    array; computed in uint64, returned as uint64 values below 2³²)."""
    return _lowbias32(xp.asarray(x).astype(np.uint64) & np.uint64(0xFFFFFFFF), np.uint64)


def seed_words(seed: int, values: int = 4) -> list[int]:
    """The words a step's ``seed`` gives :func:`dither_bits` for ``values`` values a node:
    mix32(P seed + k) for the P = ⌈values/2⌉ pairs k (the seed taken modulo 2³¹). The same for
    every node of a launch, so kernels take them as arguments (:func:`cuda_dither`). Hashed as
    Python integers: a few microseconds a launch, where NumPy's small arrays took 16–40."""
    pairs = -(-values // 2)
    return [_lowbias32((pairs * (seed & 0x7FFFFFFF) + k) & 0xFFFFFFFF) for k in range(pairs)]


def dither_bits(gx, gy, gz, seed: int, xp=np, values: int = 4) -> list:
    """``values`` uint32 words of random bits per node (the 4 values of a record, or the Q
    populations of an LBM node) from its global coordinates and a step seed: key = x + 2¹¹ y
    + 2²² z (wrapping); pair k of values from mix32(key xor word k of :func:`seed_words`),
    split in two 16-bit halves (placed in the top bits). :func:`cuda_dither` is the C twin."""
    mask = np.uint64(0xFFFFFFFF)
    key = (xp.asarray(gx).astype(np.uint64) + (xp.asarray(gy).astype(np.uint64) << np.uint64(11))
           + (xp.asarray(gz).astype(np.uint64) << np.uint64(22))) & mask
    words = []
    for word in seed_words(seed, values):
        h = mix32(key ^ np.uint64(word), xp)
        words += [h & np.uint64(0xFFFF0000), (h << np.uint64(16)) & mask]
    return words[:values]


def seed_arguments(values: int) -> list[str]:
    """The kernel arguments (C ``unsigned``) that hold :func:`seed_words` for ``values``
    values a node, in order."""
    return [f"sr_seed{k}" for k in range(-(-values // 2))]


def seed_launch_values(seed: int, values: int) -> dict[str, int]:
    """The launch values of :func:`seed_arguments`: :func:`seed_words` of ``seed`` (Python
    integers; the kernel arguments take them as ``unsigned``)."""
    return dict(zip(seed_arguments(values), seed_words(seed, values), strict=True))


def cuda_dither(values: int, x: str, y: str, z: str) -> tuple:
    """C of :func:`dither_bits` for the node at global (``x``, ``y``, ``z``) (C expressions)
    and the seed words in the kernel arguments :func:`seed_arguments`: (statements declaring
    the node key ``sr_key`` and the hashes ``sr_h{k}``, one random-bits expression per value).
    The words are arguments, not hashed from the seed in the kernel: that was 10 of D3Q19's
    hashes a node, the same in every thread (benchmarks/NOTES.md, run 68)."""
    key = f"(unsigned)({x}) + ((unsigned)({y}) << 11) + ((unsigned)({z}) << 22)"
    lines = [f"const unsigned sr_key = {key};"]
    lines += [f"const unsigned sr_h{k} = mix32(sr_key ^ {word});"
              for k, word in enumerate(seed_arguments(values))]
    bits = [f"(sr_h{i // 2} & 0xFFFF0000u)" if i % 2 == 0 else f"(sr_h{i // 2} << 16)"
            for i in range(values)]
    return lines, bits


def cuda_stochastic(fmt: Format16) -> str:
    """C functions ``mix32(unsigned)`` and ``pop_encode_sr(float, unsigned r) -> unsigned
    short``: :func:`mix32` and :func:`encode_stochastic` (integer operations, host C++ too)."""
    sh, m = fmt.shift, fmt.man_bits
    return f"""__device__ __forceinline__ unsigned mix32(unsigned x)
{{
    x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu; x ^= x >> 16;
    return x;
}}
__device__ __forceinline__ unsigned short pop_encode_sr(float x, unsigned r)
{{
    const unsigned u = pop_bits(x), a = u & 0x7FFFFFFFu;
    const unsigned sign = (u >> 16) & 0x8000u;
    const int e = (int)(a >> 23) - {127 - fmt.bias};
    unsigned code;
    if (e >= 1) {{
        code = min((a - {fmt.rebias}u + (r >> {32 - sh})) >> {sh}, {fmt.inf_code}u);
    }} else {{
        const int s = {sh + 1} - e;
        const unsigned m24 = (a & 0x7FFFFFu) | 0x800000u;
        code = s > 31 ? 0u : (m24 + (r >> (32 - s))) >> s;
    }}
    if (a > 0x7F800000u) code = {fmt.inf_code | (1 << (m - 1))}u;
    return (unsigned short)(code | sign);
}}
"""


def decode(fmt: Format16, code, xp=np):
    """Float32 values of codes (exact); ``xp`` as in :func:`encode`. Works in uint32 (4 bytes
    a code for each temporary): every intermediate, the sign at bit 31 included, fits."""
    h = code.astype(np.uint32)
    e = (h >> fmt.man_bits) & fmt.exp_max
    m = h & ((1 << fmt.man_bits) - 1)
    bits = xp.where(e == fmt.exp_max, 0x7F800000 | (m << fmt.shift),
                    ((h & 0x7FFF) << fmt.shift) + fmt.rebias)
    bits = xp.where(e == 0, 0, bits) | ((h & 0x8000) << 16)
    v = bits.astype(np.uint32).view(np.float32)
    subnormal = m.astype(np.float32) * np.float32(2.0 ** (1 - fmt.bias - fmt.man_bits))
    return xp.where(e == 0, xp.where(h & 0x8000, -subnormal, subnormal), v).astype(np.float32)


def round_trip(store: str, x, shift, xp=np):
    """``x`` as the storage holds it: decode(encode(x − shift)) + shift in float32 (fp32:
    ``x`` itself). ``shift`` broadcasts against x (the weights w_i along axis 0)."""
    if store == "fp32":
        return x
    return from_codes(store, to_codes(store, x, shift, xp), shift, xp)


def round_trip_stochastic(store: str, x, shift, coordinates, seed: int, xp=np):
    """``x`` (values along axis 0, of the node shape after it) as 16-bit storage holds it when
    rounded stochastically: decode(encode_sr(x − shift)) + shift, the random bits of value k
    at a node being word k of :func:`dither_bits` of its global ``coordinates`` (gx, gy, gz
    arrays of the node shape, :func:`node_coordinates`) and ``seed``."""
    fmt = FORMATS[store]
    bits = dither_bits(*coordinates, seed, xp, values=len(x))
    moved = x.astype(np.float32) - xp.asarray(shift, dtype=np.float32)
    codes = xp.stack([encode_stochastic(fmt, moved[k], bits[k], xp) for k in range(len(x))])
    return from_codes(store, codes, shift, xp)


def node_coordinates(shape: tuple, origin: tuple = (0, 0, 0)) -> list:
    """Global (gx, gy, gz) of every node of an array of node ``shape`` ((z,) y, x: x fastest)
    whose node 0 lies at ``origin`` (x, y, z); gz is 0 in 2D."""
    axes = np.meshgrid(*[np.arange(n) for n in reversed(shape)], indexing="ij")
    grid = [a.T for a in axes]  # (x, y[, z]) each shaped like the nodes
    grid += [np.zeros(shape, dtype=np.int64)] * (3 - len(grid))
    return [g + o for g, o in zip(grid, origin, strict=True)]


def to_codes(store: str, x, shift, xp=np):
    """uint16 codes of x − shift (float32 arithmetic), the 16-bit storage's array."""
    return encode(FORMATS[store], x.astype(np.float32) - xp.asarray(shift, dtype=np.float32),
                  xp)


def from_codes(store: str, codes, shift, xp=np):
    """Float32 values decode(codes) + shift."""
    return decode(FORMATS[store], codes, xp) + xp.asarray(shift, dtype=np.float32)


def weights(lattice, xp=np):
    """The shifts w_i of populations shaped (Q, 1, ..., 1) to broadcast over (Q, *S)."""
    return xp.asarray(np.asarray(lattice.w, dtype=np.float32).reshape(-1, *[1] * lattice.d))


def check_state_store(state: dict, store: str) -> None:
    """Refuse a state saved with another population storage; ``state["convert"]`` True asks
    for the explicit conversion (rounded on load). A state without the key (populations given
    by hand, checkpoints older than 16-bit storage) is rounded on load."""
    saved = str(state.get("store", store))
    if saved != store and not bool(state.get("convert", False)):
        raise ValueError(f"the checkpoint stores populations as {saved}, this run as {store}; "
                         f"run with store={saved!r}, or load it with convert=True to round "
                         f"its populations to {store}")


def bytes_per_value(store: str, real_bytes: int) -> int:
    """Stored bytes of one population."""
    return real_bytes if store == "fp32" else 2


def cuda_functions(fmt: Format16) -> str:
    """C functions ``pop_encode(float) -> unsigned short`` and ``pop_decode(unsigned short) ->
    float``: the integer operations of :func:`encode` and :func:`decode` (host C++ too;
    ``fp16s`` uses the hardware conversion on the device, which rounds the same way)."""
    sh, m, emax = fmt.shift, fmt.man_bits, fmt.exp_max
    sub_scale = f"{2.0 ** (1 - fmt.bias - m):.17g}f"
    bits = """#ifdef __CUDACC__
#define pop_bits(x) __float_as_uint(x)
#define pop_float(u) __uint_as_float(u)
#else
static inline unsigned pop_bits(float x) { unsigned u; __builtin_memcpy(&u, &x, 4); return u; }
static inline float pop_float(unsigned u) { float x; __builtin_memcpy(&x, &u, 4); return x; }
#endif
"""
    encode_c = f"""    const unsigned u = pop_bits(x), a = u & 0x7FFFFFFFu;
    const unsigned sign = (u >> 16) & 0x8000u;
    const int e = (int)(a >> 23) - {127 - fmt.bias};
    unsigned code;
    if (e >= 1) {{
        const unsigned t = a - {fmt.rebias}u;
        code = min((t + {(1 << (sh - 1)) - 1}u + ((t >> {sh}) & 1u)) >> {sh}, {fmt.inf_code}u);
    }} else {{
        const int s = {sh + 1} - e;
        const unsigned m24 = (a & 0x7FFFFFu) | 0x800000u;
        code = s > 25 ? 0u : (m24 + (1u << (s - 1)) - 1u + ((m24 >> s) & 1u)) >> s;
    }}
    if (a > 0x7F800000u) code = {fmt.inf_code | (1 << (m - 1))}u;
    return (unsigned short)(code | sign);"""
    decode_c = f"""    const unsigned u = h, e = (u >> {m}) & {emax}u, mant = u & {(1 << m) - 1}u;
    const float v = e == 0u ? (float)mant * {sub_scale}
        : pop_float(e == {emax}u ? 0x7F800000u | (mant << {sh})
                                 : ((u & 0x7FFFu) << {sh}) + {fmt.rebias}u);
    return pop_float(pop_bits(v) | ((u & 0x8000u) << 16));"""
    if fmt.name == "fp16s":
        encode_c = ("#ifdef __CUDA_ARCH__\n    unsigned short h;\n"
                    '    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));\n    return h;\n'
                    f"#else\n{encode_c}\n#endif")
        decode_c = ("#ifdef __CUDA_ARCH__\n    float v;\n"
                    '    asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));\n    return v;\n'
                    f"#else\n{decode_c}\n#endif")
    return (f"// {fmt.name}: 1 sign, {fmt.exp_bits} exponent (bias {fmt.bias}), {m} mantissa "
            f"bits; generated by {__name__}\n" + bits +
            "typedef unsigned short pop_t;\n"
            f"__device__ __forceinline__ unsigned short pop_encode(float x)\n{{\n{encode_c}\n}}\n"
            f"__device__ __forceinline__ float pop_decode(unsigned short h)\n{{\n{decode_c}\n}}\n")
