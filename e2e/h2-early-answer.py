#!/usr/bin/python3
"""A server that answers every request 401 before it reads the request body.

Like Go's net/http (and so kube-apiserver) rejecting a bootstrap token. Over HTTP/2 (ALPN h2):
the complete response (HEADERS, then DATA with END_STREAM and a Content-Length) goes out as soon
as the request's HEADERS arrive, followed by RST_STREAM(NO_ERROR) for a request whose body has
not ended (RFC 9113 section 8.1). All three frames go in one write, so the client sees the reset
with the response, which is the race that made libcurl 7.88 drop the answer in e2e. It grants no
flow-control window for request bodies, so the race goes the same way every time. Over HTTP/1.1
(ALPN http/1.1 or none): the 401 goes out as soon as the request's headers arrive, then the body
is read and dropped (as Go's server does before it closes) and the connection closed.

    h2-early-answer.py CERT KEY PORTFILE

Binds 127.0.0.1 on a free port, writes the port to PORTFILE and serves until killed.
Counts the requests it answered and the streams it reset in PORTFILE.log (one line each).
"""
import json
import os
import socket
import ssl
import sys
import threading

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

LOG_LOCK = threading.Lock()

BODY = json.dumps({
    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
    "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
}).encode()


def serve(sock, log):
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    conn.initiate_connection()
    # No request body may flow (a stream window of 0), so every POST is still uploading when its
    # answer and the reset arrive: the race made certain, on the second request of a connection.
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    sock.sendall(conn.data_to_send())
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return
            for ev in conn.receive_data(data):
                if isinstance(ev, h2.events.RequestReceived):
                    sid = ev.stream_id
                    body_pending = ev.stream_ended is None
                    conn.send_headers(sid, [
                        (":status", "401"),
                        ("content-type", "application/json"),
                        ("content-length", str(len(BODY))),
                    ])
                    conn.send_data(sid, BODY, end_stream=True)
                    if body_pending:
                        conn.reset_stream(sid, h2.errors.ErrorCodes.NO_ERROR)
                    with LOG_LOCK:
                        log.write("answered 401%s\n" % (" reset" if body_pending else ""))
                        log.flush()
                elif isinstance(ev, h2.events.DataReceived):
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    return
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
    except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
        return
    finally:
        sock.close()


def serve_http1(sock, log):
    """One request: answer 401 at the end of its headers, then drain the body and close."""
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                return
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        sock.sendall(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(BODY) + BODY)
        # (the answer went out before the server read the body, whatever had arrived)
        with LOG_LOCK:
            log.write("answered 401 http/1.1%s\n" % (" early" if length > 0 else ""))
            log.flush()
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
    except (OSError, ssl.SSLError, ValueError):
        return
    finally:
        sock.close()


def main():
    cert, key, portfile = sys.argv[1:4]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    log = open(portfile + ".log", "a")
    with open(portfile + ".tmp", "w") as f:
        f.write(str(lsock.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    while True:
        raw, _ = lsock.accept()
        try:
            tls = ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            continue
        h2_chosen = tls.selected_alpn_protocol() == "h2"
        threading.Thread(target=serve if h2_chosen else serve_http1, args=(tls, log), daemon=True).start()


if __name__ == "__main__":
    main()
