"""What the exercise tests share: run a cell's code as the notebook would, and read a check's verdict quietly."""
import contextlib
import io


def quiet_check(exercise, *answers) -> tuple[bool, str]:
    """``exercise.check(*answers)`` without printing: (passed, what it printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        passed = bool(exercise.check(*answers))
    return passed, out.getvalue()


def defined(exercise, code: str, **names) -> tuple:
    """Run a cell's code in the exercise's context (plus ``names``); the answers it defines, in check() order."""
    namespace = dict(exercise.context())
    exec(compile(code, f"<{exercise.key}>", "exec"), namespace)  # noqa: S102 - the package's own stubs/solutions
    namespace.update(names)
    return tuple(namespace[name] for name in exercise.answers)


def run(exercise, code: str, **names) -> tuple[bool, str]:
    """Run a cell's code as the notebook would, then the exercise's check: (passed, what it printed)."""
    return quiet_check(exercise, *defined(exercise, code, **names))
