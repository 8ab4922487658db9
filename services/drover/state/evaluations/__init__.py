"""evaluations."""
