"""Tools for people, outside the training path: `explain` renders a group's credit (python credit.py explain)."""
