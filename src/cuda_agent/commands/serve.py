"""`cuda-agent serve`: the judge as an authenticated HTTP service (API in cuda_agent/service/app.py).

Judges on this host's GPUs through one `JudgeService` (`--gpus N`), on the CPU only (`--build-only`), or
on a Ray cluster (`--ray [ADDRESS]`: one GPU judge actor per GPU, builds on CPU workers). Binds to
127.0.0.1 unless `--host` says otherwise. Accepted judgments live in `--data-dir` (SQLite, WAL): a
restart resumes the unfinished ones and still serves the finished. Exit codes: 2 bad arguments or no
tokens, 3 the judge cannot run here (no GPU: try --build-only).
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from cuda_agent.commands.judge import add_compile_mode_argument, add_lane_arguments, lane_arguments_refused

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name, help="serve the judge over authenticated HTTP (local GPUs, CPU-only or a Ray cluster)",
        description="An HTTP judge server in front of JudgeService. Tokens: --token-file or "
        "$CUDA_AGENT_SERVE_TOKENS (at least 16 characters each).",
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    parser.add_argument("--token-file", type=Path, help="accepted bearer tokens, one per line")
    parser.add_argument("--data-dir", type=Path, default=Path("judge-service"),
                        help="where judgments are kept (default ./judge-service)")  # fmt: skip
    parser.add_argument("--max-pending", type=int, default=64, help="unfinished judgments before 429")
    parser.add_argument("--max-attempts", type=int, default=3, help="dispatches of one judgment at most")
    parser.add_argument("--max-request-mb", type=float, default=8.0, help="largest request body (8 MiB)")
    parser.add_argument("--header-timeout-s", type=float, default=10.0,
                        help="seconds a connection has to send a request's headers (default 10)")  # fmt: skip
    parser.add_argument("--body-timeout-s", type=float, default=60.0,
                        help="seconds a request has to send its body (default 60; then 408)")  # fmt: skip
    parser.add_argument("--max-half-open", type=int, default=256,
                        help="connections waiting for a request's headers at once; beyond, the oldest is closed")  # fmt: skip
    parser.add_argument("--build-only", action="store_true", help="CPU checks only (no GPU needed)")
    parser.add_argument("--workers", type=int, default=1, help="concurrent CPU checks with --build-only")
    parser.add_argument("--gpus", type=int, default=1, help="local GPUs to judge on")
    parser.add_argument("--build-workers", type=int, help="concurrent builds (default: the free CPU cores)")
    parser.add_argument("--ray", nargs="?", const="auto", metavar="ADDRESS",
                        help="judge on a Ray cluster (ADDRESS, default: auto; 'local' starts one here)")  # fmt: skip
    parser.add_argument("--no-timing", action="store_true", help="verify only; reward 1 when correct")
    add_lane_arguments(parser)
    add_compile_mode_argument(parser)  # for every job: jobs carry no judge options
    parser.add_argument("--arch", help="CUDA architecture to build for (default: the visible GPU)")
    parser.add_argument("--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, help="the certificate's private key (PEM)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from cuda_agent.service.app import create_app
    except ImportError as exc:
        print(f"error: {exc.name} is not installed: pip install 'cuda-agent[service]'", file=sys.stderr)
        return 2
    from cuda_agent.judge import BuildConfig, JudgeConfig, JudgeUnavailable, TimingConfig, default_arch
    from cuda_agent.service.auth import AuthConfigError, Tokens
    from cuda_agent.service.guard import guarded_protocol
    from cuda_agent.service.jobs import JobQueue
    from cuda_agent.service.logs import configure as configure_logging
    from cuda_agent.service.store import Store
    from cuda_agent.service.submission import Limits

    try:
        tokens = Tokens.load(args.token_file)
    except AuthConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if bool(args.tls_cert) != bool(args.tls_key):
        print("error: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    if refused := lane_arguments_refused(args.lane_depth, args.lane_preempt):
        print(f"error: {refused}", file=sys.stderr)
        return 2
    config = JudgeConfig(build=BuildConfig(arch=args.arch or default_arch()), time_candidate=not args.no_timing,
                         timing=TimingConfig(compile_mode=args.compile_mode), lane_depth=args.lane_depth,
                         lane_preempt=args.lane_preempt)  # fmt: skip
    executor = _executor(args, config)
    store = Store(args.data_dir / "judgments.sqlite")
    jobs = JobQueue(store, executor, args.data_dir / "scratch", args.max_pending, args.max_attempts)
    try:
        jobs.start()
    except JudgeUnavailable as exc:
        print(f"error: {exc}\nhint: --build-only serves the CPU checks without a GPU", file=sys.stderr)
        return 3
    limits = Limits(max_request_bytes=int(args.max_request_mb * (1 << 20)), body_timeout_s=args.body_timeout_s)
    app = create_app(jobs, tokens, limits)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        jobs.close()
        return 2
    port = sock.getsockname()[1]
    if args.port_file:
        args.port_file.write_text(f"{port}\n")
    if args.host not in LOCAL_HOSTS and not args.tls_cert:
        print(f"warning: listening on {args.host} without TLS: tokens cross the network in clear text",
              file=sys.stderr)  # fmt: skip
    scheme = "https" if args.tls_cert else "http"
    mode = "Ray cluster" if args.ray else "build-only (CPU)" if args.build_only else f"{executor.lanes} GPU lane(s)"
    print(f"judge server on {scheme}://{args.host}:{port}/v1 ({mode}; data in {args.data_dir})",
          file=sys.stderr, flush=True)  # fmt: skip
    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            jobs.wake_all()  # long-polls answer before the grace below runs out and cancels them
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    server = Server(uvicorn.Config(
        app, log_level="info", ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key, timeout_graceful_shutdown=5,
        http=guarded_protocol(args.header_timeout_s, args.max_half_open),
    ))  # fmt: skip
    configure_logging()  # after uvicorn.Config, which sets up uvicorn's own loggers
    try:
        server.run(sockets=[sock])
    finally:
        jobs.close()
        store.close()
    return 0


def _executor(args: argparse.Namespace, config: object):
    if args.ray:
        from cuda_agent.service.ray_pool import RayExecutor

        return RayExecutor(None if args.ray == "local" else args.ray, config, build_only=args.build_only,  # type: ignore[arg-type]
                           max_attempts=args.max_attempts)  # fmt: skip
    if args.build_only:
        from cuda_agent.service.executors import BuildOnlyExecutor

        return BuildOnlyExecutor(config, workers=args.workers)  # type: ignore[arg-type]
    from cuda_agent.service.executors import LocalExecutor

    devices = list(range(args.gpus)) if args.gpus > 1 else None
    return LocalExecutor(config, devices=devices, build_workers=args.build_workers)  # type: ignore[arg-type]


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted sockets only when the proto says TCP,
    # and without it every small answer on a kept-alive connection waited 40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock
