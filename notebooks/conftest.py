"""When nbval runs these notebooks, use the same environment as the test suite (tests/workshop_env.py)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import workshop_env  # noqa: E402

workshop_env.apply()
