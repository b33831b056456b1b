"""Kernel arguments declared once (thelma_py.codegen.kernel_args): the signature text and the
checked launch tuple come from the same table."""

from __future__ import annotations

import types

import numpy as np
import pytest

from thelma_py.codegen.kernel_args import GIVEN, Arg, KernelArgs, KernelArgumentError

ARGS = KernelArgs("demo", [
    [Arg("src", "const real_t*", GIVEN), Arg("dst", "real_t*", GIVEN)],
    [Arg("tags", "const tag_t*", "tag_words"), Arg("omega", "real_t"), Arg("nx", "int")],
])


def engine(**changes):
    held = {"tag_words": np.zeros((2, 3), np.uint32), "omega": np.float32(1.5), "nx": 3}
    return types.SimpleNamespace(**{**held, **changes})


def pack(owner=None, **given):
    buffers = {"src": np.zeros(6, np.float32), "dst": np.zeros(6, np.float32)}
    return ARGS.bind(real_t=np.float32, tag_t=np.uint32).pack(owner or engine(),
                                                              **{**buffers, **given})


def test_signature_is_the_declared_lines():
    assert ARGS.signature("demo_step", "__launch_bounds__(64)") == (
        'extern "C" __global__ void __launch_bounds__(64) demo_step(\n'
        "    const real_t* __restrict__ src, real_t* __restrict__ dst,\n"
        "    const tag_t* __restrict__ tags, real_t omega, int nx)")


def test_pack_orders_given_and_held_values_with_their_host_types():
    held = engine()
    src = np.ones(6, np.float32)
    values = pack(held, src=src, omega=0.25)
    assert values[0] is src and values[2] is held.tag_words
    assert type(values[3]) is np.float32 and values[3] == 0.25
    assert type(values[4]) is np.int32 and values[4] == 3


@pytest.mark.parametrize(("change", "message"), [
    ({"dst": np.zeros(6)}, r"dst \(real_t\*\) needs a float32 array, got float64"),
    ({"dst": np.zeros(12, np.float32)[::2]}, "dst .* needs a C-contiguous array"),
    ({"dst": np.float32(1.0)}, "dst .* needs a float32 array, got float32 scalar"),
    ({"omega": np.zeros(3, np.float32)}, "omega .* needs a float32 scalar"),
    ({"omega": np.float64(1.0)}, "omega .* needs a float32 scalar"),
    ({"nx": 2**31}, "nx .* needs an integer that fits int32"),
    ({"nx": True}, "nx .* needs an integer"),
    ({"nx": 3.0}, "nx .* needs an integer"),
    ({"width": 3}, r"no kernel argument \['width'\]"),
])
def test_pack_refuses_a_wrong_value_by_name(change, message):
    with pytest.raises(KernelArgumentError, match=message):
        pack(**change)


def test_pack_names_a_missing_value():
    with pytest.raises(KernelArgumentError, match="dst must be given at each launch"):
        ARGS.bind(real_t=np.float32, tag_t=np.uint32).pack(engine(), src=np.zeros(1, np.float32))
    with pytest.raises(KernelArgumentError, match=r"neither given nor held as Engine\.tag_words"):
        pack(type("Engine", (), {"omega": 1.0, "nx": 1})())


def test_declarations_are_checked():
    with pytest.raises(ValueError, match="give the host dtype of \\['tag_t'\\]"):
        ARGS.bind(real_t=np.float32)
    with pytest.raises(ValueError, match="repeats"):
        KernelArgs("twice", [[Arg("n", "int")], [Arg("n", "int")]])


def test_unsigned_arguments_take_uint32_values():
    args = KernelArgs("seeds", [[Arg("sr_seed0", "unsigned", GIVEN)]]).bind()
    assert "unsigned sr_seed0" in KernelArgs("seeds", [[Arg("sr_seed0", "unsigned")]]).signature(
        "k", "")
    value = args.pack(sr_seed0=2**32 - 1)[0]
    assert type(value) is np.uint32 and value == 2**32 - 1
    with pytest.raises(KernelArgumentError, match="sr_seed0 .* fits uint32"):
        args.pack(sr_seed0=2**32)
