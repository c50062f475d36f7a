"""obs: dashboards rendered from the marts."""
