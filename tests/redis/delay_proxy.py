#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A delaying TCP forwarder for rusk's slow-link test (issue 30): a fixed delay on the
client connections of a Redis Cluster where the kernel has no sch_netem. A test tool.

    delay_proxy.py [LISTEN_PORT:]TARGET_PORT...

For each TARGET_PORT it listens on 127.0.0.1:LISTEN_PORT (without one, or 0: a port the
kernel picks; a test gives ports that `cluster.sh free-port` reserved, so that no cluster
starting beside it finds one taken) and forwards every connection to 127.0.0.1:TARGET_PORT.
In each direction every chunk read is written D ms after it was read, in the order read: a
link with a fixed one-way delay of D ms (the delay of `tc qdisc ... netem delay Dms` on the
loopback, which a round trip crosses twice). It prints one line, `ports P1 P2 ...` (the
listening ports, in the order of the targets), then reads commands from stdin, one a line:

    delay MS        D := MS (a number >= 0; 0 at start) for every chunk read from now on;
                    answers `delay MS` on stdout
    rate KBPS       a bandwidth of KBPS KB/s (1000 bytes) for each connection's direction
                    from now on (0, the start: none): a chunk is written once the link's
                    bytes before it have passed at that rate, and its own; answers
                    `rate KBPS`
    end of stdin    closes the listeners and every connection and exits 0

A bad command is answered `error: ...` on stdout and changes nothing. The nodes announce
the listening ports (cluster.sh, RUSK_REDIS_ANNOUNCE), so their CLUSTER SLOTS, MOVED and
ASK answers name them and every byte of a client crosses the delay; so do the replicas'
replication streams. The cluster bus stays direct. A chunk is whatever one read returned
(at most 16 KiB); a delay is a lower bound: the event loop wakes up to about 1 ms late
(epoll's timeout is in ms), later on a loaded machine."""
import asyncio
import sys

CHUNK = 16384  # a rate's granule: 16 ms at 1,000 KB/s


class Link:
    def __init__(self):
        self.delay_s = 0.0  # the one-way delay: set by `delay MS`, read as each chunk arrives
        self.rate = 0.0     # bytes/s of each direction (`rate KBPS`; 0: none)
        self.open = {}      # each forwarding task -> its two writers, closed at the end


async def pipe(reader, writer, link):
    """Copies reader to writer, each chunk due link.delay_s after it was read and, under a
    rate, once the bytes before it and its own have passed at that rate; in order."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    free_at = [0.0]  # under a rate: when the link has passed every byte queued so far

    async def read():
        try:
            while True:
                data = await reader.read(CHUNK)
                due = loop.time() + link.delay_s
                if link.rate > 0 and data:
                    due = max(due, free_at[0]) + len(data) / link.rate
                    free_at[0] = due
                queue.put_nowait((due, data))
                if not data:
                    return
        except (ConnectionError, OSError):
            queue.put_nowait((loop.time() + link.delay_s, b""))

    reading = asyncio.ensure_future(read())
    try:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        reading.cancel()


async def forward(target, link, client_r, client_w):
    try:
        up_r, up_w = await asyncio.open_connection("127.0.0.1", target)
    except OSError:
        client_w.close()
        return
    link.open[asyncio.current_task()] = (up_w, client_w)
    try:
        await asyncio.gather(pipe(client_r, up_w, link), pipe(up_r, client_w, link))
    finally:
        del link.open[asyncio.current_task()]
        for w in (up_w, client_w):
            w.close()


async def main(pairs):
    link = Link()
    servers = []
    for listen, t in pairs:
        try:
            servers.append(await asyncio.start_server(
                lambda r, w, t=t: forward(t, link, r, w), "127.0.0.1", listen))
        except OSError as e:
            print("delay_proxy.py: cannot listen on 127.0.0.1:%d: %s" % (listen, e.strerror),
                  file=sys.stderr)
            raise SystemExit(1)
    print("ports " + " ".join(str(s.sockets[0].getsockname()[1]) for s in servers),
          flush=True)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        words = line.split()
        try:
            if len(words) != 2 or words[0] not in ("delay", "rate"):
                raise ValueError("expected `delay MS` or `rate KBPS`")
            v = float(words[1])
            if not v >= 0 or v > (60000 if words[0] == "delay" else 1e7):
                raise ValueError("%s must be 0..%s" % (
                    "MS" if words[0] == "delay" else "KBPS",
                    "60000" if words[0] == "delay" else "10000000"))
        except ValueError as e:
            print("error: %r: %s" % (line.strip(), e), flush=True)
            continue
        if words[0] == "delay":
            link.delay_s = v / 1000.0
        else:
            link.rate = v * 1000.0
        print("%s %g" % (words[0], v), flush=True)
    # the end: every connection closed, so that each pipe reads its end and returns (the
    # tasks end by themselves, not cancelled by asyncio.run); at most 5 s
    for s in servers:
        s.close()
    for ws in list(link.open.values()):
        for w in ws:
            w.close()
    if link.open:
        await asyncio.wait(list(link.open), timeout=5)


if __name__ == "__main__":
    pairs, bad = [], None
    for arg in sys.argv[1:]:
        listen, _, target = arg.rpartition(":")
        if (not target.isdigit() or not 0 < int(target) < 65536 or
                listen and (not listen.isdigit() or int(listen) > 65535)):
            bad = bad or arg
            continue
        pairs.append((int(listen or 0), int(target)))
    if not sys.argv[1:] or bad:
        print("delay_proxy.py: %susage: delay_proxy.py [LISTEN_PORT:]TARGET_PORT... (ports "
              "1..65535; LISTEN_PORT 0: any free one)" %
              ("%r is not [LISTEN_PORT:]TARGET_PORT; " % bad if bad else ""), file=sys.stderr)
        raise SystemExit(2)
    asyncio.run(main(pairs))
