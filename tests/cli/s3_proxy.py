#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of an S3 endpoint, for tests/cli/test_s3_faults.sh.

    s3_proxy.py PORT UPSTREAM_PORT MODE

Forwards every request to 127.0.0.1:UPSTREAM_PORT with its headers untouched (the Host header
the client signed stays), and injects S3's throttling answer (503 SlowDown) by MODE:
  every3      every third request of any kind
  parts       every part upload (PUT ...?partNumber=...), nothing else
Writes PORT's readiness as one line "ready" on stdout; counts injected answers in the file named
by $S3_PROXY_COUNT (one line per injection).
"""
import http.client
import http.server
import os
import sys
import threading

PORT, UPSTREAM, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
seen = [0]
SLOWDOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
            b'<Message>Please reduce your request rate.</Message></Error>')


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def inject(self):
        with lock:
            seen[0] += 1
            n = seen[0]
        if MODE == "every3":
            return n % 3 == 0
        if MODE == "parts":
            return self.command == "PUT" and "partNumber=" in self.path
        return False

    def relay(self):
        length = int(self.headers.get("Content-Length", "0") or 0)
        body = self.rfile.read(length) if length else b""
        if self.inject():
            count = os.environ.get("S3_PROXY_COUNT")
            if count:
                with lock, open(count, "a") as f:
                    f.write(self.command + " " + self.path + "\n")
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(SLOWDOWN)))
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has no body
                self.wfile.write(SLOWDOWN)
            return
        conn = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=120)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            if k.lower() not in ("expect", "connection"):
                conn.putheader(k, v)
        conn.endheaders()
        if body:
            conn.send(body)
        resp = conn.getresponse()
        data = resp.read()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(k, v)
        # A HEAD answer keeps the object's length (the client reads the size from it).
        length = resp.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length or str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay


server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Proxy)
print("ready", flush=True)
server.serve_forever()
