"""Simulated nodes (`drover sim nodes`): register, heartbeat, run, report health."""
