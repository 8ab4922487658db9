"""allocations."""
