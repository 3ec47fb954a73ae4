"""The type stubs shipped with the package match the bindings they describe."""
import ast
import os
import subprocess
import sys

import polychip
import polychip._polychip as extension

SOURCE = os.path.join(os.path.dirname(__file__), "..")
GENERATOR = os.path.join(SOURCE, "tools", "generate_stubs.py")
COMMITTED = os.path.join(SOURCE, "polychip", "_polychip.pyi")


def generated():
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(polychip.__file__)))
    return subprocess.run([sys.executable, GENERATOR], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_committed_stubs_are_what_the_bindings_generate():
    with open(COMMITTED) as f:
        committed = f.read()
    assert committed == generated(), (
        "python/polychip/_polychip.pyi is stale: regenerate it with "
        "PYTHONPATH=build/python python3 python/tools/generate_stubs.py > python/polychip/_polychip.pyi")


def test_stubs_parse_and_name_every_public_binding():
    with open(COMMITTED) as f:
        tree = ast.parse(f.read())
    declared = {node.name for node in tree.body if isinstance(node, (ast.ClassDef, ast.FunctionDef))}
    public = {name for name in dir(extension) if not name.startswith("_")}
    assert public <= declared, sorted(public - declared)
    methods = {node.name for cls in tree.body if isinstance(cls, ast.ClassDef) and cls.name == "Tensor"
               for node in cls.body if isinstance(node, ast.FunctionDef)}
    assert {"numpy", "__dlpack__", "__dlpack_device__", "shape"} <= methods


def test_the_package_ships_stubs_and_the_typed_marker():
    package = os.path.dirname(polychip.__file__)
    assert os.path.exists(os.path.join(package, "_polychip.pyi"))
    assert os.path.exists(os.path.join(package, "py.typed"))
