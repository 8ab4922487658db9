"""The `drover` command."""
