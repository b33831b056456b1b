"""The plug-in registry: registration, creation, helpful errors, entry-point discovery."""

from __future__ import annotations

import sys
import textwrap

import attrs
import pytest

from thelma_py import registry
from thelma_py.registry import PluginParameterError, UnknownPluginError


@pytest.fixture
def clean_registry():
    """Let a test register plug-ins; restore the global registry afterwards."""
    registry.load_plugins()
    saved = {kind: dict(table) for kind, table in registry._registry.items()}
    saved_loaded = registry._loaded
    yield registry
    for kind, table in saved.items():
        registry._registry[kind].clear()
        registry._registry[kind].update(table)
    registry._loaded = saved_loaded


def test_register_create_and_list(clean_registry):
    @registry.register("results", "test-recorder")
    @attrs.define(kw_only=True)
    class Recorder:
        """Records nothing; for tests."""

        every: int = 10
        label: str = "x"

    assert registry.available("results")["test-recorder"] is Recorder
    created = registry.create("results", "test-recorder", every=25)
    assert isinstance(created, Recorder)
    assert (created.every, created.label) == (25, "x")
    assert Recorder.plugin_kind == "results" and Recorder.plugin_name == "test-recorder"
    line = next(d for d in registry.describe("results") if d.startswith("test-recorder"))
    assert line == "test-recorder(every, label): Records nothing; for tests."


def test_function_factories_take_their_signature(clean_registry):
    @registry.register("geometry", "test-square")
    def square(n: int, periodic: bool = False):
        return ("square", n, periodic)

    assert list(registry.parameters(square)) == ["n", "periodic"]
    assert registry.create("geometry", "test-square", n=4) == ("square", 4, False)


def test_a_second_class_under_a_taken_name_is_refused(clean_registry):
    @registry.register("init", "test-twice")
    class First:
        pass

    registry.register("init", "test-twice")(First)  # the same class again is harmless
    with pytest.raises(ValueError, match=r"already registered by .*First"):

        @registry.register("init", "test-twice")
        class Second:
            pass


def test_unknown_name_lists_the_valid_names():
    with pytest.raises(UnknownPluginError) as info:
        registry.get("compute", "lbm-cumulant")
    message = str(info.value)
    assert "'lbm-cumulant'" in message
    for name in registry.available("compute"):
        assert name in message
    assert "lbm" in registry.available("compute")


def test_unknown_kind_lists_the_kinds():
    with pytest.raises(
        ValueError,
        match=r"valid kinds: \['init', 'geometry', 'compute', "
        r"'results'\]",
    ):
        registry.available("boundary")


def test_wrong_parameter_lists_the_valid_parameters():
    with pytest.raises(PluginParameterError) as info:
        registry.create("compute", "lbm", viscosity=0.1)
    message = str(info.value)
    assert "['viscosity']" in message
    for name in ("nu", "collision", "force", "streaming"):
        assert name in message


def _fake_distribution(root, module: str, body: str, entry: str) -> None:
    """A module plus a *.dist-info directory declaring it in the thelma_py.plugins group."""
    (root / f"{module}.py").write_text(textwrap.dedent(body))
    info = root / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{entry}\n")


@pytest.fixture
def forget_modules():
    names: list[str] = []
    yield names
    for name in names:
        sys.modules.pop(name, None)


def test_entry_point_plugins_are_discovered(clean_registry, tmp_path, monkeypatch, forget_modules):
    module = "thelma_ep_demo"
    forget_modules.append(module)
    _fake_distribution(
        tmp_path,
        module,
        '''
        import attrs
        from thelma_py.registry import register

        @register("compute", "ep-demo")
        @attrs.frozen
        class Demo:
            """A third-party compute plug-in."""
            nu: float = 0.1
        ''',
        f"demo = {module}",
    )
    assert "ep-demo" not in registry.available("compute")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._loaded = False

    found = registry.get("compute", "ep-demo")
    assert found.__module__ == module
    assert registry.create("compute", "ep-demo", nu=0.25).nu == 0.25
    assert "lbm" in registry.available("compute")  # built-ins are still there


def test_a_broken_entry_point_warns_and_the_rest_still_load(
    clean_registry, tmp_path, monkeypatch, forget_modules
):
    forget_modules.extend(["thelma_ep_broken", "thelma_ep_fine"])
    _fake_distribution(
        tmp_path,
        "thelma_ep_broken",
        "raise ImportError('no cumulants today')\n",
        "broken = thelma_ep_broken",
    )
    _fake_distribution(
        tmp_path,
        "thelma_ep_fine",
        """
        from thelma_py.registry import register

        @register("init", "ep-fine")
        def fine(rho: float = 1.0):
            return rho
        """,
        "fine = thelma_ep_fine",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._loaded = False

    with pytest.warns(UserWarning, match=r"'broken' \(thelma_ep_broken\).*no cumulants today"):
        names = registry.available("init")
    assert "ep-fine" in names
