"""Why the worker gives an evaluation up, named by cause: nacked (the
plan kept being stale, the view was behind) or dropped (the delivery ended)."""

from __future__ import annotations


class PlanRefused(Exception):
    """The plan kept being stale: give the evaluation back."""


class ViewBehind(Exception):
    """The view did not reach the evaluation's wait index in time: give the
    evaluation back rather than plan it on older state."""


class DeliveryEnded(Exception):
    """The state service refused the plan: this worker's delivery of the
    evaluation ended (nacked, timed out, redelivered, another broker term)."""
