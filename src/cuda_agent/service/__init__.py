"""The judge as a network service: `cuda-agent serve` (HTTP in front of `JudgeService`), its client
`RemoteJudge`, and a Ray-backed pool of GPU lanes across a cluster.

Modules, one job each:
  submission.py  what a submission is on the wire: validated files (JSON or a tar archive, unpacked safely)
  auth.py        bearer tokens from a file or the environment, compared in constant time
  store.py       SQLite (WAL) record of every accepted judgment: durable before the 202, resumed on restart
  executors.py   where judgments run: the local `JudgeService` (GPU) or the CPU checks (build-only)
  ray_pool.py    where judgments run on a Ray cluster: CPU build tasks, one GPU judge actor per GPU
  jobs.py        the bounded queue between HTTP and an executor; first verdict wins; waiters woken
  metrics.py     Prometheus metrics of the queue, verdicts, stages and lanes
  app.py         the FastAPI application (versioned /v1 API)
  client.py      `RemoteJudge`: the `Judge` seam and `judge`/`judge_many` over HTTP, with retries
"""
