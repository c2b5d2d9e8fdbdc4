"""The eval report: files written, untrusted strings escaped, and the HTML rendered by a real headless Chromium
(driven over the DevTools protocol on a pipe) without console errors and with every image decoded."""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import random
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from cuda_agent.eval.metrics import RunMetrics, compute_metrics
from cuda_agent.eval.records import EvalRecord, write_records
from cuda_agent.eval.report import load_run, md_escape, write_report

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _run(seed: int, n: int, episodes: int = 1) -> list[EvalRecord]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        level = 1 + i % 3
        for episode in range(episodes):
            task = f"level{level}/{i}_Task{i}"
            if rng.random() < 0.75:
                se, sc = math.exp(rng.gauss(0.3, 0.4)), math.exp(rng.gauss(0.05, 0.4))
                reward = 3 if se > 1.05 and sc > 1.05 else 2 if se > 1.05 else 1
                records.append(EvalRecord(task, level, i, f"Task{i}", episode, "ok", reward, 0.1, 0.1 * se,
                                          0.1 * se / sc, se, sc, "verified and timed"))
            else:
                records.append(EvalRecord(task, level, i, f"Task{i}", episode, "incorrect", -1,
                                          reason="max abs diff 0.5 at [3, 4] | see verdict"))
    return records


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, dict[str, Path], list[EvalRecord], RunMetrics]:
    """One report with a hostile task name and reason, several episodes, an empty level and a compare run."""
    root = tmp_path_factory.mktemp("eval")
    other = root / "baseline_run"
    write_records(other / "records.jsonl", _run(2, 9))
    records = _run(1, 14, episodes=2)
    # a kernel 3x faster in TF32 math (audit ratio 190 > k = 3), and an honest one (issue 29 item 7)
    records.append(EvalRecord("level2/97_Tf32Gemm", 2, 97, "Tf32Gemm", 0, "ok", 3, 0.1, 0.3, 0.25, 3.0, 2.5,
                              precision_ratio=190.0, precision_k=3.0))
    records.append(EvalRecord("level2/98_HonestGemm", 2, 98, "HonestGemm", 0, "ok", 3, 0.1, 0.3, 0.25, 3.0, 2.5,
                              precision_ratio=0.42, precision_k=3.0))
    records.append(EvalRecord(f"level1/99_{HOSTILE}", 1, 99, HOSTILE, 0, "rejected", -1,
                              reason=f"PyTorch compute in forward: {HOSTILE} [click](javascript:alert(1)) | `x`\nnext"))
    metrics = compute_metrics(records, level_sizes={1: 100, 2: 100, 3: 50, 4: 20}, bootstrap=200, seed=0)
    run = root / "run"
    written = write_report(run, records, metrics, compare_run=other)
    return run, written, records, metrics


def test_report_files(report):
    run, written, _, metrics = report
    expected = {"report.md", "report.html", "metrics.json", *(f"plots/{n}.png" for n in ("speedups", "scatter",
                                                                                         "rates", "rewards", "fast_p"))}
    assert set(written) == expected
    for name, path in written.items():
        assert path == run / name and path.stat().st_size > 0, name
        if name.endswith(".png"):
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    assert RunMetrics.from_dict(json.loads((run / "metrics.json").read_text())) == metrics
    md = (run / "report.md").read_text()
    overall = metrics.row("overall").metrics["pass_rate"]
    assert f"{100 * overall.value:.1f}% ({100 * overall.low:.1f}, {100 * overall.high:.1f})" in md
    assert "Best of 2 episodes" in md and "baseline_run" in md and "Level 4" in md  # empty level shown
    assert "98.8%" in md and "2.11x" in md  # the paper's cited overall row
    for name in ("speedups", "scatter", "rates", "rewards", "fast_p"):
        assert f"(plots/{name}.png)" in md
    # KernelBench's fast_p sweep for both baselines, plain and at precision parity (issue 29 items 5, 7)
    assert "|  | baseline | kernels | fast_0 | fast_0.5 | fast_0.8 | fast_1 | fast_1.5 | fast_2 |" in md
    fast = metrics.row("overall").metrics["fast_1.5_vs_compile"]
    row = next(line for line in md.splitlines() if line.startswith("| overall | torch.compile | all |"))
    assert row.split(" | ")[7] == f"{100 * fast.value:.1f}% ({100 * fast.low:.1f}, {100 * fast.high:.1f})"
    assert "| Level 2 | eager | precision parity |" in md
    # the precision column: the audit ratio and what it says the kernel computes in
    assert "| level2/97_Tf32Gemm | 2 | 1/1 | ok | +3 | 3x | 2.5x | 0.1 | 0.3 | 0.25 | 190 (TF32/fp16/bf16 math) |" in md
    assert "| 0.42 (task precision) |" in md
    parity = metrics.row(2).metrics
    assert parity["fast_2_vs_eager_parity"].value < parity["fast_2_vs_eager"].value  # the TF32 kernel drops out
    assert "<script" not in md and "<img" not in md and "](javascript" not in md
    assert "&lt;script>" in md


