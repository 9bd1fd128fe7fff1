"""`tfx-audio`: every verb's help, bad configuration's exit code, the Kubeflow spec with each
step's resources, and the requests `submit` and `schedule` send, read field by field.

No Kubeflow cluster runs here: the kfp client talks to a local HTTP server that records
each request and answers as the KFP v2beta1 API does (ids added to the body it got)."""
import glob
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from google.protobuf import json_format
from kfp.pipeline_spec import pipeline_spec_pb2

from pipeline import cli, kfp_jobs
from pipeline.kubeflow_v2_runner import BEAM_STEPS
from pipeline.outcome import ExitCode

KUBEFLOW = "pipeline/configs/kubeflow.yaml"


@pytest.mark.parametrize("verb", cli.VERBS)
def test_every_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([verb, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert f"tfx-audio {verb}" in text and "--verbose" in text and "exit codes" in text


def test_bad_configuration_exits_2_naming_the_setting(capsys, tmp_path):
    assert cli.main(["run", "--set", "trainer.epochs=abc"]) == ExitCode.BAD_CONFIG == 2
    assert "trainer.epochs: got 'abc'" in capsys.readouterr().err
    assert cli.main(["validate", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert cli.main(["compile", "--config", KUBEFLOW, "--output", str(tmp_path / "x.json")]) == 2  # no image
    assert "--image" in capsys.readouterr().err
    # The installed console script, as CI calls it.
    script = os.path.join(os.path.dirname(sys.executable), "tfx-audio")
    done = subprocess.run([script, "run", "--set", "data.split_buckets={}"], capture_output=True, text=True)
    assert done.returncode == 2 and "data.split_buckets" in done.stderr, done.stderr


def _executors(job: dict) -> dict:
    return job["pipelineSpec"]["deploymentSpec"]["executors"]


def test_compile_writes_a_pipeline_spec_whose_steps_ask_for_their_resources(tmp_path):
    out = tmp_path / "spec.json"
    code = cli.main(["compile", "--config", KUBEFLOW, "--image", "registry.example/tfx-audio:1",
                     "--output", str(out), "--set", "kubeflow.trainer.accelerator_count=2",
                     "--set", "kubeflow.beam.memory_gb=12"])
    assert code == 0
    job = json.loads(out.read_text())
    spec = json_format.ParseDict(job["pipelineSpec"], pipeline_spec_pb2.PipelineSpec())  # KFP's own type
    assert set(spec.root.dag.tasks) >= {"Trainer", "WavExampleGen", "Pusher"}
    executors = spec.deployment_spec.fields["executors"].struct_value.fields
    resources = {label[:-len("_executor")]: json_format.MessageToDict(e.struct_value)["container"].get("resources")
                 for label, e in executors.items() if "container" in e.struct_value.fields}
    assert resources["Trainer"] == {"cpuLimit": 8.0, "memoryLimit": 30.0,  # kubeflow.yaml's GPU node
                                    "accelerator": {"type": "nvidia.com/gpu", "count": "2"}}
    for step in BEAM_STEPS:  # the WAV ExampleGen's too (TFX 1.16 drops it; the compiler adds it back)
        assert resources[step] == {"cpuLimit": 4.0, "memoryLimit": 12.0}, step
    for step in ("ImportSchemaGen", "ConfiguredSchema", "ExampleValidator", "AnomaliesGate", "Pusher"):
        assert resources[step] == {"cpuLimit": 1.0, "memoryLimit": 2.0}, step
    images = {e["container"]["image"] for e in _executors(job).values() if "container" in e}
    assert images == {"registry.example/tfx-audio:1"}
    example_gen_args = " ".join(_executors(job)["WavExampleGen_executor"]["container"]["args"])
    assert "DataflowRunner" in example_gen_args  # Beam flags reach the Beam components


class _FakeKfp(BaseHTTPRequestHandler):
    """Answers as the KFP v2beta1 API: no experiment yet, then ids added to what was posted."""
    seen: list = []

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.seen.append(("GET", self.path.split("?")[0], None))
        self._reply({"experiments": [], "total_size": 0} if "/experiments" in self.path else {})

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.seen.append(("POST", self.path, body))
        ids = {"/apis/v2beta1/experiments": {"experiment_id": "exp-1"},
               "/apis/v2beta1/recurringruns": {"recurring_run_id": "rr-1"},
               "/apis/v2beta1/runs": {"run_id": "run-1"}}
        self._reply({**body, **ids.get(self.path, {})})

    def log_message(self, *args):
        pass


@pytest.fixture
def kfp_server():
    _FakeKfp.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeKfp)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _FakeKfp.seen
    server.shutdown()


def _posted(seen, path):
    bodies = [body for method, p, body in seen if method == "POST" and p == path]
    assert len(bodies) == 1, seen
    return bodies[0]


def test_schedule_creates_a_recurring_run_with_the_compiled_spec(kfp_server, capsys):
    host, seen = kfp_server
    code = cli.main(["schedule", "--config", KUBEFLOW, "--image", "registry.example/tfx-audio:1",
                     "--host", host, "--cron", "30 2 * * *", "--name", "nightly",
                     "--set", "kubeflow.trainer.accelerator_count=1"])
    assert code == 0, capsys.readouterr()
    assert "recurring run rr-1 (0 30 2 * * *)" in capsys.readouterr().out
    assert _posted(seen, "/apis/v2beta1/experiments")["display_name"] == "tfx-audio"
    request = _posted(seen, "/apis/v2beta1/recurringruns")
    assert request["display_name"] == "nightly"
    assert request["experiment_id"] == "exp-1"
    assert request["mode"] == "ENABLE"
    assert request["trigger"] == {"cron_schedule": {"cron": "0 30 2 * * *"}}  # KFP's seconds-first cron
    assert int(request["max_concurrency"]) == 1 and request["no_catchup"] is True
    assert request["runtime_config"]["pipeline_root"] == "gs://YOUR_BUCKET/tfx-audio/pipeline"
    spec = json_format.ParseDict(request["pipeline_spec"], pipeline_spec_pb2.PipelineSpec())
    assert spec.pipeline_info.name == "tfx-audio" and "Trainer" in spec.root.dag.tasks
    trainer = json_format.MessageToDict(spec.deployment_spec)["executors"]["Trainer_executor"]["container"]
    assert trainer["resources"]["accelerator"] == {"type": "nvidia.com/gpu", "count": "1"}
    assert trainer["image"] == "registry.example/tfx-audio:1"


def test_submit_starts_one_run_and_the_host_comes_from_the_environment(kfp_server, capsys, monkeypatch):
    host, seen = kfp_server
    monkeypatch.setenv(kfp_jobs.HOST_ENV, host)
    assert cli.main(["submit", "--config", KUBEFLOW, "--image", "img:2", "--name", "once"]) == 0
    assert f"run run-1 started on {host}" in capsys.readouterr().out
    request = _posted(seen, "/apis/v2beta1/runs")
    assert request["display_name"] == "once" and request["experiment_id"] == "exp-1"
    assert request["runtime_config"]["pipeline_root"] == "gs://YOUR_BUCKET/tfx-audio/pipeline"
    assert json_format.ParseDict(request["pipeline_spec"], pipeline_spec_pb2.PipelineSpec()).root.dag.tasks


def test_schedule_without_a_host_or_with_a_bad_cron_is_bad_configuration(capsys, monkeypatch):
    monkeypatch.delenv(kfp_jobs.HOST_ENV, raising=False)
    args = ["schedule", "--config", KUBEFLOW, "--image", "img:1"]
    assert cli.main([*args, "--cron", "0 2 * * *"]) == 2
    assert "KFP_HOST" in capsys.readouterr().err
    assert cli.main([*args, "--cron", "daily", "--host", "http://127.0.0.1:9"]) == 2
    assert "cron 'daily'" in capsys.readouterr().err
    assert kfp_jobs.cron("0 2 * * 1-5") == "0 0 2 * * 1-5" and kfp_jobs.cron("5 0 2 * * *") == "5 0 2 * * *"


def test_settings_prints_every_setting_with_its_value_and_explanation(capsys):
    from components.config import describe
    assert cli.main(["settings", "--config", "pipeline/configs/demo.yaml", "--set", "trainer.epochs=7"]) == 0
    out = capsys.readouterr().out
    assert "trainer.epochs = 7  (default 5)\n    passes over the training split" in out
    assert "trainer.backbone = 'bc_resnet'  (default 'wav2vec2')" in out  # the config's value, beside the default
    names = [s.name for s in describe.walk() if isinstance(s, describe.Setting)]
    assert len(names) > 100 and all(f"\n{name} = " in "\n" + out for name in names)



def test_only_tensorflow_destructor_errors_at_teardown_are_silenced_and_every_local_worker_installs_it():
    """pipeline/quiet_exit.py, in the CLI and (as a Beam plugin) in each DirectRunner worker."""
    import types

    from tensorflow.python.eager.polymorphic_function.atomic_function import AtomicFunction

    from components.config import load_config
    from pipeline import local_runner, quiet_exit

    def raised_in(where):
        return types.SimpleNamespace(object=where, exc_type=TypeError, exc_value=TypeError("x"))

    assert quiet_exit.is_teardown_noise(raised_in(AtomicFunction.__del__), finalizing=True)
    assert not quiet_exit.is_teardown_noise(raised_in(AtomicFunction.__del__), finalizing=False)
    assert not quiet_exit.is_teardown_noise(raised_in(_FakeKfp.do_GET), finalizing=True)
    assert not quiet_exit.is_teardown_noise(raised_in(object()), finalizing=True)
    args = local_runner.local_beam_args(load_config(None, []))
    assert "--beam_plugin=pipeline.quiet_exit" in args
    # In a fresh interpreter: importing it installs the hook, once; other unraisable errors still print.
    code = ("import gc, sys\nfrom pipeline import quiet_exit\nquiet_exit.install()\n"
            "assert sys.unraisablehook.quiets_tensorflow_teardown\n"
            "class Leaky:\n    def __del__(self):\n        raise TypeError('mine')\n"
            "Leaky()\ngc.collect()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and "Exception ignored in" in done.stderr and "mine" in done.stderr, done.stderr

@pytest.mark.e2e
def test_a_run_ends_on_its_exit_code_line_with_no_ignored_exception_from_tensorflow(tmp_path):
    """Issue 32: every run printed `Exception ignored in: <function AtomicFunction.__del__ ...>
    TypeError: 'NoneType' object is not subscriptable`, which users read as a crash. It comes from
    the Beam workers (multi_processing, the default) of the Transform and the Evaluator, whose
    loaded models outlive TensorFlow's module globals at their interpreter's teardown. The
    smallest run that has both (12 tones, one epoch of the log-mel CNN), as a user starts it.
    Its folder also holds every hostile entry of issue 32 (tests/test_ingest_bad_entries.py): the
    run completes and accounts for each once."""
    from components.ingest import report as ingest_report
    from tests.audio_helpers import tone, write_wav
    from tests.test_ingest_bad_entries import BAD_ENTRIES
    from tests.test_wav_example_gen import _write_metadata

    for speaker in range(6):
        for word, freq in (("yes", 440.0), ("no", 660.0)):
            write_wav(str(tmp_path / "data" / word / f"s{speaker}_{word}.wav"), tone(0.5, freq + 10 * speaker))
    write_wav(str(tmp_path / "data" / "yes" / "a.wav"), tone(0.5, 500.0))  # the file the hostile links name
    hostile = {}
    for make in BAD_ENTRIES.values():
        hostile.update(make(tmp_path / "data" / "yes"))
    _write_metadata(tmp_path / "data" / "metadata.csv", [{"file_name": "./yes//a.wav", "label": "yes"}])  # one file
    settings = [f"data.input_base={tmp_path / 'data'}", f"output_dir={tmp_path / 'out'}", "data.segment_s=0.5",
                "data.split_buckets={train: 2, eval: 1, test: 1}", "trainer.backbone=logmel_cnn",
                "trainer.epochs=1", "report.enabled=false",
                # One optimizer step on 4 test windows: the accuracy floor off, so the exit code does not hang on
                # whether that step happened to reach it (it did not, once in three CI runs).
                "evaluator.min_accuracy=0.0", "data.max_reject_fraction=1.0",
                "beam_args=[--direct_running_mode=multi_processing, --direct_num_workers=2]"]
    script = os.path.join(os.path.dirname(sys.executable), "tfx-audio")
    done = subprocess.run([script, "run", *[f"--set={s}" for s in settings]], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "exit code 0 (ok)", done.stdout
    assert "Transform finished" in done.stdout and "Evaluator finished" in done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr
    assert f"input files: {13 + len(hostile)} ({len(hostile)} rejected" in done.stdout, done.stdout
    [report_dir] = glob.glob(str(tmp_path / "out" / "**" / ingest_report.REPORT_DIR), recursive=True)
    _, rejects = ingest_report.read_report(report_dir)
    assert sorted((r["source"], r["reason"]) for r in rejects) == sorted(hostile.items())
