"""The package's surface: the stubs cover everything the native module
exports, and everything public has a docstring."""

import ast
import inspect
from pathlib import Path

import hako
from hako import _hako

STUBS = Path(hako.__file__).parent / "_hako.pyi"


def stubbed():
    """{class name: set of member names} from the stub file."""
    tree = ast.parse(STUBS.read_text())
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out[node.name] = {n.name for n in node.body
                              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return out


def public_classes():
    return {name: obj for name, obj in vars(_hako).items()
            if inspect.isclass(obj) and not name.startswith("_")}


def test_every_class_and_method_has_a_stub():
    stubs = stubbed()
    for name, cls in public_classes().items():
        assert name in stubs, f"{name} has no stub"
        if issubclass(cls, BaseException):
            continue
        for member in vars(cls):
            if member.startswith("_") and member not in ("__len__", "__iter__", "__next__",
                                                         "__enter__", "__exit__"):
                continue
            assert member in stubs[name], f"{name}.{member} has no stub"


def test_every_public_method_has_a_docstring():
    for name, cls in public_classes().items():
        assert cls.__doc__, f"{name} has no docstring"
        if issubclass(cls, BaseException):
            continue
        for member, obj in vars(cls).items():
            if member.startswith("_"):
                continue
            assert getattr(obj, "__doc__", None), f"{name}.{member} has no docstring"


def test_the_package_reexports_the_module():
    for name in public_classes():
        assert getattr(hako, name) is getattr(_hako, name)
    assert set(hako.__all__) >= set(public_classes())
    assert (Path(hako.__file__).parent / "py.typed").exists()
