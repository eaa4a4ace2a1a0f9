"""Building the Containerfile where no container engine runs, and starting the image's command
without one (tests/test_container_image.py).

`podman` (Debian's) builds images here with `--isolation=chroot` once `default_ulimits = []` is
set in a containers.conf, but `podman run` cannot start a container (no cgroups it can use). So:

1. the base is made from Debian packages: `debootstrap` bookworm (minbase) with Python 3.11 and
   its venv module, imported with `podman import` and cached in podman's storage under a tag
   keyed on everything that made it (suite, packages, mirror, architecture, the CA bundle);
2. the Containerfile is built on it (`--build-arg BASE=...`), its layers cached in the same
   storage, so an unchanged tree builds again in seconds;
3. the image's root filesystem is mounted read-only (`podman image mount`) and its command
   started there with `chroot`, as the image's user, with the image's environment and working
   directory, all read from `podman image inspect`; in a mount namespace of its own (`unshare`)
   that adds what a runtime adds: the volume (a directory filled from the image), /dev and /tmp.

Everything lives in one directory, `$XDG_CACHE_HOME/workspace-api/container-test` (default
~/.cache): podman's storage (`--root`), the containers.conf the tests write (CONTAINERS_CONF;
the machine's own configuration and storage are never used) and a lock that lets one run at a
time use it. Delete the directory to start cold. Needs root (debootstrap, chroot).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parents[1]
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "workspace-api"
    / "container-test"
)
TOOLS = ("podman", "debootstrap", "chroot", "unshare", "tar")

# The local base image: what BASE must offer (docs/deployment.md), from Debian packages.
SUITE, VARIANT = "bookworm", "minbase"
PACKAGES = ("python3.11", "python3-venv")
MIRROR = os.environ.get("WSAPI_TEST_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# pip in the image checks PyPI's certificate against the base's CA bundle: the machine's, so
# that a TLS-inspecting proxy this machine trusts is trusted there too.
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
BASE_REPOSITORY = "localhost/workspace-api-test-base"
IMAGE = "localhost/workspace-api:test"
BUILD_STAGE = "localhost/workspace-api:test-build"
# podman cannot set rlimits for a chroot-isolated build here: no default ulimits.
CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n"


@contextlib.contextmanager
def logged(log: Path, command: list[str]) -> Iterator[TextIO]:
    """`log` open for a command's output, between a line naming it and one saying how long it
    took (the log of a slow run says where the time went)."""
    with open(log, "a") as out:
        out.write(f"$ {' '.join(command)}\n")
        out.flush()
        started = time.monotonic()
        try:
            yield out
        finally:
            out.write(f"# {time.monotonic() - started:.1f} s\n")


def missing() -> str | None:
    """Why the image cannot be built and run on this machine, or None when it can."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if absent:
        return f"missing {', '.join(absent)} (.ci/run installs them with apt-get)"
    if os.geteuid() != 0:
        return "needs root: debootstrap builds the base, chroot starts the image's command"
    return None


class Podman:
    """podman with the tests' own storage and containers.conf."""

    def __init__(self, cache: Path = CACHE):
        self.cache = cache
        self.conf = cache / "containers.conf"
        cache.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(CONTAINERS_CONF)
        # The run root holds locks and mount state: on /run (a tmpfs, emptied at boot, which
        # podman then notices) under a name of this storage, so that two caches never share one.
        digest = hashlib.sha256(str(cache).encode()).hexdigest()[:12]
        self.runroot = Path("/run") / f"workspace-api-test-{digest}"
        self.prefix = [
            shutil.which("podman") or "podman",
            "--root",
            str(cache / "storage"),
            "--runroot",
            str(self.runroot),
            "--storage-driver",
            "overlay",
        ]

    def env(self) -> dict:
        return {**os.environ, "CONTAINERS_CONF": str(self.conf)}

    def run(self, *args: str, log: Path | None = None, **kwargs) -> str:
        """Run podman; its stdout, or an AssertionError with the end of what it printed."""
        command = [*self.prefix, *args]
        if log is None:
            result = subprocess.run(
                command, env=self.env(), capture_output=True, text=True, **kwargs
            )
            output = result.stdout + result.stderr
        else:
            with logged(log, ["podman", *args]) as out:
                result = subprocess.run(
                    command, env=self.env(), stdout=out, stderr=subprocess.STDOUT, **kwargs
                )
            output = log.read_text()
        assert result.returncode == 0, f"podman {' '.join(args)} failed:\n{output[-6000:]}"
        return result.stdout or ""

    def exists(self, image: str) -> bool:
        command = [*self.prefix, "image", "exists", image]
        return subprocess.run(command, env=self.env(), capture_output=True).returncode == 0


