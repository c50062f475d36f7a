"""obs: the command-line interface."""
