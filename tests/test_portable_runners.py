"""The pipeline's Beam components on Beam's FlinkRunner: an embedded Flink (parallelism 2) in the job
server that pipeline/job_servers.py fetches from Maven Central by a pinned version, Python workers in a pool
this test starts, everything on 127.0.0.1. A small pipeline runs whole under LocalDagRunner; then each
Beam component's execution (WavExampleGen, StatisticsGen, Transform, Evaluator) is replayed from ML
Metadata with TFX's own executor on the DirectRunner, on the very same input artifacts and exec
properties, and every output is compared with the Flink run's."""
import glob
import os
import shutil
import subprocess
import sys
import unittest

import numpy as np
import pytest
import tensorflow as tf

from components.checksums import sha256_file
from pipeline import job_servers
from pipeline.outcome import ExitCode

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEAM_NODES = ("WavExampleGen", "StatisticsGen", "Transform", "Evaluator")
RUN_TIMEOUT_S = 1200  # the run takes about 5 minutes on 2 cores; a stuck worker must not hang CI

pytestmark = pytest.mark.skipif(
    shutil.which("java") is None or shutil.which("mvn") is None,
    reason="Beam's Flink job server needs Java 17 and Maven (mvn) to fetch it")


@pytest.fixture(scope="module")
def job_server_jar():
    return job_servers.fetch("flink")


@pytest.fixture(scope="module")
def worker_pool(tmp_path_factory):
    with job_servers.worker_pool(str(tmp_path_factory.mktemp("pool"))) as port:
        yield port


def test_worker_pool_listens_on_loopback_only(worker_pool):
    import socket

    with socket.create_connection(("127.0.0.1", worker_pool), timeout=5):
        pass
    listening = subprocess.run(["ss", "-ltnH", f"sport = :{worker_pool}"], capture_output=True, text=True).stdout
    assert "127.0.0.1" in listening and "*:" + str(worker_pool) not in listening.replace("*:*", ""), listening


def test_a_jar_that_differs_from_the_lock_is_named(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "a.jar").write_bytes(b"a")
    (lib / "extra.jar").write_bytes(b"x")
    pins = {"a.jar": "0" * 64, "gone.jar": "1" * 64}
    with pytest.raises(RuntimeError) as error:
        job_servers.check_jars(str(lib), pins)
    message = str(error.value)
    assert "a.jar: sha256 ca978112" in message and "gone.jar: in the lock, not fetched" in message
    assert "extra.jar: fetched, not in the lock" in message
    job_servers.check_jars(str(lib), {"a.jar": sha256_file(str(lib / "a.jar")),
                                "extra.jar": sha256_file(str(lib / "extra.jar"))})  # a match passes


def test_the_job_server_jar_names_every_locked_jar_in_its_manifest(job_server_jar):
    import zipfile

    server = job_servers.RUNNERS["flink"]
    with zipfile.ZipFile(job_server_jar) as z:
        manifest = z.read("META-INF/MANIFEST.MF").decode()
    assert all(len(line.encode()) <= 72 for line in manifest.split("\r\n"))
    joined = manifest.replace("\r\n ", "")  # continuation lines
    assert f"Main-Class: {server.main_class}" in joined
    class_path = joined.split("Class-Path: ", 1)[1].split("\r\n", 1)[0].split()
    assert sorted(os.path.basename(p) for p in class_path) == sorted(job_servers.read_lock(server.lock()))
    assert all(os.path.isfile(os.path.join(os.path.dirname(job_server_jar), p)) for p in class_path)