@contextlib.contextmanager
def locked(cache: Path = CACHE) -> Iterator[None]:
    """One run at a time uses the cache (another test run waits for it)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def base_tag() -> str:
    """The base image's name: a hash of everything that goes into it."""
    made_of = {
        "suite": SUITE,
        "variant": VARIANT,
        "packages": sorted(PACKAGES),
        "mirror": MIRROR,
        "architecture": platform.machine(),
        "ca_bundle": hashlib.sha256(CA_BUNDLE.read_bytes()).hexdigest(),
        "recipe": 1,  # raise when debootstrap_base() changes what it makes
    }
    key = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()[:16]
    return f"{BASE_REPOSITORY}:{key}"


def debootstrap_base(target: Path, log: Path) -> None:
    """A Debian root filesystem with Python 3.11 and venv, as an official slim image has."""
    shutil.rmtree(target, ignore_errors=True)
    # dpkg inside debootstrap syncs every file it writes: over a minute of a cold run on a busy
    # disk, for a tree that is thrown away if the run fails. Its unsafe-io mode skips that.
    unsafe_io = target / "etc" / "dpkg" / "dpkg.cfg.d" / "test-unsafe-io"
    unsafe_io.parent.mkdir(parents=True)
    unsafe_io.write_text("force-unsafe-io\n")
    command = [
        "debootstrap",
        f"--variant={VARIANT}",
        f"--include={','.join(PACKAGES)}",
        SUITE,
        str(target),
        MIRROR,
    ]
    with logged(log, command) as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    assert result.returncode == 0, "debootstrap failed:\n" + log.read_text()[-6000:]
    unsafe_io.unlink()
    assert (target / "usr/bin/python3.11").exists(), "debootstrap made no Python 3.11"
    # What an official slim image leaves out too: downloaded packages and package lists.
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for path in (target / cache).glob("*"):
            if path.is_file():
                path.unlink()
    shutil.copyfile(CA_BUNDLE, target / "etc/ssl/certs/ca-certificates.crt")


def ensure_base(podman: Podman, log: Path) -> str:
    """The cached base image, made and imported when missing; older bases are removed."""
    tag = base_tag()
    if not podman.exists(tag):
        tree = podman.cache / "base.partial"
        debootstrap_base(tree, log)
        # Through a file: podman stops reading at the archive's end, before tar's last padding.
        archive = podman.cache / "base.tar"
        packed = subprocess.run(
            ["tar", "-C", str(tree), "--numeric-owner", "-cf", str(archive), "."],
            capture_output=True,
            text=True,
        )
        assert packed.returncode == 0, "packing the base failed: " + packed.stderr
        podman.run(
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["python3"]',
            str(archive),
            tag,
            log=log,
        )
        archive.unlink()
        shutil.rmtree(tree)
    for other in podman.run("images", "--format", "{{.Repository}}:{{.Tag}}").split():
        if other.startswith(BASE_REPOSITORY + ":") and other != tag:
            podman.run("rmi", other)
    return tag


def build(podman: Podman, base: str, log: Path) -> None:
    """Build the Containerfile on `base` as IMAGE (its layers cached), then drop what no tag
    uses any more: earlier builds of IMAGE. The build stage is tagged too, so that its cached
    layers (the dependencies from PyPI) survive the clean-up."""
    common = ["--isolation=chroot", "--format", "docker", "--build-arg", f"BASE={base}"]
    common += ["--file", str(ROOT / "Containerfile")]
    podman.run("image", "unmount", "--all")  # left mounted by a run that was killed
    podman.run("build", *common, "--tag", IMAGE, str(ROOT), log=log)
    podman.run("build", *common, "--target", "build", "--tag", BUILD_STAGE, str(ROOT), log=log)
    podman.run("image", "prune", "--force", log=log)


# Run in a mount namespace of its own (so nothing outlives the process): what a runtime gives a
# container (the volumes, a /dev with the usual devices, a /tmp), then chroot into the image's
# read-only root as its user, and its working directory through the image's own `env`.
LAUNCH = """
root=$1 user=$2 workdir=$3
shift 3
while [ "$1" != -- ]; do mount --bind "$1" "$root$2"; shift 2; done
shift
mount -t tmpfs -o nosuid,mode=0755 dev "$root/dev"
for device in null:3 zero:5 full:7 random:8 urandom:9; do
  mknod -m 0666 "$root/dev/${device%:*}" c 1 "${device#*:}"
done
mount -t tmpfs -o nosuid,nodev,mode=1777 tmp "$root/tmp"
exec chroot --userspec="$user" "$root" /usr/bin/env --chdir="$workdir" -- "$@"
"""


