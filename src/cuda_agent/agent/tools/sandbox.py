"""How Bash commands are confined: which kernel mechanisms are used, and an honest report of them.

The agent's shell commands come from a model, so they run with:

* no network: a fresh network namespace (bubblewrap's ``--unshare-net``, or ``unshare --net``);
* the workspace as the only writable place: with bubblewrap, the host filesystem is mounted read-only,
  ``/tmp`` is a private tmpfs and the workspace is mounted read-write at ``/workspace`` (protected files
  inside it stay read-only); the devices are passed through so CUDA still works;
* resource limits (rlimits) for CPU time, file size, open files and core dumps, optionally address space;
* a process group of its own (and, with bubblewrap, a PID namespace) so a timeout kills everything
  the command started;
* an environment without the agent's own API keys and tokens.

Each mechanism is probed once; what is missing degrades to the next best thing and is named in
`Sandbox.protections`, which goes into the trajectory and the CLI summary. The file tools enforce the
workspace boundary themselves, so they stay confined even when Bash cannot be.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.agent.tools.paths import DEFAULT_PROTECTED, Workspace

ISOLATIONS = ("auto", "bwrap", "unshare", "none")
DISPLAY_ROOT = "/workspace"
EPISODE_CACHE = ".cache/cuda-agent"  # inside the workspace: per episode, and replays see the same hits
EPISODE_HOME = ".cache/home"  # HOME of sandboxed commands (bwrap): writable, private to the episode

# Host paths never bound into the bubblewrap root: they are replaced by fresh mounts.
_SKIP_TOP_LEVEL = {"proc", "dev", "tmp", "sys"}
_SECRET_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|ACCESS_KEY", re.IGNORECASE)


@dataclass(frozen=True)
class SandboxPolicy:
    """What Bash commands should be denied. `None` for a limit means no limit."""

    isolation: str = "auto"
    allow_network: bool = False
    cpu_seconds: int | None = 3600
    file_size_mb: int | None = 8192
    open_files: int | None = 4096
    # Off by default: the CUDA driver reserves far more virtual address space than it uses, so an
    # address-space limit breaks CUDA programs long before it catches a real memory hog.
    address_space_mb: int | None = None
    processes: int | None = None
    display_root: str = DISPLAY_ROOT

    def __post_init__(self) -> None:
        if self.isolation not in ISOLATIONS:
            raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {self.isolation!r}")

    def rlimits(self) -> dict[str, tuple[int, int]]:
        """prlimit option name -> (resource constant, value)."""
        limits: dict[str, tuple[int, int]] = {"core": (resource.RLIMIT_CORE, 0)}
        if self.cpu_seconds is not None:
            limits["cpu"] = (resource.RLIMIT_CPU, int(self.cpu_seconds))
        if self.file_size_mb is not None:
            limits["fsize"] = (resource.RLIMIT_FSIZE, int(self.file_size_mb) << 20)
        if self.open_files is not None:
            limits["nofile"] = (resource.RLIMIT_NOFILE, int(self.open_files))
        if self.address_space_mb is not None:
            limits["as"] = (resource.RLIMIT_AS, int(self.address_space_mb) << 20)
        if self.processes is not None:
            limits["nproc"] = (resource.RLIMIT_NPROC, int(self.processes))
        return limits


@dataclass(frozen=True)
class Sandbox:
    """A built confinement for one workspace: `argv(script)` runs `script` under it."""

    workspace: Workspace
    mechanism: str
    policy: SandboxPolicy
    protections: dict[str, str]
    _prefix: tuple[str, ...] = ()
    _rlimit_tool: str | None = None
    _env: dict[str, str] = field(default_factory=dict)

    @property
    def cwd(self) -> Path:
        """Where Popen starts (the real workspace); bubblewrap then changes into its mount."""
        return self.workspace.root

    def argv(self, script: str) -> list[str]:
        limits = [] if self._rlimit_tool is None else self._prlimit_args()
        return [*limits, *self._prefix, "bash", "-c", script]

    def env(self) -> dict[str, str]:
        return dict(self._env)

    def describe(self) -> str:
        """What Bash commands can and cannot do here, in a sentence for the model: what is active, no more.

        Without bubblewrap there is no mount namespace, so /tmp is the host's and every path this user can
        write is writable; telling the model otherwise would make it trust a privacy it does not have.
        """
        network = "has network access" if self.policy.allow_network else "has no network"
        if self.mechanism == "bwrap":
            return (f"The sandbox {network}, the host's files are read-only, and the workspace is the only "
                    "writable place besides a private /tmp.")  # fmt: skip
        if self.mechanism == "unshare":
            network = "have no network (own network namespace)"
        else:
            network = "have network access" if self.policy.allow_network else "may reach the network"
        return (f"Commands {network} but are NOT confined to the workspace: they can read and write anything "
                "this user can, and /tmp is the host's shared /tmp, not a private one. Keep your files in "
                "the workspace.")  # fmt: skip

    def preexec_fn(self) -> Callable[[], None] | None:
        """Fallback when `prlimit` is missing: set rlimits in the child between fork and exec.

        Only used then, because running Python between fork and exec is unsafe while other threads
        (concurrent episodes) hold locks.
        """
        if self._rlimit_tool is not None:
            return None
        limits = [(res, value) for res, value in self.policy.rlimits().values()]

        def apply() -> None:
            for res, value in limits:
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(res, (value, value))

        return apply

    def _prlimit_args(self) -> list[str]:
        assert self._rlimit_tool is not None
        return [
            self._rlimit_tool,
            *[f"--{name}={value}" for name, (_, value) in self.policy.rlimits().items()],
            "--",
        ]


def build_sandbox(
    root: Path | str,
    policy: SandboxPolicy | None = None,
    protected: tuple[str, ...] = DEFAULT_PROTECTED,
    read_only: tuple[Path | str, ...] = (),
) -> Sandbox:
    """Pick the strongest available mechanism allowed by `policy` for the workspace at `root`.

    `read_only`: host folders commands read (the object folders of the episode's shared judge cache
    layers). Under bubblewrap the host is visible read-only anyway, except /tmp and /dev/shm, which are
    private: one of these folders there is bound back read-only at its own path, or commands would not
    find it."""
    policy = policy or SandboxPolicy()
    real_root = Path(os.path.realpath(root))
    mechanism = _choose(policy)
    display = policy.display_root if mechanism == "bwrap" else str(real_root)
    workspace = Workspace.at(real_root, display, protected)

    protections: dict[str, str] = {"mechanism": mechanism}
    prefix: list[str] = []
    if mechanism == "bwrap":
        (real_root / EPISODE_HOME).mkdir(parents=True, exist_ok=True)
        prefix = _bwrap_args(workspace, policy, tuple(str(Path(p).resolve()) for p in read_only))
        protections["network"] = (
            "allowed by policy"
            if policy.allow_network
            else "isolated: own network namespace (bwrap --unshare-net)"
        )
        protections["filesystem"] = (
            f"host read-only, private /tmp, workspace writable at {display}, HOME={display}/{EPISODE_HOME} "
            "(bwrap mount namespace)"
        )
        protections["protected_files"] = "read-only bind mounts in Bash, refused by the file tools"
        protections["processes"] = "own PID namespace and process group; all killed on timeout (bwrap)"
    else:
        if mechanism == "unshare":
            prefix = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
            protections["network"] = "isolated: own network namespace (unshare --net)"
        elif policy.allow_network:
            protections["network"] = "allowed by policy"
        else:
            protections["network"] = f"NOT isolated: {_why_not_isolated(policy)}"
        protections["filesystem"] = (
            "NOT confined for Bash (needs bubblewrap: apt-get install bubblewrap); "
            "commands start in the workspace, the file tools refuse paths outside it"
        )
        protections["protected_files"] = "refused by the file tools only (Bash could still change them)"
        protections["processes"] = "own process group, killed on timeout"

    rlimit_tool = shutil.which("prlimit") if _prlimit_works() else None
    limits = " ".join(f"{name}={_show_limit(name, value)}" for name, (_, value) in policy.rlimits().items())
    protections["rlimits"] = f"{limits} ({'prlimit' if rlimit_tool else 'setrlimit in preexec_fn'})"
    notes = []
    if policy.address_space_mb is None:
        notes.append("no memory limit (address_space_mb unset; cgroups not used)")
    if policy.processes is None:
        notes.append("no process-count limit")
    elif os.geteuid() == 0:
        notes.append("nproc limit ineffective: root is exempt")
    if notes:
        protections["limits_not_enforced"] = "; ".join(notes)
    protections["environment"] = (
        f"API keys, tokens and other secrets removed; judge caches private to the episode ({EPISODE_CACHE})"
    )

    return Sandbox(
        workspace=workspace,
        mechanism=mechanism,
        policy=policy,
        protections=protections,
        _prefix=tuple(prefix),
        _rlimit_tool=rlimit_tool,
        _env=_command_env(mechanism, display),
    )


def _choose(policy: SandboxPolicy) -> str:
    wanted = policy.isolation
    if wanted == "none":
        return "none"
    if wanted in ("auto", "bwrap") and _bwrap_works():
        return "bwrap"
    if wanted == "bwrap":
        raise RuntimeError(
            "isolation 'bwrap' requested but bubblewrap is missing or cannot create namespaces"
        )
    if policy.allow_network:
        return "none"  # unshare only buys network isolation, which the policy does not want
    if _unshare_works():
        return "unshare"
    if wanted == "unshare":
        raise RuntimeError("isolation 'unshare' requested but `unshare --net` fails here")
    return "none"


def _why_not_isolated(policy: SandboxPolicy) -> str:
    if policy.isolation == "none":
        return "isolation disabled by policy"
    return "neither bubblewrap nor `unshare --net` works here"


def _bwrap_args(workspace: Workspace, policy: SandboxPolicy, read_only: tuple[str, ...] = ()) -> list[str]:
    args = ["bwrap", "--die-with-parent", "--unshare-pid"]
    if not policy.allow_network:
        args.append("--unshare-net")
    if os.geteuid() == 0:
        args += ["--cap-drop", "ALL"]  # root inside must not remount the host read-write
    for entry in sorted(os.listdir("/")):
        if entry in _SKIP_TOP_LEVEL:
            continue
        host = f"/{entry}"
        if os.path.islink(host):
            args += ["--symlink", os.readlink(host), host]
        elif os.path.isdir(host):
            args += ["--ro-bind", host, host]
    args += ["--ro-bind-try", "/sys", "/sys", "--dev-bind", "/dev", "/dev", "--tmpfs", "/dev/shm"]
    args += ["--proc", "/proc", "--tmpfs", "/tmp"]
    # The private /tmp and /dev/shm above hide anything the host keeps there; when the Python running
    # this (a venv, an editable checkout of cuda-agent) lives there, bind it back read-only.
    # So is a shared judge cache layer kept there (`solve --cache-seed /tmp/...`, the test run's warm root):
    # hidden, every verification in an episode compiled the judge's PCH again (~0.5 GB, 25-35 s of a core).
    for path in (*_python_paths(), *read_only):
        if path.startswith(("/tmp/", "/dev/shm/")) and os.path.isdir(path):
            args += ["--ro-bind", path, path]
    display = policy.display_root
    args += ["--bind", str(workspace.root), display]
    for path in workspace.protected_existing():
        inside = display.rstrip("/") + "/" + workspace.relative(path)
        args += ["--ro-bind", str(path), inside]
    args += ["--chdir", display, "--setenv", "TMPDIR", "/tmp", "--"]
    return args


def _python_paths() -> list[str]:
    """Folders the sandboxed commands need to run this Python and import cuda_agent."""
    import cuda_agent

    paths = {
        sys.prefix,
        sys.base_prefix,
        os.path.dirname(os.path.realpath(sys.executable)),
        str(Path(cuda_agent.__file__).resolve().parents[1]),
    }
    return sorted(p for p in paths if os.path.isdir(p))


def _command_env(mechanism: str, display_root: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
    python_bin = os.path.dirname(sys.executable)
    path = env.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    if python_bin and python_bin not in path.split(os.pathsep):
        path = python_bin + os.pathsep + path
    env.update(
        PATH=path,
        PYTHONUNBUFFERED="1",
        PYTHONDONTWRITEBYTECODE="1",
        TERM="dumb",
        NO_COLOR="1",
        PAGER="cat",
        GIT_PAGER="cat",
        MPLBACKEND="Agg",
    )
    env.pop("PYTHONSTARTUP", None)
    env["PYTHON"] = sys.executable  # what utils/compile.sh runs
    # The judge's object and baseline caches: private to the episode. A cache shared with the final
    # judgment would let an agent plant objects or slow baselines there and collect the reward for them.
    env["CUDA_AGENT_CACHE"] = f"{display_root.rstrip('/')}/{EPISODE_CACHE}"
    if mechanism == "bwrap":
        env["TMPDIR"] = "/tmp"
        # The real home is read-only in the sandbox, but torch.compile (Triton, Inductor) and the CUDA
        # driver keep caches there, also in the judge's workers, which keep only HOME of the environment.
        home = os.path.expanduser("~")
        if "PYENV_ROOT" not in env and os.path.isdir(os.path.join(home, ".pyenv")):
            env["PYENV_ROOT"] = os.path.join(home, ".pyenv")  # pyenv shims find their root through HOME
        env["HOME"] = f"{display_root.rstrip('/')}/{EPISODE_HOME}"
    return env


def _show_limit(name: str, value: int) -> str:
    if name in ("fsize", "as"):
        return f"{value >> 20}MiB"
    if name == "cpu":
        return f"{value}s"
    return str(value)


def _run_ok(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.cache
def _bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = [
        "bwrap",
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        "true",
    ]
    return _run_ok(probe)


@functools.cache
def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    base = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--net", "--map-root-user"]
    return _run_ok([*base, "true"])


@functools.cache
def _prlimit_works() -> bool:
    return shutil.which("prlimit") is not None and _run_ok(["prlimit", "--core=0", "--", "true"])
