"""Scheduling rules shared by the worker's planner and the state service's
plan check (pure): :mod:`.eligibility` (whether a node may take new work)."""
