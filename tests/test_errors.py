"""Bad input raises a subclass of ``lbsim.LbsimError``, the one class the
command line turns into an ``lbsim: error:`` line."""

import pickle

import pytest

import lbsim
from lbsim import _lbsim
from lbsim.compare import CompareError
from lbsim.errors import native
from lbsim.experiments.sweep import SweepError


def test_every_input_error_is_an_lbsim_error_and_a_value_error():
    for cls in (lbsim.ScenarioError, SweepError, CompareError):
        assert issubclass(cls, lbsim.LbsimError)
        assert issubclass(cls, ValueError)
    # code catching the extension's own class still catches the API's
    assert issubclass(lbsim.ScenarioError, _lbsim.ScenarioError)


def test_scenario_errors_from_the_simulator_arrive_as_lbsim_scenario_errors():
    with pytest.raises(lbsim.ScenarioError) as e:
        lbsim.validate("[topology]\nkind = 'leaf_spine'\nleaves = 0\n")
    assert type(e.value) is lbsim.ScenarioError
    assert e.value.field, "the offending key is named"
    assert e.value.field in str(e.value)


def test_native_keeps_message_and_field_and_survives_pickling():
    def raw():
        err = _lbsim.ScenarioError("workload.load: must be positive")
        err.field = "workload.load"
        raise err

    with pytest.raises(lbsim.ScenarioError) as e:
        native(raw)
    assert str(e.value) == "workload.load: must be positive"
    back = pickle.loads(pickle.dumps(e.value))  # as a sweep worker sends it
    assert type(back) is lbsim.ScenarioError and back.field == "workload.load"
    assert native(lambda a, b: a + b, 2, 3) == 5
