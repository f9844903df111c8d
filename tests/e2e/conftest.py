"""Shared helpers for the end-to-end tests: run the binary, load and validate its report."""
import json
import os
import subprocess

import jsonschema
import pytest

BIN = os.environ.get("INFRABENCH_BIN", "build/infrabench")
SCHEMA_PATH = os.environ.get("INFRABENCH_SCHEMA", "reports/schema/report.schema.json")

# Settings that keep a run short: the tests check behaviour, not the machine.
FAST = ["--min-time", "0.01", "--max-time", "0.05", "-q"]


def run(*args, timeout=120, env=None, cwd=None):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout,
                          env=full_env, cwd=cwd)


def load_report(path):
    with open(path) as f:
        report = json.load(f)
    validate(report)
    return report


def validate(report):
    with open(SCHEMA_PATH) as f:
        schema = json.load(f)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)


@pytest.fixture
def report_path(tmp_path):
    return str(tmp_path / "report.json")