@dataclasses.dataclass
class Image:
    """A built image: its root filesystem (mounted read-only) and what `podman image inspect`
    says of it."""

    root: Path
    inspect: dict

    @property
    def config(self) -> dict:
        return self.inspect["Config"]

    @property
    def env(self) -> dict[str, str]:
        return dict(item.split("=", 1) for item in self.config.get("Env") or [])

    def user(self) -> tuple[int, int]:
        """The uid and gid USER names, looked up in the image's own /etc/passwd and /etc/group."""
        user, _, group = (self.config.get("User") or "0").partition(":")
        passwd = [line.split(":") for line in (self.root / "etc/passwd").read_text().splitlines()]
        entry = next((e for e in passwd if user in (e[0], e[2])), None)
        uid = int(entry[2]) if entry else int(user)
        if not group:
            return uid, int(entry[3]) if entry else 0
        groups = [line.split(":") for line in (self.root / "etc/group").read_text().splitlines()]
        found = next((g for g in groups if group in (g[0], g[2])), None)
        return uid, int(found[2]) if found else int(group)

    def command(self) -> list[str]:
        return [*(self.config.get("Entrypoint") or []), *(self.config.get("Cmd") or [])]

    def healthcheck(self) -> list[str]:
        """The HEALTHCHECK's command as an argument list (CMD, or CMD-SHELL through /bin/sh)."""
        healthcheck = self.inspect.get("Healthcheck") or self.config.get("Healthcheck") or {}
        test = healthcheck.get("Test") or ["NONE"]
        assert test[0] in ("CMD", "CMD-SHELL"), f"the image has no HEALTHCHECK: {test}"
        return test[1:] if test[0] == "CMD" else ["/bin/sh", "-c", test[1]]

    def volume(self, path: str, host: Path) -> Path:
        """A new volume for `path` at `host`, filled as a runtime fills one: with what the image
        has there, owners and modes included."""
        source = self.root / path.lstrip("/")
        host.mkdir()
        copied = subprocess.run(["cp", "-a", f"{source}/.", str(host)], capture_output=True)
        assert copied.returncode == 0, copied.stderr
        info = source.stat()
        os.chown(host, info.st_uid, info.st_gid)
        host.chmod(info.st_mode & 0o7777)
        return host

    def chroot(self, argv: list[str], volumes: dict[str, Path] | None = None) -> list[str]:
        """The command line that starts `argv` as the image would: in the image's root, as its
        user, in its working directory, with `volumes` (image path -> host directory)."""
        uid, gid = self.user()
        workdir = self.config.get("WorkingDir") or "/"
        mounts = [str(item) for path, host in (volumes or {}).items() for item in (host, path)]
        return [
            shutil.which("unshare") or "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "/bin/sh",
            "-euc",
            LAUNCH,
            "launch",
            str(self.root),
            f"{uid}:{gid}",
            workdir,
            *mounts,
            "--",
            *argv,
        ]

    def environ(self, **overrides: str) -> dict[str, str]:
        """The image's environment, nothing of this process's, with `overrides`. The launcher's
        own tools (unshare, mount, chroot) are found on the image's PATH and /usr/sbin."""
        uid, _ = self.user()
        home = next(
            (
                line.split(":")[5]
                for line in (self.root / "etc/passwd").read_text().splitlines()
                if line.split(":")[2] == str(uid)
            ),
            "/",
        )
        return {"HOME": home, **self.env, **overrides}


@contextlib.contextmanager
def mounted(podman: Podman, image: str) -> Iterator[Image]:
    """`image`'s root filesystem, mounted read-only for as long as the context lasts."""
    inspect = json.loads(podman.run("image", "inspect", image))[0]
    root = Path(podman.run("image", "mount", image).strip())
    try:
        yield Image(root, inspect)
    finally:
        podman.run("image", "unmount", image)


def build_image(log: Path) -> None:
    """The base and the image, built (or found cached) under the cache's lock."""
    with locked():
        podman = Podman()
        build(podman, ensure_base(podman, log), log)


@contextlib.contextmanager
def warmed(log: Path) -> Iterator[subprocess.Popen | None]:
    """The image built by a background process while the rest of the suite runs (a cold build
    mostly waits on downloads: debootstrap's packages, pip's wheels), so that the image tests
    find it cached: they build it themselves under the same lock, which waits for this build
    first. None where the image cannot be built here. The process is stopped when the context
    ends, should the tests end first. Its output and its steps go to `log`."""
    if missing():
        yield None
        return
    with open(log, "a") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.container", str(log)],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()


if __name__ == "__main__":
    build_image(Path(sys.argv[1]))
