"""Secrets stay out of what is written: the Hub token (push, dry run included) and credentials
carried in `--base-url` (manifest, records, transitions, traces, messages)."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from hf_skillfollow._redact import redact_url, url_secrets
from hf_skillfollow.cli import cli
from hf_skillfollow.schema import traces_from_rows
from tests._fixtures_hub import CELL_A, outcome_rows, trace_rows, write_run_dir

TOKEN = "hf_TESTSECRETtokenValue1234567890"


@pytest.fixture
def hub_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no cached login of the user
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    return TOKEN


def _run_with_token_in_traces(root: Path) -> Path:
    run = write_run_dir(root, "run-a0", CELL_A)
    rows = trace_rows(outcome_rows(CELL_A, run_id="run-a0"))
    rows[5]["messages"][1]["content"] = f"my Hub token is {TOKEN}, keep it safe"
    pq.write_table(traces_from_rows(rows), run / "traces.parquet", compression="zstd")
    return run


@pytest.mark.parametrize("where", ["traces", "transitions"])
def test_push_dry_run_refuses_a_hub_token_in_any_file(
    tmp_path: Path, hub_token: str, where: str
) -> None:
    if where == "traces":
        run = _run_with_token_in_traces(tmp_path / "runs")
    else:  # a column value, dictionary-encoded and zstd-compressed in the file
        run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A, model=f"org/m-{hub_token}")
    out = tmp_path / "repo"
    res = CliRunner().invoke(cli, ["push", str(run), "--repo", "org/r", "--dry-run", str(out)])
    assert res.exit_code == 1, res.output
    assert (
        f"refusing to upload data/{where}/run-a0.parquet: it contains the Hub token" in res.output
    )
    assert hub_token not in res.output
    assert not out.exists() or not any(out.rglob("*"))


def test_real_upload_refuses_the_same_file(tmp_path: Path, hub_token: str) -> None:
    """The real path, with the recording double at the HfApi boundary (huggingface.co is
    unreachable from here): the same refusal, and nothing committed."""
    from hf_skillfollow.hub import HubError, push_runs
    from tests.test_hub_push_double import RecordingHfApiDouble

    api = RecordingHfApiDouble(tmp_path, token=hub_token)
    run = _run_with_token_in_traces(tmp_path / "runs")
    with pytest.raises(HubError, match="refusing to upload data/traces/run-a0.parquet"):
        push_runs([run], "org/r", token=hub_token, api=api)
    assert api.commits == []


def test_dry_run_without_a_token_in_the_files_still_writes(tmp_path: Path, hub_token: str) -> None:
    run = write_run_dir(tmp_path / "runs", "run-a0", CELL_A)
    out = tmp_path / "repo"
    res = CliRunner().invoke(cli, ["push", str(run), "--repo", "org/r", "--dry-run", str(out)])
    assert res.exit_code == 0, res.output
    assert (out / "data" / "traces" / "run-a0.parquet").is_file()


# --- credentials in --base-url --------------------------------------------------------------

PASSWORD = "pw-Secret-4242"
QUERY_KEY = "sk-query-key-777"


@pytest.mark.parametrize(
    "url,stored",
    [
        (f"https://alice:{PASSWORD}@gw.example/v1", "https://***@gw.example/v1"),
        (f"https://gw.example/v1?api_key={QUERY_KEY}&region=eu", "https://gw.example/v1?api_key=***&region=eu"),
        (f"https://{QUERY_KEY}@gw.example/v1?access_token=abc%2Fdef", "https://***@gw.example/v1?access_token=***"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ],
)  # fmt: skip
def test_redact_url_forms(url: str, stored: str) -> None:
    assert redact_url(url) == stored


def test_manifest_stores_the_base_url_redacted_and_resume_asks_for_it(
    tmp_path: Path, data_dir: Path
) -> None:
    from hf_skillfollow.config import RunConfig
    from hf_skillfollow.runner import plan_new_run, plan_resume
    from hf_skillfollow.store import RunDirError

    url = f"https://alice:{PASSWORD}@gw.example/v1?api_key={QUERY_KEY}"
    config = RunConfig(
        backend="openai",
        model="m",
        base_url=url,
        tasks_file=data_dir / "mbppplus-v0.1.0.jsonl",
        limit=1,
    )
    plan = plan_new_run(config, tmp_path)
    assert plan.config.base_url == url  # the run itself still reaches the endpoint
    text = (plan.store.root / "manifest.json").read_text()
    assert PASSWORD not in text and QUERY_KEY not in text and "alice" not in text
    assert json.loads(text)["config"]["base_url"] == "https://***@gw.example/v1?api_key=***"
    with pytest.raises(RunDirError, match="pass --base-url again"):
        plan_resume(plan.store.root)
    assert plan_resume(plan.store.root, {"base_url": url}).config.base_url == url


class _EchoingGateway:
    """A local OpenAI-compatible endpoint that echoes the Basic credentials it received into
    the model's answer: the worst case of a gateway leaking them into traces."""

    def __init__(self) -> None:
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._json({"object": "list", "data": [{"id": "gw-model", "object": "model"}]})

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                auth = self.headers.get("authorization", "")
                creds = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else auth
                gateway.seen.append(creds)
                content = (
                    f"reached via http://{creds}@gateway\n```python\ndef f():\n    return 1\n```"
                )
                self._json({
                    "id": "c", "object": "chat.completion", "created": 0, "model": "gw-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
                })  # fmt: skip

            def _json(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.seen: list[str] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]


