"""The exceptions lbsim raises for bad input, under one base class.

``LbsimError`` is what the command line catches and prints as one
``lbsim: error: ...`` line (exit status 2); anything else is a bug and
keeps its traceback. Its subclasses are also ``ValueError``\\ s, as they
always were:

- ``ScenarioError``: an invalid scenario (``.field`` names the key). The
  simulator (``lbsim._lbsim``) raises its own ``ScenarioError``;
  :func:`native` turns it into this one at the Python API boundary, so
  ``except lbsim.ScenarioError`` and ``except lbsim._lbsim.ScenarioError``
  both catch it.
- ``SweepError`` (``lbsim.experiments.sweep``): a bad sweep file or
  ``lbsim reproduce`` request.
- ``CompareError`` (``lbsim.compare``): a bad ``lbsim compare`` request.

``LongRunWarning`` is not an error: a run estimated at more than ten
minutes, warned about before its first event.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

from lbsim import _lbsim

T = TypeVar("T")


class LbsimError(Exception):
    """Bad input to lbsim: the message is one line naming what is wrong."""


class ScenarioError(LbsimError, _lbsim.ScenarioError):
    """A scenario is invalid; ``.field`` names the offending key ("" when
    the file itself is the problem)."""

    field: str = ""


class LongRunWarning(UserWarning):
    """A run estimated at more than ten minutes of wall time (``explain``'s
    ``long_run``): the message names the key that decides its work. Given
    before the first event; ``allow_long=True`` silences it."""


def native(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` for a function of the simulator extension, with its
    ScenarioError raised as :class:`ScenarioError` (same message and
    ``.field``)."""
    try:
        return fn(*args)
    except ScenarioError:
        raise
    except _lbsim.ScenarioError as e:
        err = ScenarioError(*e.args)
        err.field = getattr(e, "field", "")
        raise err from None


__all__ = ["LbsimError", "LongRunWarning", "ScenarioError", "native"]