def test_sparks_job_server_starts_from_its_jar_and_runs_a_pipeline_on_the_pool(worker_pool):
    """Spark 3.2 on Java 17 needs the JDK's internals opened: the jar's manifest says so (Add-Opens), and
    Beam's SparkRunner starts it with `java -jar`. A grouping pipeline on local[2] with the pool's workers."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.util import assert_that, equal_to

    jar = job_servers.fetch("spark")
    options = PipelineOptions(job_servers.beam_args("spark", jar, worker_pool, parallelism=2))
    with beam.Pipeline(options=options) as p:
        sums = p | beam.Create(range(100)) | beam.Map(lambda x: (x % 3, x)) | beam.CombinePerKey(sum)
        assert_that(sums, equal_to([(0, 1683), (1, 1617), (2, 1650)]))


def _execution(store, run, node):
    """The node's execution in the run (pipeline.summary.latest_run): its input and output artifacts as
    TFX artifacts (key -> list) and its properties."""
    from tfx.types import artifact_utils

    assert run.node_states[node] == "COMPLETE", (node, run.node_states)

    def typed(keyed):
        types = {t.id: t for t in store.get_artifact_types_by_id(
            list({a.type_id for found in keyed.values() for a in found}))}
        return {key: [artifact_utils.deserialize_artifact(types[a.type_id], a) for a in found]
                for key, found in keyed.items()}

    properties = {name: getattr(value, value.WhichOneof("value"))
                  for name, value in run.executions[node].custom_properties.items()}
    return typed(run.inputs[node]), typed(run.artifacts[node]), properties


def _replay_on_direct_runner(node, inputs, outputs, properties, root):
    """TFX's executor of `node` on the DirectRunner, into fresh artifacts of the Flink run's output types."""
    from tfx import v1 as tfx
    from tfx.dsl.components.base import base_beam_executor

    from components.ingest.component import WavExampleGen

    component = {"WavExampleGen": WavExampleGen, "StatisticsGen": tfx.components.StatisticsGen,
                 "Transform": tfx.components.Transform, "Evaluator": tfx.components.Evaluator}[node]
    fresh = {}
    for key, artifacts in outputs.items():
        fresh[key] = []
        for i, artifact in enumerate(artifacts):
            copy = type(artifact)()
            copy.uri = os.path.join(root, node, key, str(i))
            os.makedirs(copy.uri, exist_ok=True)
            fresh[key].append(copy)
    context = base_beam_executor.BaseBeamExecutor.Context(
        beam_pipeline_args=["--runner=DirectRunner", "--direct_running_mode=in_memory",
                            f"--setup_file={REPO}/setup.py"],
        tmp_dir=os.path.join(root, node, ".temp") + "/", unique_id=node)
    component.EXECUTOR_SPEC.executor_class(context).Do(inputs, fresh, properties)
    return fresh


def _records(uri, split):
    from components.training import input_pipeline

    return sorted(tf.train.Example.FromString(r.numpy()).SerializeToString(deterministic=True)
                  for r in input_pipeline.records([os.path.join(uri, f"Split-{split}", "*")]))


def _statistics(uri, split):
    from tensorflow_metadata.proto.v0 import statistics_pb2

    (path,) = glob.glob(os.path.join(uri, f"Split-{split}", "FeatureStats.pb"))
    with open(path, "rb") as f:
        return statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read())


def _transformed(graph_uri, serialized):
    import tensorflow_transform as tft

    output = tft.TFTransformOutput(graph_uri)
    raw = tf.io.parse_example(serialized, output.raw_feature_spec())
    return {name: value.numpy() for name, value in output.transform_raw_features(raw).items()}


def _metrics(evaluation_uri):
    import tensorflow_model_analysis as tfma

    out = {}
    for for_slice in tfma.load_metrics(evaluation_uri):
        for key in for_slice.metric_keys_and_values:
            value = key.value
            kind = value.WhichOneof("type")
            number = value.double_value.value if kind == "double_value" else None
            out[(str(for_slice.slice_key), key.key.SerializeToString(deterministic=True))] = (
                number if number is not None else value.SerializeToString(deterministic=True))
    return out


@pytest.mark.e2e
def test_the_beam_components_on_flink_give_the_direct_runners_outputs(job_server_jar, worker_pool, tmp_path):
    from pipeline.datagen import keywords

    keywords.generate(str(tmp_path / "audio"), str(tmp_path / "noise"), num_speakers=8,
                      words=keywords.WORDS[:4], noisy_per_clean=1, seed=3)
    beam_args = job_servers.beam_args("flink", job_server_jar, worker_pool, parallelism=2)
    output_dir = tmp_path / "out"
    overrides = [f"data.input_base={tmp_path / 'audio'}", f"output_dir={output_dir}", "name=flink",
                 "data.split_buckets={train: 6, eval: 2, test: 2}", "trainer.epochs=1",
                 "trainer.background.probability=0.0", "evaluator.min_accuracy=0.0",
                 "evaluator.min_si_snr_improvement_db=-100.0", "trainer.backbone=logmel_cnn",  # (the quick one)
                 "beam_args=[" + ", ".join(f'"{flag}"' for flag in beam_args) + "]"]
    command = [sys.executable, "-m", "pipeline.cli", "run", "--config", "pipeline/configs/demo.yaml",
               *[f"--set={o}" for o in overrides]]
    run = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert run.returncode == ExitCode.OK, run.stdout[-4000:] + run.stderr[-4000:]

    from pipeline import summary

    sqlite = str(output_dir / "metadata.sqlite")
    store, run = summary.open_store(sqlite), summary.latest_run(sqlite, "flink")
    replay = str(tmp_path / "replay")
    executions = {node: _execution(store, run, node) for node in BEAM_NODES}

    # WavExampleGen: the same examples in every split (Flink writes them in another order and shards).
    inputs, outputs, properties = executions["WavExampleGen"]
    direct = _replay_on_direct_runner("WavExampleGen", inputs, outputs, properties, replay)
    on_flink = outputs["examples"][0]
    splits = ("train", "eval", "test")
    for split in splits:
        flink_records = _records(on_flink.uri, split)
        assert flink_records, split
        assert flink_records == _records(direct["examples"][0].uri, split), split
    for key in set(outputs) - {"examples"}:  # rejects and the like: the same files, the same bytes
        for ours, theirs in zip(outputs[key], direct[key]):
            names = sorted(os.listdir(ours.uri))
            assert names == sorted(os.listdir(theirs.uri)), key
            for name in names:
                path = os.path.join(ours.uri, name)
                if os.path.isfile(path):
                    with open(path, "rb") as a, open(os.path.join(theirs.uri, name), "rb") as b:
                        assert a.read() == b.read(), (key, name)

    # StatisticsGen: equal protos; sums of floats may differ in the last digit with another order.
    from tensorflow.python.util.protobuf import compare

    inputs, outputs, properties = executions["StatisticsGen"]
    direct = _replay_on_direct_runner("StatisticsGen", inputs, outputs, properties, replay)
    checker = unittest.TestCase()
    checker.maxDiff = None
    for split in splits:
        compare.assertProtoEqual(checker, _statistics(outputs["statistics"][0].uri, split),
                                 _statistics(direct["statistics"][0].uri, split), relative_tolerance=1e-9)

    # Transform (analysis only, as in the pipeline): both graphs give the same features for the same records.
    inputs, outputs, properties = executions["Transform"]
    direct = _replay_on_direct_runner("Transform", inputs, outputs, properties, replay)
    serialized = tf.constant(_records(on_flink.uri, "test"))
    ours = _transformed(outputs["transform_graph"][0].uri, serialized)
    theirs = _transformed(direct["transform_graph"][0].uri, serialized)
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        if ours[name].dtype == object:  # strings
            np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
        else:  # float32 means and variances summed in another order: equal to about 1e-6
            np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-5, atol=1e-5, err_msg=name)

    # Evaluator: the same metrics in every slice, the same blessing, on the Flink run's model.
    inputs, outputs, properties = executions["Evaluator"]
    direct = _replay_on_direct_runner("Evaluator", inputs, outputs, properties, replay)
    ours, theirs = _metrics(outputs["evaluation"][0].uri), _metrics(direct["evaluation"][0].uri)
    assert ours and sorted(ours) == sorted(theirs)
    for key, value in ours.items():
        if isinstance(value, float):
            assert value == pytest.approx(theirs[key], rel=1e-6, abs=1e-9), key
        else:
            assert value == theirs[key], key
    assert sorted(os.listdir(outputs["blessing"][0].uri)) == sorted(os.listdir(direct["blessing"][0].uri))
