"""A Spark standalone cluster on loopback: one master and a few one-core workers, started from the pyspark
package's own ``bin/spark-class`` (no Spark download), as a user without Databricks would run one.

Every daemon is started with port 0 (no port guessed, none raced for) and waited for by the lines it logs: the
master's URL, then each worker's registration. Executors are the workers' children; :meth:`executor_pids` finds
them in ``/proc``, so a test can kill one mid-read. :meth:`StandaloneCluster.stop` ends every process this
module started, by its process id, executors first.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

#: How long a daemon may take to log that it is up (JVM start on a loaded 2-core machine).
START_TIMEOUT_S = 120.0
MASTER_URL = re.compile(r"Starting Spark master at (spark://\S+)")
MASTER_LEADER = "I have been elected leader"
WORKER_REGISTERED = "Successfully registered with master"
EXECUTOR_CLASS = "CoarseGrainedExecutorBackend"


class ClusterError(RuntimeError):
    """A daemon of the cluster exited or did not come up in time (the message holds its log's tail)."""


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package (``bin/``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def daemon_env(python: str) -> dict[str, str]:
    """The environment of the daemons: loopback only, and executors' Python workers on ``python``."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python, "SPARK_NO_DAEMONIZE": "1"}


@dataclass
class Daemon:
    """One JVM started by ``spark-class`` (which ``exec``s java: the process id is the JVM's)."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for(self, pattern: str | re.Pattern[str], timeout: float = START_TIMEOUT_S) -> re.Match[str] | str:
        """Wait until the daemon's log has ``pattern``; ClusterError if it exits or the deadline passes."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            found = pattern.search(text) if isinstance(pattern, re.Pattern) else (pattern if pattern in text else None)
            if found:
                return found
            if self.proc.poll() is not None:
                raise ClusterError(f"{self.name} exited with {self.proc.returncode}:\n{text[-4000:]}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.name} did not log {pattern!r} in {timeout:.0f} s:\n{text[-4000:]}")
            time.sleep(0.1)


def _children(pid: int) -> list[int]:
    """The process ids whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
            out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each, logging into ``workdir``."""

    workdir: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    python: str = sys.executable
    master_url: str = ""
    daemons: list[Daemon] = field(default_factory=list)

    def _start(self, name: str, *args: str) -> Daemon:
        log_path = self.workdir / f"{name}.log"
        with log_path.open("wb") as out:
            proc = subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
                                    env=daemon_env(self.python))
        daemon = Daemon(name, proc, log_path)
        self.daemons.append(daemon)
        return daemon

    def start(self) -> StandaloneCluster:
        """Start the master, then the workers; return when every worker has registered."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            master = self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                 "--port", "0", "--webui-port", "0")
            found = master.wait_for(MASTER_URL)
            assert isinstance(found, re.Match)
            self.master_url = found.group(1)
            master.wait_for(MASTER_LEADER)
            started = [self._start(f"worker-{k}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--port", "0", "--webui-port", "0", "--cores", str(self.cores), "--memory",
                                   self.memory, "--work-dir", str(self.workdir / f"work-{k}"), self.master_url)
                       for k in range(self.workers)]
            for worker in started:
                worker.wait_for(WORKER_REGISTERED)
        except BaseException:
            self.stop()
            raise
        log.info("standalone cluster at %s with %d workers", self.master_url, self.workers)
        return self

    def worker_pids(self) -> list[int]:
        return [d.proc.pid for d in self.daemons if d.name.startswith("worker-")]

    def executor_pids(self) -> list[int]:
        """The executor JVMs running now (children of the workers), in worker order."""
        return [pid for worker in self.worker_pids() for pid in _children(worker) if EXECUTOR_CLASS in _cmdline(pid)]

    def session_builder(self, app_name: str):  # type: ignore[no-untyped-def]
        """A SparkSession builder for this cluster: every executor one core, the driver on loopback."""
        from pyspark.sql import SparkSession

        from spark_logsource.spark.columnar import arrow_pipe_jar

        jar = arrow_pipe_jar()  # the columnar JVM reader, shipped to the executors by spark.jars when built
        builder = SparkSession.builder if jar is None else SparkSession.builder.config("spark.jars", jar)
        return (builder.master(self.master_url).appName(app_name)
                .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.executor.cores", str(self.cores)).config("spark.executor.memory", self.memory)
                .config("spark.cores.max", str(self.cores * self.workers))
                .config("spark.pyspark.python", self.python).config("spark.ui.enabled", "false")
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.sql.shuffle.partitions", "2").config("spark.sql.session.timeZone", "UTC"))

    def stop(self) -> None:
        """End the executors, the workers and the master, each by its process id; wait for each to exit."""
        executors = self.executor_pids()
        for pid in executors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for daemon in reversed(self.daemons):
            if daemon.proc.poll() is None:
                daemon.proc.terminate()
        for daemon in reversed(self.daemons):
            try:
                daemon.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.proc.kill()
                daemon.proc.wait(timeout=30)
        self.daemons.clear()


def wait_for_executors(spark, count: int, timeout: float = START_TIMEOUT_S) -> None:  # type: ignore[no-untyped-def]
    """Wait until ``count`` executors have registered with the session's driver (the driver is not one)."""
    deadline = time.monotonic() + timeout
    sc = spark.sparkContext
    while sc._jsc.sc().getExecutorMemoryStatus().size() - 1 < count:
        if time.monotonic() > deadline:
            raise ClusterError(f"{count} executors did not register in {timeout:.0f} s")
        time.sleep(0.1)
