#!/usr/bin/env python3
"""A stand-in for journald's native socket, for tests that check what pctld sends the journal:
binds SOCKET (a datagram socket, as /run/systemd/journal/socket is), decodes each entry
(KEY=value lines; a value with a newline comes as KEY, a 64-bit little-endian length, the
value) and appends it to OUT as one JSON object per line. Exits once process PID is gone.

Usage: journal_receiver.py SOCKET OUT PID"""
import json
import os
import socket
import struct
import sys


def decode(data):
    entry, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, _, value = line.partition(b"=")
            i = nl + 1
        else:
            key = line
            (n,) = struct.unpack("<Q", data[nl + 1 : nl + 9])
            value = data[nl + 9 : nl + 9 + n]
            i = nl + 9 + n + 1
        entry[key.decode()] = value.decode(errors="replace")
    return entry


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def main():
    path, out, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(0.5)
    with open(out, "a", buffering=1) as f:
        while alive(pid):
            try:
                data = s.recv(1 << 20)
            except socket.timeout:
                continue
            f.write(json.dumps(decode(data)) + "\n")


main()