def test_html_is_self_contained_and_escaped(report):
    run, _, _, _ = report
    page = (run / "report.html").read_text()
    assert "<script" not in page.lower() and "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<img ") == 5 and page.count('src="data:image/png;base64,') == 5
    assert "http://" not in page and "https://" not in page.replace("https://arxiv.org/abs/2602.24286", "")
    assert "default-src 'none'" in page


def test_md_escape():
    assert md_escape("a|b\nc") == "a&#124;b c"
    assert md_escape("[x](javascript:1) `y` <b>&amp;") == "&#91;x&#93;(javascript:1) &#96;y&#96; &lt;b>&amp;amp;"


def test_compare_run_from_metrics_json_or_records(tmp_path):
    records = _run(4, 6)
    write_records(tmp_path / "a" / "records.jsonl", records)
    from_records = load_run(tmp_path / "a")
    assert from_records.label == "a" and from_records.metrics.row().tasks == 6
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "metrics.json").write_text(json.dumps(from_records.metrics.to_dict()))
    assert load_run(tmp_path / "b").metrics == from_records.metrics
    (tmp_path / "c").mkdir()
    with pytest.raises(ValueError, match=r"neither records\.jsonl nor metrics\.json"):
        load_run(tmp_path / "c")
    with pytest.raises(FileNotFoundError, match="no such run folder"):
        load_run(tmp_path / "missing")


def test_report_of_an_all_failed_run_still_has_every_plot(tmp_path):
    records = [EvalRecord("level2/1_A", 2, 1, "A", 0, "compile_error", -1, reason="nvcc: error"),
               EvalRecord("level2/2_B", 2, 2, "B", 0, "built", 0, reason="CPU checks passed")]
    written = write_report(tmp_path, records, compute_metrics(records, bootstrap=10))
    assert all(written[f"plots/{n}.png"].stat().st_size > 0 for n in ("speedups", "scatter", "rates", "rewards",
                                                                        "fast_p"))
    md = (tmp_path / "report.md").read_text()
    assert "| Level 2 | 2 | 2 | n/a | n/a |" in md  # one task never measured: the pass rate is unknown, not 0%
    assert "1 episode(s) were judged build-only" in md and "| level2/2_B | 2 | n/a (1 unmeasured) | built |" in md


def test_the_report_names_the_tasks_the_judge_could_not_judge(tmp_path):
    records = [EvalRecord("level1/19_ReLU", 1, 19, "ReLU", 0, "task_error", -1, reason="degenerate: the input passes"),
               EvalRecord("level1/1_A", 1, 1, "A", 0, "compile_error", -1, reason="nvcc: error")]
    write_report(tmp_path, records, compute_metrics(records, bootstrap=10))
    md = (tmp_path / "report.md").read_text()
    assert "1 task(s) left out of every table: the judge could not judge them" in md and "level1/19_ReLU" in md
    assert json.loads((tmp_path / "metrics.json").read_text())["unjudgeable"] == ["level1/19_ReLU"]


