"""Test policy: fails to import."""
import a_module_that_does_not_exist  # noqa: F401


class Team:
    pass
