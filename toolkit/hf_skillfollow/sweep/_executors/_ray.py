"""Cells as Ray tasks on a running cluster (`ray start --head` / `--address`).

Each job attempt is one task reserving its model's resources (`num_gpus` for an in-process
vLLM model, CPUs for API models and scoring, custom resources to reach the nodes that serve a
model). Ray's own task retries are off: a lost worker or node is one failed attempt of the
sweep's retry loop, like any other failure, and the next attempt resumes the run directory
(which must be on a path every node sees). Progress is read from the records files.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hf_skillfollow.sweep._cell import JobOutcome, run_job_blocking
from hf_skillfollow.sweep._plan import Job

_POLL_S = 1.0


class RayUnavailableError(RuntimeError):
    pass


def init_away_from_cwd(init: Callable[..., Any], **kwargs: Any) -> None:
    """`ray.init` run from the folder that holds this package, then back: Ray puts the
    driver's current folder first on every worker's import path, so a `hf_skillfollow/` in
    the folder the sweep was started from (a cloned repository, a task folder) would be what
    the workers run. The package's own folder names nothing else than what they import."""
    back = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.chdir(Path(__file__).resolve().parents[3])
        init(**kwargs)
    finally:
        os.fchdir(back)
        os.close(back)


class RayExecutor:
    max_in_flight: int | None = None

    def __init__(
        self, address: str | None = None, node_ip_address: str | None = None, **_: Any
    ) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS")
        self.node_ip_address = node_ip_address
        self._remote: Any = None

    async def __aenter__(self) -> RayExecutor:
        if self.node_ip_address and _is_loopback(self.node_ip_address):
            # Ray 2.60 replaces a loopback node address with the machine's routable one unless
            # this is off (read when ray is imported); a loopback-only local cluster needs it.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        if not self.address:
            raise RayUnavailableError(
                "--executor ray: no cluster address; pass --ray-address HOST:PORT or set "
                "RAY_ADDRESS (start one with `ray start --head`)"
            )
        _check_reachable(self.address)
        try:
            import ray
        except ImportError:
            raise RayUnavailableError(
                "--executor ray needs Ray: pip install 'hf-skillfollow[ray]'"
            ) from None
        kwargs: dict[str, Any] = {"address": self.address, "log_to_driver": False}
        if self.node_ip_address:
            kwargs["_node_ip_address"] = self.node_ip_address
        init_away_from_cwd(ray.init, **kwargs)
        self._remote = ray.remote(max_retries=0)(run_job_blocking)
        return self

    async def __aexit__(self, *exc: object) -> None:
        import ray

        ray.shutdown()

    async def run(self, job: Job, view: Any) -> JobOutcome:
        import ray

        res = job.cell.resources
        need = {"CPU": res.num_cpus, "GPU": res.num_gpus, **res.custom}
        problem = unschedulable(need, [n["Resources"] for n in ray.nodes() if n.get("Alive")])
        if problem:  # Ray would keep the task pending forever, silently
            raise ValueError(f"{job.cell.label}: {problem} (Ray cluster {self.address})")
        ref = self._remote.options(
            num_cpus=res.num_cpus, num_gpus=res.num_gpus, resources=dict(res.custom) or None
        ).remote(job)
        poll = asyncio.create_task(_poll_records(job, view))
        try:
            return await ref
        except ray.exceptions.RayTaskError as exc:
            cause = exc.cause if isinstance(exc.cause, Exception) else None
            raise (cause or exc) from None
        finally:
            poll.cancel()


#: Seconds to wait for the cluster's address to accept a connection before giving up.
CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str) -> None:
    """Fail at once when nothing listens at a HOST:PORT cluster address: `ray.init` would
    retry it for minutes without a word (`auto` and `ray://` addresses are left to Ray)."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or address.startswith("ray://") or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise RayUnavailableError(
            f"--ray-address {address}: nothing answers there ({exc.strerror or exc}; waited at "
            f"most {CONNECT_TIMEOUT_S:.0f} s); start the cluster with `ray start --head` or fix "
            "the address"
        ) from None


def unschedulable(need: dict[str, float], nodes: list[dict[str, float]]) -> str | None:
    """Why no live node of the cluster can ever hold a task needing `need` (None if one can):
    a cell asking a GPU of a CPU-only cluster waits forever in Ray."""
    wanted = {k: v for k, v in need.items() if v > 0}
    if any(all(node.get(k, 0) >= v for k, v in wanted.items()) for node in nodes):
        return None
    most = {k: max((node.get(k, 0) for node in nodes), default=0) for k in wanted}
    short = ", ".join(f"{k} {v:g} (the largest node has {most[k]:g})" for k, v in wanted.items()
                      if most[k] < v) or "these resources together"  # fmt: skip
    return f"no node of the cluster has {short}; set the model's `resources` to what a node has"


def _is_loopback(address: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return address == "localhost"


async def _poll_records(job: Job, view: Any) -> None:
    path = job.run_dir / "records.jsonl"
    while True:
        try:
            with open(path, "rb") as fh:
                view.set_done(job, fh.read().count(b"\n"))
        except OSError:
            pass
        await asyncio.sleep(_POLL_S)