def test_without_matplotlib_the_report_says_so_instead_of_failing(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    records = _run(5, 4)
    written = write_report(tmp_path, records, compute_metrics(records, bootstrap=10))
    assert set(written) == {"report.md", "report.html", "metrics.json"} and not (tmp_path / "plots").exists()
    assert "matplotlib is not installed" in (tmp_path / "report.md").read_text()
    assert "<img" not in (tmp_path / "report.html").read_text()


# --------------------------------------------------------------------------------- headless Chromium


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        if path := shutil.which(name):
            return path
    return None


class DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe (fd 3: commands in, fd 4: replies out,
    NUL-separated JSON): no websocket library, no port, nothing but the browser and us."""

    def __init__(self, binary: str, profile: Path) -> None:
        commands_r, self._commands = os.pipe()
        self._replies, replies_w = os.pipe()

        def wire() -> None:  # in the child: the pipe ends at fds 3 and 4 (dup2 leaves them inheritable)
            high_r = fcntl.fcntl(commands_r, fcntl.F_DUPFD, 10)  # out of the way first: either may be 3 or 4
            high_w = fcntl.fcntl(replies_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            preexec_fn=wire, close_fds=False,
        )
        os.close(commands_r)
        os.close(replies_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        reply = self._wait(lambda m: m.get("id") == self._next, timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def wait_event(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        return self._wait(lambda m: m.get("method") == method, timeout)

    def _wait(self, done, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "method" in message:
                    self.events.append(message)
                if done(message):
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                raise TimeoutError(f"no answer from Chromium within {timeout}s (exit {self.proc.poll()})")
            ready, _, _ = select.select([self._replies], [], [], left)
            if ready:
                chunk = os.read(self._replies, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the DevTools pipe (exit {self.proc.wait(5)})")
                self._buffer += chunk

    def close(self) -> str:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=10)
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        os.close(self._commands)
        os.close(self._replies)
        return err.decode(errors="replace")


PROBE = """Promise.all([...document.images].map(img => img.decode().then(
    () => ({ok: true, width: img.naturalWidth, height: img.naturalHeight}),
    error => ({ok: false, width: img.naturalWidth, error: String(error)}))))
  .then(images => ({images, scripts: document.scripts.length, title: document.title,
                    tables: document.querySelectorAll('table').length, text: document.body.innerText.length}))"""


def render(page: Path, profile: Path) -> tuple[dict[str, Any], list[str]]:
    """Load `page` in headless Chromium; the probe's findings and every error the page raised (console
    errors, uncaught exceptions, browser log errors such as blocked loads and CSP violations)."""
    binary = _chromium()
    if binary is None:
        pytest.skip("no chromium binary on PATH (apt-get install chromium; .ci/run installs it as root)")
    browser = DevTools(binary, profile)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            browser.send(f"{domain}.enable", session=session)
        browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        browser.wait_event("Page.loadEventFired")
        result = browser.send("Runtime.evaluate", {"expression": PROBE, "awaitPromise": True,
                                                   "returnByValue": True}, session=session)
        probe = result["result"]["value"]
    finally:
        browser.close()
    errors = []
    for event in browser.events:
        params = event.get("params", {})
        if event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif event["method"] == "Runtime.exceptionThrown":
            errors.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:300])
        elif event["method"] == "Log.entryAdded" and params["entry"].get("level") == "error":
            errors.append(f"log ({params['entry'].get('source')}): {params['entry'].get('text')}")
    return probe, errors


def test_chromium_renders_the_report_without_errors(report, tmp_path):
    run, _, _, _ = report
    probe, errors = render(run / "report.html", tmp_path / "profile")
    assert errors == []
    assert len(probe["images"]) == 5  # the hostile <img> in a task name did not become an element
    for image in probe["images"]:
        assert image["ok"] and image["width"] > 300 and image["height"] > 200, image
    assert probe["scripts"] == 0 and probe["tables"] == 8 and probe["text"] > 2000
    assert probe["title"].startswith("cuda-agent eval")


def test_the_browser_check_sees_broken_pages(tmp_path):
    """The same check on a page with a broken image, a console error and an external load the report's
    policy blocks: each is caught, so the clean result above means something."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; img-src data:; script-src 'unsafe-inline'\"></head><body>"
        '<img src="data:image/png;base64,AAAAAAAA"><img src="http://127.0.0.1:9/x.png">'
        '<script>console.error("boom")</script></body></html>'
    )
    probe, errors = render(bad, tmp_path / "profile")
    assert [image["ok"] for image in probe["images"]] == [False, False]
    assert any("boom" in e for e in errors), errors
    assert any("127.0.0.1:9" in e for e in errors), errors  # the blocked load is reported
