"""ML Metadata on a real MariaDB server (Debian's mariadb-server, which scripts/test.sh
installs): a pipeline run records its lineage there, a second run is served from the
cache through it, and the summary reads it all back. No SQLite file is written."""
import os
import shutil
import socket
import subprocess
import time

import pytest

from components.config import load_config
from pipeline import cli, local_runner, summary
from pipeline.metadata import connection_config
from pipeline.outcome import ExitCode
from tests.test_validation_gate import _corpus

PASSWORD_ENV = "TFX_AUDIO_MLMD_PASSWORD"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    server = shutil.which("mariadbd", path=os.environ.get("PATH", "") + ":/usr/sbin")
    if not server or not shutil.which("mariadb-install-db"):
        pytest.skip("mariadb-server is not installed (scripts/test.sh apt-installs it)")
    root = tmp_path_factory.mktemp("mariadb")
    data, sock, port = root / "data", str(root / "mysql.sock"), _free_port()
    user = ["--user=root"] if os.getuid() == 0 else []  # mariadbd refuses root without it
    subprocess.run(["mariadb-install-db", "--no-defaults", f"--datadir={data}", *user,
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True)
    proc = subprocess.Popen([server, "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--port={port}",
                             "--bind-address=127.0.0.1", "--skip-name-resolve", f"--pid-file={root / 'pid'}",
                             f"--log-error={root / 'error.log'}", *user])
    client = ["mariadb", "--no-defaults", f"--socket={sock}", "-uroot"]
    for _ in range(120):
        if subprocess.run([*client, "-e", "SELECT 1"], capture_output=True).returncode == 0:
            break
        time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("mariadbd did not start: " + (root / "error.log").read_text()[-2000:])
    subprocess.run([*client, "-e", "CREATE USER 'tfx'@'127.0.0.1' IDENTIFIED BY 's3cret-pw';"
                                   "GRANT ALL ON tfx_audio_mlmd.* TO 'tfx'@'127.0.0.1';"], check=True)
    yield port
    proc.terminate()
    proc.wait(timeout=60)


@pytest.mark.e2e
def test_runs_record_and_read_back_lineage_in_mariadb(mariadb, tmp_path, monkeypatch, capsys):
    clipped = _corpus(tmp_path / "audio", clipped=False)
    overrides = [f"data.input_base={clipped}", f"output_dir={tmp_path / 'out'}", "data.split_buckets={train: 1}",
                 "data.segment_s=0.5", "beam_args=[--direct_num_workers=1]", "enable_cache=true",
                 "metadata.backend=mysql", "metadata.host=127.0.0.1", f"metadata.port={mariadb}"]
    # The password comes from the environment only; without it the configuration is refused.
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    assert cli.main(["validate", *[f"--set={o}" for o in overrides]]) == ExitCode.BAD_CONFIG
    assert PASSWORD_ENV in capsys.readouterr().err
    monkeypatch.setenv(PASSWORD_ENV, "s3cret-pw")

    config = load_config(None, overrides)
    code, first = local_runner.run(config, validate_only=True, verbose=True)
    assert code == ExitCode.OK
    assert not os.path.exists(config.metadata_sqlite)  # the store is the server's
    connection = connection_config(config)
    assert connection.mysql.port == mariadb and connection.mysql.password == "s3cret-pw"
    again = summary.latest_run(connection, config.name)  # read back from the server
    assert again.run_id == first.run_id and set(again.node_states.values()) == {"COMPLETE"}
    examples = again.artifacts["WavExampleGen"]["examples"][0]
    assert again.inputs["StatisticsGen"]["examples"][0].id == examples.id  # the lineage edge
    assert again.inputs["ExampleValidator"]["statistics"][0].id == again.artifacts["StatisticsGen"]["statistics"][0].id
    assert again.input_files == 12 and again.split_counts == {"train": 12}

    # A second run finds the first in the server's store and reuses its outputs.
    code, second = local_runner.run(load_config(None, overrides), validate_only=True, verbose=True)
    assert code == ExitCode.OK and second.run_id != first.run_id
    assert second.node_states["WavExampleGen"] == "CACHED" and second.node_states["StatisticsGen"] == "CACHED"
    assert second.artifacts["WavExampleGen"]["examples"][0].id == examples.id
