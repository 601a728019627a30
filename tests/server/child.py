"""A ``foliodb serve`` in a child process for the abuse tests, with the time
limits and connection limit they choose; prints ``PORT <n>`` once listening.
On SIGUSR1 it writes the number of blocks Python's allocator holds to
``<dbpath>.blocks`` (memory held, which the resident set size cannot show once
freed memory stays mapped for reuse).

    python -m tests.server.child DBPATH [--auth] [--max-conns N] [--handshake-timeout S] [--frame-timeout S]
"""

from __future__ import annotations

import argparse
import gc
import logging
import signal
import sys
from pathlib import Path

from foliodb.server import Server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dbpath")
    parser.add_argument("--auth", action="store_true")
    parser.add_argument("--max-conns", type=int, default=None)
    parser.add_argument("--handshake-timeout", type=float, default=30.0)
    parser.add_argument("--frame-timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s", stream=sys.stderr)
    server = Server(
        args.dbpath,
        "127.0.0.1",
        0,
        auth=args.auth,
        max_conns=args.max_conns,
        handshake_timeout=args.handshake_timeout,
        frame_timeout=args.frame_timeout,
    )
    _host, port = server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.shutdown())
    blocks = Path(f"{args.dbpath}.blocks")

    def report_blocks(*_: object) -> None:
        gc.collect()
        blocks.with_suffix(".tmp").write_text(str(sys.getallocatedblocks()))
        blocks.with_suffix(".tmp").rename(blocks)

    signal.signal(signal.SIGUSR1, report_blocks)
    print(f"PORT {port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
