#!/usr/bin/env python3
"""HTTP clients for test_metrics_prometheus.sh: a plain scrape, a raw request, clients that
never read, and many at once. Standard library only.

  metrics_client.py get PORT [PATH]         body to stdout; exit 1 unless 200
  metrics_client.py raw PORT BYTES          the status line (or "closed") of a raw request
  metrics_client.py value PORT SERIES       the value of one series line (exact name+labels)
  metrics_client.py hold PORT N ADDRS SECS  N idle connections at once from ADDRS source
                                            addresses (127.0.0.1..), held SECS: prints
                                            "connected C timed_out T closed R"
  metrics_client.py noread PORT SECS FILE   a keep-alive GET whose reply is never read,
                                            the connection held SECS; FILE is created
                                            when the reply starts to arrive
  metrics_client.py listen PORT SECS FILE   holds PORT for SECS; FILE once it listens
  metrics_client.py storm PORT N ADDRS      N concurrent GETs: prints "ok A refused R other O"
  metrics_client.py free_port               a TCP port free on 127.0.0.1 now
"""
import socket
import sys
import threading
import time
import urllib.request


def get(port, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return r.status, r.read().decode()


def raw(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    buf = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    s.close()
    return buf.split(b"\r\n", 1)[0].decode(errors="replace") if buf else "closed"


def connect_from(port, i, addrs):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((f"127.0.0.{1 + i % addrs}", 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    return s


def closed_by_peer(s, wait):
    s.settimeout(wait)
    try:
        return s.recv(1) == b""
    except socket.timeout:
        return False
    except ConnectionResetError:
        return True


def hold(port, n, addrs, secs):
    """N connections at once, none sending. Returns (connected, timed_out, closed): connected
    by the kernel (pctld accepted them or they wait in its listen queue), not even that within
    2 s (the queue is full), and of the connected, closed by pctld (its per-address limit)."""
    socks, lock = [], threading.Lock()
    timed_out = [0]

    def one(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((f"127.0.0.{1 + i % addrs}", 0))
        s.settimeout(2)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            with lock:
                timed_out[0] += 1
            return
        with lock:
            socks.append(s)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(secs)
    closed = sum(closed_by_peer(s, 0.05) for s in socks)
    for s in socks:
        s.close()
    return len(socks), timed_out[0], closed


def noread(port, secs, marker):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # A tiny receive window: what the server sends fills it and then waits for reads that
    # never come.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    # Tell the test once the reply has started to arrive, without reading it (a peek).
    s.settimeout(10)
    if s.recv(1, socket.MSG_PEEK):
        open(marker, "w").close()
    time.sleep(secs)
    s.close()


def listen(port, secs, marker):
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    open(marker, "w").close()
    time.sleep(secs)


def storm(port, n, addrs):
    results = []
    lock = threading.Lock()

    def one(i):
        try:
            s = connect_from(port, i, addrs)
            s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
            s.close()
            r = "ok" if buf.startswith(b"HTTP/1.0 200") or buf.startswith(b"HTTP/1.1 200") \
                else "refused" if not buf else "other"
        except (ConnectionResetError, BrokenPipeError):
            r = "refused"
        except OSError:
            r = "other"
        with lock:
            results.append(r)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results.count("ok"), results.count("refused"), n - results.count("ok") - results.count("refused")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "free_port":
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        print(s.getsockname()[1])
        return 0
    port = int(args[0])
    if cmd == "get":
        try:
            status, body = get(port, args[1] if len(args) > 1 else "/metrics")
        except Exception as e:  # noqa: BLE001 - the test prints why
            print(f"scrape failed: {e}", file=sys.stderr)
            return 1
        sys.stdout.write(body)
        return 0 if status == 200 else 1
    if cmd == "raw":
        print(raw(port, args[1].encode().decode("unicode_escape").encode("latin-1")))
        return 0
    if cmd == "value":
        _, body = get(port)
        for line in body.splitlines():
            if line.rsplit(" ", 1)[0] == args[1]:
                print(line.rsplit(" ", 1)[1])
                return 0
        return 1
    if cmd == "hold":
        c, t, r = hold(port, int(args[1]), int(args[2]), float(args[3]))
        print(f"connected {c} timed_out {t} closed {r}")
        return 0
    if cmd == "noread":
        noread(port, float(args[1]), args[2])
        return 0
    if cmd == "listen":
        listen(port, float(args[1]), args[2])
        return 0
    if cmd == "storm":
        ok, refused, other = storm(port, int(args[1]), int(args[2]))
        print(f"ok {ok} refused {refused} other {other}")
        return 0
    print(f"unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
