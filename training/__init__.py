"""Training scripts for the Arena's learned teams (see `imitate.py`)."""
