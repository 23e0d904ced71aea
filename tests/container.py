"""The container, built and run as an operator would (scripts/test.sh runs this after cargo test).

Needs root and Debian's podman, runc and mmdebstrap (scripts/test.sh installs them when it may).
The Dockerfile's base images are made from Debian's packages by scripts/container-bases.sh; then
the Dockerfile is built whole (its build stage included) and the image is run exactly as the
README and compose.yaml mount it: a named volume on /data, a host folder on /backups. Checked:
the image keeps its HEALTHCHECK and is healthy by it, runs as uid 7300, keeps a contact made over
the API across a restart, writes `mycorrhizal backup` into the host folder (and the backup
verifies), and stops cleanly.

Prints one line `container: passed` or `container: SKIPPED (why)`; exits non-zero on a failure.
"""

import json
import os
import pathlib
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Settings podman needs on this kind of machine (no systemd, no crun under cgroup v2 delegation):
# the default ulimits of a container must fit under the sandbox's own, runc, cgroupfs, a file
# event log. Given through CONTAINERS_CONF, so the machine's own configuration is left alone.
CONTAINERS_CONF = """\
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
TAG = "localhost/mycorrhizal-suite:latest"


def skip(why):
    print(f"container: SKIPPED ({why})")
    sys.exit(0)


def run(*args, check=True, quiet=False, timeout=1800):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    if not quiet and done.stdout.strip():
        print(done.stdout.strip()[-2000:])
    return done


def podman(*args, **kwargs):
    return run("podman", *args, **kwargs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base):
        self.base = base
        self.cookie = None

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        if self.cookie:
            request.add_header("cookie", f"auth_token={self.cookie}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.headers, json.loads(error.read() or b"null")

    def sign_in(self, username, password):
        status, headers, body = self.call("POST", "/api/v1/login", {"identifier": username, "password": password})
        assert status == 200, f"login: {status} {body}"
        for header in headers.get_all("set-cookie") or []:
            if header.startswith("auth_token="):
                self.cookie = header.split(";", 1)[0].split("=", 1)[1]
        assert self.cookie, "login set no auth_token cookie"


def wait_healthy(name, deadline_s=150):
    """Runs the image's own HEALTHCHECK (podman has no timer without systemd) until it passes."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if podman("healthcheck", "run", name, check=False, quiet=True).returncode == 0:
            status = podman("inspect", "--format", "{{.State.Health.Status}}", name, quiet=True).stdout.strip()
            assert status == "healthy", f"healthcheck passed but the state says {status!r}"
            return
        state = podman("inspect", "--format", "{{.State.Status}}", name, quiet=True).stdout.strip()
        if state != "running":
            logs = podman("logs", name, check=False, quiet=True)
            raise AssertionError(f"{name} is {state}:\n{logs.stdout[-3000:]}{logs.stderr[-3000:]}")
        time.sleep(1)
    raise AssertionError(f"{name} not healthy within {deadline_s} s")


