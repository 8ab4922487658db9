"""The scheduler config's pure planner."""
