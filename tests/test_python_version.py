"""The lowest Python version lbsim declares is one that is tested.

pyproject.toml's ``requires-python``, the README's "Python ≥ X.Y" and the
PyO3 stable-ABI floor (``abi3-pyXY``) name the same version, and CI (which
sets ``CI``) runs exactly that version: lowering the declaration without a
CI run on the lower interpreter fails here.
"""

import os
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def declared() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*(\d+)\.(\d+)", spec.strip())
    assert m, f"pyproject.toml: requires-python {spec!r} is not of the form '>=X.Y'"
    return int(m[1]), int(m[2])


def test_running_interpreter_meets_the_declared_minimum():
    assert sys.version_info[:2] >= declared()


def test_ci_runs_the_declared_minimum():
    if not os.environ.get("CI"):
        return  # a developer may run a newer Python; CI must run the floor
    assert sys.version_info[:2] == declared(), (
        f"requires-python declares {declared()} but CI runs {sys.version_info[:2]}: "
        "declare the version CI tests")


def test_readme_and_abi3_name_the_declared_minimum():
    major, minor = declared()
    readme = (ROOT / "README.md").read_text()
    assert re.findall(r"Python ≥ (\d+\.\d+)", readme) == [f"{major}.{minor}"], "README.md: 'Python ≥ X.Y' differs"
    cargo = (ROOT / "crates" / "lbsim-py" / "Cargo.toml").read_text()
    assert re.findall(r'"abi3-py(\d+)"', cargo) == [f"{major}{minor}"], "crates/lbsim-py/Cargo.toml: abi3 feature differs"