def main():
    if os.geteuid() != 0:
        skip("needs root for Debian's podman and mmdebstrap")
    missing = [tool for tool in ("podman", "runc", "mmdebstrap", "rustc") if shutil.which(tool) is None]
    if missing:
        skip("missing " + ", ".join(missing) + "; as root: apt-get install podman runc mmdebstrap iptables")

    # Base images, the build stage's image and its cache mounts take about 3 GB.
    free = shutil.disk_usage("/var/lib" if os.path.isdir("/var/lib") else "/").free
    if free < 6 << 30:
        skip(f"{free >> 20} MB free under /var/lib; the images and the build need about 6 GB")

    work = pathlib.Path(tempfile.mkdtemp(prefix="mycorrhizal-container-"))
    conf = work / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    os.environ["CONTAINERS_CONF"] = str(conf)
    name = f"mycorrhizal-suite-{secrets.token_hex(4)}"
    volume = f"{name}-data"
    started = time.monotonic()
    try:
        run(str(ROOT / "scripts" / "container-bases.sh"), timeout=900)
        build = ["build", "--format", "docker", "-t", TAG]
        if os.path.exists(CA_BUNDLE):
            build += ["--secret", f"id=cacert,src={CA_BUNDLE}"]
        podman(*build, str(ROOT), quiet=True, timeout=3600)
        built = time.monotonic()

        image = json.loads(podman("image", "inspect", TAG, quiet=True).stdout)[0]
        assert image["Config"].get("User") == "mycorrhizal:mycorrhizal", f"image user: {image['Config'].get('User')!r}"
        health = image.get("Healthcheck") or {}
        assert health.get("Test") == ["CMD", "mycorrhizal", "healthcheck"], f"image keeps no HEALTHCHECK: {health}"

        # The README's mounts: a named volume for the data, a host folder for the backups, made
        # the container user's as the README says (`mkdir -p backups && sudo chown 7300:7300 backups`).
        backups = work / "backups"
        backups.mkdir()
        os.chown(backups, 7300, 7300)
        port = free_port()
        podman(
            "run", "-d", "--name", name,
            "-p", f"127.0.0.1:{port}:7300",
            "-e", f"JWT_SECRET_KEY={secrets.token_hex(32)}",
            "-v", f"{volume}:/data",
            "-v", f"{backups}:/backups",
            TAG,
            quiet=True,
        )
        wait_healthy(name)
        uid = podman("exec", name, "id", "-u", quiet=True).stdout.strip()
        assert uid == "7300", f"the server runs as uid {uid}"
        top = podman("top", name, "user", "args", quiet=True).stdout
        assert "mycorrhizal serve" in top and "root" not in top, f"processes:\n{top}"

        api = Api(f"http://127.0.0.1:{port}")
        password = "container-suite-" + secrets.token_hex(8)
        status, _, body = api.call("POST", "/api/v1/register", {"username": "ada", "email": "ada@example.org", "password": password})
        assert status == 201, f"register: {status} {body}"
        api.sign_in("ada", password)
        status, _, made = api.call("POST", "/api/v1/contacts", {"firstname": "Grace", "lastname": "Hopper"})
        assert status == 201, f"create contact: {status} {made}"
        contact = made["contact"]

        made = podman("exec", name, "mycorrhizal", "backup", quiet=True)
        written = sorted(p.name for p in backups.iterdir())
        assert any(n.endswith(".manifest.json") for n in written), f"backup wrote {written}: {made.stdout}{made.stderr}"
        file = next(n for n in written if not n.endswith(".manifest.json"))
        podman("exec", name, "mycorrhizal", "verify", f"/backups/{file}", quiet=True)

        # An operator who skipped the chown is told what to do, and nothing is half-written.
        os.chown(backups, 0, 0)
        refused = podman("exec", name, "mycorrhizal", "backup", check=False, quiet=True)
        assert refused.returncode != 0 and "chown 7300:7300 ./backups" in refused.stderr, f"a root-owned folder: {refused}"
        assert sorted(p.name for p in backups.iterdir()) == written, "a refused backup left files"
        os.chown(backups, 7300, 7300)

        podman("restart", "--time", "30", name, quiet=True)
        wait_healthy(name)
        again = Api(api.base)
        again.sign_in("ada", password)
        status, _, back = again.call("GET", f"/api/v1/contacts/{contact['id']}")
        assert status == 200 and back["firstname"] == "Grace" and back["lastname"] == "Hopper", f"after restart: {status} {back}"

        podman("stop", "--time", "30", name, quiet=True)
        code = podman("inspect", "--format", "{{.State.ExitCode}}", name, quiet=True).stdout.strip()
        logs = podman("logs", name, quiet=True)
        assert code == "0", f"stopped with exit code {code}:\n{logs.stderr[-3000:]}"
        print(f"container: passed (bases and build {built - started:.0f} s, run {time.monotonic() - built:.0f} s)")
    finally:
        podman("rm", "--force", "--time", "5", name, check=False, quiet=True)
        podman("volume", "rm", "--force", volume, check=False, quiet=True)
        # The build stage's image (about 1 GB) is left untagged; its cache mounts stay for the next build.
        podman("image", "prune", "--force", check=False, quiet=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        print(f"container: FAILED\n{failure}")
        sys.exit(1)
