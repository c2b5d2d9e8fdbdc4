"""A property-based fuzz of every route of the judge server's OpenAPI schema, over real sockets: whatever
a client sends (any JSON, bytes, archive-looking bytes, content types, tokens, ids, query values,
idempotency keys), the answer is never a 5xx. Over 2,000 generated requests (hypothesis)."""

from __future__ import annotations

import io
import string
import tarfile
from urllib.parse import quote

import httpx
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.service.helpers import TOKEN, Server, instant  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
EXAMPLES = 2100

KEYS = ["files", "files_base64", "task", "task_name", "submissions", "idempotency_key", "model_new.py",
        "model.py", "kernels/k.cu", "../x", "/abs", "kernels/a/b.cu", "a" * 300, "\ud800", ""]  # fmt: skip
any_text = st.text(st.characters(exclude_categories=()), max_size=40)  # lone surrogates too: valid JSON
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), any_text, st.sampled_from(KEYS))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(KEYS), any_text), inner, max_size=4)),
    max_leaves=20,
)  # fmt: skip
submission_like = st.fixed_dictionaries(
    {"files": st.dictionaries(st.sampled_from(KEYS), st.one_of(any_text, json_values), max_size=3)},
    optional={"task": st.one_of(any_text, json_values), "task_name": st.one_of(any_text, scalars),
              "files_base64": st.dictionaries(st.sampled_from(KEYS), st.one_of(st.text(max_size=20), scalars), max_size=2),
              "idempotency_key": st.one_of(any_text, scalars)},
)  # fmt: skip
batch_like = st.fixed_dictionaries(
    {"submissions": st.one_of(st.lists(submission_like, max_size=3), json_values)}
)


def _tar_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


tar_names = st.one_of(st.sampled_from(["model.py", "model_new.py", "kernels/k.cu", "kernels", "x/../y"]),
                      st.text(string.printable, min_size=1, max_size=30))  # fmt: skip
archives = st.builds(
    lambda files, cut: _tar_of(files)[: cut or None],
    st.dictionaries(tar_names, st.binary(max_size=64), max_size=4),
    st.integers(0, 3000),
)  # fmt: skip
nested = st.integers(1, 200_000).map(
    lambda n: ("bytes", b"[" * n + b"]" * n)
)  # deeper than the parser's stack
bodies = st.one_of(
    st.tuples(st.just("application/json"), nested),
    st.tuples(st.just("application/json"), st.integers(0, 10**6).map(lambda n: ("json", instant(n)))),  # real ones
    st.tuples(st.just("application/json"), st.one_of(json_values, submission_like, batch_like).map(lambda v: ("json", v))),
    st.tuples(st.sampled_from(["application/x-tar", "application/gzip", "application/octet-stream"]),
              st.one_of(archives, st.binary(max_size=200)).map(lambda b: ("bytes", b))),
    st.tuples(st.sampled_from(["application/json", "text/plain", "", "application/x-tar; charset=x"]),
              st.binary(max_size=200).map(lambda b: ("bytes", b))),
)  # fmt: skip
latin1 = st.text(st.characters(min_codepoint=33, max_codepoint=255, exclude_characters="\x7f"), max_size=40)
tokens = st.one_of(st.just(TOKEN), st.just(TOKEN), st.none(), latin1)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory):
    srv = Server(tmp_path_factory.mktemp("fuzz"), "--max-pending", "6", "--max-request-mb", "1")
    done = srv.http.post("/judgments", json=instant(0)).json()["id"]
    srv.wait_done(done)
    schema = srv.http.get(srv.url + "/openapi.json").json()
    operations = sorted((method.upper(), path, [p["name"] for p in op.get("parameters", []) if p["in"] == "query"])
                        for path, item in schema["paths"].items() for method, op in item.items())  # fmt: skip
    client = httpx.Client(base_url=srv.url, timeout=30)
    yield srv, client, operations, done
    client.close()
    srv.stop()


def test_every_route_answers_without_a_5xx(target) -> None:
    srv, client, operations, done = target
    assert {path for _, path, _ in operations} >= {"/v1/judgments", "/v1/batches", "/v1/judgments/{judgment_id}",
                                                    "/v1/judgments/{judgment_id}/events", "/v1/health", "/v1/ready"}  # fmt: skip
    seen: list[int] = []

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(data=st.data())
    def one_request(data: st.DataObject) -> None:
        method, path, query_names = data.draw(st.sampled_from(operations))
        ids = st.one_of(st.just(done), st.text(max_size=30), st.sampled_from(["..", "%00", "a" * 500]))
        url = path.replace("{judgment_id}", quote(data.draw(ids), safe=""))
        params = {name: data.draw(st.one_of(st.floats().map(str), st.integers().map(str), latin1))
                  for name in query_names if data.draw(st.booleans())}  # fmt: skip
        headers: dict[str, bytes | str] = {}
        token = data.draw(tokens)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}".strip().encode("latin-1")
        if data.draw(st.booleans()):
            headers["Idempotency-Key"] = data.draw(latin1).encode("latin-1")
        kw: dict = {}
        if method == "POST":
            kind, (form, value) = data.draw(bodies)
            if kind:
                headers["Content-Type"] = kind
            kw["content"] = _json_bytes(value) if form == "json" else value
        if url.endswith("/events") and not url.startswith(f"/v1/judgments/{done}/"):
            params.pop("wait", None)  # an unfinished judgment's stream stays open: only 404s and the done one
        response = client.request(method, url, params=params, headers=headers, **kw)
        seen.append(response.status_code)
        # /v1/ready is a readiness probe: 503 with ready false is its documented answer while the queue is full
        probe_says_busy = url == "/v1/ready" and response.status_code == 503 and response.json().get("ready") is False
        assert response.status_code < 500 or probe_says_busy, (method, url, params, response.status_code,
                                                               response.text[:300])  # fmt: skip

    one_request()
    assert len(seen) >= 2000 and {202, 400, 401, 404} <= set(seen)
    assert srv.proc.poll() is None


def _json_bytes(value: object) -> bytes:
    import json

    return json.dumps(value).encode()
