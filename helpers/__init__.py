"""helpers: the small package behind the agent-memory workshop notebooks."""
__version__ = "0.1.0"
