"""The remote backends: one job in a docker container, or in a SandboxFusion run.

    python -m pytest tests/test_sandbox.py -q -k "docker or fusion"

Both ship the jail with the job and run `server.boot`: the container isolates, our code limits and grades.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import shutil
import tempfile

from jail import ROOT
from jail.server import run_env

DOCKER_IMAGE = os.environ.get("DIDPO_DOCKER_IMAGE", "python:3.11-slim")


def shipped_files() -> dict[str, bytes]:
    """The jail's sources, relative to the project root: what a remote run needs to import jail.server."""
    out = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "jail", "*.py"))):
        with open(p, "rb") as f:
            out[os.path.relpath(p, ROOT)] = f.read()
    return out


def docker_kwargs(payload_dir: str, lim: dict, image: str = DOCKER_IMAGE) -> dict:
    """Arguments for docker's containers.run: one locked-down container per execution."""
    boot = "import sys; sys.path.insert(0, '/job'); from jail import server; server.boot('/job/payload.json')"
    return dict(image=image, command=["python", "-I", "-B", "-c", boot], network_mode="none",
                mem_limit=f"{lim['memory_mb']}m", memswap_limit=f"{lim['memory_mb']}m", pids_limit=lim["nproc"],
                read_only=True, tmpfs={"/scratch": f"rw,exec,size={4 * lim['fsize_mb']}m,mode=1777"},
                volumes={payload_dir: {"bind": "/job", "mode": "ro"}}, working_dir="/scratch",
                user="65534:65534", cap_drop=["ALL"], security_opt=["no-new-privileges"],
                environment=run_env("/scratch"), detach=True)


def docker_run(payload: dict, lim: dict, deadline: float) -> tuple[list[bytes], str, bool]:
    try:
        import docker
        client = docker.from_env()
        client.ping()
    except Exception as e:
        raise RuntimeError(f"docker backend: no Docker engine reachable ({type(e).__name__}: {str(e)[:120]}); "
                           "start dockerd or use backend='local'") from None
    d = tempfile.mkdtemp(prefix="didpo-docker-")
    try:
        files = dict(shipped_files(), **{"payload.json": json.dumps(dict(payload, scratch="/scratch")).encode()})
        for rel, data in files.items():  # readable by the container's uid 65534, mounted read-only
            path = os.path.join(d, rel)
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, 0o644)
        os.chmod(d, 0o755)
        box = client.containers.run(**docker_kwargs(d, lim))
        timed_out = False
        try:
            box.wait(timeout=deadline)
        except Exception:  # requests' ReadTimeout / ConnectionError: the deadline passed
            timed_out = True
            box.kill()
        out, err = box.logs(stdout=True, stderr=False), box.logs(stdout=False, stderr=True)
        box.remove(force=True)
        return out.split(b"\n"), err.decode("utf-8", "replace")[-65536:], timed_out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def fusion_request(payload: dict, deadline: float) -> dict:
    """SandboxFusion's RunCodeRequest: a boot line as the python program, the jail and the payload as files."""
    boot = "import os, sys\nsys.path.insert(0, os.getcwd())\nfrom jail import server\nserver.boot('payload.json')\n"
    files = dict(shipped_files(), **{"payload.json": json.dumps(payload).encode()})
    return {"code": boot, "language": "python", "stdin": "", "run_timeout": deadline, "compile_timeout": 10,
            "memory_limit_MB": -1, "files": {k: base64.b64encode(v).decode() for k, v in files.items()},
            "fetch_files": []}


def fusion_run(payload: dict, lim: dict, deadline: float, backend: str) -> tuple[list[bytes], str, bool]:
    import requests
    url = backend.split(":", 1)[1] if ":" in backend else os.environ.get("SANDBOX_FUSION_URL", "http://localhost:8080")
    try:
        r = requests.post(url.rstrip("/") + "/run_code", json=fusion_request(payload, deadline), timeout=deadline + 30)
        r.raise_for_status()
        resp = r.json()
    except Exception as e:
        raise RuntimeError(f"fusion backend: {url}/run_code failed ({type(e).__name__}: {str(e)[:160]}); "
                           "set SANDBOX_FUSION_URL or use backend='local'") from None
    if resp.get("status") == "SandboxError":
        raise RuntimeError(f"fusion backend: SandboxError: {str(resp.get('message'))[:200]}")
    rr = resp.get("run_result") or {}
    out = (rr.get("stdout") or "").encode()
    return out.split(b"\n"), rr.get("stderr") or "", rr.get("status") == "TimeLimitExceeded"