@pytest.fixture
def gateway() -> Iterator[_EchoingGateway]:
    gw = _EchoingGateway()
    threading.Thread(target=gw.server.serve_forever, daemon=True).start()
    yield gw
    gw.server.shutdown()
    gw.server.server_close()


def test_run_with_credentials_in_base_url_writes_none_of_them(
    tmp_path: Path, data_dir: Path, gateway: _EchoingGateway
) -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:{gateway.port}/v1"
    out = tmp_path / "runs"
    res = CliRunner().invoke(
        cli,
        ["run", "--backend", "openai", "--model", "gw-model", "--base-url", url,
         "--tasks-file", str(data_dir / "mbppplus-v0.1.0.jsonl"), "--limit", "1",
         "--concurrency", "1", "-o", str(out), "--no-report"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    assert gateway.seen and all(s == f"alice:{PASSWORD}" for s in gateway.seen)  # creds were used
    (run_dir,) = list(out.iterdir())
    written = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    assert {"manifest.json", "records.jsonl", "transitions.parquet", "traces.parquet"} <= set(
        written
    )
    for name, data in written.items():
        assert PASSWORD.encode() not in data, name
    traces = pq.read_table(run_dir / "traces.parquet").to_pylist()
    answers = [t["final_answer"] for t in traces]
    assert all("reached via http://***@gateway" in a for a in answers), answers
    assert PASSWORD not in res.output


def test_startup_error_with_credentials_in_base_url_does_not_print_them(
    tmp_path: Path, data_dir: Path
) -> None:
    from hf_skillfollow.backends._server import free_port

    url = f"http://alice:{PASSWORD}@127.0.0.1:{free_port()}/v1"  # nothing listens there
    res = CliRunner().invoke(
        cli,
        ["run", "--backend", "openai", "--model", "m", "--base-url", url, "--tasks-file",
         str(data_dir / "mbppplus-v0.1.0.jsonl"), "--limit", "1", "-o", str(tmp_path / "runs")],
    )  # fmt: skip
    assert res.exit_code == 1, res.output
    assert PASSWORD not in res.output and "***@127.0.0.1" in res.output
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_url_secrets_are_what_gets_scrubbed() -> None:
    secrets = url_secrets(f"https://alice:{PASSWORD}@h/v1?token={QUERY_KEY}")
    assert f"alice:{PASSWORD}@" in secrets and PASSWORD in secrets and QUERY_KEY in secrets
    assert url_secrets("https://me:pw@h/v1") == [
        "me:pw@"
    ]  # a short bare password is not scrubbed alone
