import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture
def examples():
    return ROOT / "examples"


@pytest.fixture
def small(examples):
    return examples / "small.toml"
