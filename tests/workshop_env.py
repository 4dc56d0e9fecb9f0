"""The environment every test and notebook run uses: offline backend, a frozen clock, no prompts, no real key.

Variables set here also reach the notebook kernels that nbval starts, so committed
notebook outputs are reproduced exactly. tests/refresh_notebooks.sh sets the same values.
"""
import os

FROZEN_NOW = "2026-11-30T10:00:00-08:00"  # a Monday morning in Los Angeles

SETTINGS = {
    "WORKSHOP_BACKEND": "offline",
    "WORKSHOP_NOW": FROZEN_NOW,
    "WORKSHOP_NO_PROMPT": "1",
    "TQDM_DISABLE": "1",  # progress bars show timings, which differ on every run
    "MPLBACKEND": "module://matplotlib_inline.backend_inline",
}


def apply() -> None:
    """Set the test environment in this process (and so in every kernel it starts)."""
    os.environ.update(SETTINGS)
    os.environ.pop("NVIDIA_API_KEY", None)


if __name__ == "__main__":  # used by refresh_notebooks.sh: print the settings as shell exports
    import shlex

    print("unset NVIDIA_API_KEY")
    for name, value in SETTINGS.items():
        print(f"export {name}={shlex.quote(value)}")
