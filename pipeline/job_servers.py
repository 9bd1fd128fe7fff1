"""Beam's portable runners for the pipeline's Beam components, Flink and Spark: their job servers' jars,
fetched from Maven Central by pinned versions, and a pool of Python SDK workers.

    python -m pipeline.job_servers fetch flink                # prints the job server's jar (cached)
    python -m pipeline.job_servers workers --port 50000       # Python SDK workers for --environment_type=EXTERNAL
    python -m pipeline.job_servers flags flink --port 50000   # the beam_args that use both, for `--set beam_args=...`

Beam's Python FlinkRunner (SparkRunner) starts a job server from `--flink_job_server_jar`
(`--spark_job_server_jar`) with `java -jar` and runs the pipeline on `--flink_master` (`[local]`: an
embedded Flink in the job server's JVM; `host:port`: a cluster's REST endpoint) or `--spark_master_url`
(`local[2]`, `spark://host:7077`). Its workers are this project's Python with its imports, not Beam's
SDK container (no Docker here): `--environment_type=EXTERNAL` hands each bundle to the pool.

The version: TFX 1.16 pins Beam's Python SDK at 2.59.0. Beam's own download (a runner without a jar)
asks Maven Central for `beam-runners-flink-<flink>-job-server-2.59.0.jar`; the Maven registry these
machines reach does not serve it, nor `beam-runners-java-job-service` 2.59.0 that any job server
needs. It serves Beam 2.56.0's runners for Flink 1.16 and Spark 3 with every dependency, so that is
the default: the portable job API between a 2.56 job server and a 2.59 SDK holds for what this
pipeline does (tests/test_portable_runners.py compares every Beam component's output on Flink with
the DirectRunner's). Spark is Beam 2.56.0's build version, 3.2.2, which on Java 17 needs the JDK's
internals opened (the jar's manifest says which: `Add-Opens`).

The job server's jar is a manifest-only jar whose Class-Path names the runner's resolved jars
(Maven's dependency plugin resolves them; writing a shaded jar would copy 160 MB for nothing).
Each jar's sha256 is checked against `pipeline/locks/<runner>-job-server.lock` (a mismatch, a missing
or an extra jar stops the fetch, naming it), so a run uses the jars that were tested; `fetch
--write-lock` rewrites the lock from what Maven resolves (for another version).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Dict, Iterator, List, Optional, Tuple

from components.checksums import sha256_file

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "locks")
BEAM_VERSION = "2.56.0"
# The job server logs through SLF4J; without a binding it drops its own errors silently.
SLF4J_BINDING = "org.slf4j:slf4j-simple:1.7.30"
ENV_CACHE = "TFX_AUDIO_CACHE"
# Spark 3.2 reaches into the JDK's internals (its own launcher opens these on Java 17).
_SPARK_OPENS = " ".join(f"java.base/{package}" for package in (
    "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util",
    "java.util.concurrent", "java.util.concurrent.atomic", "sun.nio.ch", "sun.nio.cs", "sun.security.action",
    "sun.util.calendar"))


@dataclasses.dataclass(frozen=True)
class JobServer:
    name: str
    dependencies: Tuple[str, ...]  # group:artifact:version, besides SLF4J_BINDING
    main_class: str
    manifest: Tuple[Tuple[str, str], ...] = ()  # more manifest attributes

    def lock(self) -> str:
        return os.path.join(LOCKS, f"{self.name}-job-server.lock")


RUNNERS = {
    "flink": JobServer("flink", (f"org.apache.beam:beam-runners-flink-1.16:{BEAM_VERSION}",),
                       "org.apache.beam.runners.flink.FlinkJobServerDriver"),
    # The runner names Spark as `provided`: its job server's jar brings the version it was built with.
    "spark": JobServer("spark", (f"org.apache.beam:beam-runners-spark-3:{BEAM_VERSION}",
                                 *(f"org.apache.spark:spark-{part}_2.12:3.2.2"
                                   for part in ("core", "streaming", "sql"))),
                       "org.apache.beam.runners.spark.SparkJobServerDriver", (("Add-Opens", _SPARK_OPENS),)),
}


def cache_root() -> str:
    return os.environ.get(ENV_CACHE) or os.path.join(os.path.expanduser("~"), ".cache", "tfx-audio")


def _pom(server: JobServer) -> str:
    dependencies = "\n".join(
        "    <dependency><groupId>{}</groupId><artifactId>{}</artifactId><version>{}</version></dependency>".format(
            *coordinates.split(":")) for coordinates in (*server.dependencies, SLF4J_BINDING))
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tfx-audio</groupId><artifactId>{server.name}-job-server</artifactId><version>1</version>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""


def read_lock(path: str) -> Dict[str, str]:
    """{jar file name: sha256} from the lock (`<sha256>  <name>` lines; # comments)."""
    pins = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                digest, name = line.split()
                pins[name] = digest
    return pins


def check_jars(lib: str, pins: Dict[str, str], lock: str = "the lock") -> None:
    """Raises naming every jar that differs from the lock, is missing, or is not in it."""
    found = {name: sha256_file(os.path.join(lib, name)) for name in os.listdir(lib) if name.endswith(".jar")}
    problems = [f"{name}: sha256 {found[name]}, the lock pins {pins[name]}"
                for name in sorted(set(found) & set(pins)) if found[name] != pins[name]]
    problems += [f"{name}: in the lock, not fetched" for name in sorted(set(pins) - set(found))]
    problems += [f"{name}: fetched, not in the lock" for name in sorted(set(found) - set(pins))]
    if problems:
        raise RuntimeError(f"job server jars in {lib} do not match {lock}:\n  " + "\n  ".join(problems))


def _manifest(server: JobServer, class_path: List[str]) -> bytes:
    """A JAR manifest: lines of at most 72 bytes, continued on lines that start with a space."""
    def wrapped(header: str) -> str:
        raw, lines = header.encode(), []
        lines.append(raw[:72])
        raw = raw[72:]
        while raw:
            lines.append(b" " + raw[:71])
            raw = raw[71:]
        return "".join(line.decode() + "\r\n" for line in lines)
    attributes = [("Manifest-Version", "1.0"), ("Main-Class", server.main_class), *server.manifest,
                  ("Class-Path", " ".join(class_path))]
    return ("".join(wrapped(f"{name}: {value}") for name, value in attributes) + "\r\n").encode()


def fetch(runner: str = "flink", cache: Optional[str] = None, write_lock: bool = False, mvn: str = "mvn") -> str:
    """The job server's jar of `runner` (flink, spark) under `cache`, fetched once (Maven resolves, the
    lock checks); returns its path."""
    server = RUNNERS[runner]
    version = hashlib.sha256(_pom(server).encode()).hexdigest()[:8]  # another pin, another folder
    home = os.path.join(cache or cache_root(), f"{runner}-job-server-{BEAM_VERSION}-{version}")
    jar = os.path.join(home, "job-server.jar")
    if os.path.isfile(jar) and not write_lock:
        return jar
    if shutil.which(mvn) is None or shutil.which("java") is None:
        raise RuntimeError(f"fetching the {runner} job server needs Java (17) and Maven (`mvn`) on PATH")
    os.makedirs(os.path.dirname(home), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=f"{runner}-job-server.", dir=os.path.dirname(home))
    try:
        with open(os.path.join(staging, "pom.xml"), "w") as f:
            f.write(_pom(server))
        lib = os.path.join(staging, "lib")
        done = subprocess.run([mvn, "-B", "-q", "-f", os.path.join(staging, "pom.xml"), "dependency:copy-dependencies",
                               f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
                              capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            raise RuntimeError(f"mvn could not fetch {', '.join(server.dependencies)} "
                               f"(exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
        if write_lock:
            with open(server.lock(), "w") as f:
                f.write(f"# {runner}'s job server: {', '.join(server.dependencies)} and {SLF4J_BINDING}; "
                        f"every jar Maven resolved, with its sha256.\n"
                        f"# Written by `python -m pipeline.job_servers fetch {runner} --write-lock`.\n")
                for name in sorted(os.listdir(lib)):
                    f.write(f"{sha256_file(os.path.join(lib, name))}  {name}\n")
        check_jars(lib, read_lock(server.lock()), server.lock())
        names = sorted(os.listdir(lib))
        with zipfile.ZipFile(os.path.join(staging, "job-server.jar"), "w") as z:
            z.writestr("META-INF/MANIFEST.MF", _manifest(server, [f"lib/{name}" for name in names]))
        if os.path.isdir(home):
            shutil.rmtree(home)
        os.replace(staging, home)  # whole or not at all: a stopped fetch leaves no half a cache
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return jar


def worker_env(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The pool starts each worker as `python -c ...` from PATH: this interpreter's folder comes first
    (another Python without Beam dies at once and the job waits for it forever), and the project is
    importable (the components' code is not staged to EXTERNAL workers)."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("TF_USE_LEGACY_KERAS", "1")
    return env


def serve_workers(port: int = 0, port_file: Optional[str] = None) -> None:
    """Beam's SDK worker pool (a process a worker) on 127.0.0.1:`port` (0: a free one, written to
    `port_file`), until killed. Started here, not by `worker_pool_main`, which listens on every interface."""
    import grpc
    from apache_beam.portability.api import beam_fn_api_pb2_grpc
    from apache_beam.runners.worker.worker_pool_main import BeamFnExternalWorkerPoolServicer
    from apache_beam.utils import thread_pool_executor

    os.environ.update(worker_env())
    pool = BeamFnExternalWorkerPoolServicer(use_process=True, data_buffer_time_limit_ms=-1)
    server = grpc.server(thread_pool_executor.shared_unbounded_instance(),  # as worker_pool_main's
                         options=[("grpc.http2.max_pings_without_data", 0), ("grpc.http2.max_ping_strikes", 0)])
    beam_fn_api_pb2_grpc.add_BeamFnExternalWorkerPoolServicer_to_server(pool, server)
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    if port_file:
        with open(port_file + ".tmp", "w") as f:
            f.write(str(bound))
        os.replace(port_file + ".tmp", port_file)
    print(f"Python SDK worker pool on 127.0.0.1:{bound}", flush=True)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.stop(0)


@contextlib.contextmanager
def worker_pool(folder: str, timeout_s: float = 120.0) -> Iterator[int]:
    """`serve_workers` in a process group of its own on a free loopback port (its port file in `folder`);
    yields the port, then stops the pool and the workers it started (SIGTERM, SIGKILL after 30 s)."""
    port_file = os.path.join(folder, "worker-pool.port")
    pool = subprocess.Popen([sys.executable, "-m", "pipeline.job_servers", "workers", "--port", "0",
                             "--port-file", port_file], cwd=REPO_ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while not os.path.exists(port_file):
            if pool.poll() is not None:
                raise RuntimeError(f"the worker pool exited with {pool.returncode}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the worker pool did not start listening in {timeout_s:.0f} s")
            time.sleep(0.5)
        with open(port_file) as f:
            yield int(f.read())
    finally:
        os.killpg(pool.pid, signal.SIGTERM)
        try:
            pool.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(pool.pid, signal.SIGKILL)


def beam_args(runner: str, jar: str, pool_port: int, parallelism: int = 2, master: str = "",
              sdk_workers: Optional[int] = None) -> List[str]:
    """The beam_args that run every Beam component on `runner` with the pool's workers; `master`: a
    cluster (default: Flink's embedded `[local]`, Spark's `local[<parallelism>]`); `sdk_workers`: Python
    worker processes per worker node (default: `parallelism`)."""
    # Beam waits 60 s for the job server to answer (`channel_ready_future`) by default; a job server
    # starting on a busy machine, or Spark's busy with a stage, can take longer.
    # Beam starts one SDK worker process per worker node unless told otherwise (`sdk_worker_parallelism`, default 1):
    # an embedded Flink or a local Spark is one node. (On 2 cores it did not measurably speed the ExampleGen up:
    # benchmarks/RESULTS-scale.md.)
    common = ["--environment_type=EXTERNAL", f"--environment_config=127.0.0.1:{pool_port}", "--job_server_timeout=300",
              f"--sdk_worker_parallelism={sdk_workers or parallelism}"]
    if runner == "flink":
        return ["--runner=FlinkRunner", f"--flink_master={master or '[local]'}", f"--flink_job_server_jar={jar}",
                f"--parallelism={parallelism}", *common]
    return ["--runner=SparkRunner", f"--spark_master_url={master or f'local[{parallelism}]'}",
            f"--spark_job_server_jar={jar}", *common]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.job_servers", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="fetch a job server's jars (cached) and print its jar's path")
    f.add_argument("runner", choices=sorted(RUNNERS))
    f.add_argument("--cache", default=None, help=f"default ${ENV_CACHE} or ~/.cache/tfx-audio")
    f.add_argument("--write-lock", action="store_true", help="rewrite the runner's lock from what Maven resolves")
    w = sub.add_parser("workers", help="run the Python SDK worker pool in the foreground")
    w.add_argument("--port", type=int, default=50000, help="0: a free port")
    w.add_argument("--port-file", default=None, help="where to write the port once listening")
    g = sub.add_parser("flags", help="print the beam_args for --set (fetching the jar if needed)")
    g.add_argument("runner", choices=sorted(RUNNERS))
    g.add_argument("--port", type=int, default=50000, help="the worker pool's")
    g.add_argument("--parallelism", type=int, default=2)
    g.add_argument("--master", default="", help="a cluster: Flink's host:port, Spark's spark://host:port")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        print(fetch(args.runner, args.cache, args.write_lock))
    elif args.command == "workers":
        serve_workers(args.port, args.port_file)
    else:
        flags = beam_args(args.runner, fetch(args.runner), args.port, args.parallelism, args.master)
        print("[" + ",".join(f'"{flag}"' for flag in flags) + "]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
