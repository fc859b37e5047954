"""Tools for people, outside the training path: `explain` renders a group's credit (python -m tools.explain)."""
