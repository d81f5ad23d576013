"""The type stubs (transformer/_transformer.pyi) name exactly what the extension module defines, with
the same parameters in the same order (checked against pybind11's signatures)."""

import ast
import pathlib

import transformer
from transformer import _transformer

STUB = pathlib.Path(transformer.__file__).with_name("_transformer.pyi")
# Dunder methods the stubs declare because they mean something to a type checker.
DUNDERS = {"__init__", "__len__", "__bool__", "__float__"}


def stub_tree():
    return ast.parse(STUB.read_text(encoding="utf-8"))


def public(cls):
    """The class's own members, less the slot wrappers every pybind11 class has (its __init__ when
    Python cannot construct it)."""
    return {
        n
        for n, v in vars(cls).items()
        if (not n.startswith("_") or n in DUNDERS) and type(v).__name__ != "wrapper_descriptor"
    }


def stub_parameters(f):
    a = f.args
    names = [p.arg for p in a.posonlyargs + a.args]
    if a.kwonlyargs:
        names += ["*"] + [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    return names


def runtime_parameters(obj):
    """Parameter names from pybind11's signature line, "name(a: T, *, b: U = 1) -> R"."""
    line = obj.__doc__.splitlines()[0]
    inside = line[line.index("(") + 1 : line.rindex(")")]
    names, depth, item = [], 0, ""
    for ch in inside + ",":
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            item = item.strip()
            if item:
                names.append(item.split(":")[0].split("=")[0].strip())
            item = ""
        else:
            item += ch
    return names


def test_module_names():
    tree = stub_tree()
    declared = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            declared.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    runtime = {n for n in dir(_transformer) if not n.startswith("_")} | {"__version__"}
    assert declared == runtime
    assert set(transformer.__all__) == runtime | {"train"}  # train: Trainer(...).run(), in Python


def test_functions_and_classes():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert stub_parameters(node) == runtime_parameters(getattr(_transformer, node.name)), node.name
        if not isinstance(node, ast.ClassDef) or node.name == "Error":
            continue
        cls = getattr(_transformer, node.name)
        members = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        assert set(members) == public(cls), node.name
        for name, m in members.items():
            attribute = vars(cls)[name]
            is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in m.decorator_list)
            assert is_property == isinstance(attribute, property), f"{node.name}.{name}"
            if not is_property:
                assert stub_parameters(m) == runtime_parameters(attribute), f"{node.name}.{name}"
